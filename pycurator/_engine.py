"""The lock engine: Curator's ``LockInternals`` for kazoo.

One engine serves every recipe. It creates a protected ephemeral-sequential node, lists the lock
path's children, asks a driver (:mod:`pycurator._drivers`) whether it holds the lock or whom to
watch, watches that node with ``getData`` and waits, and deletes its node on timeout, error or
interruption.

Every wait on the server honours the acquire's deadline, whatever the connection does: a request
still unanswered when the deadline passes is left to land later, and what it would leave behind
(a node, a watch) is undone when it does. Deletes never block for longer than
:data:`DELETE_WAIT`: one the server has not confirmed by then goes on in the background
(Curator's guaranteed delete).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import weakref
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
from ._deadline import Deadline, DeadlineExpired, wait_result
from ._drivers import Driver, NodeVanishedError

log = logging.getLogger("pycurator")

T = TypeVar("T")

#: Errors after which the same request may be sent again once the client is connected.
RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
#: The largest node data ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1).
MAX_NODE_DATA = 0xFFFFF
#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10
#: The longest a delete of our node (release, or the clean-up of a failed acquire) waits for
#: the server's answer while the client is connected, in seconds. A client that is not
#: connected does not wait at all. Either way an unconfirmed delete goes on in the background.
DELETE_WAIT = 2.0

__all__ = [
    "DELETE_WAIT",
    "Deadline",
    "DeadlineExpired",
    "HeldNode",
    "LockEngine",
    "check_client",
    "check_data",
    "check_timeout",
    "delete_guaranteed",
    "delete_guaranteed_later",
    "forget_watch",
    "retrying",
    "wait_connected",
    "wait_result",
    "watch",
]


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


def retrying(client: KazooClient, send: Callable[[], Any], deadline: Deadline) -> Any:
    """Send a request (``send`` returns kazoo's async result) and wait for its answer within
    ``deadline``, sending it again after connection loss once the client is connected."""
    while True:
        try:
            return wait_result(client, send(), deadline)
        except RETRYABLE:
            wait_connected(client, deadline)


def delete_guaranteed(client: KazooClient, path: str) -> None:
    """Curator's guaranteed delete of one of our ephemeral nodes; returns within
    :data:`DELETE_WAIT` seconds whatever the connection does.

    A missing node is fine. A delete the server has not confirmed in time (the client is not
    connected, or the answer is late) goes on in the background, sent again each time the client
    connects, until the node is deleted or gone (with its session), or the client is stopped.
    """
    if not client.connected:
        _pending_deletes(client).add(path)
        return
    result = client.delete_async(path)
    try:
        wait_result(client, result, Deadline(DELETE_WAIT))
    except (NoNodeError, SessionExpiredError, ConnectionClosedError):
        pass
    except (ConnectionLoss, OperationTimeoutError, DeadlineExpired):
        log.info("delete of %s deferred until the connection is back", path)
        _pending_deletes(client).add(path, result)


class _PendingDeletes:
    """The nodes one client still has to delete, as Curator's ``FailedDeleteManager``: each is
    deleted again whenever the client (re)connects, until the server says it is gone."""

    def __init__(self, client: KazooClient) -> None:
        self._client = weakref.ref(client)
        self._paths: set[str] = set()
        self._lock = client.handler.lock_object()
        client.add_listener(self._on_state)

    def add(self, path: str, sent: Any = None) -> None:
        """Delete ``path`` until it is gone; ``sent``: a delete of it already on its way."""
        with self._lock:
            self._paths.add(path)
        if sent is not None:
            sent.rawlink(functools.partial(self._answered, path))
        else:
            self._send(path)

    def _on_state(self, state: str) -> bool:
        client = self._client()
        if client is None:
            return True
        if state == KazooState.CONNECTED:
            with self._lock:
                paths = list(self._paths)
            for path in paths:
                self._send(path)
        return False

    def _send(self, path: str) -> None:
        client = self._client()
        if client is None or not client.connected:
            return  # sent again on the next CONNECTED
        client.delete_async(path).rawlink(functools.partial(self._answered, path))

    def _answered(self, path: str, result: Any) -> None:
        try:
            result.get()
        except (ConnectionLoss, OperationTimeoutError):
            client = self._client()
            if client is not None and client.connected:
                client.handler.spawn(self._again, path)
            return  # otherwise the next CONNECTED sends it again
        except (NoNodeError, SessionExpiredError, ConnectionClosedError):
            pass
        except Exception:  # an error no retry can fix: the node goes with the session
            log.exception("background delete of %s failed", path)
        with self._lock:
            self._paths.discard(path)

    def _again(self, path: str) -> None:
        client = self._client()
        if client is not None:
            client.handler.sleep_func(0.1)
            self._send(path)

    def __contains__(self, path: str) -> bool:
        with self._lock:
            return path in self._paths


_DELETERS: weakref.WeakKeyDictionary[KazooClient, _PendingDeletes] = weakref.WeakKeyDictionary()
_DELETERS_LOCK = threading.Lock()


def _pending_deletes(client: KazooClient) -> _PendingDeletes:
    with _DELETERS_LOCK:
        deleter = _DELETERS.get(client)
        if deleter is None:
            deleter = _DELETERS[client] = _PendingDeletes(client)
        return deleter


def delete_guaranteed_later(client: KazooClient, path: str) -> None:
    """Curator's guaranteed delete without waiting at all (from callbacks and background work)."""
    _pending_deletes(client).add(path)


def watch(
    client: KazooClient,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    deadline: Deadline,
    *,
    children: bool = False,
) -> Any:
    """Set ``watcher`` on ``path`` (``getData``, or ``getChildren`` with ``children``) within
    ``deadline``, sending again after connection loss; the answer's value. NoNodeError if the
    path is gone. A watch set by an answer that comes after the deadline is dropped again."""
    while True:
        if children:
            result = client.get_children_async(path, watch=watcher)
        else:
            result = client.get_async(path, watch=watcher)
        try:
            return wait_result(client, result, deadline)
        except RETRYABLE:
            wait_connected(client, deadline)
        except DeadlineExpired:
            result.rawlink(functools.partial(_forget_late_watch, client, path, watcher, children))
            raise


def _forget_late_watch(
    client: KazooClient,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    children: bool,
    result: Any,
) -> None:
    """A watch request we stopped waiting for has been answered: if it set the watch, drop it
    (after kazoo has registered it, which follows the answer)."""
    if result.successful():
        client.handler.spawn(
            functools.partial(forget_watch, client, path, watcher, children=children)
        )


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
        deletes. The call returns within ``timeout`` plus at most :data:`DELETE_WAIT` (the
        clean-up's delete), whatever the connection does. On timeout, error or interruption our
        node is deleted (or its delete handed to the background) before returning, and an
        error reaches the caller unchanged.
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
                if held and not self.is_current_session(node):
                    raise NodeVanishedError(_wire.node_name(node.path))
            except NodeVanishedError:
                continue  # our session expired while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    delete_guaranteed(self.client, node.path)
            return node if held else None

    def is_current_session(self, node: HeldNode) -> bool:
        """Whether the session that made ``node`` is still the client's: a decision made over
        an older listing does not hold once that session has ended."""
        client_id = self.client.client_id
        return client_id is not None and client_id[0] == node.session_id

    def create_node(self, deadline: Deadline) -> tuple[HeldNode, list[str] | None]:
        """Create our protected node; also the children listed right after it, when they came
        in the same round trip (the listing is pipelined behind the create).

        Raises :class:`DeadlineExpired` when the deadline passes first; a create still on its
        way then is undone when it lands. Whatever error ends this call, no node of ours is
        left: one made before the error is deleted first.
        """
        client = self.client
        deadline = deadline.for_requests()
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
                    found = self._find_protected(prefix, deadline)
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
                    created, stat = wait_result(client, create, deadline)
                except NoNodeError:
                    _requests.ensure_container_parents(client, node_path, self.acl, deadline)
                    continue
                except DeadlineExpired:
                    create.rawlink(functools.partial(self._undo_late_create, prefix))
                    raise
                node = HeldNode(created, stat.czxid, stat.ephemeralOwner)
                try:
                    children: list[str] | None = wait_result(client, listing, deadline)
                except (*RETRYABLE, DeadlineExpired):
                    children = None  # the lock loop lists again, or gives up, and deletes
                except BaseException:
                    delete_guaranteed(client, node.path)
                    raise
                return node, children
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    wait_connected(client, deadline)
                except BaseException:
                    client.handler.spawn(self._delete_protected_orphans, prefix)
                    raise

    def _undo_late_create(self, prefix: str, result: Any) -> None:
        """A create we stopped waiting for has been answered: undo what it made."""
        try:
            created, _ = result.get()
        except (ConnectionLoss, OperationTimeoutError):
            self.client.handler.spawn(self._delete_protected_orphans, prefix)
        except Exception:
            return  # nothing was made, or it went with its session
        else:
            delete_guaranteed_later(self.client, created)

    def _find_protected(self, prefix: str, deadline: Deadline) -> HeldNode | None:
        """Our node from an earlier create whose reply was lost, if the server made it.

        A node with our prefix that belongs to an earlier session is deleted (CURATOR-498).
        """
        client = self.client
        try:
            children = wait_result(client, client.get_children_async(self.base_path), deadline)
        except NoNodeError:
            return None
        session_id = client.client_id[0] if client.client_id else None
        for child in children:
            if child.startswith(prefix):
                path = _wire.join_path(self.base_path, child)
                stat = wait_result(client, client.exists_async(path), deadline)
                if stat is not None and stat.ephemeralOwner == session_id:
                    return HeldNode(path, stat.czxid, stat.ephemeralOwner)
                if stat is not None:
                    delete_guaranteed_later(client, path)
        return None

    def _delete_protected_orphans(self, prefix: str) -> None:
        """After a create that gave up: delete a node it may have made after all (in the
        background, once the client is connected)."""
        forever = Deadline(None)
        with contextlib.suppress(ConnectionClosedError):
            for child in self._children(forever):
                if child.startswith(prefix):
                    delete_guaranteed_later(self.client, _wire.join_path(self.base_path, child))

    def _children(self, deadline: Deadline) -> list[str]:
        """The lock path's children, listed within ``deadline``; none if the path is gone (it
        went away with our node: our session expired)."""
        client = self.client
        try:
            children: list[str] = retrying(
                client, lambda: client.get_children_async(self.base_path), deadline
            )
        except NoNodeError:
            return []
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
        requests = deadline.for_requests()
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
                self._watch_for_revocation(node, requests)
            while True:
                if client._stopped.is_set():
                    raise ConnectionClosedError("the kazoo client has been stopped")
                if known is None:
                    if children is None:
                        children = self._children(requests)
                    known, children, fresh = self.driver.sort(children), None, True
                decision = self.driver.decide(known, ours)
                if decision.holds:
                    if fresh:
                        return True
                    if self.driver.relist_before_holding:
                        known = None
                        continue
                    if retrying(client, lambda: client.exists_async(node), requests) is None:
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
                    self._watch(watched, on_event, requests)
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
        watch(self.client, path, watcher, deadline)

    # -- revocation --------------------------------------------------------------------------

    def _watch_for_revocation(self, node: str, deadline: Deadline) -> None:
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

        # the watch dies with our node, so a late answer leaves nothing behind
        wait_result(client, client.get_async(node, watch=on_change), deadline)

    # -- releasing and reading ---------------------------------------------------------------

    def release(self, node: str) -> None:
        """Delete our node (guaranteed: retried in the background if the connection is down)."""
        delete_guaranteed(self.client, node)

    def sorted_children(self) -> list[str]:
        """All children of the lock path in queue order; empty if the path does not exist.

        A plain kazoo read: it waits for the server as long as kazoo's own calls do.
        """
        try:
            children: list[str] = self.client.get_children(self.base_path)
        except NoNodeError:
            return []
        return self.driver.sort(children)

    def participant_nodes(self) -> list[str]:
        """Full paths of every child of the lock path, in queue order."""
        return _wire.full_paths(self.base_path, self.sorted_children())
