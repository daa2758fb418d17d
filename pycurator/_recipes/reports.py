"""Every lock tells its story: each wait and each hold of every recipe, as events for
listeners and as records of the ``pycurator`` logger.

Recipes report here, and only here: a :class:`Reporter` per recipe object tells of its waits
(:meth:`Reporter.wait_steps` wraps an acquire's steps, threaded or asyncio alike), and a
:class:`HoldReport` per hold, kept by the hold's
:class:`~pycurator._recipes.hold_monitor.HoldMonitor`, of its loss, its return and its end. Each
becomes one :class:`~pycurator._protocol.events.LockEvent` for the listeners
(:func:`pycurator.add_lock_listener`) and one log record, at the level an operator would choose:

- WARNING: a hold lost (INFO when the user stopped the client);
- INFO: leadership gained, or ended; a queued latch or selector that leaves the queue on a
  connection error (nobody else is told); a hold regained after a suspension; a wait of
  :data:`SLOW_WAIT` seconds or more that acquires; a hold of :data:`LONG_HOLD` or more;
- DEBUG: the rest (a failed or timed-out acquire is told to its caller), and the end of a
  hold already lost.

Cheap when nobody listens: a report reads the clock, and builds no event unless a listener is
registered or the logger takes the record's level (one check each).
"""

from __future__ import annotations

import logging
from typing import Protocol, TypeVar

from .._protocol import clock
from .._protocol.events import LEADERSHIP, LOCK_LISTENERS, LockEvent, LockEventKind, message
from .._protocol.steps import Steps
from .._protocol.transport import CLIENT_STOPPED

log = logging.getLogger("pycurator")

#: A wait at least this long (seconds) is logged at INFO when it acquires, else at DEBUG.
SLOW_WAIT = 1.0
#: A hold at least this long (seconds) is logged at INFO when released, else at DEBUG.
LONG_HOLD = 10.0


def _tell(event: LockEvent, level: int) -> None:
    """Log ``event`` (if the logger takes ``level``) and call every listener with it."""
    if log.isEnabledFor(level):
        extra = {
            "event": event.kind.value,
            "recipe": event.recipe,
            "path": event.path,
            "node": event.node,
            "reason": event.reason,
            "waited": event.waited,
            "held": event.held,
        }
        log.log(level, "%s", message(event), extra=extra)
    for listener in LOCK_LISTENERS.listeners:
        try:
            listener(event)
        except Exception:
            log.exception("a lock listener failed: %r", listener)


def _failure(error: BaseException) -> tuple[LockEventKind, str]:
    """How a wait that ``error`` ended is told: an ``Exception`` failed it; anything else
    (cancellation, interruption, the steps closed) cancelled it."""
    kind = LockEventKind.FAILED if isinstance(error, Exception) else LockEventKind.CANCELLED
    text = str(error)
    return kind, f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Node(Protocol):
    """What an acquire's steps hold: a node with its full path."""

    @property
    def path(self) -> str: ...


N = TypeVar("N", bound=_Node)


class Reporter:
    """Tells the story of one recipe object's waits, on ``path`` (see :class:`LockEvent`
    for the ``recipe`` names)."""

    __slots__ = ("leadership", "path", "recipe")

    def __init__(self, recipe: str, path: str) -> None:
        self.recipe = recipe
        self.path = path
        self.leadership = recipe in LEADERSHIP

    def waiting(self) -> float:
        """A wait begins: its start on the monotonic clock."""
        if LOCK_LISTENERS.listeners or log.isEnabledFor(logging.DEBUG):
            _tell(LockEvent(LockEventKind.WAITING, self.recipe, self.path), logging.DEBUG)
        return clock.monotonic()

    def acquired(self, started: float, node: str) -> HoldReport:
        """The wait that began at ``started`` holds ``node``: the hold's report."""
        now = clock.monotonic()
        waited = now - started
        level = logging.INFO if self.leadership or waited >= SLOW_WAIT else logging.DEBUG
        if LOCK_LISTENERS.listeners or log.isEnabledFor(level):
            event = LockEvent(LockEventKind.ACQUIRED, self.recipe, self.path, node, waited)
            _tell(event, level)
        return HoldReport(self, node, now)

    def ended(self, started: float, kind: LockEventKind, reason: str = "") -> None:
        """The wait that began at ``started`` ended without a hold (``TIMED_OUT``,
        ``FAILED`` or ``CANCELLED``)."""
        waited = clock.monotonic() - started
        left_the_queue = kind is LockEventKind.FAILED and self.leadership
        level = logging.INFO if left_the_queue and reason != CLIENT_STOPPED else logging.DEBUG
        if LOCK_LISTENERS.listeners or log.isEnabledFor(level):
            _tell(LockEvent(kind, self.recipe, self.path, None, waited, None, reason), level)

    def wait_steps(self, steps: Steps[N | None]) -> Steps[tuple[N, HoldReport] | None]:
        """Perform an acquire's ``steps`` (whose value is the held node, or None on timeout)
        as one wait: the node and its hold's report when held, else None."""
        started = self.waiting()
        try:
            node = yield from steps
        except BaseException as error:
            self.ended(started, *_failure(error))
            raise
        if node is None:
            self.ended(started, LockEventKind.TIMED_OUT)
            return None
        return node, self.acquired(started, node.path)


class HoldReport:
    """Tells the story of one hold of ``node``, from :meth:`Reporter.acquired` (at ``since``,
    on the monotonic clock) to :meth:`released`."""

    __slots__ = ("_ended", "_lost", "node", "reporter", "since")

    def __init__(self, reporter: Reporter, node: str, since: float) -> None:
        self.reporter = reporter
        self.node = node
        self.since = since
        self._lost = False
        self._ended = False

    def _tell(self, kind: LockEventKind, reason: str, held: float | None, level: int) -> None:
        reporter = self.reporter
        _tell(LockEvent(kind, reporter.recipe, reporter.path, self.node, None, held, reason), level)

    def lost(self, reason: str) -> None:
        """The hold stopped being ours (WARNING; INFO when the client was stopped)."""
        self._lost = True
        level = logging.INFO if reason == CLIENT_STOPPED else logging.WARNING
        self._tell(LockEventKind.LOST, reason, clock.monotonic() - self.since, level)

    def regained(self, reason: str) -> None:
        """The hold is ours again after a suspension (INFO)."""
        self._lost = False
        self._tell(LockEventKind.REGAINED, reason, None, logging.INFO)

    def released(self, reason: str = "") -> None:
        """The hold ends (the first call only): released, returned, or a term that ended."""
        if self._ended:
            return
        self._ended = True
        held = clock.monotonic() - self.since
        notable = self.reporter.leadership or held >= LONG_HOLD
        level = logging.INFO if notable and not self._lost else logging.DEBUG
        if LOCK_LISTENERS.listeners or log.isEnabledFor(level):
            self._tell(LockEventKind.RELEASED, reason, held, level)


__all__ = ["LONG_HOLD", "SLOW_WAIT", "HoldReport", "Reporter"]
