"""The timers every deadline of a handler's clients waits on (:class:`Timers`): each runs in
time, and adding one wakes the timers' unit only when the unit would otherwise wake too late."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kazoo.handlers.threading import SequentialThreadingHandler

from pycurator._client import background
from pycurator._client.background import Timers

from .support import SOON


class _CountedEvent:
    """A handler's event that counts its ``set`` calls and tells when a thread first waits on
    it."""

    def __init__(self, counts: list[int], waited: threading.Event) -> None:
        self._event = threading.Event()
        self._counts = counts
        self._waited = waited

    def set(self) -> None:
        self._counts.append(1)
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        self._waited.set()
        return self._event.wait(timeout)


class _CountingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's threading handler whose events count how often they are set; ``waited`` is set
    once a thread waits on one (the timers' unit sleeps)."""

    def __init__(self) -> None:
        super().__init__()
        self.sets: list[int] = []
        self.waited = threading.Event()

    def event_object(self) -> Any:
        return _CountedEvent(self.sets, self.waited)


def test_a_timer_due_after_the_unit_wakes_by_itself_does_not_wake_it() -> None:
    handler = _CountingHandler()
    timers = Timers(handler)
    first = timers.call_later(60, lambda: None)
    assert handler.waited.wait(SOON)  # the unit sleeps until TIMERS_NAP from now
    for _ in range(100):  # deadlines of requests: later than the unit's own wake-up
        timers.call_later(10, lambda: None).cancel()
    timers.call_later(background.TIMERS_NAP + 0.5, lambda: None).cancel()
    assert handler.sets == []
    first.cancel()


def test_a_timer_due_before_the_unit_wakes_wakes_it_and_runs_in_time() -> None:
    handler = _CountingHandler()
    timers = Timers(handler)
    later = timers.call_later(60, lambda: None)  # kept: the unit sleeps until TIMERS_NAP
    assert handler.waited.wait(SOON)
    ran = threading.Event()
    added = time.monotonic()
    timers.call_later(0.2, ran.set)
    assert handler.sets == [1]
    assert ran.wait(SOON)
    assert time.monotonic() - added >= 0.2
    later.cancel()


def test_a_timer_due_after_several_naps_runs_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "TIMERS_NAP", 0.05)
    handler = SequentialThreadingHandler()  # the timers keep it weakly
    timers = Timers(handler)
    ran = threading.Event()
    ran_at: list[float] = []

    def run() -> None:
        ran_at.append(time.monotonic())
        ran.set()

    added = time.monotonic()
    timers.call_later(0.3, run)
    assert ran.wait(SOON)
    assert ran_at[0] - added >= 0.3
