"""The lock engine: Curator's ``LockInternals`` for kazoo.

One engine serves every recipe. It creates a protected ephemeral-sequential node, lists the lock
path's children, asks a driver (:mod:`pycurator._drivers`) whether it holds the lock or whom to
watch, watches that node with ``getData`` and waits, and deletes its node on timeout, error or
interruption.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from . import _requests, _wire
from ._drivers import Driver, NodeVanishedError

log = logging.getLogger("pycurator")

T = TypeVar("T")

#: Errors after which the same request may be sent again once the client is connected.
RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
#: The largest node data ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1).
MAX_NODE_DATA = 0xFFFFF
#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10


class DeadlineExpired(Exception):
    """The acquire's deadline passed while the engine waited for the connection."""


class Deadline:
    """A point on the monotonic clock, or none (wait forever)."""

    __slots__ = ("_end",)

    def __init__(self, timeout: float | None) -> None:
        self._end = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None for no deadline."""
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    def expired(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end


def check_timeout(timeout: float | None) -> float | None:
    """Validate a user's timeout in seconds: None, or a finite number >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, not {timeout!r}")
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, not {timeout!r}")
    return float(timeout)


def check_data(data: bytes | None, name: str = "node_data") -> None:
    """Raise TypeError naming ``name`` unless ``data`` is None or bytes."""
    if data is not None and not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes, not {type(data).__name__}")


def check_client(client: KazooClient) -> None:
    """Raise a clear error for a client that cannot send requests."""
    if not isinstance(client, KazooClient):
        raise TypeError(f"client must be a kazoo KazooClient, not {type(client).__name__}")
    if client._stopped.is_set():
        raise ConnectionClosedError("the kazoo client is not started, or has been stopped")


def wait_connected(client: KazooClient, deadline: Deadline) -> None:
    """Block until ``client`` is connected; raise when the deadline passes or it is stopped."""
    if client.connected:
        return
    event = client.handler.event_object()

    def listener(state: str) -> bool:
        if state == KazooState.CONNECTED:
            event.set()
            return True
        return False

    client.add_listener(listener)
    try:
        while not client.connected:
            if client._stopped.is_set():
                raise ConnectionClosedError("the kazoo client has been stopped")
            remaining = deadline.remaining()
            if remaining is not None and remaining <= 0:
                raise DeadlineExpired()
            event.wait(0.5 if remaining is None else min(0.5, remaining))
    finally:
        client.remove_listener(listener)


def retrying(client: KazooClient, call: Callable[[], T], deadline: Deadline) -> T:
    """Run ``call``, sending it again after connection loss once the client reconnects."""
    while True:
        try:
            return call()
        except RETRYABLE:
            wait_connected(client, deadline)


def delete_guaranteed(client: KazooClient, path: str) -> None:
    """Curator's guaranteed delete of one of our ephemeral nodes.

    A missing node is fine. If the connection is down, the delete goes on in the background until
    it succeeds, the node is gone, or the session (and so the ephemeral node) is gone.
    """
    try:
        client.delete(path)
        return
    except (NoNodeError, SessionExpiredError, ConnectionClosedError):
        return
    except (ConnectionLoss, OperationTimeoutError):
        log.info("delete of %s deferred until the connection is back", path)
    client.handler.spawn(_delete_in_background, client, path)


def _delete_in_background(client: KazooClient, path: str) -> None:
    pause = 0.05
    forever = Deadline(None)
    while True:
        try:
            wait_connected(client, forever)
            client.delete(path)
            return
        except (NoNodeError, SessionExpiredError, ConnectionClosedError):
            return
        except (ConnectionLoss, OperationTimeoutError):
            client.handler.sleep_func(pause)
            pause = min(pause * 2, 2.0)
        except Exception:  # an error no retry can fix: leave it to the session's end
            log.exception("background delete of %s failed", path)
            return


def forget_watch(
    client: KazooClient,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    *,
    children: bool = False,
) -> None:
    """Drop a data (or child) watch we no longer wait on, in kazoo and (when no other watcher of
    this client shares it) on the server, so a waiter that gives up leaves no watch behind."""
    registry = client._child_watchers if children else client._data_watchers
    watchers = registry.get(_requests.prefixed(client, path))
    if watchers is not None:
        watchers.discard(watcher)
        if watchers:
            return
    kind = _requests.WATCHER_TYPE_CHILDREN if children else _requests.WATCHER_TYPE_DATA
    _requests.remove_watches(client, path, kind)


