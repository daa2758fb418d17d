"""Simulated time and units of concurrency, on which the library runs unchanged.

:class:`Hub` runs *units* (greenlets: a participant's thread, a kazoo worker, a timer unit of
the library, a client's connection, an event loop) and *calls due later* (a request arriving at
the server, a timer), one at a time, on simulated time that moves only when nothing is left to
run now. Each turn is one *boundary*: resuming a unit (an answer it waited for came, its signal
was set, its timeout passed, a callback it takes off a queue) or making a due call. The order is
drawn from the hub's seeded random source, so a seed names one interleaving.

On it run a kazoo handler (:mod:`tests.explorer.handler`), on which a ``KazooClient`` and every
recipe on that client wait in simulated time, and an asyncio event loop
(:mod:`tests.explorer.aioloop`), for the asyncio front end.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import random
from asyncio import events as asyncio_events
from collections.abc import Callable
from typing import Any

import greenlet

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
