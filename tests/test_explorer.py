"""The fault explorer (:mod:`tests.explorer`) over every protocol it knows: each single fault at
every step boundary, then random schedules of several faults and participants; every invariant
holds after each. Longer runs: ``python -m tests.explorer --seconds N``."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from .explorer.explore import (
    FAULTS,
    Outcome,
    Schedule,
    exploring,
    randomly,
    run,
    systematic,
)
from .explorer.protocols import PROTOCOLS
from .explorer.world import World

#: The random schedules every run of the suite plays (their seeds, from 1): the same ones each
#: time, so that a run fails or passes whatever the machine's speed.
RANDOM_SCHEDULES = 2000


@pytest.fixture(autouse=True)
def simulated() -> Iterator[None]:
    with exploring():
        yield


def broken(outcomes: Iterator[Outcome]) -> list[str]:
    """Each schedule that broke an invariant, with the line that replays it."""
    return [
        f"{outcome.schedule}: {'; '.join(outcome.violations)}"
        for outcome in outcomes
        if outcome.violations
    ]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_each_single_fault_at_each_step_boundary_breaks_no_invariant(protocol: str) -> None:
    outcomes = list(systematic([protocol]))
    clean = outcomes[0]
    assert clean.boundaries > 20  # the protocol ran: acquires, holds and releases
    assert len(outcomes) == 1 + clean.boundaries * len(FAULTS)
    assert broken(iter(outcomes)) == []


def test_random_schedules_of_several_faults_break_no_invariant() -> None:
    seeds = iter(range(1, RANDOM_SCHEDULES + 1))
    outcomes = list(randomly(seeds, sorted(PROTOCOLS), math.inf))
    assert len(outcomes) == RANDOM_SCHEDULES
    assert broken(iter(outcomes)) == []


def test_a_schedule_replays_the_same() -> None:
    schedule = Schedule("semaphore", 7, (0, 1, 0), ())
    first, again = run(schedule), run(schedule)
    assert (first.boundaries, first.violations) == (again.boundaries, again.violations)


def answers_none_while_disconnected(world: World) -> None:
    """The defect planted: the transport's session read as None while merely disconnected,
    as kazoo's public ``client_id`` reads it."""
    for client in world.clients:
        client.session_hook = lambda c: c.session if c.is_connected else None


def test_the_explorer_finds_a_planted_defect_within_its_budget() -> None:
    found = broken(systematic(["mutex"], plant=answers_none_while_disconnected))
    assert found, "a session read as None while disconnected went unnoticed"
    assert any("is lost" in line for line in found)
