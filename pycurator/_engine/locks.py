"""The lock engine: Curator's ``LockInternals`` for kazoo.

One engine serves every recipe, threaded or asyncio. It creates a protected ephemeral-sequential
node, lists the lock path's children, asks a driver (:mod:`pycurator._protocol.drivers`) whether it
holds the lock or whom to watch, watches that node with ``getData`` and waits, and deletes its node
on timeout, error, interruption or cancellation.

Every wait on the server honours the acquire's deadline, whatever the connection does: a request
still unanswered when the deadline passes is left to land later, and what it would leave behind
(a node, a watch) is undone when it does. Deletes never block for longer than
:data:`DELETE_WAIT`: one the server has not confirmed by then goes on in the background
(Curator's guaranteed delete).

The protocol is written once, as steps (:mod:`pycurator._protocol.steps`), and does no I/O: they
say what to send, listen to and owe, and a runner does it (on a real client, or on the scripted
server of ``tests/test_engine_protocol.py``); callbacks send through the runner's sender.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
)
from kazoo.protocol.states import EventType, WatchedEvent

from .._client import kazoo_internals
from .._client import requests as _requests
from .._client.checks import check_client_type
from .._client.concurrency import link_inline, runs_inline
from .._client.runners import run
from .._protocol import wire
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.drivers import (
    CURATOR_NAMING,
    Decision,
    Driver,
    Naming,
    NodeVanishedError,
    after_wake,
    asks_first,
)
from .._protocol.ops import CreateNode, GetData, ListChildren, NodeExists, Request
from .._protocol.steps import (
    Await,
    CheckOpen,
    Claims,
    ForgetWatch,
    GetSender,
    Listen,
    NewSignal,
    OweDelete,
    Send,
    Sender,
    SessionId,
    Signal,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.waits import (
    RETRYABLE,
    connected_steps,
    delete_node_steps,
    read_sent_steps,
    resent_steps,
    watch_sent_steps,
)

log = logging.getLogger("pycurator")

#: The largest node data ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1).
MAX_NODE_DATA = 0xFFFFF
#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10
#: The error an acquire on a client that cannot send requests ends with.
NOT_STARTED = "the kazoo client is not started, or has been stopped"


@dataclass(frozen=True, slots=True)
class HeldNode:
    """Our lock node: its path, its creation zxid (the fencing token), and its session."""

    path: str
    czxid: int
    session_id: int


class LockEngine:
    """Create, list, decide, watch, wait and clean up, for one lock path and one driver.

    ``data`` is written to our node (Curator's default, the host address, when None; no data
    at all, as Java's ``null``, with ``null_data``). ``naming``: how the node is named and its
    parents made (Curator's by default; see :class:`~pycurator._protocol.drivers.Naming`). With
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
        naming: Naming = CURATOR_NAMING,
        null_data: bool = False,
    ) -> None:
        self.client = client
        self.base_path = base_path
        self.driver = driver
        self.naming = naming
        self.null_data = null_data
        self.data = wire.default_node_data() if data is None else bytes(data)
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
            naming=self.naming,
            null_data=self.null_data,
        )

    # -- acquiring ---------------------------------------------------------------------------

    def acquire(self, timeout: float | None, driver: Driver | None = None) -> HeldNode | None:
        """Wait for the lock; our node when held, None when the timeout ran out first.

        ``timeout`` counts from this call, the create included; 0 creates, checks once, and
        deletes. The call returns within ``timeout`` plus at most :data:`DELETE_WAIT` (the
        clean-up's delete), whatever the connection does. On timeout, error or interruption our
        node is deleted (or its delete handed to the background) before returning, and an
        error reaches the caller unchanged. ``driver``: this acquire's driver, if not the
        engine's (the read side's, say, which depends on who asks).
        """
        return run(self.client, self.acquire_steps(timeout, driver))

    def acquire_steps(
        self, timeout: float | None, driver: Driver | None = None
    ) -> Steps[HeldNode | None]:
        """:meth:`acquire`, as steps."""
        check_client_type(self.client)
        yield CheckOpen(NOT_STARTED)
        driver = driver or self.driver
        deadline = Deadline(timeout)
        while True:
            try:
                node, decision = yield from self.create_node_steps(deadline, driver, decide=True)
            except DeadlineExpired:
                return None
            held = False
            wait = self._wait(node.path, decision, deadline, driver)
            try:
                held = yield from wait
                if held and (yield SessionId()) != node.session_id:
                    held = False  # deleted all the same: never a node left in a live session
                    raise NodeVanishedError(wire.node_name(node.path))
            except NodeVanishedError:
                continue  # our session ended while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    yield from self.delete_steps(node.path)
            return node if held else None

    @overload
    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: Literal[False] = False
    ) -> Steps[tuple[HeldNode, list[str] | None]]: ...

    @overload
    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: Literal[True]
    ) -> Steps[tuple[HeldNode, Decision | None]]: ...

    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: bool = False
    ) -> Steps[tuple[HeldNode, list[str] | Decision | None]]:
        """Create our protected node; also the children listed right after it, when they came
        in the same round trip (the listing is pipelined behind the create). With ``decide``,
        the driver's decision over that listing instead (:func:`decision_on_arrival`), so that
        a waiter never holds a listing, not even one waiting to be read.

        Raises :class:`DeadlineExpired` when the deadline passes first; a create still on its
        way then (or when the wait is interrupted) is undone when it lands. Whatever error ends
        this call, no node of ours is left: one made before the error is deleted first.
        """
        driver = driver or self.driver
        deadline = deadline.for_requests()
        naming = self.naming
        protected_id = wire.new_protected_id() if naming.protected else ""
        sequence = driver.node_sequence()
        data = b"" if self.on_revoke is not None else None if self.null_data else self.data
        sender: Sender = yield GetSender()
        claims: dict[str, object] | None = (yield Claims()) if naming.claims else None
        session_id: int | None = None
        prefix = naming.prefix(driver.token, session_id, protected_id)
        failures = 0
        while True:
            try:
                if failures:
                    found = yield from self._find_lost(prefix, deadline, claims)
                    if found is not None:
                        return found, None
                if naming.session:  # the name carries the session: the one the create is in
                    current = yield SessionId()
                    while current is None:  # between an expiry and the next session
                        yield from connected_steps(deadline)
                        current = yield SessionId()
                    if current != session_id:
                        session_id = current
                        prefix = naming.prefix(driver.token, session_id, protected_id)
                node_path = wire.join_path(self.base_path, prefix + (sequence or ""))
                create = yield Send(
                    CreateNode(node_path, data, self.acl, ephemeral=True, sequence=sequence is None)
                )
                if decide:
                    reduce = decision_on_arrival(create, driver)
                    listing = yield Send(ListChildren(self.base_path, reduce=reduce))
                else:
                    listing = yield Send(ListChildren(self.base_path))
                try:
                    created, stat = yield Await(create, deadline)
                except NoNodeError:
                    if naming.parents == "containers":
                        yield from _requests.container_parents_steps(node_path, self.acl, deadline)
                    else:
                        yield from _requests.persistent_parents_steps(node_path, self.acl, deadline)
                    continue
                except RETRYABLE:
                    raise  # the node may be made: the next try looks for it by its prefix
                except BaseException:
                    # the deadline passed, or the wait was interrupted (perhaps just as the
                    # answer came): undo what the create made, now or when it lands
                    create.rawlink(
                        functools.partial(self._undo_late_create, sender, prefix, claims)
                    )
                    raise
                node = HeldNode(self._child_path(created), stat.czxid, stat.ephemeralOwner)
                if naming.session and node.session_id != session_id:
                    # the session named ended before the create went out: the name is wrong
                    yield OweDelete(node.path)
                    continue
                if claims is not None and claims.setdefault(node.path, deadline) is not deadline:
                    # a recovery of another acquire of this client took it for its own lost
                    # create: that one's node, if made, is ours to find
                    failures += 1
                    continue
                try:
                    listed: list[str] | Decision | None = yield Await(listing, deadline)
                except (*RETRYABLE, DeadlineExpired):
                    listed = None  # the lock loop lists again, or gives up, and deletes
                except BaseException:
                    yield from self.delete_steps(node.path)
                    raise
                return node, listed
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    yield from connected_steps(deadline)
                except BaseException:
                    sender.start(self._orphans_steps(prefix, claims))
                    raise
            except BaseException:
                if failures:  # a create whose answer was lost may have made a node after all
                    sender.start(self._orphans_steps(prefix, claims))
                raise

    def _child_path(self, server_path: str) -> str:
        """The client's path of our node, from the one the server answers a create with (a
        child of the lock path, whatever the chroot)."""
        return wire.join_path(self.base_path, wire.node_name(server_path))

    def _undo_late_create(
        self, sender: Sender, prefix: str, claims: dict[str, object] | None, result: Any
    ) -> None:
        """A create we stopped waiting for has been answered: undo what it made."""
        try:
            created, _ = result.get_nowait()
        except (ConnectionLoss, OperationTimeoutError):
            sender.start(self._orphans_steps(prefix, claims))
        except Exception:
            return  # nothing was made, or it went with its session
        else:
            sender.owe_delete(self._child_path(created))

    def _find_lost(
        self, prefix: str, deadline: Deadline, claims: dict[str, object] | None
    ) -> Steps[HeldNode | None]:
        """Our node from an earlier create whose reply was lost, if the server made it.

        Under a protected name, a node with our prefix that belongs to an earlier session is
        deleted (CURATOR-498). Otherwise (``claims``) the node is one of our session's with
        ``prefix`` that no other acquire of the client has claimed, and it becomes ours; a
        node of another session is never touched.
        """
        try:
            children = yield Await((yield Send(ListChildren(self.base_path))), deadline)
        except NoNodeError:
            return None
        session_id = yield SessionId()
        for child in self.driver.sort(children) if claims is not None else children:
            path = wire.join_path(self.base_path, child)
            if not self.naming.made(child, prefix) or (claims is not None and path in claims):
                continue
            stat = yield Await((yield Send(NodeExists(path))), deadline)
            if stat is not None and stat.ephemeralOwner == session_id:
                if claims is None or claims.setdefault(path, deadline) is deadline:
                    return HeldNode(path, stat.czxid, stat.ephemeralOwner)
            elif stat is not None and claims is None:
                yield OweDelete(path)
        return None

    def _orphans_steps(self, prefix: str, claims: dict[str, object] | None) -> Steps[None]:
        """After a create that gave up: delete a node it may have made after all (in the
        background, once the client is connected): any with our protected prefix, or, under
        another naming (``claims``), any of our session with ``prefix`` that no acquire of the
        client claims."""
        with contextlib.suppress(ConnectionClosedError):
            children = yield from self.children_steps(Deadline(None))
            session_id = yield SessionId()
            for child in children:
                path = wire.join_path(self.base_path, child)
                if not self.naming.made(child, prefix):
                    continue
                if claims is not None:
                    if path in claims:
                        continue
                    # asked again after a connection loss: a node skipped would be left behind
                    stat = yield from resent_steps(NodeExists(path), Deadline(None))
                    if stat is None or stat.ephemeralOwner != session_id or path in claims:
                        continue
                yield OweDelete(path)

    def children_steps(self, deadline: Deadline, answer: Any = None) -> Steps[list[str]]:
        """The lock path's children, listed within ``deadline``; none if the path is gone (it
        went away with our node: our session expired). ``answer``: a listing already asked
        for."""
        try:
            children: list[str] = yield from resent_steps(
                ListChildren(self.base_path), deadline, answer
            )
        except NoNodeError:
            return []
        return children

    def _wait(
        self, node: str, decision: Decision | None, deadline: Deadline, driver: Driver
    ) -> Steps[bool]:
        """The lock loop: decide, watch the node named by the driver, wait, decide again.

        A waiter keeps O(1) state: its node, the node it watches, and whether that node's
        deletion alone gives it the lock (:attr:`Decision.then_holds`: nodes that sort before
        ours can only go away). Then one ``exists`` confirms that our node is still there, and
        the waiter right behind the holder takes over with O(1) bytes, whatever the length of
        the queue. Otherwise, and after a connection state change (our node may be gone with
        the session), the children are listed again, as Curator does. The watcher sends that
        first request as the deletion is read (:class:`_Watcher`). A wait that is interrupted
        drops its watch. ``decision``: the one made over the listing that came with our
        create, if any.
        """
        requests = deadline.for_requests()
        ours = wire.node_name(node)
        if decision is not None and decision.holds and self.on_revoke is None:
            return True  # held on the listing that came with the create: nothing to set up
        watcher = _Watcher((yield NewSignal()), (yield GetSender()))
        yield Listen(watcher.on_state)
        try:
            if self.on_revoke is not None:
                yield from self._watch_for_revocation(node, requests)
            confirmed = decision is not None  # decided over a listing made since our create
            while True:
                yield CheckOpen()
                if decision is None:
                    answer = watcher.take_answer()  # none after a state change, so first
                    watcher.state_changed = False
                    children = yield from self.children_steps(requests, answer)
                    decision, confirmed = driver.decide(driver.sort(children), ours), True
                    del children  # a waiter keeps no listing while it waits
                if decision.holds:
                    if not confirmed:
                        exists = yield from resent_steps(
                            NodeExists(node), requests, watcher.take_answer()
                        )
                        if exists is None:
                            raise NodeVanishedError(ours)
                    return True
                if deadline.expired():
                    return False  # checked before watching: a last try leaves no watch behind
                woken = yield from self._watch_and_wait(watcher, node, decision, driver, deadline)
                if woken is None:
                    return False
                decision = after_wake(decision, *woken, driver.relist_before_holding)
                confirmed = False
        finally:
            yield Unlisten(watcher.on_state)

    def _watch_and_wait(
        self, watcher: _Watcher, node: str, decision: Decision, driver: Driver, deadline: Deadline
    ) -> Steps[tuple[bool, bool] | None]:
        """Watch the node ``decision`` names and wait for an event: whether the node was
        deleted and whether the connection changed meanwhile; None when the deadline passed
        first (the watch is then dropped)."""
        assert decision.watch is not None
        watched = wire.join_path(self.base_path, decision.watch)
        ahead: Request
        if asks_first(decision, driver.relist_before_holding) == "exists":
            ahead = NodeExists(node)
        else:
            ahead = ListChildren(self.base_path)
        watcher.arm(watched, ahead)
        try:
            yield from watch_sent_steps(
                GetData(watched, watch=watcher.on_event), deadline.for_requests()
            )
        except NoNodeError:
            return True, watcher.state_changed  # gone before we could watch it
        try:
            woken = yield WaitSignal(watcher.wake, deadline.remaining())
        except BaseException:
            yield ForgetWatch(watched, watcher.on_event)
            raise
        if not woken:
            yield ForgetWatch(watched, watcher.on_event)
            return None
        return watcher.deleted, watcher.state_changed

    # -- revocation --------------------------------------------------------------------------

    def _watch_for_revocation(self, node: str, deadline: Deadline) -> Steps[None]:
        sender: Sender = yield GetSender()
        notices = sender.serial_queue()

        def on_change(event: WatchedEvent) -> None:
            if event.type == EventType.CHANGED:
                sender.send(GetData(node, watch=on_change)).rawlink(checked)

        def checked(result: Any) -> None:
            try:
                data, _ = result.get_nowait()
            except NoNodeError:
                return
            except Exception:  # connection trouble: the hold's monitor reports it
                log.warning("could not read %s for revocation", node)
                return
            callback = self.on_revoke
            if data == wire.REVOKE_MESSAGE and callback is not None:
                notices.post(callback)

        # the watch dies with our node, so a late answer leaves nothing behind
        yield Await((yield Send(GetData(node, watch=on_change))), deadline)

    # -- releasing and reading ---------------------------------------------------------------

    def release(self, node: str) -> None:
        """Delete our node (guaranteed: retried in the background if the connection is down)."""
        run(self.client, self.delete_steps(node))

    def delete_steps(self, node: str) -> Steps[None]:
        """:meth:`release`, as steps: also how an acquire that gave up deletes its node. Under
        a naming whose nodes are claimed, the claim goes with the node."""
        if not self.naming.claims:
            yield from delete_node_steps(node)
            return
        claims = yield Claims()
        try:
            yield from delete_node_steps(node)
        finally:
            claims.pop(node, None)

    def sorted_children_steps(self, deadline: Deadline | None = None) -> Steps[list[str]]:
        """:meth:`sorted_children`, as steps (``deadline``: by default the client's session
        timeout from now)."""
        if deadline is None:
            deadline = Deadline(kazoo_internals.session_timeout(self.client))
        try:
            children: list[str] = yield from read_sent_steps(ListChildren(self.base_path), deadline)
        except NoNodeError:
            return []
        return self.driver.sort(children)

    def sorted_children(self) -> list[str]:
        """All children of the lock path in queue order; empty if the path does not exist.

        A read that rides through a reconnect (see
        :func:`~pycurator._protocol.waits.read_sent_steps`).
        """
        return run(self.client, self.sorted_children_steps())

    def participant_nodes(self) -> list[str]:
        """Full paths of every child of the lock path, in queue order."""
        return wire.full_paths(self.base_path, self.sorted_children())


