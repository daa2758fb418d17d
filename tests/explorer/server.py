"""The explorer's in-memory ZooKeeper server, with the semantics the recipes rely on: a tree of
nodes with data; persistent, ephemeral (owned by a session) and container nodes (reaped once empty,
having had children); sequential names from the parent's ``cversion``; one-shot watches (data and
exists on a path, children of a path); sessions that live through a dropped connection and end on
expiry or close (their ephemerals deleted, the watches of others fired); watches that stay
(``addWatch``: on a node, or recursive below it), each session told one event per change and
node, whichever of its watches cover it. It answers ZooKeeper's
requests as bytes through :mod:`tests.explorer.jute`: on a loopback port
(:mod:`tests.explorer.wire`) and to the simulated connections of a schedule's kazoo clients
(:mod:`tests.explorer.connection`).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import random
from collections.abc import Callable
from typing import Any, Protocol

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    NoWatcherError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat


class Clock(Protocol):
    """What the server runs on: the hub of a schedule, or the wire server's real time."""

    @property
    def now(self) -> float: ...

    @property
    def rng(self) -> random.Random: ...

    def call_later(self, delay: float, function: Callable[[], None]) -> Cancellable: ...


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Listener(Protocol):
    """Whom a session's watch events go to: its connection."""

    def event(self, event: WatchedEvent) -> None: ...


#: Seconds a request takes to be answered (up and down), at the least.
LATENCY = 0.001
#: A create's flags, as ZooKeeper's wire protocol has them.
EPHEMERAL, SEQUENCE, CONTAINER = 1, 2, 4
#: Seconds between two passes of the server's container reaper.
REAP_EVERY = 0.5


@dataclasses.dataclass
class Node:
    data: bytes
    owner: int  # the session of an ephemeral node; 0 for any other
    container: bool
    czxid: int
    mzxid: int
    version: int = 0
    cversion: int = 0
    children: set[str] = dataclasses.field(default_factory=set)
    had_children: bool = False

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            self.czxid,
            self.mzxid,
            0,
            0,
            self.version,
            self.cversion,
            0,
            self.owner,
            len(self.data),
            len(self.children),
            self.mzxid,
        )


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


class Session:
    def __init__(self, sid: int, client: Listener) -> None:
        self.sid = sid
        self.client = client
        self.alive = True
        self.ephemerals: set[str] = set()


