"""Background work in a constant number of units (threads, or greenlets under gevent and
eventlet), whatever the number of recipes: a timer, and a small pool of workers.

- :func:`call_later` runs a short function at a given time, from one timer unit per kazoo
  handler (spawned while a timer is pending).
- A :class:`SerialQueue` runs the calls posted to it one at a time, in order, on the handler's
  pool of at most :data:`MAX_WORKERS` workers (spawned while there is work, ended after
  :data:`LINGER` idle seconds). Each recipe posts its listeners and ``on_lost`` callbacks to a
  queue of its own, so they run in order per recipe and a slow one holds up only its recipe.

Everything goes through the handler (``spawn``, ``event_object``), so a greenlet handler
gets greenlets.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pycurator")

#: The most workers a handler's pool runs at once.
MAX_WORKERS = 4
#: Seconds an idle worker waits for more work before it ends.
LINGER = 5.0


class Timer:
    """A call due at a time on the monotonic clock; :meth:`cancel` keeps it from running."""

    __slots__ = ("cancelled", "due", "function")

    def __init__(self, due: float, function: Callable[[], None]) -> None:
        self.due = due
        self.function = function
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Timers:
    """The pending timers of one handler, run in time order by one unit of that handler; the
    unit ends once none is pending (a cancelled one counts until its time: cancelling is O(1))."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self._due: list[tuple[float, int, Timer]] = []  # a heap
        self._added = itertools.count()
        self._lock = threading.Lock()  # held for heap operations only, never across a switch
        self._wake = handler.event_object()
        self._running = False

    def add(self, timer: Timer) -> None:
        with self._lock:
            heapq.heappush(self._due, (timer.due, next(self._added), timer))
            start = not self._running
            self._running = True
            if not start and self._due[0][2] is timer:
                self._wake.set()  # the unit sleeps until a later time
        if start:
            self._handler.spawn(self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._due and self._due[0][2].cancelled:
                    heapq.heappop(self._due)
                if not self._due:
                    self._running = False
                    return
                delay = self._due[0][0] - time.monotonic()
                timer = heapq.heappop(self._due)[2] if delay <= 0 else None
                if timer is None:
                    self._wake.clear()
            if timer is None:
                self._wake.wait(delay)
                continue
            try:
                timer.function()
            except Exception:
                log.exception("a timer's function failed")


def call_later(handler: Any, delay: float, function: Callable[[], None]) -> Timer:
    """Run ``function()`` (short, never blocking) ``delay`` seconds from now on the timer unit
    of ``handler``; the returned :class:`Timer` cancels it."""
    timer = Timer(time.monotonic() + max(0.0, delay), function)
    _service(_TIMERS, handler, _Timers).add(timer)
    return timer


class _Pool:
    """A handler's workers: each takes the next ready :class:`SerialQueue` and runs one of its
    calls. At most :data:`MAX_WORKERS` run; an idle one ends after :data:`LINGER` seconds."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler
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
            self._handler.spawn(self._worker)

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
    """Calls run one at a time, in the order posted, on a worker of ``handler``'s pool."""

    def __init__(self, handler: Any) -> None:
        self._pool = _service(_POOLS, handler, _Pool)
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


def requests_queue(handler: Any) -> SerialQueue:
    """The queue on which pycurator sends its own requests when news comes on kazoo's
    connection thread (after a reconnect: the checks of held nodes, the deletes still owed).
    That thread must not send: a request writes a byte to the pipe that wakes it, which only
    it empties, and hundreds of them fill it. One worker goes through them in turn."""
    queue: SerialQueue = _service(_REQUESTS, handler, SerialQueue)
    return queue


def pool_workers(handler: Any) -> int:
    """How many pool workers ``handler`` runs now (for tests and the benchmark)."""
    with _SERVICES_LOCK:
        pool = _POOLS.get(handler)
    return pool.workers if pool is not None else 0


_TIMERS: weakref.WeakKeyDictionary[Any, _Timers] = weakref.WeakKeyDictionary()
_POOLS: weakref.WeakKeyDictionary[Any, _Pool] = weakref.WeakKeyDictionary()
_REQUESTS: weakref.WeakKeyDictionary[Any, SerialQueue] = weakref.WeakKeyDictionary()
_SERVICES_LOCK = threading.RLock()  # a service may make another (a queue, its pool)


def _service(registry: weakref.WeakKeyDictionary[Any, Any], handler: Any, make: Any) -> Any:
    with _SERVICES_LOCK:
        service = registry.get(handler)
        if service is None:
            service = registry[handler] = make(handler)
        return service


def _forked() -> None:
    global _SERVICES_LOCK
    _TIMERS.clear()  # no unit survives a fork
    _POOLS.clear()
    _REQUESTS.clear()
    _SERVICES_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_forked)

__all__ = [
    "LINGER",
    "MAX_WORKERS",
    "SerialQueue",
    "Timer",
    "call_later",
    "pool_workers",
    "requests_queue",
]
