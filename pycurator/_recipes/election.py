"""One participant of a leader election, written once as steps (:mod:`pycurator._protocol.steps`).

Curator's ``LeaderLatch`` loop, which each ``LeaderSelector`` term runs too (a selector's node is
a mutex node, and its queue works the same way): make a protected ephemeral-sequential node,
list the children, and lead when our node is first and the client's current session made it
(CURATOR-696), or watch the node right in front of ours. A deleted predecessor, a reconnect
(CURATOR-644/645/724) or a loss lists the children again; our node found gone (or another
session's) is deleted and replaced. Leadership follows the leader's node as a lock hold does
(:class:`~pycurator._recipes.hold_monitor.HoldMonitor`): it ends when the node is deleted, the
session ends, or (``standard`` policy) the connection is suspended. Each turn in the queue is
reported as a wait, and each term of leadership as a hold (:mod:`pycurator._recipes.reports`).

A lost connection is ridden through. An error no retry fixes
(:data:`~pycurator._protocol.errors.UNFIXABLE`: ``NoAuthError``...) ends the steps: it is logged
once, our node is deleted, and the owner is told. Any other error is logged (once while it repeats)
and the step is tried again.

The steps run on either runner: kazoo's callbacks for the threaded recipes (so a participant
costs a node and a watch, never a thread), or a task on the event loop for :mod:`pycurator.aio`.
They tell the recipe what happens through callbacks called from the steps (keep them short,
never block), and delete our node on the way out, however they end.

The steps do no I/O: they say what to send (:mod:`pycurator._protocol.requests` requests), what to
listen to and what to owe, and the runner does it; only the leader's monitor is made on the client.
So ``tests/test_election_protocol.py`` runs them on a scripted server.

What an election's participants are, and how they are read from the tree, is
:mod:`pycurator._recipes.participants`'.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import ConnectionClosedError, KazooException, NoNodeError
from kazoo.protocol.states import KazooState, WatchedEvent

from .._protocol import clock, wire
from .._protocol.checks import ConnectionPolicy
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.errors import UNFIXABLE
from .._protocol.events import LockEventKind
from .._protocol.requests import GetData
from .._protocol.steps import (
    CheckOpen,
    Claims,
    ForgetWatch,
    GetTransport,
    IsConnected,
    Listen,
    NewSignal,
    OweDelete,
    SessionId,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.transport import (
    CLIENT_STOPPED,
    SESSION_EXPIRED,
    Signal,
    Transport,
    ignore,
    runs_inline,
    set_here,
)
from .._protocol.waits import RETRYABLE, watch_sent_steps
from .hold_monitor import HoldMonitor, HoldState
from .lock_engine import LockEngine
from .lock_nodes import LockNode
from .reports import Reporter

log = logging.getLogger("pycurator")

#: The longest one step (create, list, watch) waits for the server before it starts over.
STEP_WAIT = 10.0
#: Seconds before a step that failed for want of a connection is tried again.
RETRY_DELAY = 0.1
#: Seconds between tries of a step that failed with an unexpected error (neither a lost
#: connection nor one of :data:`~pycurator._protocol.errors.UNFIXABLE`).
ERROR_RETRY_DELAY = 1.0


class Election:
    """One participant's node, from its creation to its deletion.

    ``on_elected(node, monitor)`` hears of leadership (our node, and the monitor that follows
    it), ``on_deposed(reason)`` of its end, and ``on_trouble(error)`` of an error that keeps
    the steps from succeeding (None once a step succeeds); the steps call them. An error no
    retry fixes (:data:`~pycurator._protocol.errors.UNFIXABLE`) ends the steps: once our node is
    deleted, :attr:`failed` holds it and ``on_trouble`` hears of it. ``on_news()`` runs on
    kazoo's threads at once whenever the connection or the leader's node changes (the
    monitor's view of leadership may have changed before the steps run): it must only wake
    whoever waits.

    With ``one_term`` (a selector's term), a participant leads once: after its leadership
    ends it keeps its node, and leads no more, until :meth:`stop` (as Curator releases a
    selector's mutex only once ``takeLeadership`` returns). With ``queue_ends_on_error``, a
    participant that does not lead yet leaves the election when the connection enters an error
    state of its policy (``standard``: suspended or lost; ``session``: lost), as Curator's
    selector ends a queued attempt then.

    ``reporter`` is told of each turn in the queue (a wait: from the start, or the end of a
    term, to leadership or the end) and each term (a hold).
    """

    def __init__(
        self,
        engine: LockEngine,
        policy: ConnectionPolicy,
        on_elected: Callable[[LockNode, HoldMonitor], None],
        on_deposed: Callable[[str], None],
        on_trouble: Callable[[Exception | None], None] | None = None,
        on_news: Callable[[], None] | None = None,
        *,
        reporter: Reporter,
        one_term: bool = False,
        queue_ends_on_error: bool = False,
    ) -> None:
        self.engine = engine
        self.transport = engine.transport
        self.policy = policy
        self._on_elected = on_elected
        self._on_deposed = on_deposed
        self._on_trouble = on_trouble
        self._on_news = on_news
        self._one_term = one_term
        self._queue_ends_on_error = queue_ends_on_error
        self._reporter = reporter
        self._waiting_since: float | None = None  # when the current turn in the queue began
        self._stopped_by_owner = False  # stop() was called (a turn then ends as cancelled)
        #: Our node, while there is one.
        self.node: LockNode | None = None
        #: Follows our node while we lead.
        self.leading: HoldMonitor | None = None
        #: The error that keeps the last step from succeeding, if any.
        self.error: Exception | None = None
        #: The error no retry fixes that ended the steps, once they have cleaned up.
        self.failed: Exception | None = None
        self._failure: Exception | None = None  # the same, while the steps clean up
        self.termed = False  # led once
        self._stop: str | None = None  # why the steps should end
        self._stop_on_loss = False  # _stop came from a loss heard: the client says which one
        self._wake: Signal | None = None
        self._via: Transport | None = None  # the runner's, for a clean-up made without steps
        self._watched: str | None = None  # the predecessor we watch
        self._watch_spent = False  # its watch has fired (kazoo has dropped it)
        #: The steps have ended: the owner is told nothing more.
        self.ended = False

    @property
    def is_leading(self) -> bool:
        """Whether we lead now (as last heard; no request)."""
        monitor = self.leading
        return monitor is not None and monitor.held

    def stop(self, reason: str, *, here: bool = False, wake: bool = True) -> None:
        """Ask the steps to end (from any thread); they stop leading and delete our node on the
        way out. A runner's cancellation ends them at once, with the same clean-up. With
        ``here``, steps waiting to be woken resume on the calling thread, which must be one
        that may run them (see :func:`~pycurator._protocol.transport.set_here`): the delete is
        then sent without a hand-off. Without ``wake``, the steps are only told why they end:
        the caller cancels them next (a wake-up would resume them elsewhere for nothing)."""
        if self._stop is None:
            self._stop = reason
        self._stopped_by_owner = True
        if not wake:
            return
        signal = self._wake
        if signal is not None:
            if here:
                set_here(signal)
            else:
                signal.set()

    def steps(self) -> Steps[str]:
        """Take part until stopped, or until the client is stopped, an error no retry fixes
        is met, or (``queue_ends_on_error``) the queue is left; why it ended."""
        self._wake = wake = yield NewSignal()
        if self._stop is not None:
            return self._stop
        self._via = yield GetTransport()
        self._waiting_since = self._reporter.waiting()
        try:
            yield Listen(self._on_state)
            reason = yield from self._take_part(wake)
        except GeneratorExit:  # dropped unfinished: no more steps can be made here
            self._leave_later()
            raise
        except BaseException as exc:  # cancelled (or a bug): the clean-up runs first
            cancelled = self._stopped_by_owner or not isinstance(exc, Exception)
            yield from self._leave(self._stop or "election ended", cancelled)
            self._detach()
            raise
        yield from self._leave(reason, self._stopped_by_owner)
        if self._failure is not None:
            self.failed = self._failure
            self._trouble(self._failure)
        self._detach()
        return reason

    def _detach(self) -> None:
        """Once the steps have ended, tell the owner nothing more: the owner's callbacks are
        dropped, so an owner that keeps its election is not in a cycle with it, which only
        the garbage collector would free."""
        self._on_elected = self._on_deposed = self._on_trouble = self._on_news = ignore
        self.ended = True

    def _take_part(self, wake: Signal) -> Steps[str]:
        while True:
            wake.clear()
            if self._stop is not None:
                return (yield from self._stop_reason())
            monitor = self.leading
            if monitor is not None and not monitor.held:
                self._depose(monitor.reason)
            try:
                yield CheckOpen()
            except ConnectionClosedError:
                return CLIENT_STOPPED
            if (self._one_term and self.termed) or not (yield IsConnected()):
                # a spent term waits to be stopped; the next CONNECTED wakes the others
                yield WaitSignal(wake, None)
                continue
            try:
                yield from self._step(wake)
                if self.error is not None:
                    self._trouble(None)
            except ConnectionClosedError:
                return CLIENT_STOPPED
            except (*RETRYABLE, DeadlineExpired, NoNodeError):
                # NoNode: a parent container was reaped while we made our node; make it again
                yield WaitSignal(wake, RETRY_DELAY)
                continue
            except UNFIXABLE as exc:
                self._failure = exc
                reason = _describe(exc)
                log.error(
                    "leader election on %s failed: %s; no retry can fix it: leaving the election",
                    self.engine.base_path,
                    reason,
                )
                return reason
            except Exception as exc:
                # one traceback for a run of the same error, not one per try
                level = logging.DEBUG if type(exc) is type(self.error) else logging.ERROR
                log.log(
                    level,
                    "leader election on %s failed; trying again",
                    self.engine.base_path,
                    exc_info=True,
                )
                self._trouble(exc)
                yield WaitSignal(wake, ERROR_RETRY_DELAY)
                continue
            yield WaitSignal(wake, None)

    def _stop_reason(self) -> Steps[str]:
        """Why the steps end (asked once :attr:`_stop` is set): a session that ended while we
        queued ended with the client's stop or expired, which only the client can say."""
        if self._stop_on_loss:
            self._stop_on_loss = False
            try:
                yield CheckOpen()
            except ConnectionClosedError:
                self._stop = CLIENT_STOPPED
        assert self._stop is not None
        return self._stop

    def _step(self, wake: Signal) -> Steps[None]:
        """Create our node if there is none, list the children, and lead or watch."""
        engine = self.engine
        deadline = Deadline(STEP_WAIT)
        children: list[str] | None = None
        node = self.node
        if node is None:
            node, children = yield from engine.create_node_steps(deadline)
            self.node = node
            if self._stop is not None:
                return  # stopped while the create was on its way: the clean-up deletes it
        if children is None:
            children = yield from engine.children_steps(deadline)  # none: the path is gone
        ordered = engine.driver.sort(children)
        ours = wire.node_name(node.path)
        # a decision over a listing does not hold once the session that made our node ended
        if ours not in ordered or (yield SessionId()) != node.session_id:
            yield from self._reset(node, "election node gone")
            wake.set()
            return
        decision = engine.driver.decide(ordered, ours)
        if decision.holds:
            yield from self._unwatch()
            if self.leading is None:
                self._elect(node)
            return
        self._depose("another participant leads")
        assert decision.watch is not None
        watched = wire.join_path(engine.base_path, decision.watch)
        if watched != self._watched:
            yield from self._unwatch()
            self._watched = watched
        self._watch_spent = False
        try:
            yield from watch_sent_steps(GetData(watched, watch=self._on_watch), deadline)
        except KazooException as exc:
            self._watch_spent = True  # an error answer sets no watch: none to drop
            if not isinstance(exc, NoNodeError):
                raise
            wake.set()  # gone before we could watch it: list again

    def _elect(self, node: LockNode) -> None:
        started, self._waiting_since = self._waiting_since, None
        report = self._reporter.acquired(
            clock.monotonic() if started is None else started, node.path
        )
        monitor = HoldMonitor(
            self.transport, node.path, self.policy, self._hold_changed, node.session_id, report
        )
        if not monitor.held:  # the connection went meanwhile: its state change wakes us
            monitor.close(monitor.reason)
            self._waiting_since = self._reporter.waiting()
            return
        self.leading = monitor
        self.termed = True
        self._on_elected(node, monitor)

    def _depose(self, reason: str) -> None:
        monitor, self.leading = self.leading, None
        if monitor is None:
            return
        if monitor.held and self._stop is None:  # a loss its monitor did not see (and report)
            monitor.report.lost(reason)
        monitor.close(reason)
        self._on_deposed(reason)
        if self._stop is None and not self._one_term:
            self._waiting_since = self._reporter.waiting()  # a latch queues again

    def _trouble(self, error: Exception | None) -> None:
        self.error = error
        if self._on_trouble is not None:
            self._on_trouble(error)

    def _reset(self, node: LockNode, reason: str) -> Steps[None]:
        """Our node is gone or not this session's: stop leading, delete it, make a new one."""
        self._depose(reason)
        if self.node is node:
            self.node = None
        yield from self._unwatch()
        yield from self._owe_delete(node.path)

    def _owe_delete(self, path: str) -> Steps[None]:
        """Delete our node ``path`` in the background; under a naming whose nodes are claimed
        (:class:`~pycurator._protocol.drivers.Naming`), the claim goes with it, as
        :meth:`~pycurator._recipes.lock_engine.LockEngine.delete_steps` drops it."""
        yield OweDelete(path)
        if self.engine.naming.claims:
            claims = yield Claims()
            claims.pop(path, None)

    def _leave(self, reason: str, cancelled: bool, *, later: bool = False) -> Steps[None]:
        """Stop leading, stop listening and watching, and delete our node; a turn in the queue
        ends as ``cancelled`` (by the owner, or the runner), else as failed. With ``later``,
        the delete is owed at once, not waited for."""
        if self._stop is None:
            self._stop = reason
        yield Unlisten(self._on_state)
        self._depose(reason)
        started, self._waiting_since = self._waiting_since, None
        if started is not None:
            kind = LockEventKind.CANCELLED if cancelled else LockEventKind.FAILED
            self._reporter.ended(started, kind, reason)
        yield from self._unwatch()
        node, self.node = self.node, None
        if node is None:
            return
        if later:
            yield from self._owe_delete(node.path)
        else:
            yield from self.engine.delete_steps(node.path)

    def _leave_later(self) -> None:
        """:meth:`_leave`, once the steps can make no more steps: in the background."""
        via = self._via
        if via is not None:
            via.start(self._leave(self._stop or "election ended", True, later=True))

    def _unwatch(self) -> Steps[None]:
        watched, self._watched = self._watched, None
        if watched is not None and not self._watch_spent:
            yield ForgetWatch(watched, self._on_watch)

    # -- news from kazoo's threads: note it and wake the steps -------------------------------

    def _on_state(self, state: str) -> None:
        if self._queue_ends_on_error and self.leading is None and self._stop is None:
            if state == KazooState.LOST:
                # or the client's stop: the steps ask the client (_stop_reason)
                self._stop, self._stop_on_loss = SESSION_EXPIRED, True
            elif state == KazooState.SUSPENDED and self.policy == "standard":
                self._stop = "connection suspended"
        self._wake_up()

    def _hold_changed(self, state: HoldState, reason: str) -> None:
        self._wake_up()  # a loss deposes us; a reconnect lists the children again

    @runs_inline
    def _on_watch(self, event: WatchedEvent) -> None:
        # the steps list again on this thread (kazoo's callback worker, or the fast handler's
        # connection thread, which may send), as a lock's waiter is woken: no hand-off first
        self._watch_spent = True
        wake = self._wake
        if wake is not None:
            set_here(wake)

    def _wake_up(self) -> None:
        wake = self._wake
        if wake is not None:
            wake.set()
        if self._on_news is not None:
            self._on_news()


def _describe(error: BaseException) -> str:
    """An error as its type's name, and its message when it has one (kazoo's have none)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


__all__ = ["ERROR_RETRY_DELAY", "RETRY_DELAY", "STEP_WAIT", "Election"]
