"""Java peers of Curator's node recipes: ``PersistentNode``, ``PersistentTtlNode``,
``GroupMember`` and ``CuratorCache``, each behind the calls of pycurator's own (Curator's
methods in snake_case, durations in seconds, data as bytes).

Each peer keeps Curator's object in ``java``, records what its listener is told, and frees its
Java object on ``close()``, at the end of a ``with`` block, and at the kit's shutdown.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kazoo.protocol.states import ZnodeStat

from ._curator import CURATOR, jclass
from ._java_calls import (
    CURATOR_RECIPES,
    JavaRecipePeer,
    Told,
    java_bytes,
    java_mode,
    millis,
    proxy,
    python_bytes,
    recipe_class,
)


class _JavaKeptNode(JavaRecipePeer):
    """What Curator's ``PersistentNode`` and ``PersistentTtlNode`` share."""

    def start(self) -> None:
        self._call("start()", self.java.start)

    def wait_for_initial_create(self, timeout: float) -> bool:
        """True once the node was first created (or adopted), False after ``timeout`` s."""
        return bool(
            self._call(
                "wait_for_initial_create()",
                lambda: self.java.waitForInitialCreate(*millis(timeout)),
            )
        )

    def get_data(self) -> bytes:
        return python_bytes(self.java.getData()) or b""

    def set_data(self, data: bytes) -> None:
        self._call("set_data()", lambda: self.java.setData(java_bytes(data)))


class JavaPersistentNode(_JavaKeptNode):
    """Curator's ``PersistentNode``: a node kept at ``path`` (created in the background,
    recreated when deleted and after a reconnect) until ``close()`` deletes it. ``mode`` names
    ZooKeeper's ``CreateMode`` (``"EPHEMERAL"``, or an enum member with that name);
    ``use_protection`` names the node ``_c_<uuid>-<name>``. ``created`` records each path its
    ``PersistentNodeListener`` is told of (a create, not an adopted node)."""

    def __init__(
        self,
        curator: Any,
        path: str,
        mode: object,
        data: bytes = b"",
        use_protection: bool = False,
    ) -> None:
        super().__init__(curator)
        self.path = path
        self.created = Told()
        self.java = recipe_class("nodes.PersistentNode")(
            curator, java_mode(mode), use_protection, path, java_bytes(data)
        )
        listener = proxy(
            f"{CURATOR_RECIPES}.nodes.PersistentNodeListener",
            {"nodeCreated": lambda created: self.created.add(str(created))},
        )
        self.java.getListenable().addListener(listener)

    @property
    def actual_path(self) -> str | None:
        """The node's path as created (a protected or sequential name), or None before."""
        path = self.java.getActualPath()
        return None if path is None else str(path)

    def __repr__(self) -> str:
        return f"JavaPersistentNode({self.path!r})"


class JavaPersistentTtlNode(_JavaKeptNode):
    """Curator's ``PersistentTtlNode``: ``path`` kept with ``data`` and a ``touch`` child that
    is created or set every ``ttl / 2`` seconds, so that ZooKeeper reaps the pair ``ttl``
    seconds after the last touch once it is closed. The parent is a CONTAINER up to Curator
    5.8, a PERSISTENT_WITH_TTL node from 5.9; the child is PERSISTENT_WITH_TTL in both.

    Its touches run on an executor of its own, shut down by ``close()`` (Curator's shortest
    constructor makes one it never shuts down)."""

    def __init__(self, curator: Any, path: str, ttl: float, data: bytes = b"") -> None:
        ttl_ms = int(ttl * 1000)
        if ttl_ms <= 0:
            raise ValueError(f"ttl must be at least a millisecond, in seconds: not {ttl!r}")
        super().__init__(curator)
        self.path = path
        self.ttl = ttl
        node_class = recipe_class("nodes.PersistentTtlNode")
        threads = jclass(f"{CURATOR}.utils.ThreadUtils").newThreadFactory("PersistentTtlNode")
        self._executor = jclass("java.util.concurrent.Executors").newSingleThreadScheduledExecutor(
            threads
        )
        self.java = node_class(
            curator,
            self._executor,
            path,
            ttl_ms,
            java_bytes(data),
            node_class.DEFAULT_CHILD_NODE_NAME,
            node_class.DEFAULT_TOUCH_SCHEDULE_FACTOR,
        )

    def _close_java(self) -> None:
        try:
            self.java.close()
        finally:
            self._executor.shutdownNow()

    def __repr__(self) -> str:
        return f"JavaPersistentTtlNode({self.path!r}, ttl={self.ttl!r})"


