"""The library's one clock: every deadline, timer, delayed call, report, ping and timestamp of
the package reads the time here, and nowhere else (``tests/test_architecture.py`` holds every
other module of the library to it).

:func:`monotonic` is the system's monotonic clock (``time.monotonic``), and :func:`time_ns` its
wall clock (``time.time_ns``: a service instance's registration time), until :func:`use` puts
another source in their place: a simulation that runs the library on a clock of its own (the
test suite's fault explorer, whose simulated seconds pass only when nothing is left to run)
injects it here, once, and every wait of every recipe, front end and runner then keeps that
time. The clock is read through the module (``clock.monotonic()``), never bound to a name of
its own, so a source put in place later is the one read.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Seconds on the clock in use: the system's monotonic clock, unless :func:`use` said otherwise.
monotonic: Callable[[], float] = time.monotonic
#: Nanoseconds since the epoch on the clock in use: the system's wall clock, unless :func:`use`
#: said otherwise.
time_ns: Callable[[], int] = time.time_ns


def use(source: Callable[[], float] | None) -> None:
    """Read the time from ``source`` from now on (seconds that never go back; the wall clock
    then moves with it, from the wall clock's time now), or from the system's clocks again with
    None. Process-wide: meant for a simulation that runs the library alone, not for a process
    serving real clients meanwhile."""
    global monotonic, time_ns
    if source is None:
        monotonic, time_ns = time.monotonic, time.time_ns
        return
    epoch = time.time_ns() - int(source() * 1e9)
    monotonic = source

    def wall() -> int:
        return epoch + int(source() * 1e9)

    time_ns = wall


__all__ = ["monotonic", "time_ns", "use"]
