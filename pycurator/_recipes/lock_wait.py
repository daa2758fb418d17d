"""The lock engine's waiting: the lock loop (decide, watch the node the driver names, wait, decide
again), the watcher that wakes it, and the watch for Curator's revocation message; as steps
(:mod:`pycurator._protocol.steps`), over the nodes of :mod:`pycurator._recipes.lock_nodes`.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, WatchedEvent

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.drivers import Decision, Driver, NodeVanishedError, after_wake, asks_first
from .._protocol.requests import GetData, ListChildren, NodeExists, Request
from .._protocol.steps import (
    Await,
    CheckOpen,
    ForgetWatch,
    GetTransport,
    Listen,
    NewSignal,
    Send,
    Steps,
    Unlisten,
    WaitSignal,
    link_inline,
)
from .._protocol.transport import Signal, Transport, runs_inline
from .._protocol.waits import resent_steps, watch_sent_steps
from .lock_nodes import LockNodes

log = logging.getLogger("pycurator")


def wait_steps(
    nodes: LockNodes, node: str, decision: Decision | None, deadline: Deadline, driver: Driver
) -> Steps[bool]:
    """The lock loop: decide, watch the node named by the driver, wait, decide again.

    A waiter keeps O(1) state: its node, the node it watches, and whether that node's
    deletion alone gives it the lock (:attr:`Decision.then_holds`: nodes that sort before
    ours can only go away). Then one ``exists`` confirms that our node is still there, and
    the waiter right behind the holder takes over with O(1) bytes, whatever the length of
    the queue. Otherwise, and after a connection state change (our node may be gone with
    the session), the children are listed again, as Curator does. The watcher sends that
    first request as the deletion is read (:class:`Watcher`). A wait that is interrupted
    drops its watch. ``decision``: the one made over the listing that came with our
    create, if any.
    """
    requests = deadline.for_requests()
    ours = wire.node_name(node)
    if decision is not None and decision.holds and nodes.on_revoke is None:
        return True  # held on the listing that came with the create: nothing to set up
    watcher = Watcher((yield NewSignal()), (yield GetTransport()))
    yield Listen(watcher.on_state)
    try:
        if nodes.on_revoke is not None:
            yield from _watch_for_revocation(nodes, node, requests)
        confirmed = decision is not None  # decided over a listing made since our create
        while True:
            yield CheckOpen()
            if decision is None:
                answer = watcher.take_answer()  # none after a state change, so first
                watcher.state_changed = False
                children = yield from nodes.children_steps(requests, answer)
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
            woken = yield from _watch_and_wait(nodes, watcher, node, decision, driver, deadline)
            if woken is None:
                return False
            decision = after_wake(decision, *woken, driver.relist_before_holding)
            confirmed = False
    finally:
        yield Unlisten(watcher.on_state)


def _watch_and_wait(
    nodes: LockNodes,
    watcher: Watcher,
    node: str,
    decision: Decision,
    driver: Driver,
    deadline: Deadline,
) -> Steps[tuple[bool, bool] | None]:
    """Watch the node ``decision`` names and wait for an event: whether the node was
    deleted and whether the connection changed meanwhile; None when the deadline passed
    first (the watch is then dropped)."""
    assert decision.watch is not None
    watched = wire.join_path(nodes.base_path, decision.watch)
    ahead: Request
    if asks_first(decision, driver.relist_before_holding) == "exists":
        ahead = NodeExists(node)
    else:
        ahead = ListChildren(nodes.base_path)
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


def _watch_for_revocation(nodes: LockNodes, node: str, deadline: Deadline) -> Steps[None]:
    transport: Transport = yield GetTransport()
    notices = transport.serial_queue()

    def on_change(event: WatchedEvent) -> None:
        if event.type == EventType.CHANGED:
            transport.send(GetData(node, watch=on_change)).rawlink(checked)

    def checked(result: Any) -> None:
        try:
            data, _ = result.get_nowait()
        except NoNodeError:
            return
        except Exception:  # connection trouble: the hold's monitor reports it
            log.warning("could not read %s for revocation", node)
            return
        callback = nodes.on_revoke
        if data == wire.REVOKE_MESSAGE and callback is not None:
            notices.post(callback)

    # the watch dies with our node, so a late answer leaves nothing behind
    yield Await((yield Send(GetData(node, watch=on_change))), deadline)


class Watcher:
    """What wakes a waiting acquire: the watched node's deletion, a connection state change, or
    another event of its watch; and the request the loop makes first after the deletion, which
    the watcher sends as it reads the notification (a thread hand-off sooner; the same request,
    sent no earlier than the deletion was seen). Only events of the node watched now count."""

    def __init__(self, wake: Signal, transport: Transport) -> None:
        self.wake = wake
        self.watched: str | None = None
        self.deleted = False
        self.state_changed = False
        self._transport = transport
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
                    self._answer = self._transport.send(ahead)
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


__all__ = ["Watcher", "wait_steps"]
