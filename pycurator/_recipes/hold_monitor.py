"""Watching a held lock node: tell the holder when it is lost, and when it is ours again.

Curator's ``ConnectionStateErrorPolicy`` decides what counts as lost:

- ``standard``: a SUSPENDED connection already counts (we cannot know the node is still ours);
  once RECONNECTED in the same session, the node is checked, and the hold counts again if it
  still exists and belongs to this session.
- ``session``: only the session's end (LOST) or the node's deletion count.

A node deleted by anyone, or the session's expiry, is final; so is every loss of a hold that
cannot come back (``once``: a term of leadership, which ends at the suspension, as Curator's
latch and selector end it, and is never resumed: a latch begins a new one).

Connection states reach the monitor at once (a connection listener). The watch that reports the
node's deletion by someone else costs a request and an event, which would make a short hold half
again as dear on loopback; so it is set once a hold has lasted :data:`WATCH_DELAY`, or at once
when the holder asks (:meth:`HoldMonitor.confirm_steps`, behind ``is_held()`` and ``check()``).

The monitor never calls kazoo. It confirms as steps (:meth:`HoldMonitor.confirm_steps`,
:mod:`pycurator._protocol.steps`); it listens, and its callbacks send from kazoo's threads,
through a :class:`~pycurator._protocol.transport.Transport`: the runner's, when the monitor is
made by steps (:meth:`HoldMonitor.follow_steps`, on which a scripted server stands in for the
client in tests), else the one it is made with. No monitor has a
thread of its own: it listens to the client's connection; the handler's one delayed-call unit
sets the watches of lasting holds; after a reconnect, one worker of the handler's pool sends the
check of every suspended hold in turn (requests, not threads), and the answers decide on kazoo's
completion thread. Each move and the hold's end are told to the hold's
:class:`~pycurator._recipes.reports.HoldReport` (a loss: a WARNING and the listeners' ``LOST``).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionClosedError, KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

from .._protocol.checks import CONNECTION_POLICIES, ConnectionPolicy, check_policy
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.requests import NodeExists
from .._protocol.steps import Await, GetTransport, IsConnected, Send, Steps
from .._protocol.transport import CLIENT_STOPPED, Transport, end_reason, ignore
from .reports import HoldReport

log = logging.getLogger("pycurator")

#: How long a hold lasts before its node's deletion watch is set without being asked for.
WATCH_DELAY = 0.05
#: The longest :meth:`HoldMonitor.confirm_steps` (``is_held()``, ``check()``) waits for the server.
CONFIRM_WAIT = 2.0
#: Why a hold whose node is gone is lost.
NODE_DELETED = "lock node deleted"


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
    so a session that ended before the monitor started is seen too. With ``once``, the first
    loss is final: a suspension that ends does not make the hold HELD again (a term of
    leadership, which ends at the suspension). The monitor listens to the connection at once
    and watches the node from :data:`WATCH_DELAY` into the hold, or from the first
    :meth:`confirm_steps`; :meth:`close` removes the listener, and the watch is spent when the
    node is deleted. ``report`` is told of each move and of the end (see
    :mod:`pycurator._recipes.reports`).
    """

    __slots__ = (
        "_lock",
        "_on_change",
        "_once",
        "_removals",
        "_session_id",
        "_via",
        "_watching",
        "node",
        "policy",
        "reason",
        "report",
        "state",
        "transport",
    )

    _via: Transport

    def __init__(
        self,
        transport: Transport,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        session_id: int,
        report: HoldReport,
        *,
        once: bool = False,
    ) -> None:
        self._setup(transport, node, policy, on_change, session_id, report, once)
        self._start(transport)

    @classmethod
    def follow_steps(
        cls,
        transport: Transport,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        session_id: int,
        report: HoldReport,
        *,
        once: bool = False,
    ) -> Steps[HoldMonitor]:
        """The monitor, made by steps (the constructor runs the same on ``transport``): it
        follows the node once they end. ``transport`` gives only its handler's lock here."""
        monitor = cls.__new__(cls)
        monitor._setup(transport, node, policy, on_change, session_id, report, once)
        monitor._start((yield GetTransport()))
        return monitor

    def _setup(
        self,
        transport: Transport,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        session_id: int,
        report: HoldReport,
        once: bool,
    ) -> None:
        self.transport = transport
        self.node = node
        self.policy = policy
        self.report = report
        self.state = HoldState.HELD
        self.reason = ""
        self._on_change = on_change
        self._lock = transport.lock_object()
        self._watching = False  # a watch is set on the node (kazoo drops it with the connection)
        self._session_id = session_id
        self._once = once

    def _start(self, via: Transport) -> None:
        """Listen through ``via`` (the runner's transport, kept for the callbacks), take in
        what the listener did not hear (changes between the node's creation and now), and have
        the node watched once the hold has lasted. Sends nothing: it runs for every hold, so it
        is done by calls rather than steps, as the callbacks do."""
        self._via = via
        via.listen(self._on_connection)
        if via.session_id() != self._session_id:
            self._move(HoldState.LOST, end_reason(via))
        elif self.policy == "standard" and not via.connected():
            self._move(HoldState.SUSPENDED, "connection suspended")
        via.call_batched(WATCH_DELAY, HoldMonitor._watch_later, self)

    def close(self, reason: str = "") -> None:
        """Stop following the node: the hold has ended (released, or a term that ended for
        ``reason``)."""
        with self._lock:
            self.state = HoldState.RELEASED
            # nothing more is told: the owner (often in a cycle with us through the callback,
            # which only the garbage collector would free) is let go
            self._on_change = ignore
        self._via.unlisten(self._on_connection)
        self.report.released(reason)

    @property
    def held(self) -> bool:
        """The state as last reported: True unless a loss has been seen (no request)."""
        return self.state is HoldState.HELD

    def confirm_steps(self) -> Steps[bool]:
        """Like :attr:`held`, but the node's deletion is seen too: before the watch is set, one
        ``exists`` sets it and checks the node. Waits at most :data:`CONFIRM_WAIT` seconds for
        the answer, and answers False (not known to be ours) when it does not come in time. A
        stopped client's hold is lost."""
        if self.state is HoldState.HELD and not self._watching and (yield IsConnected()):
            answer = yield Send(self._exists())
            try:
                stat = yield Await(answer, Deadline(CONFIRM_WAIT))
            except DeadlineExpired:
                answer.rawlink(self._on_check)
                return False
            except ConnectionClosedError:
                self._move(HoldState.LOST, CLIENT_STOPPED)  # its session ends with it
                return False
            except KazooException:
                return self.held  # the connection listener reports connection trouble
            except BaseException:
                answer.rawlink(self._on_check)
                raise
            self._checked(stat)
        return self.held

    def _watch(self) -> None:
        """Set the node's watch without waiting (once connected: the reconnect sets it)."""
        if self.state is HoldState.HELD and not self._watching and self._via.connected():
            self._send_exists().rawlink(self._on_check)

    def _watch_later(self) -> None:
        """:meth:`_watch`, once the hold has lasted :data:`WATCH_DELAY` (by the handler's
        delayed-call unit); a hold released or lost by then costs nothing."""
        try:
            self._watch()
        except Exception:  # a stopped client, say: its holds are lost otherwise
            log.debug("could not watch %s", self.node, exc_info=True)

    def _move(self, state: HoldState, reason: str) -> None:
        """Change state; ``on_change`` hears of a loss once (HELD to SUSPENDED or LOST, not
        SUSPENDED to LOST again) and of every return to HELD."""
        with self._lock:
            if self.state in (HoldState.RELEASED, HoldState.LOST) or self.state is state:
                return
            if self._once and state is HoldState.HELD:
                return  # a hold that cannot come back: its first loss ended it
            was_held = self.state is HoldState.HELD
            # one loss, one story: on_change heard the suspension, check() tells what followed
            suspended = self.state is HoldState.SUSPENDED and state is HoldState.LOST
            self.state = state
            self.reason = f"{self.reason}, then {reason}" if suspended else reason
            on_change = self._on_change  # told even if closed from now on, as it moved first
        if state is HoldState.LOST:
            self._via.unlisten(self._on_connection)
        if state is HoldState.HELD:
            self.report.regained(reason)
        else:  # a suspension counts as a loss under the standard policy, the end after it again
            self.report.lost(reason)
        if not was_held and state is not HoldState.HELD:
            return
        try:
            on_change(state, reason)
        except Exception:
            log.exception("lock state callback failed for %s", self.node)

    def _on_check(self, answer: Any) -> None:
        try:
            stat = answer.get_nowait()
        except KazooException:
            return  # the connection listener reports connection trouble, and re-arms
        self._checked(stat)

    def _exists(self) -> NodeExists:
        """The ``exists`` that checks the node and sets its watch, about to be sent: the watch
        removals so far are noted, for :meth:`_set`."""
        self._removals = self._via.watch_removals()
        return NodeExists(self.node, watch=self._on_node_event)

    def _send_exists(self) -> Any:
        """Send :meth:`_exists` without waiting."""
        return self._via.send(self._exists())

    def _set(self) -> None:
        """The watch is set, unless another watcher of the client had the server drop the
        node's watch meanwhile (one per path and session): then it is set again."""
        self._watching = self._via.watch_removals() == self._removals
        if not self._watching:
            self._watch()

    def _checked(self, stat: ZnodeStat | None) -> None:
        if stat is None:
            self._watching = True  # nothing to watch any more
            self._move(HoldState.LOST, NODE_DELETED)
        else:
            self._set()

    def _on_node_event(self, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self._move(HoldState.LOST, NODE_DELETED)
        elif event.type in (EventType.CHANGED, EventType.CREATED) and self.state in (
            HoldState.HELD,
            HoldState.SUSPENDED,
        ):  # a hold that ended leaves no watch behind; one deleted meanwhile is lost
            self._send_exists().rawlink(self._on_check)

    def _on_connection(self, state: str) -> None:
        if state == KazooState.LOST:
            self._move(HoldState.LOST, end_reason(self._via))
        elif state == KazooState.SUSPENDED:
            self._watching = False  # kazoo drops every watch when the connection is lost
            if self.policy == "standard":
                self._move(HoldState.SUSPENDED, "connection suspended")
        elif self.state is HoldState.SUSPENDED or not self._watching:
            if self._once and self.state is not HoldState.HELD:
                return  # a hold that cannot come back is not checked again
            # not from kazoo's connection thread, which must not send (it alone empties the
            # pipe that wakes it): one worker sends the requests of every hold in turn
            self._via.post_request(self._after_reconnect)

    def _after_reconnect(self) -> None:
        """After a reconnect: a suspended hold is ours again only if its node exists and this
        session made it; a hold not yet watched gets its watch. Sends, does not wait."""
        if self.state is HoldState.SUSPENDED:
            answer = self._send_exists()
            answer.rawlink(self._verified)
        else:
            self._watch()

    def _verified(self, answer: Any) -> None:
        try:
            stat = answer.get_nowait()
        except KazooException:
            return  # disconnected again: the next CONNECTED verifies
        current = self._via.session_id()
        self._watching = stat is not None
        if stat is None or stat.ephemeralOwner != self._session_id or current != self._session_id:
            self._move(HoldState.LOST, "lock node not ours after reconnect")
        else:
            self._move(HoldState.HELD, "reconnected in the same session")
            self._set()


__all__ = [
    "CONFIRM_WAIT",
    "CONNECTION_POLICIES",
    "NODE_DELETED",
    "WATCH_DELAY",
    "ConnectionPolicy",
    "HoldMonitor",
    "HoldState",
    "check_policy",
]
