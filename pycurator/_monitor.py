"""Watching a held lock node: tell the holder when it is lost, and when it is ours again.

Curator's ``ConnectionStateErrorPolicy`` decides what counts as lost:

- ``standard``: a SUSPENDED connection already counts (we cannot know the node is still ours);
  once RECONNECTED in the same session, the node is checked, and the hold counts again if it
  still exists and belongs to this session.
- ``session``: only the session's end (LOST) or the node's deletion count.

A node deleted by anyone, or the session's expiry, is final.

Connection states reach the monitor at once (a connection listener). The watch that reports the
node's deletion by someone else costs a request and an event, which would make a short hold half
again as dear on loopback; so it is set once a hold has lasted :data:`WATCH_DELAY`, or at once
when the holder asks (:meth:`HoldMonitor.confirm`, behind ``is_held()`` and ``check()``).

No monitor has a thread of its own: after a reconnect, one worker of the handler's pool sends
the check of every suspended hold in turn (requests, not threads), and the answers decide on
kazoo's completion thread. Each move and the hold's end are told to the hold's
:class:`~pycurator._observe.HoldReport` (a loss: a WARNING and the listeners' ``LOST``).
"""

from __future__ import annotations

import enum
import heapq
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

from . import _kazoo
from ._background import requests_queue
from ._checks import CONNECTION_POLICIES, ConnectionPolicy, check_policy
from ._deadline import Deadline, DeadlineExpired
from ._observe import CLIENT_STOPPED, HoldReport
from ._steps import Await, Steps, run

log = logging.getLogger("pycurator")

#: How long a hold lasts before its node's deletion watch is set without being asked for.
WATCH_DELAY = 0.05
#: The longest :meth:`HoldMonitor.confirm` (``is_held()``, ``check()``) waits for the server.
CONFIRM_WAIT = 2.0


class HoldState(enum.Enum):
    """Where a hold stands."""

    HELD = "held"
    SUSPENDED = "suspended"  # standard policy: the connection is down, the node may be ours
    LOST = "lost"  # final: the node is gone or the session ended
    RELEASED = "released"


