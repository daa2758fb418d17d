"""A cooperative, deterministic scheduler on simulated time.

Participants are step generators (:mod:`pycurator._protocol.steps`). At each turn the scheduler
picks, with its seeded random source, either a participant that may go on (its answer is in, its
signal is set, its deadline or timeout has passed) or a callback due now (an answer landing, a
watch event, a timer); when neither is left it moves the clock to the next due time. Each step a
participant yields is one *step boundary*, numbered from 0 across all participants: a fault is
applied at one (:attr:`Scheduler.on_boundary`).

The library reads the time through its one clock (:mod:`pycurator._protocol.clock`):
:func:`simulated_time` makes that the scheduler's clock while a schedule runs.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

from pycurator._client.runners import Cancelled
from pycurator._protocol import clock
from pycurator._protocol.deadline import DeadlineExpired
from pycurator._protocol.steps import (
    EFFECTS,
    Await,
    AwaitAll,
    CheckOpen,
    IsConnected,
    NewSignal,
    SessionId,
    Step,
    Steps,
    Transport,
    WaitSignal,
    link_all,
    outcomes,
)

from ..scripted import Flag

#: The steps whose outcome tells a protocol of its client's state.
_OBSERVING = (Await, AwaitAll, WaitSignal, SessionId, IsConnected, CheckOpen)


class Timer:
    """A call due later; :meth:`cancel` drops it."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Participant:
    """One generator of steps, on the transport of one client."""

    def __init__(self, name: str, transport: Transport, steps: Steps[Any]) -> None:
        self.name = name
        self.transport = transport
        self.steps = steps
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None
        #: what the generator gets next, once it may go on: (value, error)
        self.outcome: tuple[Any, BaseException | None] | None = (None, None)
        self.waiting: Step | None = None  # an Await, an AwaitAll or a WaitSignal
        self.until: float | None = None  # a WaitSignal's or an AwaitAll's end
        self.unlink: Callable[[], None] | None = None  # an AwaitAll's links to its answers
        self.cancel = False  # a Cancelled is thrown in at its current or next wait
        #: the tick its next outcome was known at
        self.outcome_tick = 0
        #: the tick of the last outcome that told it something of the client (a wait's end, the
        #: session, the connection), and whether the step it yielded last is one that does
        self.observed = 0
        self.observing = False
        self.steps_taken = 0


