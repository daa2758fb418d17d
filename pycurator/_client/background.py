"""Background work in a constant number of units (threads, or greenlets under gevent and
eventlet), whatever the number of recipes: a timer, a small pool of workers, and the unit that
makes delayed calls in batches.

- :class:`Timers` runs short functions at given times, from one unit (spawned while a timer is
  pending).
- A :class:`SerialQueue` runs the calls posted to it one at a time, in order, on a
  :class:`Pool` of at most :data:`MAX_WORKERS` workers (spawned while there is work, ended
  after :data:`LINGER` idle seconds). Each recipe posts its listeners and ``on_lost`` callbacks
  to a queue of its own, so they run in order per recipe and a slow one holds up only its
  recipe.
- :class:`DelayedCalls` makes calls a while after they are asked for, one wake-up serving every
  call due within :data:`BATCH_WINDOW` (the deferred watches of held nodes).
- :class:`Units` runs long calls (a leader selector's terms), each on a unit of its own, and
  keeps at most :data:`MAX_IDLE_UNITS` units idle for the next ones.

These are the mechanisms only: which handler owns which timer, pool and queue, and what a fork
leaves of them, is :mod:`pycurator._client.runtime`'s to say. Everything goes through the handler
(``spawn``, ``event_object``, ``lock_object``), so a greenlet handler gets greenlets.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from .._protocol import clock
from .._protocol.transport import ignore

log = logging.getLogger("pycurator")

#: The most workers a handler's pool runs at once.
MAX_WORKERS = 4
#: Cancelled timers a heap keeps before it may be rebuilt without them.
COMPACT_AT = 100
#: Seconds an idle worker waits for more work before it ends.
LINGER = 5.0
#: The most idle units :class:`Units` keeps for the next long call.
MAX_IDLE_UNITS = 4
#: One wake-up of :class:`DelayedCalls` makes every call due within this many seconds.
BATCH_WINDOW = 0.01
#: The longest the unit of :class:`Timers` sleeps at once, in seconds: a timer due after its
#: wake-up then needs no wake-up of its own (the deadlines of the requests sent meanwhile).
TIMERS_NAP = 1.0


def spawner(handler: Any) -> Callable[[Callable[[], None]], None]:
    """``handler.spawn`` without keeping the handler alive: what runs its units is dropped
    with it (a unit already running ends by itself)."""
    handler_ref = weakref.ref(handler)

    def spawn(function: Callable[[], None]) -> None:
        handler = handler_ref()
        if handler is not None:
            handler.spawn(function)

    return spawn


class Timer:
    """A call due at a time on the monotonic clock; :meth:`cancel` keeps it from running."""

    __slots__ = ("cancelled", "due", "function", "owner")

    def __init__(self, due: float, function: Callable[[], None]) -> None:
        self.due = due
        self.function = function
        self.cancelled = False
        self.owner: Timers | None = None  # the timers it waits in, once added

    def cancel(self) -> None:
        """Keep it from running (from any thread; nothing once it has run or been cancelled).
        What it would have called is dropped at once, not kept alive until its time."""
        if self.cancelled:
            return
        self.cancelled = True
        self.function = ignore
        owner = self.owner
        if owner is not None:
            owner.dropped()


class Timers:
    """The pending timers of one handler, run in time order by one unit of that handler; the
    unit ends once none is pending.

    Most timers are cancelled long before their time (a step's deadline, its answer in within
    milliseconds): a cancelled one stays in the heap only until cancelled ones are most of it
    (and more than :data:`COMPACT_AT`), when the heap is rebuilt without them, so that a
    client making thousands of requests a second keeps a heap of its pending deadlines, not of
    every deadline of the last seconds. The unit sleeps at most :data:`TIMERS_NAP` at once, and
    a timer is added without waking it unless it is due before the unit wakes by itself: a
    shorter deadline among longer ones (a delete's, among requests') costs no thread switch."""

    def __init__(self, handler: Any) -> None:
        self._spawn = spawner(handler)
        self._due: list[tuple[float, int, Timer]] = []  # a heap
        self._added = itertools.count()
        self._lock = threading.Lock()  # held for heap operations only, never across a switch
        self._wake = handler.event_object()
        self._running = False
        self._cancelled = 0  # cancelled timers still in the heap
        self._wakes_at = 0.0  # when the sleeping unit wakes by itself (0.0: it is awake)

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        """Run ``function()`` (short, never blocking) ``delay`` seconds from now; the returned
        :class:`Timer` cancels it."""
        timer = Timer(clock.monotonic() + max(0.0, delay), function)
        self.add(timer)
        return timer

    def add(self, timer: Timer) -> None:
        with self._lock:
            timer.owner = self
            heapq.heappush(self._due, (timer.due, next(self._added), timer))
            start = not self._running
            self._running = True
            if not start and timer.due < self._wakes_at:
                self._wakes_at = 0.0
                self._wake.set()  # the unit sleeps until a later time
        if start:
            self._spawn(self._run)

    def dropped(self) -> None:
        """A timer of ours was cancelled: once cancelled ones are most of the heap, rebuild it
        without them (O(1) a cancel, amortized)."""
        with self._lock:
            self._cancelled += 1
            if self._cancelled > COMPACT_AT and 2 * self._cancelled > len(self._due):
                self._due = [entry for entry in self._due if not entry[2].cancelled]
                heapq.heapify(self._due)
                self._cancelled = 0

    def pending(self) -> int:
        """How many timers wait in the heap, cancelled ones included."""
        return len(self._due)

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._due and self._due[0][2].cancelled:
                    heapq.heappop(self._due)
                    self._cancelled -= 1
                if not self._due:
                    self._running = False
                    return
                now = clock.monotonic()
                delay = min(self._due[0][0] - now, TIMERS_NAP)
                timer = heapq.heappop(self._due)[2] if delay <= 0 else None
                if timer is not None:
                    timer.owner = None  # out of the heap: a cancel from now on is not counted
                    self._wakes_at = 0.0
                else:
                    self._wakes_at = now + delay
                    self._wake.clear()
            if timer is None:
                self._wake.wait(delay)
                continue
            try:
                timer.function()
            except Exception:
                log.exception("a timer's function failed")


class Pool:
    """A handler's workers: each takes the next ready :class:`SerialQueue` and runs one of its
    calls. At most :data:`MAX_WORKERS` run; an idle one ends after :data:`LINGER` seconds."""

    def __init__(self, handler: Any) -> None:
        self._spawn = spawner(handler)
        self._lock = threading.Lock()  # never held across a call or a wait
        self._ready: deque[SerialQueue] = deque()
        self._work = handler.event_object()
        self._workers = 0
        self._idle = 0

    def schedule(self, queue: SerialQueue) -> None:
        with self._lock:
            self._ready.append(queue)
            self._work.set()
            spawn = self._idle == 0 and self._workers < MAX_WORKERS
            if spawn:
                self._workers += 1
        if spawn:
            self._spawn(self._worker)

    @property
    def workers(self) -> int:
        """How many workers run now."""
        return self._workers

    def _worker(self) -> None:
        while True:
            with self._lock:
                queue = self._ready.popleft() if self._ready else None
                if queue is None:
                    self._work.clear()
                    self._idle += 1
            if queue is not None:
                queue.run_one()
                continue
            woken = self._work.wait(LINGER)
            with self._lock:
                self._idle -= 1
                if not woken and not self._ready:
                    self._workers -= 1
                    return


class SerialQueue:
    """Calls run one at a time, in the order posted, on a worker of ``pool``."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._calls: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._scheduled = False

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` after everything posted before; an exception is logged."""
        with self._lock:
            self._calls.append((function, args))
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.schedule(self)

    def run_one(self) -> None:
        """Run the next call (by a worker of the pool)."""
        with self._lock:
            function, args = self._calls.popleft()
        try:
            function(*args)
        except Exception:
            log.exception("a pycurator callback failed: %r", function)
        with self._lock:
            more = bool(self._calls)
            self._scheduled = more
        if more:
            self._pool.schedule(self)  # behind the other ready queues: one call a turn


class DelayedCalls:
    """Calls ``function(argument)`` made a while after they are asked for, by one unit of the
    handler, which sleeps with the handler's events and ends once nothing is due (the next call
    asked for spawns another). One wake-up makes every call due within :data:`BATCH_WINDOW`: a
    loop of short holds then wakes the unit a few times per delay, not per hold. A call that
    is no longer needed is skipped by the function itself (so adding is all it costs)."""

    def __init__(self, handler: Any) -> None:
        self._spawn = spawner(handler)
        self._due: list[tuple[float, int, Callable[[Any], None], Any]] = []  # a heap
        self._added = itertools.count()
        self._lock = handler.lock_object()
        self._wake = handler.event_object()
        self._running = False

    def add(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        """Call ``function(argument)`` (short, never blocking) about ``delay`` seconds from
        now; an exception it raises is logged (DEBUG)."""
        entry = (clock.monotonic() + delay, next(self._added), function, argument)
        with self._lock:
            heapq.heappush(self._due, entry)
            start = not self._running
            self._running = True
            if not start and self._due[0] is entry:
                self._wake.set()  # the unit sleeps until a later time
        if start:
            self._spawn(self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._due:
                    self._running = False
                    return
                delay = self._due[0][0] - clock.monotonic()
                due = []
                if delay > 0:
                    self._wake.clear()
                else:
                    soon = clock.monotonic() + BATCH_WINDOW
                    while self._due and self._due[0][0] <= soon:
                        due.append(heapq.heappop(self._due))
            if delay > 0:
                self._wake.wait(delay)
                continue
            for _, _, function, argument in due:
                try:
                    function(argument)
                except Exception:  # a stopped client, say
                    log.debug("a delayed call failed: %r", function, exc_info=True)


class _Unit:
    """A unit of :class:`Units`: the call it is given, and what wakes it while it is idle."""

    __slots__ = ("call", "wake")

    def __init__(self, call: Callable[[], None]) -> None:
        self.call: Callable[[], None] | None = call
        self.wake: Any = None  # made once it first waits


class Units:
    """Long calls (a leader selector's terms: ``lead``, then what its return sends), each on a
    unit of its own, as many at once as are asked for. A unit done with its call waits up to
    :data:`LINGER` seconds for the next one, so that a call seldom waits for a unit to start;
    at most :data:`MAX_IDLE_UNITS` wait, whatever the number of calls that ran at once. A unit
    keeps nothing of a call once it has returned."""

    def __init__(self, handler: Any) -> None:
        self._spawn = spawner(handler)
        self._handler = weakref.ref(handler)  # the handler goes with its last user
        self._lock = threading.Lock()  # never held across a call or a wait
        self._idle: list[_Unit] = []

    @property
    def idle(self) -> int:
        """How many units wait for a call now."""
        return len(self._idle)

    def run(self, call: Callable[[], None]) -> None:
        """Run ``call()`` on an idle unit, or on a new one; an exception is logged."""
        with self._lock:
            unit = self._idle.pop() if self._idle else None
            if unit is not None:
                unit.call = call
        if unit is None:
            self._spawn(functools.partial(self._run, _Unit(call)))
        else:
            unit.wake.set()

    def _run(self, unit: _Unit) -> None:
        while True:
            call, unit.call = unit.call, None
            if call is not None:
                try:
                    call()
                except Exception:
                    log.exception("a pycurator call failed: %r", call)
                del call
            if unit.wake is None:
                handler = self._handler()
                if handler is None:
                    return
                unit.wake = handler.event_object()
                del handler
            with self._lock:
                if len(self._idle) >= MAX_IDLE_UNITS:
                    return
                unit.wake.clear()
                self._idle.append(unit)
            unit.wake.wait(LINGER)
            with self._lock:
                if unit.call is None:  # not given a call while it waited: it ends
                    self._idle.remove(unit)
                    return


__all__ = [
    "BATCH_WINDOW",
    "LINGER",
    "MAX_IDLE_UNITS",
    "MAX_WORKERS",
    "DelayedCalls",
    "Pool",
    "SerialQueue",
    "Timer",
    "Timers",
    "Units",
    "spawner",
]
