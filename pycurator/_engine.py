"""The lock engine: Curator's ``LockInternals`` for kazoo.

One engine serves every recipe, threaded or asyncio. It creates a protected ephemeral-sequential
node, lists the lock path's children, asks a driver (:mod:`pycurator._drivers`) whether it holds
the lock or whom to watch, watches that node with ``getData`` and waits, and deletes its node on
timeout, error, interruption or cancellation. The protocol is written once, as steps
(:mod:`pycurator._steps`): the blocking methods run them on the calling thread, and
:mod:`pycurator.aio` awaits the same ``*_steps`` generators.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, WatchedEvent

from . import _kazoo, _requests, _wire
from ._calls import (
    DELETE_WAIT,
    RETRYABLE,
    check_client,
    check_data,
    check_timeout,
    delete_guaranteed,
    delete_guaranteed_later,
    delete_guaranteed_steps,
    forget_watch,
    retrying,
    retrying_steps,
    wait_connected,
    wait_connected_steps,
    watch,
    watch_steps,
)
from ._deadline import Deadline, DeadlineExpired, wait_result
from ._drivers import Driver, NodeVanishedError
from ._steps import Await, NewSignal, Steps, WaitSignal, run
from .handlers import link_inline, runs_inline

log = logging.getLogger("pycurator")

#: The largest node data ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1).
MAX_NODE_DATA = 0xFFFFF
#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10

__all__ = [
    "DELETE_WAIT",
    "RETRYABLE",
    "Deadline",
    "DeadlineExpired",
    "HeldNode",
    "LockEngine",
    "check_client",
    "check_data",
    "check_timeout",
    "delete_guaranteed",
    "delete_guaranteed_later",
    "delete_guaranteed_steps",
    "forget_watch",
    "retrying",
    "retrying_steps",
    "wait_connected",
    "wait_connected_steps",
    "wait_result",
    "watch",
    "watch_steps",
]


@dataclass(frozen=True)
class HeldNode:
    """Our lock node: its path, its creation zxid (the fencing token), and its session."""

    path: str
    czxid: int
    session_id: int


class LockEngine:
    """Create, list, decide, watch, wait and clean up, for one lock path and one driver.

    ``data`` is written to our node (Curator's default, the host address, when None). With
    ``on_revoke``, our node is made empty and watched for Curator's revocation message, and
    ``on_revoke()`` runs (on a kazoo worker) when it comes. An engine does not change once
    built: :meth:`revocable` makes a revocable copy.
    """

    def __init__(
        self,
        client: KazooClient,
        base_path: str,
        driver: Driver,
        *,
        data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        on_revoke: Callable[[], None] | None = None,
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
        self.on_revoke = on_revoke

    def revocable(self, on_revoke: Callable[[], None]) -> LockEngine:
        """The same engine, but revocable (see the class doc)."""
        return LockEngine(
            self.client,
            self.base_path,
            self.driver,
            data=self.data,
            acl=self.acl,
            on_revoke=on_revoke,
        )

    # -- acquiring ---------------------------------------------------------------------------

    def acquire(self, timeout: float | None) -> HeldNode | None:
        """Wait for the lock; our node when held, None when the timeout ran out first.

        ``timeout`` counts from this call, the create included; 0 creates, checks once, and
        deletes. The call returns within ``timeout`` plus at most :data:`DELETE_WAIT` (the
        clean-up's delete), whatever the connection does. On timeout, error or interruption our
        node is deleted (or its delete handed to the background) before returning, and an
        error reaches the caller unchanged.
        """
        return run(self.client, self.acquire_steps(timeout))

    def acquire_steps(self, timeout: float | None) -> Steps[HeldNode | None]:
        """:meth:`acquire`, as steps."""
        check_client(self.client)
        deadline = Deadline(timeout)
        while True:
            try:
                node, children = yield from self.create_node_steps(deadline)
            except DeadlineExpired:
                return None
            held = False
            try:
                held = yield from self._wait(node.path, children, deadline)
                if held and not self.is_current_session(node):
                    raise NodeVanishedError(_wire.node_name(node.path))
            except NodeVanishedError:
                continue  # our session expired while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    yield from delete_guaranteed_steps(self.client, node.path)
            return node if held else None

    def is_current_session(self, node: HeldNode) -> bool:
        """Whether the session that made ``node`` is still the client's: a decision made over
        an older listing does not hold once that session has ended."""
        client_id = self.client.client_id
        return client_id is not None and client_id[0] == node.session_id

    def create_node(self, deadline: Deadline) -> tuple[HeldNode, list[str] | None]:
        """:meth:`create_node_steps`, blocking."""
        return run(self.client, self.create_node_steps(deadline))

    def create_node_steps(self, deadline: Deadline) -> Steps[tuple[HeldNode, list[str] | None]]:
        """Create our protected node; also the children listed right after it, when they came
        in the same round trip (the listing is pipelined behind the create).

        Raises :class:`DeadlineExpired` when the deadline passes first; a create still on its
        way then (or when the wait is interrupted) is undone when it lands. Whatever error ends
        this call, no node of ours is left: one made before the error is deleted first.
        """
        client = self.client
        deadline = deadline.for_requests()
        prefix = _wire.protected_prefix(_wire.new_protected_id())
        sequence = self.driver.node_sequence()
        name = prefix + self.driver.token + (sequence or "")
        node_path = _wire.join_path(self.base_path, name)
        data = b"" if self.on_revoke is not None else self.data
        failures = 0
        while True:
            try:
                if failures:
                    found = yield from self._find_protected(prefix, deadline)
                    if found is not None:
                        return found, None
                create = _requests.create_node_async(
                    client, node_path, data, self.acl, ephemeral=True, sequence=sequence is None
                )
                listing = client.get_children_async(self.base_path)
                try:
                    created, stat = yield Await(create, deadline)
                except NoNodeError:
                    yield from _requests.ensure_container_parents_steps(
                        client, node_path, self.acl, deadline
                    )
                    continue
                except BaseException:
                    # the deadline passed, or the wait was interrupted (perhaps just as the
                    # answer came): undo what the create made, now or when it lands
                    create.rawlink(functools.partial(self._undo_late_create, prefix))
                    raise
                node = HeldNode(client.unchroot(created), stat.czxid, stat.ephemeralOwner)
                try:
                    children: list[str] | None = yield Await(listing, deadline)
                except (*RETRYABLE, DeadlineExpired):
                    children = None  # the lock loop lists again, or gives up, and deletes
                except BaseException:
                    yield from delete_guaranteed_steps(client, node.path)
                    raise
                return node, children
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    yield from wait_connected_steps(client, deadline)
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
            delete_guaranteed_later(self.client, self.client.unchroot(created))

    def _find_protected(self, prefix: str, deadline: Deadline) -> Steps[HeldNode | None]:
        """Our node from an earlier create whose reply was lost, if the server made it.

        A node with our prefix that belongs to an earlier session is deleted (CURATOR-498).
        """
        client = self.client
        try:
            children = yield Await(client.get_children_async(self.base_path), deadline)
        except NoNodeError:
            return None
        session_id = client.client_id[0] if client.client_id else None
        for child in children:
            if child.startswith(prefix):
                path = _wire.join_path(self.base_path, child)
                stat = yield Await(client.exists_async(path), deadline)
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
            for child in run(self.client, self._children(forever)):
                if child.startswith(prefix):
                    delete_guaranteed_later(self.client, _wire.join_path(self.base_path, child))

    def _children(self, deadline: Deadline, answer: Any = None) -> Steps[list[str]]:
        """The lock path's children, listed within ``deadline``; none if the path is gone (it
        went away with our node: our session expired). ``answer``: a listing already asked
        for."""
        client = self.client
        try:
            children: list[str] = yield from retrying_steps(
                client, lambda: client.get_children_async(self.base_path), deadline, answer
            )
        except NoNodeError:
            return []
        return children

    def _wait(self, node: str, children: list[str] | None, deadline: Deadline) -> Steps[bool]:
        """The lock loop: decide, watch the node named by the driver, wait, decide again.

        Nodes that sort before ours can only go away (new nodes take larger sequence numbers).
        So when the watched node was the first of the children we know and it is deleted, the
        next decision is made over the rest without listing them again, and one ``exists``
        confirms that our node is still there (the driver may ask for a listing instead). A
        waiter right behind the holder thus takes over with O(1) bytes, whatever the length
        of the queue. When a node further back goes, the nodes before it may or may not be
        gone, and only a listing tells: the children are listed again, as Curator does. They
        are also listed after a connection state change (our node may be gone with the session).
        The watcher sends the first of these requests as the deletion is read (see
        :meth:`_ahead`). A wait that is interrupted drops its watch.
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
        wake = yield NewSignal()
        seen: list[tuple[WatchedEvent, Any]] = []  # each event, and what it sent (if anything)
        state_changed = False
        ahead: Callable[[], Any] | None = None  # what the loop asks first once the watch fires
        answer: Any = None  # the async result of that request, sent by the watcher

        @runs_inline
        def on_event(event: WatchedEvent) -> None:
            send = ahead if event.type == EventType.DELETED else None
            sent = None
            if send is not None:
                with contextlib.suppress(Exception):  # then the loop sends it, and sees why
                    sent = send()
            seen.append((event, sent))
            # wake the waiter once the answer is in, where that takes no extra hand-off
            if sent is None or not link_inline(sent, on_answer):
                wake.set()

        @runs_inline
        def on_answer(_: Any) -> None:
            wake.set()

        def on_state(state: str) -> bool:
            nonlocal state_changed
            state_changed = True
            wake.set()
            return False

        client.add_listener(on_state)
        try:
            if self.on_revoke is not None:
                yield from self._watch_for_revocation(node, requests)
            while True:
                if _kazoo.is_stopped(client):
                    raise ConnectionClosedError("the kazoo client has been stopped")
                if known is None:
                    if children is None:
                        children = yield from self._children(requests, answer)
                        answer = None
                    known, children, fresh = self.driver.sort(children), None, True
                decision = self.driver.decide(known, ours)
                if decision.holds:
                    if fresh:
                        return True
                    if self.driver.relist_before_holding:
                        known = None
                        continue
                    exists = yield from retrying_steps(
                        client, lambda: client.exists_async(node), requests, answer
                    )
                    if exists is None:
                        raise NodeVanishedError(ours)
                    return True
                assert decision.watch is not None
                if deadline.expired():
                    return False  # checked before watching: a last try leaves no watch behind
                watched = _wire.join_path(self.base_path, decision.watch)
                ahead = self._ahead(node, known, decision.watch)
                answer = None
                wake.clear()
                seen.clear()
                state_changed = False
                try:
                    yield from watch_steps(client, watched, on_event, requests)
                    try:
                        woken = yield WaitSignal(wake, deadline.remaining())
                    except BaseException:
                        forget_watch(client, watched, on_event)
                        raise
                    if not woken:
                        forget_watch(client, watched, on_event)
                        return False
                    gone = any(event.type == EventType.DELETED for event, _ in seen)
                except NoNodeError:
                    gone = True
                ahead = None
                if gone and not state_changed:
                    answer = next((sent for _, sent in seen if sent is not None), None)
                if state_changed or (gone and decision.watch != known[0]):
                    known = None
                elif gone:
                    del known[0]
                    fresh = False
        finally:
            client.remove_listener(on_state)

    def _ahead(self, node: str, known: list[str], watch: str) -> Callable[[], Any] | None:
        """The request the lock loop makes first when ``watch`` is deleted, if any, so that
        the watcher can send it as the notification is read, a thread hand-off sooner.

        The same request as the loop's, sent no earlier than the deletion was seen: the
        ``exists`` that confirms our node when the rest of ``known`` gives us the lock, or the
        listing that a relist would make. None when the loop would watch the next node.
        """
        client = self.client
        if watch != known[0]:
            return functools.partial(client.get_children_async, self.base_path)
        try:
            if not self.driver.decide(known[1:], _wire.node_name(node)).holds:
                return None
        except NodeVanishedError:
            return None
        if self.driver.relist_before_holding:
            return functools.partial(client.get_children_async, self.base_path)
        return functools.partial(client.exists_async, node)

    # -- revocation --------------------------------------------------------------------------

    def _watch_for_revocation(self, node: str, deadline: Deadline) -> Steps[None]:
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
        yield Await(client.get_async(node, watch=on_change), deadline)

    # -- releasing and reading ---------------------------------------------------------------

    def release(self, node: str) -> None:
        """Delete our node (guaranteed: retried in the background if the connection is down)."""
        delete_guaranteed(self.client, node)

    def sorted_children_steps(self) -> Steps[list[str]]:
        """:meth:`sorted_children`, as steps."""
        try:
            children: list[str] = yield Await(
                self.client.get_children_async(self.base_path), Deadline(None)
            )
        except NoNodeError:
            return []
        return self.driver.sort(children)

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