class Scheduler:
    """Runs participants and callbacks in a seeded order on simulated time (see module doc)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = 0.0
        self.participants: list[Participant] = []
        self.boundaries = 0
        #: called at each step boundary (its number, the participant, the step it yielded),
        #: before the step is performed
        self.on_boundary: Callable[[int, Participant, Step], None] | None = None
        #: called after each turn (the invariants that hold at every moment)
        self.after_turn: Callable[[], None] | None = None
        #: one per turn and per callback: what happened before what
        self.ticks = 0
        #: the participant whose turn it is (or was last)
        self.current: Participant | None = None
        self._events: list[tuple[float, int, Callable[[], None], Timer]] = []
        self._seq = 0

    # -- callbacks -------------------------------------------------------------------------------

    def call_at(self, when: float, function: Callable[[], None]) -> Timer:
        """Call ``function()`` at ``when`` (not before now), after those due earlier."""
        timer = Timer()
        self._seq += 1
        heapq.heappush(self._events, (max(when, self.now), self._seq, function, timer))
        return timer

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        return self.call_at(self.now + max(0.0, delay), function)

    # -- participants ----------------------------------------------------------------------------

    def spawn(self, name: str, transport: Transport, steps: Steps[Any]) -> Participant:
        participant = Participant(name, transport, steps)
        self.participants.append(participant)
        return participant

    def _ready(self, p: Participant) -> bool:
        """Whether ``p`` may go on now (its outcome then set)."""
        if p.done:
            return False
        if p.cancel and p.waiting is not None:  # in place of what it waits for
            p.cancel, p.outcome = False, (None, Cancelled())
        if p.outcome is not None:
            self._end_wait(p)
            return True
        step = p.waiting
        if isinstance(step, Await):
            if step.result.ready():
                try:
                    p.outcome = (step.result.get_nowait(), None)
                except BaseException as exc:
                    p.outcome = (None, exc)
            elif step.deadline.expired():
                p.outcome = (None, DeadlineExpired())
        elif isinstance(step, WaitSignal):
            if step.signal.is_set():
                p.outcome = (True, None)
            elif p.until is not None and self.now >= p.until:
                p.outcome = (False, None)
        elif isinstance(step, AwaitAll) and (
            step.wake.is_set() or (p.until is not None and self.now >= p.until)
        ):
            p.outcome = (outcomes(step.answers), None)
        if p.outcome is None:
            return False
        self._end_wait(p)
        p.outcome_tick = self.ticks
        return True

    @staticmethod
    def _end_wait(p: Participant) -> None:
        if p.unlink is not None:
            p.unlink()
        p.waiting, p.until, p.unlink = None, None, None

    def _wakes_at(self, p: Participant) -> float | None:
        if p.done:
            return None
        step = p.waiting
        if isinstance(step, Await):
            remaining = step.deadline.remaining()
            return None if remaining is None else self.now + remaining
        return p.until

    def _turn(self, p: Participant) -> None:
        """One step of ``p``: resume it, and perform the step it yields (or start its wait)."""
        assert p.outcome is not None
        value, error = p.outcome
        p.outcome = None
        if p.observing:
            p.observed = p.outcome_tick
        self.current = p
        try:
            step = p.steps.throw(error) if error is not None else p.steps.send(value)
        except StopIteration as stop:
            p.done, p.value = True, stop.value
            return
        except BaseException as exc:
            p.done, p.error = True, exc
            return
        p.observing = isinstance(step, _OBSERVING)
        boundary = self.boundaries
        self.boundaries += 1
        p.steps_taken += 1
        if self.on_boundary is not None:
            self.on_boundary(boundary, p, step)
        if p.cancel and isinstance(step, (Await, AwaitAll, WaitSignal)):
            p.cancel, p.outcome = False, (None, Cancelled())  # thrown in as the wait begins
            return
        if isinstance(step, NewSignal):
            p.outcome = (Flag(), None)
        elif isinstance(step, Await):
            p.waiting = step
        elif isinstance(step, WaitSignal):
            if step.timeout is not None and step.timeout <= 0 and not step.signal.is_set():
                p.outcome = (False, None)
            else:
                p.waiting = step
                p.until = None if step.timeout is None else self.now + step.timeout
        elif isinstance(step, AwaitAll):
            p.unlink = link_all(step.answers, step.wake)
            if step.timeout is not None and step.timeout <= 0 and not step.wake.is_set():
                p.unlink()
                p.unlink, p.outcome = None, (outcomes(step.answers), None)
            else:
                p.waiting = step
                p.until = None if step.timeout is None else self.now + step.timeout
        else:
            try:
                p.outcome = (EFFECTS[type(step)](p.transport, step), None)
            except BaseException as exc:
                p.outcome = (None, exc)
        p.outcome_tick = self.ticks

    def cancel(self, p: Participant) -> None:
        """Throw :class:`~pycurator._client.runners.Cancelled` into ``p`` at its current wait,
        or at its next one, as the runners do on cancellation (asyncio's and
        :class:`~pycurator._client.runners.Task` throw only where the steps wait)."""
        if not p.done:
            p.cancel = True

    # -- running ---------------------------------------------------------------------------------

    def run(self, until: float, stop: Callable[[], bool] | None = None) -> None:
        """Run until nothing is due before ``until`` (simulated seconds), or ``stop()``."""
        while stop is None or not stop():
            self.ticks += 1
            ready = [p for p in self.participants if self._ready(p)]
            due = bool(self._events) and self._events[0][0] <= self.now
            if ready and (not due or self.rng.random() < 0.6):
                self._turn(self.rng.choice(ready))
            elif due:
                _, _, function, timer = heapq.heappop(self._events)
                if not timer.cancelled:
                    function()
            else:
                wakes = [t for p in self.participants if (t := self._wakes_at(p)) is not None]
                if self._events:
                    wakes.append(self._events[0][0])
                if not wakes or min(wakes) > until:
                    return
                # a deadline's end read back through its remaining seconds may fall a hair short
                soonest = min(wakes)
                self.now = soonest if soonest > self.now else math.nextafter(self.now, math.inf)
                continue
            if self.after_turn is not None:
                self.after_turn()

    def idle(self) -> bool:
        """Whether every participant has ended."""
        return all(p.done for p in self.participants)


@contextlib.contextmanager
def simulated_time(scheduler_of: Callable[[], Scheduler | None]) -> Iterator[None]:
    """While inside, the library's clock (:mod:`pycurator._protocol.clock`) is the clock of the
    scheduler that ``scheduler_of()`` names (the one running now)."""

    def monotonic() -> float:
        scheduler = scheduler_of()
        assert scheduler is not None, "no schedule is running"
        return scheduler.now

    clock.use(monotonic)
    try:
        yield
    finally:
        clock.use(None)