class HoldMonitor:
    """Follows one held node from acquire to release.

    ``on_change(state, reason)`` runs (on a kazoo worker or event thread; keep it short) each time
    the state moves between HELD and not held. ``session_id`` is the session that made the node,
    so a session that ended before the monitor started is seen too. The monitor listens to the
    connection at once and watches the node from :data:`WATCH_DELAY` into the hold, or from the
    first :meth:`confirm`; :meth:`close` removes the listener, and the watch is spent when the
    node is deleted. ``report`` is told of each move and of the end (see
    :mod:`pycurator._observe`).
    """

    __slots__ = (
        "_lock",
        "_on_change",
        "_session_id",
        "_watching",
        "client",
        "node",
        "policy",
        "reason",
        "report",
        "state",
    )

    def __init__(
        self,
        client: KazooClient,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        session_id: int,
        report: HoldReport,
    ) -> None:
        self.client = client
        self.node = node
        self.policy = policy
        self.report = report
        self.state = HoldState.HELD
        self.reason = ""
        self._on_change = on_change
        self._lock = client.handler.lock_object()
        self._watching = False  # a watch is set on the node (or kazoo re-sets it on reconnect)
        self._session_id = session_id
        client.add_listener(self._on_connection)
        # what the listener did not hear: changes between the node's creation and now
        current = client.client_id[0] if client.client_id else None
        if current != session_id:
            self._move(HoldState.LOST, "session expired")
        elif client.state != KazooState.CONNECTED and policy == "standard":
            self._move(HoldState.SUSPENDED, "connection suspended")
        _deferred_watches(client.handler).add(self)

    def close(self, reason: str = "") -> None:
        """Stop following the node: the hold has ended (released, or a term that ended for
        ``reason``)."""
        with self._lock:
            self.state = HoldState.RELEASED
        self.client.remove_listener(self._on_connection)
        self.report.released(reason)

    @property
    def held(self) -> bool:
        """The state as last reported: True unless a loss has been seen (no request)."""
        return self.state is HoldState.HELD

    def confirm(self) -> bool:
        """Like :attr:`held`, but the node's deletion is seen too: before the watch is set, one
        ``exists`` sets it and checks the node. Waits at most :data:`CONFIRM_WAIT` seconds for
        the answer, and answers False (not known to be ours) when it does not come in time."""
        return run(self.client, self.confirm_steps())

    def confirm_steps(self) -> Steps[bool]:
        """:meth:`confirm`, as steps."""
        if self.state is HoldState.HELD and not self._watching and self.client.connected:
            result = self.client.exists_async(self.node, watch=self._on_node_event)
            try:
                stat = yield Await(result, Deadline(CONFIRM_WAIT))
            except DeadlineExpired:
                result.rawlink(self._on_check)
                return False
            except KazooException:
                return self.held  # the connection listener reports connection trouble
            except BaseException:
                result.rawlink(self._on_check)
                raise
            self._checked(stat)
        return self.held

    def _watch(self) -> None:
        """Set the node's watch without waiting (from the deferred-watch worker)."""
        if self.state is HoldState.HELD and not self._watching:
            self.client.exists_async(self.node, watch=self._on_node_event).rawlink(self._on_check)

    def _move(self, state: HoldState, reason: str) -> None:
        """Change state; ``on_change`` hears of a loss once (HELD to SUSPENDED or LOST, not
        SUSPENDED to LOST again) and of every return to HELD."""
        with self._lock:
            if self.state in (HoldState.RELEASED, HoldState.LOST) or self.state is state:
                return
            was_held = self.state is HoldState.HELD
            self.state = state
            self.reason = reason
        if state is HoldState.LOST:
            self.client.remove_listener(self._on_connection)
        if state is HoldState.HELD:
            self.report.regained(reason)
        else:  # a suspension counts as a loss under the standard policy, the end after it again
            self.report.lost(reason)
        if not was_held and state is not HoldState.HELD:
            return
        try:
            self._on_change(state, reason)
        except Exception:
            log.exception("lock state callback failed for %s", self.node)

    def _on_check(self, result: object) -> None:
        try:
            stat = result.get()  # type: ignore[attr-defined]
        except KazooException:
            return  # the connection listener reports connection trouble, and re-arms
        self._checked(stat)

    def _checked(self, stat: ZnodeStat | None) -> None:
        self._watching = True
        if stat is None:
            self._move(HoldState.LOST, "lock node deleted")

    def _on_node_event(self, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self._move(HoldState.LOST, "lock node deleted")
        elif event.type in (EventType.CHANGED, EventType.CREATED):
            self.client.exists_async(self.node, watch=self._on_node_event)

    def _on_connection(self, state: str) -> bool:
        if state == KazooState.LOST:
            stopped = _kazoo.is_stopped(self.client)
            self._move(HoldState.LOST, CLIENT_STOPPED if stopped else "session expired")
        elif state == KazooState.SUSPENDED:
            if self.policy == "standard":
                self._move(HoldState.SUSPENDED, "connection suspended")
        elif self.state is HoldState.SUSPENDED or not self._watching:
            # not from kazoo's connection thread, which must not send (it alone empties the
            # pipe that wakes it): one worker sends the requests of every hold in turn
            requests_queue(self.client.handler).post(self._after_reconnect)
        return False

    def _after_reconnect(self) -> None:
        """After a reconnect: a suspended hold is ours again only if its node exists and this
        session made it; a hold not yet watched gets its watch. Sends, does not wait."""
        if self.state is HoldState.SUSPENDED:
            result = self.client.exists_async(self.node, watch=self._on_node_event)
            result.rawlink(self._verified)
        else:
            self._watch()

    def _verified(self, result: Any) -> None:
        try:
            stat = result.get_nowait()
        except KazooException:
            return  # disconnected again: the next CONNECTED verifies
        current = self.client.client_id[0] if self.client.client_id else None
        self._watching = stat is not None
        if stat is None or stat.ephemeralOwner != self._session_id or current != self._session_id:
            self._move(HoldState.LOST, "lock node not ours after reconnect")
        else:
            self._move(HoldState.HELD, "reconnected in the same session")


class _DeferredWatches:
    """Sets each monitor's node watch once its hold has lasted :data:`WATCH_DELAY`; holds
    released by then cost nothing.

    One per kazoo handler, so the watch is set from that handler's kind of unit: a worker it
    spawns (a thread, a greenlet or a green thread) waits with its sleep and events, and ends
    once nothing is due (the next hold spawns another).
    """

    def __init__(self, handler: Any) -> None:
        self._due: list[tuple[float, int, HoldMonitor]] = []  # a heap
        self._added = itertools.count()
        self._lock = handler.lock_object()
        self._wake = handler.event_object()
        self._running = False

    def add(self, monitor: HoldMonitor) -> None:
        due = time.monotonic() + WATCH_DELAY
        with self._lock:
            heapq.heappush(self._due, (due, next(self._added), monitor))
            start = not self._running
            self._running = True
            if not start and self._due[0][2] is monitor:
                self._wake.set()  # the worker sleeps until a later time
        if start:
            monitor.client.handler.spawn(self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._due:
                    self._running = False
                    return
                delay = self._due[0][0] - time.monotonic()
                due = []
                if delay > 0:
                    self._wake.clear()
                else:
                    # one wake-up serves every monitor due within the next fifth of the delay:
                    # a loop of short holds then wakes the worker a few times per delay, not
                    # per hold
                    soon = time.monotonic() + WATCH_DELAY / 5
                    while self._due and self._due[0][0] <= soon:
                        due.append(heapq.heappop(self._due)[2])
            if delay > 0:
                self._wake.wait(delay)
                continue
            for monitor in due:  # each skips itself when released or lost
                try:
                    monitor._watch()
                except Exception:  # a stopped client, say: its holds are lost otherwise
                    log.debug("could not watch %s", monitor.node, exc_info=True)


_DEFERRED: weakref.WeakKeyDictionary[Any, _DeferredWatches] = weakref.WeakKeyDictionary()
# held for a lookup only, never across a switch, so a plain lock serves every handler
_DEFERRED_LOCK = threading.Lock()


def _deferred_watches(handler: Any) -> _DeferredWatches:
    with _DEFERRED_LOCK:
        deferred = _DEFERRED.get(handler)
        if deferred is None:
            deferred = _DEFERRED[handler] = _DeferredWatches(handler)
        return deferred


def _forked() -> None:
    global _DEFERRED_LOCK
    _DEFERRED.clear()  # no worker survives a fork
    _DEFERRED_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forked)


__all__ = [
    "CONFIRM_WAIT",
    "CONNECTION_POLICIES",
    "WATCH_DELAY",
    "ConnectionPolicy",
    "HoldMonitor",
    "HoldState",
    "check_policy",
]