class JavaGroupMember(JavaRecipePeer):
    """Curator's ``GroupMember``: the ephemeral node ``membership_path/this_id`` holding
    ``payload`` (by default, Curator's: the local address, as
    :func:`~pycurator.testing.java_local_address`), and the group's members as its cache sees
    them."""

    def __init__(
        self, curator: Any, membership_path: str, this_id: str, payload: bytes | None = None
    ) -> None:
        super().__init__(curator)
        self.membership_path = membership_path
        self.this_id = this_id
        member = recipe_class("nodes.GroupMember")
        if payload is None:
            self.java = member(curator, membership_path, this_id)
        else:
            self.java = member(curator, membership_path, this_id, java_bytes(payload))

    def start(self) -> None:
        self._call("start()", self.java.start)

    def set_this_data(self, data: bytes) -> None:
        self._call("set_this_data()", lambda: self.java.setThisData(java_bytes(data)))

    def get_current_members(self) -> dict[str, bytes]:
        """Each member's id and data, this one's always among them (as Curator's)."""
        members = self.java.getCurrentMembers()
        return {str(key): python_bytes(members.get(key)) or b"" for key in members.keySet()}

    def id_from_path(self, path: str) -> str:
        return str(self.java.idFromPath(path))

    def __repr__(self) -> str:
        return f"JavaGroupMember({self.membership_path!r}, {self.this_id!r})"


class JavaChildData(NamedTuple):
    """A node as a Java cache holds it: its path, kazoo's stat, and its data."""

    path: str
    stat: ZnodeStat
    data: bytes | None


class CacheEvent(NamedTuple):
    """What a cache's listener was told: ``type`` is ``NODE_CREATED``, ``NODE_CHANGED`` or
    ``NODE_DELETED``; ``old_data`` and ``data`` are the node's data before and after (None
    where there is no node)."""

    type: str
    path: str
    old_data: bytes | None
    data: bytes | None


def _stat(stat: Any) -> ZnodeStat:
    return ZnodeStat(
        int(stat.getCzxid()),
        int(stat.getMzxid()),
        int(stat.getCtime()),
        int(stat.getMtime()),
        int(stat.getVersion()),
        int(stat.getCversion()),
        int(stat.getAversion()),
        int(stat.getEphemeralOwner()),
        int(stat.getDataLength()),
        int(stat.getNumChildren()),
        int(stat.getPzxid()),
    )


def _child_data(java: Any) -> JavaChildData | None:
    if java is None:
        return None
    return JavaChildData(str(java.getPath()), _stat(java.getStat()), python_bytes(java.getData()))


class JavaCuratorCache(JavaRecipePeer):
    """Curator's ``CuratorCache`` of ``path`` and its subtree (``options``: names of
    ``CuratorCache.Options``, ``SINGLE_NODE_CACHE``, ``COMPRESSED_DATA``,
    ``DO_NOT_CLEAR_ON_CLOSE``).

    Its listener records, in the order Curator tells them, every event as a
    :class:`CacheEvent` (``events``), and ``initialized()``: ``initialized`` is set then, and
    ``initialized_after`` is how many events came before it."""

    def __init__(self, curator: Any, path: str, options: Iterable[object] = ()) -> None:
        super().__init__(curator)
        self.path = path
        self._told = Told()
        self.initialized = threading.Event()
        self.initialized_after: int | None = None
        cache = recipe_class("cache.CuratorCache")
        known = recipe_class("cache.CuratorCache$Options")
        chosen = []
        for option in options:
            name = option if isinstance(option, str) else getattr(option, "name", None)
            if not isinstance(name, str) or not hasattr(known, name):
                raise ValueError(f"not an option of CuratorCache: {option!r}")
            chosen.append(getattr(known, name))
        self.java = cache.builder(curator, path).withOptions(*chosen).build()
        self._listener = proxy(
            f"{CURATOR_RECIPES}.cache.CuratorCacheListener",
            {"event": self._on_event, "initialized": self._on_initialized},
        )
        self.java.listenable().addListener(self._listener)

    def _on_event(self, kind: Any, old: Any, new: Any) -> None:
        before, after = _child_data(old), _child_data(new)
        either = after or before
        path = "" if either is None else either.path
        self._told.add(
            CacheEvent(
                str(kind.name()),
                path,
                None if before is None else before.data,
                None if after is None else after.data,
            )
        )

    def _on_initialized(self) -> None:
        self.initialized_after = len(self._told.items())
        self.initialized.set()

    def start(self) -> None:
        self._call("start()", self.java.start)

    @property
    def events(self) -> list[CacheEvent]:
        """Every event told so far, in order."""
        return self._told.items()

    def wait_for_events(self, count: int, timeout: float) -> list[CacheEvent]:
        """The events told, once there are at least ``count``; ``AssertionError`` naming those
        told after ``timeout`` seconds."""
        if not self._told.wait_for(lambda told: len(told) >= count, timeout):
            raise AssertionError(
                f"{self!r} was told {len(self.events)} events, not {count}, within {timeout}s: "
                f"{self.events}"
            )
        return self.events

    def get(self, path: str) -> JavaChildData | None:
        found = self.java.get(path)
        return _child_data(found.get()) if found.isPresent() else None

    def size(self) -> int:
        return int(self.java.size())

    def __iter__(self) -> Iterator[JavaChildData]:
        nodes = [_child_data(node) for node in self.java.stream().toArray()]
        return iter([node for node in nodes if node is not None])

    def __repr__(self) -> str:
        return f"JavaCuratorCache({self.path!r})"
