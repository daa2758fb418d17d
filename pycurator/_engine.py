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
from typing import Any, Literal, overload

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
)
from kazoo.protocol.states import EventType, WatchedEvent

from . import _requests, _wire
from ._calls import (
    RETRYABLE,
    delete_guaranteed,
    delete_guaranteed_later,
    delete_guaranteed_steps,
    forget_watch,
    read_steps,
    retrying_steps,
    wait_connected_steps,
    watch_steps,
)
from ._checks import check_client
from ._deadline import Deadline, DeadlineExpired
from ._drivers import Decision, Driver, NodeVanishedError, after_wake, asks_first
from ._runtime import runtime_of, services_of
from ._steps import Await, NewSignal, Signal, Steps, WaitSignal, run, start
from .handlers import link_inline, runs_inline

log = logging.getLogger("pycurator")

#: The largest node data ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1).
MAX_NODE_DATA = 0xFFFFF
#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10


@dataclass(frozen=True, slots=True)
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
        check_client(self.client)
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
        client = self.client
        driver = driver or self.driver
        deadline = deadline.for_requests()
        prefix = _wire.protected_prefix(_wire.new_protected_id())
        sequence = driver.node_sequence()
        name = prefix + driver.token + (sequence or "")
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
                if decide:
                    listing = _requests.reduced_children_async(
                        client, self.base_path, decision_on_arrival(create, driver)
                    )
                else:
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
                    listed: list[str] | Decision | None = yield Await(listing, deadline)
                except (*RETRYABLE, DeadlineExpired):
                    listed = None  # the lock loop lists again, or gives up, and deletes
                except BaseException:
                    yield from delete_guaranteed_steps(client, node.path)
                    raise
                return node, listed
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    yield from wait_connected_steps(client, deadline)
                except BaseException:
                    self._delete_protected_orphans(prefix)
                    raise

    def _undo_late_create(self, prefix: str, result: Any) -> None:
        """A create we stopped waiting for has been answered: undo what it made."""
        try:
            created, _ = result.get()
        except (ConnectionLoss, OperationTimeoutError):
            self._delete_protected_orphans(prefix)
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
        start(self.client, self._orphans_steps(prefix))

    def _orphans_steps(self, prefix: str) -> Steps[None]:
        with contextlib.suppress(ConnectionClosedError):
            for child in (yield from self.children_steps(Deadline(None))):
                if child.startswith(prefix):
                    delete_guaranteed_later(self.client, _wire.join_path(self.base_path, child))

    def children_steps(self, deadline: Deadline, answer: Any = None) -> Steps[list[str]]:
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
        client = self.client
        requests = deadline.for_requests()
        ours = _wire.node_name(node)
        if decision is not None and decision.holds and self.on_revoke is None:
            return True  # held on the listing that came with the create: nothing to set up
        watcher = _Watcher((yield NewSignal()))
        runtime = runtime_of(client)
        runtime.listen(watcher.on_state)
        try:
            if self.on_revoke is not None:
                yield from self._watch_for_revocation(node, requests)
            confirmed = decision is not None  # decided over a listing made since our create
            while True:
                runtime.check_open()
                if decision is None:
                    watcher.state_changed = False
                    children = yield from self.children_steps(requests, watcher.take_answer())
                    decision, confirmed = driver.decide(driver.sort(children), ours), True
                    del children  # a waiter keeps no listing while it waits
                if decision.holds:
                    if not confirmed:
                        exists = yield from retrying_steps(
                            client,
                            lambda: client.exists_async(node),
                            requests,
                            watcher.take_answer(),
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
            runtime.unlisten(watcher.on_state)

    def _watch_and_wait(
        self, watcher: _Watcher, node: str, decision: Decision, driver: Driver, deadline: Deadline
    ) -> Steps[tuple[bool, bool] | None]:
        """Watch the node ``decision`` names and wait for an event: whether the node was
        deleted and whether the connection changed meanwhile; None when the deadline passed
        first (the watch is then dropped)."""
        client = self.client
        assert decision.watch is not None
        watched = _wire.join_path(self.base_path, decision.watch)
        if asks_first(decision, driver.relist_before_holding) == "exists":
            ahead = functools.partial(client.exists_async, node)
        else:
            ahead = functools.partial(client.get_children_async, self.base_path)
        watcher.arm(watched, ahead)
        try:
            yield from watch_steps(client, watched, watcher.on_event, deadline.for_requests())
        except NoNodeError:
            return True, watcher.state_changed  # gone before we could watch it
        try:
            woken = yield WaitSignal(watcher.wake, deadline.remaining())
        except BaseException:
            forget_watch(client, watched, watcher.on_event)
            raise
        if not woken:
            forget_watch(client, watched, watcher.on_event)
            return None
        return watcher.deleted, watcher.state_changed

    # -- revocation --------------------------------------------------------------------------

    def _watch_for_revocation(self, node: str, deadline: Deadline) -> Steps[None]:
        client = self.client
        notices = services_of(client.handler).serial_queue()

        def on_change(event: WatchedEvent) -> None:
            if event.type == EventType.CHANGED:
                client.get_async(node, watch=on_change).rawlink(checked)

        def checked(result: Any) -> None:
            try:
                data, _ = result.get_nowait()
            except NoNodeError:
                return
            except Exception:  # connection trouble: the hold's monitor reports it
                log.warning("could not read %s for revocation", node)
                return
            callback = self.on_revoke
            if data == _wire.REVOKE_MESSAGE and callback is not None:
                notices.post(callback)

        # the watch dies with our node, so a late answer leaves nothing behind
        yield Await(client.get_async(node, watch=on_change), deadline)

    # -- releasing and reading ---------------------------------------------------------------

    def release(self, node: str) -> None:
        """Delete our node (guaranteed: retried in the background if the connection is down)."""
        delete_guaranteed(self.client, node)

    def sorted_children_steps(self, deadline: Deadline | None = None) -> Steps[list[str]]:
        """:meth:`sorted_children`, as steps (``deadline``: by default the client's session
        timeout from now)."""
        client = self.client
        try:
            children: list[str] = yield from read_steps(
                client, lambda: client.get_children_async(self.base_path), deadline
            )
        except NoNodeError:
            return []
        return self.driver.sort(children)

    def sorted_children(self) -> list[str]:
        """All children of the lock path in queue order; empty if the path does not exist.

        A read that rides through a reconnect (see :func:`~pycurator._calls.read_steps`).
        """
        return run(self.client, self.sorted_children_steps())

    def participant_nodes(self) -> list[str]:
        """Full paths of every child of the lock path, in queue order."""
        return _wire.full_paths(self.base_path, self.sorted_children())


def decision_on_arrival(create: Any, driver: Driver) -> Callable[[list[str]], Decision | None]:
    """The reduction of the listing pipelined behind our ``create`` (an async result): the
    driver's decision over it, made by the connection thread as it reads the listing, when the
    create's answer (read just before, the server answering in order) is already in. None when
    there is nothing to decide on: the create failed, our node is not in the listing (our
    session ended meanwhile), or the names do not sort; the lock loop then lists again and
    decides there, as it would have."""

    def reduce(children: list[str]) -> Decision | None:
        if not create.ready() or not create.successful():
            return None
        created, _ = create.value
        try:
            return driver.decide(driver.sort(children), _wire.node_name(created))
        except Exception:
            return None

    return reduce


class _Watcher:
    """What wakes a waiting acquire: the watched node's deletion, a connection state change, or
    another event of its watch; and the request the loop makes first after the deletion, which
    the watcher sends as it reads the notification (a thread hand-off sooner; the same request,
    sent no earlier than the deletion was seen). Only events of the node watched now count."""

    def __init__(self, wake: Signal) -> None:
        self.wake = wake
        self.watched: str | None = None
        self.deleted = False
        self.state_changed = False
        self._ahead: Callable[[], Any] | None = None
        self._answer: Any = None

    def arm(self, watched: str, ahead: Callable[[], Any]) -> None:
        """Watch ``watched`` next; ``ahead`` sends the request to make once it is deleted."""
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
            send, self._ahead = self._ahead, None
            if send is not None:
                with contextlib.suppress(Exception):  # then the loop sends it, and sees why
                    self._answer = send()
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
