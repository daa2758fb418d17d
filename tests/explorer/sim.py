"""Simulated time and units of concurrency, on which the library runs unchanged.

:class:`Hub` runs *units* (greenlets: a participant's thread, a kazoo worker, a timer unit of
the library, a client's connection, an event loop) and *calls due later* (a request arriving at
the server, a timer), one at a time, on simulated time that moves only when nothing is left to
run now. Each turn is one *boundary*: resuming a unit (an answer it waited for came, its signal
was set, its timeout passed, a callback it takes off a queue) or making a due call. The order is
drawn from the hub's seeded random source, so a seed names one interleaving.

:class:`SimHandler` is a kazoo handler on the hub (kazoo's ``IHandler``: events, locks, async
results, two queues of callbacks each served by a worker, ``spawn``): a ``KazooClient`` made with
it, and every recipe on that client, waits in simulated time. Its units are greenlets, as
gevent's are, so it is named as gevent's handler (which is how the library tells a handler whose
units are greenlets). :class:`SimLoop` is an asyncio event loop on the hub, for the asyncio
front end: its clock is the hub's, and it sleeps by parking its unit.

A unit blocks only through these (:meth:`Hub.block`): the library's own locks that are
``threading`` ones are never held across a wait (the contract gevent's handler relies on too).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import math
import random
import selectors
from asyncio import events as asyncio_events
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import greenlet
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.handlers.utils import AsyncResult

#: What a unit parked with a deadline is resumed with when its deadline passes first.
TIMED_OUT = object()


class Stalled(Exception):
    """A schedule that makes no progress: more turns in one simulated instant than any
    protocol needs (a unit that resumes itself forever)."""


class Call:
    """A call due at a time; :meth:`cancel` drops it."""

    __slots__ = ("cancelled", "client", "function", "name")

    def __init__(self, function: Callable[[], None], name: str, client: int | None) -> None:
        self.function = function
        self.name = name
        self.client = client
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Unit:
    """One greenlet on the hub: ``name`` for the reports, ``client`` the index of the client
    it works for (None: several, or none), the value it resumes with once woken, and the
    event loop that runs in it (set while it runs, as asyncio keeps it per thread)."""

    __slots__ = ("client", "done", "error", "glet", "loop", "name", "parked", "timer", "value")

    def __init__(self, glet: greenlet.greenlet, name: str, client: int | None) -> None:
        self.glet = glet
        self.name = name
        self.client = client
        self.parked = False
        self.timer: Call | None = None
        self.value: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.done = False
        self.error: BaseException | None = None

    def __repr__(self) -> str:
        return f"<unit {self.name}>"


class Hub:
    """See the module doc. ``on_boundary(number, what, client)`` is called at each boundary
    before the turn (``what``: the unit or the call, by name; ``client``: whose, or None);
    ``after_turn()`` after it. ``rng`` draws the order."""

    #: The most turns in one simulated instant before a schedule counts as stalled.
    MOST_TURNS_AT_ONCE = 20_000

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = 0.0
        self.boundaries = 0
        self.on_boundary: Callable[[int, str, int | None], None] | None = None
        self.after_turn: Callable[[], None] | None = None
        self.current: Unit | None = None
        self.units: list[Unit] = []
        self.closing = False
        self._ready: list[Unit] = []
        self._calls: list[tuple[float, int, Call]] = []
        self._seq = itertools.count()
        self._glet = greenlet.getcurrent()
        #: units that failed (an exception out of their function), for the world to report
        self.failed: list[Unit] = []

    # -- calls due later -------------------------------------------------------------------------

    def call_at(
        self,
        when: float,
        function: Callable[[], None],
        name: str = "call",
        client: int | None = None,
    ) -> Call:
        """Make ``function()`` at ``when`` (not before now), on the hub: it must not block."""
        call = Call(function, name, client)
        heapq.heappush(self._calls, (max(when, self.now), next(self._seq), call))
        return call

    def call_later(
        self,
        delay: float,
        function: Callable[[], None],
        name: str = "call",
        client: int | None = None,
    ) -> Call:
        return self.call_at(self.now + max(0.0, delay), function, name, client)

    # -- units -----------------------------------------------------------------------------------

    def spawn(self, function: Callable[[], Any], name: str, client: int | None = None) -> Unit:
        """A new unit running ``function()``, ready now."""

        def run(*_: object) -> None:  # (given what the first switch passes)
            try:
                function()
            except greenlet.GreenletExit:
                raise
            except BaseException as exc:
                unit.error = exc
                self.failed.append(unit)

        unit = Unit(greenlet.greenlet(run, parent=self._glet), name, client)
        self.units.append(unit)
        self._ready.append(unit)
        return unit

    def unit(self) -> Unit:
        """The unit running now (an error on the hub itself, which must never block)."""
        unit = self.current
        assert unit is not None and greenlet.getcurrent() is unit.glet, "blocking on the hub"
        return unit

    def after(self, seconds: float | None) -> float | None:
        """When a wait of ``seconds`` from now ends: at least a tick of the clock later (a
        float's rounding must not leave time where it was, or a deadline read back through
        its seconds left would never pass); None for no limit."""
        if seconds is None:
            return None
        return max(self.now + seconds, math.nextafter(self.now, math.inf))

    def block(self, until: float | None = None) -> Any:
        """Park the running unit until :meth:`wake` (its value) or ``until`` (TIMED_OUT)."""
        unit = self.unit()
        if self.closing:
            raise greenlet.GreenletExit()
        unit.parked = True
        if until is not None:

            def time_out() -> None:
                self.wake(unit, TIMED_OUT)

            unit.timer = self.call_at(until, time_out, "timeout", unit.client)
        value = self._glet.switch()
        if self.closing:
            raise greenlet.GreenletExit()
        return value

    def yield_now(self) -> None:
        """Let the hub choose what runs next (the running unit stays ready)."""
        unit = self.unit()
        if self.closing:
            raise greenlet.GreenletExit()
        unit.parked = True
        self.wake(unit, None)
        self._glet.switch()
        if self.closing:
            raise greenlet.GreenletExit()

    def wake(self, unit: Unit, value: Any = True) -> bool:
        """Make a parked ``unit`` ready, to resume with ``value``; False if it was not parked."""
        if not unit.parked:
            return False
        unit.parked = False
        unit.value = value
        if unit.timer is not None:
            unit.timer.cancel()
            unit.timer = None
        self._ready.append(unit)
        return True

    # -- running ---------------------------------------------------------------------------------

    def run(self, until: float, stop: Callable[[], bool] | None = None) -> None:
        """Take turns until nothing is due by ``until`` (simulated seconds) or ``stop()``."""
        turns_now = 0
        while stop is None or not stop():
            calls = self._calls
            while calls and calls[0][2].cancelled:
                heapq.heappop(calls)
            due = bool(calls) and calls[0][0] <= self.now
            ready = self._ready
            if ready and (not due or self.rng.random() < 0.6):
                unit = ready.pop(self.rng.randrange(len(ready)))
                self._boundary(unit.name, unit.client)
                self._resume(unit)
            elif due:
                _, _, call = heapq.heappop(calls)
                self._boundary(call.name, call.client)
                call.function()
            else:
                if not calls or calls[0][0] > until:
                    return
                self.now = calls[0][0]
                turns_now = 0
                continue
            turns_now += 1
            if turns_now > self.MOST_TURNS_AT_ONCE:
                raise Stalled(f"over {self.MOST_TURNS_AT_ONCE} turns at t={self.now:.3f}")
            if self.after_turn is not None:
                self.after_turn()

    def _boundary(self, what: str, client: int | None) -> None:
        number = self.boundaries
        self.boundaries += 1
        if self.on_boundary is not None:
            self.on_boundary(number, what, client)

    def _resume(self, unit: Unit) -> None:
        self.current = unit
        asyncio_events._set_running_loop(unit.loop)
        try:
            unit.glet.switch(unit.value)
        finally:
            unit.loop = asyncio_events._get_running_loop()
            asyncio_events._set_running_loop(None)
            self.current = None
        if unit.glet.dead:
            unit.done = True

    def close(self) -> None:
        """End every unit still alive (their clean-up runs; any wait in it ends at once)."""
        self.closing = True
        for _ in range(3):
            alive = [unit for unit in self.units if not unit.glet.dead]
            if not alive:
                break
            for unit in alive:
                self.current = unit
                asyncio_events._set_running_loop(unit.loop)
                try:
                    unit.glet.throw(greenlet.GreenletExit())
                except BaseException:  # a unit's clean-up on the way out
                    pass
                finally:
                    asyncio_events._set_running_loop(None)
                    self.current = None
        self.units.clear()
        self._ready.clear()
        self._calls.clear()
        # what the library keeps of the hub (in its locks and events) must not reach the world
        # and its clients: the library's registries are weak, keyed by those clients
        self.on_boundary = self.after_turn = None
        self.failed = []


# -- what kazoo's handler makes, on the hub ----------------------------------------------------


class SimEvent:
    """``threading.Event`` on the hub."""

    __slots__ = ("_flag", "_hub", "_waiters")

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._flag = False
        self._waiters: list[Unit] = []

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set  # threading's old name

    def set(self) -> None:
        if self._flag:
            return
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for unit in waiters:
            self._hub.wake(unit, True)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        if timeout is not None and timeout <= 0:
            return False
        hub = self._hub
        unit = hub.unit()
        self._waiters.append(unit)
        try:
            hub.block(hub.after(timeout))
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
        return self._flag


class SimLock:
    """``threading.Lock`` on the hub (``reentrant``: ``threading.RLock``), handed to its
    waiters in turn."""

    __slots__ = ("_count", "_hub", "_owner", "_reentrant", "_waiters")

    def __init__(self, hub: Hub, reentrant: bool = False) -> None:
        self._hub = hub
        self._reentrant = reentrant
        self._owner: object = None
        self._count = 0
        self._waiters: deque[Unit] = deque()

    def _me(self) -> object:
        return self._hub.current or self._hub

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = self._me()
        if self._owner is None:
            self._owner, self._count = me, 1
            return True
        if self._reentrant and self._owner is me:
            self._count += 1
            return True
        if not blocking or timeout == 0:
            return False
        hub = self._hub
        unit = hub.unit()
        self._waiters.append(unit)
        until = None if timeout is None or timeout < 0 else hub.after(timeout)
        try:
            taken = hub.block(until) is not TIMED_OUT
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
        return taken  # handed over by release(): we own it now

    def release(self) -> None:
        assert self._owner is not None, "release of an unheld lock"
        self._count -= 1
        if self._count > 0:
            return
        self._owner = None
        while self._waiters:
            unit = self._waiters.popleft()
            if self._hub.wake(unit, True):
                self._owner, self._count = unit, 1
                return

    def locked(self) -> bool:
        return self._owner is not None

    def _release_all(self) -> int:
        count, self._count = self._count, 1
        self.release()
        return count

    def _take_back(self, count: int) -> None:
        self.acquire()
        self._count = count

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class SimCondition:
    """``threading.Condition`` (over an RLock) on the hub, for kazoo's async results."""

    __slots__ = ("_hub", "_lock", "_waiters")

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._lock = SimLock(hub, reentrant=True)
        self._waiters: list[Unit] = []

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        hub = self._hub
        unit = hub.unit()
        count = self._lock._release_all()
        self._waiters.append(unit)
        try:
            woken = hub.block(hub.after(timeout)) is not TIMED_OUT
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
            self._lock._take_back(count)
        return woken

    def notify_all(self) -> None:
        waiters, self._waiters = self._waiters, []
        for unit in waiters:
            self._hub.wake(unit, True)

    notifyAll = notify_all