@dataclass(frozen=True)
class HeldNode:
    """Our lock node: its path, its creation zxid (the fencing token), and its session."""

    path: str
    czxid: int
    session_id: int


class LockEngine:
    """Create, list, decide, watch, wait and clean up, for one lock path and one driver.

    ``data`` is written to our node (Curator's default, the host address, when None). With
    ``on_revoke`` set, our node is made empty and watched for Curator's revocation message.
    """

    def __init__(
        self,
        client: KazooClient,
        base_path: str,
        driver: Driver,
        *,
        data: bytes | None = None,
        acl: Sequence[Any] | None = None,
    ) -> None:
        self.client = client
        self.base_path = base_path
        self.driver = driver
        self.data = _wire.default_node_data() if data is None else bytes(data)
        if len(self.data) > MAX_NODE_DATA:
            raise ValueError(
                f"node data is {len(self.data)} bytes; ZooKeeper takes at most {MAX_NODE_DATA}"
                " (its jute.maxbuffer default)"
            )
        self.acl = list(acl) if acl is not None else None
        self.on_revoke: Callable[[], None] | None = None

    # -- acquiring ---------------------------------------------------------------------------

    def acquire(self, timeout: float | None) -> HeldNode | None:
        """Wait for the lock; our node when held, None when the timeout ran out first.

        ``timeout`` counts from this call, the create included; 0 creates, checks once, and
        deletes. On timeout, error or interruption our node is deleted before returning.
        """
        check_client(self.client)
        deadline = Deadline(timeout)
        while True:
            try:
                node, children = self.create_node(deadline)
            except DeadlineExpired:
                return None
            held = False
            try:
                held = self._wait(node.path, children, deadline)
            except NodeVanishedError:
                continue  # our session expired while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    delete_guaranteed(self.client, node.path)
            return node if held else None

    def create_node(self, deadline: Deadline) -> tuple[HeldNode, list[str] | None]:
        """Create our protected node; also the children listed right after it, when they came
        in the same round trip (the listing is pipelined behind the create)."""
        client = self.client
        prefix = _wire.protected_prefix(_wire.new_protected_id())
        sequence = self.driver.node_sequence()
        name = prefix + self.driver.token + (sequence or "")
        node_path = _wire.join_path(self.base_path, name)
        data = b"" if self.on_revoke is not None else self.data
        acl = self.acl or client.default_acl
        failures = 0
        while True:
            try:
                if failures:
                    found = self._find_protected(prefix)
                    if found is not None:
                        return found, None
                create = client.create_async(
                    node_path,
                    data,
                    acl,
                    ephemeral=True,
                    sequence=sequence is None,
                    include_data=True,
                )
                listing = client.get_children_async(self.base_path)
                try:
                    created, stat = create.get()
                except NoNodeError:
                    _requests.ensure_container_parents(client, node_path, self.acl)
                    continue
                try:
                    children: list[str] | None = listing.get()
                except RETRYABLE:
                    children = None
                return HeldNode(created, stat.czxid, stat.ephemeralOwner), children
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    wait_connected(client, deadline)
                except BaseException:
                    client.handler.spawn(self._delete_protected_orphans, prefix)
                    raise

    def _find_protected(self, prefix: str) -> HeldNode | None:
        """Our node from an earlier create whose reply was lost, if the server made it.

        A node with our prefix that belongs to an earlier session is deleted (CURATOR-498).
        """
        client = self.client
        try:
            children = client.get_children(self.base_path)
        except NoNodeError:
            return None
        session_id = client.client_id[0] if client.client_id else None
        for child in children:
            if child.startswith(prefix):
                path = _wire.join_path(self.base_path, child)
                stat = client.exists(path)
                if stat is not None and stat.ephemeralOwner == session_id:
                    return HeldNode(path, stat.czxid, stat.ephemeralOwner)
                if stat is not None:
                    client.handler.spawn(_delete_in_background, client, path)
        return None

    def _delete_protected_orphans(self, prefix: str) -> None:
        """After a create that gave up: delete a node it may have made after all."""
        forever = Deadline(None)
        with contextlib.suppress(ConnectionClosedError):
            children = retrying(self.client, lambda: self._children_or_none(), forever)
            for child in children or ():
                if child.startswith(prefix):
                    delete_guaranteed(self.client, _wire.join_path(self.base_path, child))

    def _children_or_none(self) -> list[str] | None:
        try:
            children: list[str] = self.client.get_children(self.base_path)
        except NoNodeError:
            return None
        return children

    def _wait(self, node: str, children: list[str] | None, deadline: Deadline) -> bool:
        """The lock loop: decide, watch the node named by the driver, wait, decide again.

        Nodes that sort before ours can only go away (new nodes take larger sequence numbers).
        So when the watched node was the first of the children we know and it is deleted, the
        next decision is made over the rest without listing them again, and one ``exists``
        confirms that our node is still there (the driver may ask for a listing instead). A
        waiter right behind the holder thus takes over with O(1) bytes, whatever the length
        of the queue. When a node further back goes, the nodes before it may or may not be
        gone, and only a listing tells: the children are listed again, as Curator does. They
        are also listed after a connection state change (our node may be gone with the session).
        """
        client = self.client
        ours = _wire.node_name(node)
        known: list[str] | None = None  # queue order as last listed, less the nodes seen gone
        fresh = False  # whether ``known`` is a listing made since the last wake-up
        if children is not None:
            known, children, fresh = self.driver.sort(children), None, True
            if self.on_revoke is None and self.driver.decide(known, ours).holds:
                return True  # held on the listing that came with the create: nothing to set up
        wake = client.handler.event_object()
        seen: list[WatchedEvent] = []
        state_changed = False

        def on_event(event: WatchedEvent) -> None:
            seen.append(event)
            wake.set()

        def on_state(state: str) -> bool:
            nonlocal state_changed
            state_changed = True
            wake.set()
            return False

        client.add_listener(on_state)
        try:
            if self.on_revoke is not None:
                self._watch_for_revocation(node)
            while True:
                if client._stopped.is_set():
                    raise ConnectionClosedError("the kazoo client has been stopped")
                if known is None:
                    if children is None:
                        children = retrying(client, lambda: self._list(), deadline)
                    known, children, fresh = self.driver.sort(children), None, True
                decision = self.driver.decide(known, ours)
                if decision.holds:
                    if fresh:
                        return True
                    if self.driver.relist_before_holding:
                        known = None
                        continue
                    if retrying(client, lambda: client.exists(node), deadline) is None:
                        raise NodeVanishedError(ours)
                    return True
                assert decision.watch is not None
                if deadline.expired():
                    return False  # checked before watching: a last try leaves no watch behind
                watched = _wire.join_path(self.base_path, decision.watch)
                wake.clear()
                seen.clear()
                state_changed = False
                try:
                    self._watch(watched, on_event, deadline)
                    if not wake.wait(deadline.remaining()):
                        forget_watch(self.client, watched, on_event)
                        return False
                    gone = any(event.type == EventType.DELETED for event in seen)
                except NoNodeError:
                    gone = True
                if state_changed or (gone and decision.watch != known[0]):
                    known = None
                elif gone:
                    del known[0]
                    fresh = False
        finally:
            client.remove_listener(on_state)

    def _watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], deadline: Deadline
    ) -> None:
        retrying(self.client, lambda: self.client.get(path, watch=watcher), deadline)

    def _list(self) -> list[str]:
        try:
            children: list[str] = self.client.get_children(self.base_path)
        except NoNodeError:
            return []  # the parent went away with our node: our session expired
        return children

    # -- revocation --------------------------------------------------------------------------

    def _watch_for_revocation(self, node: str) -> None:
        client = self.client

        def on_change(event: WatchedEvent) -> None:
            if event.type == EventType.CHANGED:
                client.handler.spawn(check)

        def check() -> None:
            callback = self.on_revoke
            if callback is None:
                return
            try:
                data, _ = client.get(node, watch=on_change)
            except (NoNodeError, ConnectionClosedError, SessionExpiredError):
                return
            except (ConnectionLoss, OperationTimeoutError):
                log.warning("could not read %s for revocation", node)
                return
            if data == _wire.REVOKE_MESSAGE:
                callback()

        client.get(node, watch=on_change)

    # -- releasing and reading ---------------------------------------------------------------

    def release(self, node: str) -> None:
        """Delete our node (guaranteed: retried in the background if the connection is down)."""
        delete_guaranteed(self.client, node)

    def sorted_children(self) -> list[str]:
        """All children of the lock path in queue order; empty if the path does not exist."""
        children = self._children_or_none()
        return self.driver.sort(children or [])

    def participant_nodes(self) -> list[str]:
        """Full paths of every child of the lock path, in queue order."""
        return _wire.full_paths(self.base_path, self.sorted_children())