class Server:
    """The ensemble, as one server (see module doc). :attr:`gone` says, for each node path
    deleted, how: ``("deleted", session)`` or ``("expired", session)`` or ``("reaped", 0)``."""

    def __init__(self, scheduler: Clock) -> None:
        self.scheduler = scheduler
        self.zxid = 1
        self.nodes: dict[str, Node] = {"/": Node(b"", 0, False, 0, 0)}
        self.sessions: dict[int, Session] = {}
        self._next_session = 0x1000
        self.data_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(set)
        self.child_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(set)
        #: the watches that stay, by path: on the node itself, and recursive (below it too)
        self.exact_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(set)
        self.recursive_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(
            set
        )
        #: False plays a server before ZooKeeper 3.6, which answers ``addWatch`` UNIMPLEMENTED
        self.persistent_watches = True
        self.gone: dict[str, tuple[str, int, float]] = {}
        self._reaper: Cancellable | None = None
        #: the events a transaction under way holds back, sent once it has applied
        self._held: list[tuple[Session, WatchedEvent]] | None = None

    def start_reaper(self) -> None:
        def reap() -> None:
            for path, node in list(self.nodes.items()):
                empty = node.container and not node.children and node.had_children
                if empty and path in self.nodes:
                    self._delete(path, ("reaped", 0))
            self._reaper = self.scheduler.call_later(REAP_EVERY, reap)

        self._reaper = self.scheduler.call_later(REAP_EVERY, reap)

    def stop_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()

    # -- sessions --------------------------------------------------------------------------------

    def open_session(self, client: Listener) -> int:
        self._next_session += 1
        sid = self._next_session
        self.sessions[sid] = Session(sid, client)
        return sid

    def end_session(self, sid: int, how: str) -> None:
        """The session ends (``how``: ``"expired"`` or ``"closed"``): its ephemerals go."""
        session = self.sessions.get(sid)
        if session is None or not session.alive:
            return
        session.alive = False
        for path in sorted(session.ephemerals, reverse=True):
            if path in self.nodes:
                self._delete(path, (how, sid))
        self.forget_watches(sid)

    def forget_watches(self, sid: int) -> None:
        tables = (self.data_watches, self.child_watches, self.exact_watches, self.recursive_watches)
        for table in tables:
            for sessions in table.values():
                sessions.discard(sid)

    def alive(self, sid: int | None) -> bool:
        session = self.sessions.get(sid) if sid is not None else None
        return session is not None and session.alive

    # -- the tree --------------------------------------------------------------------------------

    def _staying(self, path: str, type: str) -> set[int]:
        """The sessions whose watches that stay hear ``type`` on ``path``: on the node (every
        type), recursive on it or above it (not a children change)."""
        sessions = set(self.exact_watches.get(path, ()))
        at = path
        while type != EventType.CHILD:
            sessions |= self.recursive_watches.get(at, set())
            if at == "/":
                break
            at = _parent(at)
        return sessions

    def _trigger(
        self, table: dict[str, set[int]], path: str, type: str, told: set[int] | None = None
    ) -> set[int]:
        """Fire ``table``'s one-shot watches on ``path`` and the watches that stay covering it,
        once per session (none of ``told``, which heard the change already); who heard it."""
        sessions = table.pop(path, set()) if path in table else set()
        sessions |= self._staying(path, type)
        sessions -= told or set()
        for sid in sorted(sessions):
            session = self.sessions.get(sid)
            if session is not None and session.alive:
                event = WatchedEvent(type, KazooState.CONNECTED, path)
                if self._held is not None:
                    self._held.append((session, event))
                else:
                    session.client.event(event)
        return sessions

    def _delete(self, path: str, how: tuple[str, int]) -> None:
        node = self.nodes.pop(path)
        self.zxid += 1
        parent = self.nodes.get(_parent(path))
        if parent is not None:
            parent.children.discard(_name(path))
            parent.cversion += 1
        if node.owner and node.owner in self.sessions:
            self.sessions[node.owner].ephemerals.discard(path)
        self.gone[path] = (how[0], how[1], self.scheduler.now)
        told = self._trigger(self.data_watches, path, EventType.DELETED)
        self._trigger(self.child_watches, path, EventType.DELETED, told)
        self._trigger(self.child_watches, _parent(path), EventType.CHILD)

    def _create(
        self, path: str, data: bytes, sid: int, ephemeral: bool, sequence: bool, container: bool
    ) -> tuple[str, ZnodeStat]:
        parent = self.nodes.get(_parent(path))
        if parent is None:
            raise NoNodeError()
        if parent.owner:
            raise NoNodeError()  # NoChildrenForEphemerals, as the protocols read it
        if sequence:
            path = f"{path}{parent.cversion:010d}"
        if path in self.nodes:
            raise NodeExistsError()
        self.zxid += 1
        node = Node(data, sid if ephemeral else 0, container, self.zxid, self.zxid)
        self.nodes[path] = node
        parent.children.add(_name(path))
        parent.had_children = True
        parent.cversion += 1
        if ephemeral:
            self.sessions[sid].ephemerals.add(path)
        self.gone.pop(path, None)
        self._trigger(self.data_watches, path, EventType.CREATED)
        self._trigger(self.child_watches, _parent(path), EventType.CHILD)
        return path, node.stat()

    def delete_by_another(self, path: str) -> None:
        """Another client (an operator, say) deletes ``path``."""
        if path in self.nodes and not self.nodes[path].children:
            self._delete(path, ("deleted by another", 0))

    def set_data(self, path: str, data: bytes) -> None:
        """Another client writes ``data`` to ``path`` (if it is there)."""
        if path in self.nodes:
            self.write(path, data)

    # -- the requests, as a server answers them -------------------------------------------------

    def create(self, sid: int, path: str, data: bytes, flags: int) -> tuple[str, ZnodeStat]:
        """Create ``path`` (``flags``: :data:`EPHEMERAL`, :data:`SEQUENCE`, :data:`CONTAINER`);
        the path made and its stat."""
        ephemeral, sequence = bool(flags & EPHEMERAL), bool(flags & SEQUENCE)
        return self._create(path, data, sid, ephemeral, sequence, bool(flags & CONTAINER))

    def delete(self, sid: int, path: str, version: int = -1) -> bool:
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError()
        if version != -1 and version != node.version:
            raise BadVersionError()
        if node.children:
            raise NotEmptyError()
        self._delete(path, ("deleted", sid))
        return True

    def children(self, sid: int, path: str, watch: bool) -> tuple[list[str], ZnodeStat]:
        """``path``'s children, in no order, and its stat; a child watch set with ``watch``."""
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError()
        if watch:
            self.child_watches[path].add(sid)
        # ZooKeeper's order is no order: shuffled from the order they were made (not by name,
        # so that what the names hold, a random id, does not change the order a seed draws)
        base = path.rstrip("/")
        children = sorted(node.children, key=lambda name: self.nodes[f"{base}/{name}"].czxid)
        self.scheduler.rng.shuffle(children)
        return children, node.stat()

    def exists(self, sid: int, path: str, watch: bool) -> ZnodeStat | None:
        if watch:
            self.data_watches[path].add(sid)
        node = self.nodes.get(path)
        return None if node is None else node.stat()

    def get(self, sid: int, path: str, watch: bool) -> tuple[bytes, ZnodeStat]:
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError()
        if watch:
            self.data_watches[path].add(sid)
        return node.data, node.stat()

    def write(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        """Write ``data`` to ``path`` if its version is ``version`` (-1: any); its new stat."""
        node = self.check(path, version)
        self.zxid += 1
        node.data, node.mzxid, node.version = data, self.zxid, node.version + 1
        self._trigger(self.data_watches, path, EventType.CHANGED)
        return node.stat()

    def check(self, path: str, version: int) -> Node:
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError()
        if version != -1 and version != node.version:
            raise BadVersionError()
        return node

    def add_watch(self, sid: int, path: str, recursive: bool) -> None:
        """``addWatch``: a watch that stays on ``path`` (``recursive``: below it too)."""
        (self.recursive_watches if recursive else self.exact_watches)[path].add(sid)

    def remove_watches(
        self,
        sid: int,
        path: str,
        data: bool,
        child: bool,
        exact: bool = False,
        recursive: bool = False,
    ) -> None:
        """Drop ``sid``'s data (or exists) and child watches on ``path``, and its watches that
        stay there (``exact``, ``recursive``); NoWatcherError when it had none of them."""
        removed = False
        tables = (
            (data, self.data_watches),
            (child, self.child_watches),
            (exact, self.exact_watches),
            (recursive, self.recursive_watches),
        )
        for wanted, table in tables:
            if wanted and sid in table.get(path, ()):
                table[path].discard(sid)
                removed = True
        if not removed:
            raise NoWatcherError()

    def transaction(self, apply: Callable[[], list[Any]]) -> list[Any]:
        """Run ``apply`` (requests one after the other) all or nothing: when one raises, the
        tree and the watches are as before, no watch has fired, and the error goes on."""
        saved = copy.deepcopy((self.nodes, self.data_watches, self.child_watches, self.gone))
        owned = {sid: set(session.ephemerals) for sid, session in self.sessions.items()}
        zxid, self._held = self.zxid, []
        try:
            results = apply()
        except BaseException:
            self.nodes, self.data_watches, self.child_watches, self.gone = saved
            for sid, session in self.sessions.items():
                session.ephemerals = owned[sid]
            self.zxid = zxid
            raise
        finally:
            held, self._held = self._held, None
        for session, event in held:
            session.client.event(event)
        return results

    def ephemerals_of(self, sid: int) -> set[str]:
        session = self.sessions.get(sid)
        return set(session.ephemerals) if session is not None and session.alive else set()
