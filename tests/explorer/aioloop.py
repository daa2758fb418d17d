"""An asyncio event loop on the :class:`~tests.explorer.sim.Hub`, for the asyncio front end:
its clock is the hub's, and it sleeps by parking the unit it runs in (run it in a unit of its
own). Every pass of the loop is a turn of its own."""

from __future__ import annotations

import asyncio
import selectors
from typing import Any

from .sim import Hub, Unit


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
