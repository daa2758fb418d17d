"""Schedules of the fault explorer (:mod:`tests.explorer`) that broke an invariant of the
counters and barriers before they were mended, run again: each replays turn for turn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .explorer.explore import parse, run
from .explorer.world import exploring

FOUND = {
    # a write in doubt whose answers all came late: sent again and again as fast as the
    # runner went, no time passing, once its time to settle had passed (now: unknown)
    "atomic-long seed=5815 contenders=0t:ses:0:1 faults=21:drop,27:late,111:lose,200:delete",
    # a member's parent, a container, reaped between the levels made for its node: enter()
    # raised NoNodeError (now: the levels made again, until the enter's time is up)
    "double-barrier seed=1 contenders=0t:std:3:1/1a:ses:0.3:0.3 faults=66:late",
    # a member out of time, cancelled as it looked for ready: its node left in its session
    # (now: deleted all the same)
    "double-barrier seed=10763 contenders=0a:std:0.002:1/1a:std:0.002:3"
    " faults=76:drop,180:cancel,279:late,327:expire",
}


@pytest.fixture(autouse=True)
def explored() -> Iterator[None]:
    with exploring():
        yield


@pytest.mark.parametrize("line", sorted(FOUND))
def test_a_schedule_that_broke_an_invariant_breaks_none_now(line: str) -> None:
    assert run(parse(line)).violations == []