class SimQueue:
    """A handler's queue of callbacks: each :meth:`get` is a turn of its own, so that every
    callback run is a boundary."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._items: deque[Any] = deque()
        self._waiter: Unit | None = None

    def put(self, item: Any) -> None:
        self._items.append(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._hub.wake(waiter, True)

    def get(self) -> Any:
        hub = self._hub
        if self._items:
            hub.yield_now()
        while not self._items:
            self._waiter = hub.unit()
            hub.block()
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


_STOP = object()


class SimHandler:
    """kazoo's handler on the :class:`Hub` (see the module doc). ``client``: the index of the
    client it serves, for the boundaries' reports."""

    name = "sequential_gevent_handler"  # its units are greenlets
    timeout_exception = KazooTimeoutError

    def __init__(self, hub: Hub, client: int | None = None, label: str = "") -> None:
        self.hub = hub
        self.client = client
        self.label = label
        self.callback_queue = SimQueue(hub)
        self.completion_queue = SimQueue(hub)
        self._running = False
        self._workers: list[Unit] = []
        self._spawned = itertools.count()

    @property
    def running(self) -> bool:
        return self._running

    def sleep_func(self, seconds: float) -> None:
        self.hub.block(self.hub.after(max(0.0, seconds)))

    def _worker(self, queue: SimQueue) -> None:
        while True:
            function = queue.get()
            if function is _STOP:
                return
            try:
                function()
            except Exception:
                import logging

                logging.getLogger("kazoo.handlers.threading").exception(
                    "Exception in worker queue thread"
                )
            del function

    def start(self) -> None:
        if self._running:
            return
        for kind, queue in (("completion", self.completion_queue), ("watch", self.callback_queue)):
            work = functools.partial(self._worker, queue)
            self._workers.append(self.hub.spawn(work, f"{self.label}:{kind}", self.client))
        self._running = True

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        for queue in (self.completion_queue, self.callback_queue):
            queue.put(_STOP)
        workers, self._workers = self._workers, []
        for worker in workers:
            while not worker.glet.dead:
                self.hub.block(self.hub.now + 0.001)
        self.callback_queue = SimQueue(self.hub)
        self.completion_queue = SimQueue(self.hub)

    def event_object(self) -> SimEvent:
        return SimEvent(self.hub)

    def lock_object(self) -> SimLock:
        return SimLock(self.hub)

    def rlock_object(self) -> SimLock:
        return SimLock(self.hub, reentrant=True)

    def async_result(self) -> AsyncResult:
        return AsyncResult(self, lambda: SimCondition(self.hub), KazooTimeoutError)

    def spawn(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Unit:
        name = f"{self.label}:{getattr(func, '__name__', 'unit')}#{next(self._spawned)}"
        return self.hub.spawn(lambda: func(*args, **kwargs), name, self.client)

    def dispatch_callback(self, callback: Any) -> None:
        self.callback_queue.put(lambda: callback.func(*callback.args))

    def select(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the simulated connection has no sockets")

    socket = create_connection = create_socket_pair = select


# -- asyncio on the hub ------------------------------------------------------------------------


class _Selector(selectors.BaseSelector):
    """What the simulated loop waits in: no file is ever ready; a wait parks the loop's unit
    until its timeout or a wake-up (``call_soon_threadsafe``). Every pass of the loop is a
    turn of its own."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._map: dict[Any, selectors.SelectorKey] = {}
        self.woken = False
        self.waiting: Unit | None = None
        #: the loop that waits here (its callbacks ready now are run without time passing;
        #: a timer due within the loop's resolution of the clock waits for a tick of it)
        self.loop: Any = None

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = selectors.SelectorKey(fileobj, id(fileobj), events, data)
        self._map[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._map.pop(fileobj)

    def get_map(self) -> Any:
        return self._map

    def wake(self) -> None:
        self.woken = True
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            self._hub.wake(waiting, True)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        hub = self._hub
        if self.woken or (timeout == 0 and self.loop is not None and self.loop._ready):
            self.woken = False
            hub.yield_now()
            return []
        self.waiting = hub.unit()
        try:
            hub.block(hub.after(timeout))
        finally:
            self.waiting = None
            self.woken = False
        return []

    def close(self) -> None:
        self._map.clear()


class SimLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop on the hub (see the module doc): run it in a unit of its own."""

    def __init__(self, hub: Hub) -> None:
        self._sim_selector = _Selector(hub)
        self._hub = hub
        super().__init__(self._sim_selector)
        self._sim_selector.loop = self
        # a timer is due once its time has passed, not within the system clock's resolution of
        # it: a wait of a deadline's last few ticks must let a tick pass (see Hub.after)
        self._clock_resolution = 0.0

    def time(self) -> float:
        return self._hub.now

    def _write_to_self(self) -> None:
        self._sim_selector.wake()


def units_named(hub: Hub, prefix: str) -> Iterator[Unit]:
    return (unit for unit in hub.units if unit.name.startswith(prefix))
