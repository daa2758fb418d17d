"""Every lock tells its story: each wait and each hold of every recipe, as events for
listeners and as records of the ``pycurator`` logger.

Recipes report here, and only here: a :class:`Reporter` per recipe object tells of its waits
(:meth:`Reporter.wait_steps` wraps an acquire's steps, threaded or asyncio alike), and a
:class:`HoldReport` per hold, kept by the hold's
:class:`~pycurator._engine.hold_monitor.HoldMonitor`, of its loss, its return and its end. Each
becomes one :class:`LockEvent` for the listeners (:func:`add_lock_listener`) and one log
record, at the level an operator would choose:

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

import enum
import logging
from typing import NamedTuple, Protocol, TypeVar

from .._client.runtime import CLIENT_STOPPED, process_lock
from .._protocol import clock
from .._protocol.steps import Steps

log = logging.getLogger("pycurator")

#: A wait at least this long (seconds) is logged at INFO when it acquires, else at DEBUG.
SLOW_WAIT = 1.0
#: A hold at least this long (seconds) is logged at INFO when released, else at DEBUG.
LONG_HOLD = 10.0

#: What each recipe calls what it holds, in log messages.
NOUNS = {
    "mutex": "lock",
    "read": "read lock",
    "write": "write lock",
    "semaphore": "lease",
    "semaphore-mutex": "lock",
    "latch": "leadership",
    "selector": "leadership",
}
LEADERSHIP = frozenset({"latch", "selector"})


class LockEventKind(enum.Enum):
    """What happened: a wait begins (``WAITING``) and ends (``ACQUIRED``, ``TIMED_OUT``,
    ``FAILED``, ``CANCELLED``); a hold may be ``LOST`` and ``REGAINED``, and ends
    (``RELEASED``). For a latch and a selector, a wait is a turn in the election's queue and a
    hold a term of leadership."""

    WAITING = "waiting"
    ACQUIRED = "acquired"
    TIMED_OUT = "timed_out"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RELEASED = "released"
    LOST = "lost"
    REGAINED = "regained"


class LockEvent(NamedTuple):
    """One step in the story of a wait or a hold (a named tuple: immutable, and quick to make).

    - ``kind``: what happened (see :class:`LockEventKind`).
    - ``recipe``: ``mutex``, ``read``, ``write`` (the sides of a read/write lock),
      ``semaphore`` (one lease), ``semaphore-mutex``, ``latch`` or ``selector``. A
      multi-lock's members report for themselves.
    - ``path``: the recipe's path, as given (a semaphore's, not its ``leases`` node's).
    - ``node``: our node's full path, once there is one held (``ACQUIRED`` and after).
    - ``waited``: seconds the wait lasted, on each event that ends one.
    - ``held``: seconds since ``ACQUIRED``, on ``LOST`` and ``RELEASED``.
    - ``reason``: why, on ``LOST``, ``REGAINED``, ``FAILED`` (the error), ``CANCELLED`` and
      a leadership's ``RELEASED`` (``latch closed``, ``leadership given up``...).

    A hold may be lost and then released: under the ``standard`` connection policy a suspended
    connection is a loss (reason ``connection suspended``), and the session's end after it is
    another (``session expired``); a hold that is ours again after a suspension is
    ``REGAINED``.
    """

    kind: LockEventKind
    recipe: str
    path: str
    node: str | None = None
    waited: float | None = None
    held: float | None = None
    reason: str = ""


class LockListener(Protocol):
    """What :func:`add_lock_listener` takes: any callable with this signature.

    It is called synchronously, in order, where the event happens: on the thread of the caller
    for a lock's wait and release (the task's loop for an asyncio lock), on one of kazoo's
    threads for a loss and for a threaded latch's or selector's election (on the loop for an
    asyncio one). So it must be quick and never block (kazoo's callbacks wait for it), nor
    call a recipe; an exception it raises is logged (ERROR) and the recipe goes on.
    """

    def __call__(self, event: LockEvent) -> None: ...


#: Every lock listener of the process: replaced whole under the runtime's process lock
#: (renewed in a forked child), so that readers need no lock.
_listeners: tuple[LockListener, ...] = ()


def add_lock_listener(listener: LockListener) -> None:
    """Tell ``listener(event)`` of every :class:`LockEvent` of every recipe in this process,
    threaded and asyncio (see :class:`LockListener` for the contract). Adding it twice calls it
    twice."""
    global _listeners
    if not callable(listener):
        raise TypeError(f"a lock listener is called with each event, not {listener!r}")
    with process_lock():
        _listeners = (*_listeners, listener)


def remove_lock_listener(listener: LockListener) -> None:
    """Stop telling ``listener`` (once, if it was added more than once); nothing if unknown."""
    global _listeners
    with process_lock():
        found = list(_listeners)
        if listener in found:
            found.remove(listener)
            _listeners = tuple(found)


def _ms(seconds: float | None) -> str:
    return f"{(seconds or 0.0) * 1000:.1f} ms"


def message(event: LockEvent) -> str:
    """The log message of an event (the node, or the path while there is no node, first)."""
    noun = NOUNS.get(event.recipe, event.recipe)
    leadership = event.recipe in LEADERSHIP
    kind, node, path = event.kind, event.node, event.path
    if kind is LockEventKind.WAITING:
        return f"{noun} {path}: waiting"
    if kind is LockEventKind.ACQUIRED:
        verb = "gained" if leadership else "acquired"
        return f"{noun} {node} {verb} after {_ms(event.waited)} waiting"
    if kind is LockEventKind.TIMED_OUT:
        return f"{noun} {path}: timed out after {_ms(event.waited)} waiting"
    if kind is LockEventKind.FAILED:
        return f"{noun} {path}: wait failed after {_ms(event.waited)}: {event.reason}"
    if kind is LockEventKind.CANCELLED:
        return f"{noun} {path}: wait cancelled after {_ms(event.waited)}: {event.reason}"
    if kind is LockEventKind.LOST:
        return f"{noun} {node} lost: {event.reason} (held {_ms(event.held)})"
    if kind is LockEventKind.REGAINED:
        return f"{noun} {node} is ours again: {event.reason}"
    verb = "ended" if leadership else "released"
    why = f": {event.reason}" if event.reason else ""
    return f"{noun} {node} {verb} after {_ms(event.held)} held{why}"


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
    for listener in _listeners:
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
        if _listeners or log.isEnabledFor(logging.DEBUG):
            _tell(LockEvent(LockEventKind.WAITING, self.recipe, self.path), logging.DEBUG)
        return clock.monotonic()

    def acquired(self, started: float, node: str) -> HoldReport:
        """The wait that began at ``started`` holds ``node``: the hold's report."""
        now = clock.monotonic()
        waited = now - started
        level = logging.INFO if self.leadership or waited >= SLOW_WAIT else logging.DEBUG
        if _listeners or log.isEnabledFor(level):
            event = LockEvent(LockEventKind.ACQUIRED, self.recipe, self.path, node, waited)
            _tell(event, level)
        return HoldReport(self, node, now)

    def ended(self, started: float, kind: LockEventKind, reason: str = "") -> None:
        """The wait that began at ``started`` ended without a hold (``TIMED_OUT``,
        ``FAILED`` or ``CANCELLED``)."""
        waited = clock.monotonic() - started
        left_the_queue = kind is LockEventKind.FAILED and self.leadership
        level = logging.INFO if left_the_queue and reason != CLIENT_STOPPED else logging.DEBUG
        if _listeners or log.isEnabledFor(level):
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
        if _listeners or log.isEnabledFor(level):
            self._tell(LockEventKind.RELEASED, reason, held, level)


__all__ = [
    "CLIENT_STOPPED",
    "LONG_HOLD",
    "SLOW_WAIT",
    "HoldReport",
    "LockEvent",
    "LockEventKind",
    "LockListener",
    "Reporter",
    "add_lock_listener",
    "message",
    "remove_lock_listener",
]
