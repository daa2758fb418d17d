"""A short run of the chaos checker: mixed Java and Python contenders on a mutex, a read/write
lock and a semaphore, leaders of a latch and a selector election, and holders of ZooKeeper's
WriteLock and menagerie's lock, under random faults on a 3-node ensemble
(``pycurator.testing.chaos``)."""

from __future__ import annotations

import copy
from collections import Counter

from pycurator.testing.chaos import EXCLUSIVE, FAULTS, Chaos, Hold, LogEntry, Orphans, Report, check
from pycurator.testing.chaos import Faults as FaultLog
from pycurator.testing.chaos.history import Outcome

PROGRAMMING_ERRORS = {"AttributeError", "TypeError", "NameError", "KeyError", "ValueError"}


def test_a_short_chaos_run_keeps_every_guarantee() -> None:
    report = Chaos(seconds=12, seed=11).run()
    summary = report.summary()
    assert report.ok, summary
    locks = (
        "mutex",
        "rw-read",
        "rw-write",
        "semaphore",
        "latch",
        "selector",
        "zkwrite",
        "menagerie",
    )
    for lock in locks:
        for language in ("python", "java"):
            assert report.holds[f"{lock} {language}"] > 0, summary
    for kind in (*FAULTS, "pause"):
        assert report.faults.counts[kind] > 0, summary
    assert not set(report.errors) & PROGRAMMING_ERRORS, summary
    # a worker of each language was stopped while holding until its session expired: others
    # held meanwhile, and its guarded write was rejected
    assert sorted(p.worker[:2] for p in report.pauses) == ["ja", "py"], summary
    for pause in report.pauses:
        assert pause.successors > 0 and pause.outcome == "rejected", summary
    assert report.overlaps == report.overlaps_with_stale, summary


def _hold(
    hold_id: str, enter: int, fence: int, *, outcome: Outcome = "fenced", lock: str = "mutex"
) -> Hold:
    hold = Hold(hold_id, "t", "python", lock, True, "/n", 0, enter, fence, fence + 1)
    hold.outcome = outcome
    hold.fences = [fence]
    return hold


def _report(holds: list[Hold], values: dict[str, int], lock: str = "mutex") -> Report:
    logs: dict[str, dict[str, LogEntry]] = {name: {} for name in EXCLUSIVE}
    logs[lock] = {hold_id: LogEntry(value, 0) for hold_id, value in values.items()}
    given = copy.deepcopy(holds)
    report = check(
        holds,
        logs,
        {name: len(log) for name, log in logs.items()},
        Orphans(),
        faults=FaultLog(),
        errors=Counter(),
        pauses=[],
        seconds=0,
        seed=0,
    )
    assert holds == given  # the checker is pure: what it resolves, it resolves in the report
    return report


def _check(holds: list[Hold], values: dict[str, int], lock: str = "mutex") -> list[str]:
    report = _report(holds, values, lock)
    return report.violations + report.counter_problems


def test_the_checker_flags_overlapping_fenced_holds_and_lost_updates() -> None:
    apart = [_hold("a", 0, 10), _hold("b", 20, 30)]
    assert _check(apart, {"a": 1, "b": 2}) == []
    overlapping = [_hold("a", 0, 10), _hold("b", 5, 30)]
    assert any("overlap" in p for p in _check(overlapping, {"a": 1, "b": 2}))
    lost_update = [_hold("a", 0, 10), _hold("b", 20, 30)]
    assert any("once each" in p for p in _check(lost_update, {"a": 1, "b": 1}))
    stale = [_hold("a", 0, 10, outcome="rejected"), _hold("b", 5, 30)]
    assert _check(stale, {"b": 1}) == []


def test_the_checker_takes_a_writes_outcome_and_time_from_the_log() -> None:
    # a reply lost, then a retry rejected: the log says the first attempt landed, at its time
    retried = _hold("a", 0, 50, outcome="rejected")
    retried.fences = [10, 50]
    later = _hold("b", 20, 30)
    assert _check([retried, later], {"a": 1, "b": 2}) == []
    retried = _report([retried, later], {"a": 1, "b": 2}).resolved[0]
    assert retried.outcome == "fenced" and retried.fence_ns == 10
    claimed = [_hold("a", 0, 10), _hold("b", 20, 30)]  # a claims a write the log does not have
    assert any("log did not" in p for p in _check(claimed, {"b": 1}))


def test_the_checker_flags_two_non_stale_leaders_at_once() -> None:
    for election in ("latch", "selector"):
        one_after_another = [
            _hold("java-1", 0, 10, lock=election),
            _hold("py-1", 20, 30, lock=election),
        ]
        assert _check(one_after_another, {"java-1": 1, "py-1": 2}, election) == []
        two_leaders = [_hold("java-1", 0, 10, lock=election), _hold("py-1", 5, 30, lock=election)]
        problems = _check(two_leaders, {"java-1": 1, "py-1": 2}, election)
        assert problems == [f"{election}: java-1 and py-1 overlap (two non-stale leaders at once)"]
        # a leader whose session had gone (its fence rejected) is stale: its successor may lead
        stale = [
            _hold("java-1", 0, 10, outcome="rejected", lock=election),
            _hold("py-1", 5, 30, lock=election),
        ]
        assert _check(stale, {"py-1": 1}, election) == []