def decision_on_arrival(create: Any, driver: Driver) -> Callable[[list[str]], Decision | None]:
    """The reduction of the listing pipelined behind our ``create`` (an async result): the
    driver's decision over it, made by the connection thread as it reads the listing, when the
    create's answer (read just before, the server answering in order) is already in. None when
    there is nothing to decide on: the create failed, our node is not in the listing (our
    session ended meanwhile), or the names do not sort; the lock loop then lists again and
    decides there, as it would have."""

    def reduce(children: list[str]) -> Decision | None:
        # read without the result's lock: the acquiring thread may be taking it as it wakes
        if not create.ready() or not create.successful():
            return None
        created, _ = create.value
        try:
            return driver.decide(driver.sort(children), wire.node_name(created))
        except Exception:
            return None

    return reduce


class _Watcher:
    """What wakes a waiting acquire: the watched node's deletion, a connection state change, or
    another event of its watch; and the request the loop makes first after the deletion, which
    the watcher sends as it reads the notification (a thread hand-off sooner; the same request,
    sent no earlier than the deletion was seen). Only events of the node watched now count."""

    def __init__(self, wake: Signal, sender: Sender) -> None:
        self.wake = wake
        self.watched: str | None = None
        self.deleted = False
        self.state_changed = False
        self._sender = sender
        self._ahead: Request | None = None
        self._answer: Any = None

    def arm(self, watched: str, ahead: Request) -> None:
        """Watch ``watched`` next; ``ahead``: the request to send once it is deleted."""
        self.watched, self._ahead, self._answer = watched, ahead, None
        self.deleted = False
        self.wake.clear()
        if self.state_changed:
            self.wake.set()  # changed since the listing: decide again at once

    def take_answer(self) -> Any:
        """The request sent ahead, if it is still good (no connection change since)."""
        answer, self._answer = self._answer, None
        return None if self.state_changed else answer

    @runs_inline
    def on_event(self, event: WatchedEvent) -> None:
        if event.path is not None and event.path != self.watched:
            return  # left over from an earlier wait
        if event.type == EventType.DELETED:
            self.deleted = True
            ahead, self._ahead = self._ahead, None
            if ahead is not None:
                with contextlib.suppress(Exception):  # then the loop sends it, and sees why
                    self._answer = self._sender.send(ahead)
                # wake the waiter once the answer is in, where that takes no extra hand-off
                if self._answer is not None and link_inline(self._answer, self._answered):
                    return
        self.wake.set()

    @runs_inline
    def _answered(self, _: Any) -> None:
        self.wake.set()

    def on_state(self, state: str) -> None:
        self.state_changed = True
        self.wake.set()


__all__ = ["MAX_NODE_DATA", "HeldNode", "LockEngine", "decision_on_arrival"]
