"""``python -m tests.explorer``: explore for a while, replay a schedule, or plant defects.

- ``[--seconds N] [--seed S] [--protocol P ...] [--exhaustive]``: the systematic pass (with
  ``--exhaustive``, every fault at every boundary of every layout; else the suite's sample),
  then random schedules from seed S on, until N seconds have passed; prints each schedule that
  breaks an invariant with the line that replays it. Exits 1 when any did.
- ``--replay LINE``: run one schedule again, printing its turns.
- ``--suite-schedules [--count] [--json]``: the schedules the test suite runs, until the first
  that breaks an invariant (every one with ``--count``); what ``--planted`` runs on each copy.
- ``--planted [--count] [--jobs N]``: plant each defect of :mod:`tests.explorer.planted` in a
  copy of the package and run the suite's schedules on it; exits 1 unless every one is caught.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import sys
import time

import pycurator

from .explore import (
    FAULTS,
    SUITE_PER_LAYOUT,
    Outcome,
    Shape,
    randomly,
    replay,
    suite_outcomes,
    systematic,
)
from .protocols import PROTOCOLS
from .world import exploring


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.explorer", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="the whole run's budget")
    parser.add_argument("--seed", type=int, default=1, help="the first random schedule's seed")
    parser.add_argument("--protocol", action="append", choices=sorted(PROTOCOLS))
    parser.add_argument("--no-systematic", action="store_true", help="random schedules only")
    parser.add_argument("--exhaustive", action="store_true", help="every fault at every boundary")
    parser.add_argument("--replay", help="run one schedule again, printing its turns")
    parser.add_argument("--participants", type=int, default=4, help="at most, per schedule")
    parser.add_argument("--clients", type=int, default=3, help="at most, per schedule")
    parser.add_argument("--faults", type=int, default=4, help="at most, per schedule")
    parser.add_argument("--suite-schedules", action="store_true", help="the suite's schedules")
    parser.add_argument("--planted", action="store_true", help="plant each defect, explore it")
    parser.add_argument("--count", action="store_true", help="run every schedule, count")
    parser.add_argument("--json", action="store_true", help="one JSON line of what was found")
    parser.add_argument("--jobs", type=int, default=2, help="planted copies explored at once")
    parser.add_argument("--budget", type=int, help="at most this many schedules")
    args = parser.parse_args(argv)
    protocols = args.protocol or list(PROTOCOLS)
    if args.planted:
        return _planted(args.count, args.jobs)
    with exploring():
        if args.replay:
            outcome = replay(args.replay)
            print("\n".join(outcome.applied))
            print("\n".join(outcome.violations) or "no invariant broken")
            return 1 if outcome.violations else 0
        if args.suite_schedules:
            return _suite(protocols, args.count, args.json, args.budget)
        return _explore(args, protocols)


def _suite(protocols: list[str], count: bool, as_json: bool, budget: int | None) -> int:
    started = time.monotonic()
    ran = caught = 0
    first = ""
    broke: list[str] = []
    by_invariant: collections.Counter[str] = collections.Counter()
    for outcome in itertools.islice(suite_outcomes(protocols), budget):
        ran += 1
        if outcome.violations:
            caught += 1
            lines = [line.split(" ", 1)[1] for line in outcome.violations]
            by_invariant.update({line.split(":", 1)[0] for line in lines})
            if not first:
                first, broke = str(outcome.schedule), lines
            if not count:
                break
    report = {
        "package": pycurator.__file__,
        "ran": ran,
        "caught": caught,
        "by_invariant": dict(by_invariant),
        "first": first,
        "broke": broke,
        "seconds": round(time.monotonic() - started, 1),
    }
    if as_json:
        print(json.dumps(report))
    else:
        print(f"{caught} of {ran} schedules broke an invariant; the first: {first or '-'}")
        for line in broke:
            print(f"    {line}")
    return 1 if caught else 0


def _planted(count: bool, jobs: int) -> int:
    from .planted import DEFECTS, Stale, explore_all

    started = time.monotonic()
    missed = 0
    try:
        for found in explore_all(count, jobs):
            defect = found.defect
            if not found.caught:
                missed += 1
                print(f"MISSED ({defect.invariant}): {defect.name}: none of {found.ran} schedules")
                continue
            how = f"{found.caught} of {found.ran} schedules" if count else f"schedule {found.ran}"
            if count:
                how += f" ({found.by_invariant.get(defect.invariant, 0)} by {defect.invariant})"
            named = "" if found.named else f" (first by another: {found.broke[0].split(':')[0]})"
            print(f"caught ({defect.invariant}){named}: {defect.name}: {how}, {found.seconds} s")
            print(f"    {found.first}")
            print(f"    {found.broke[0][:300]}")
    except Stale as exc:
        print(f"STALE: {exc}")
        return 1
    print(
        f"{len(DEFECTS) - missed} of {len(DEFECTS)} planted defects caught, in"
        f" {time.monotonic() - started:.1f} s"
    )
    return 1 if missed else 0


def _explore(args: argparse.Namespace, protocols: list[str]) -> int:
    started = time.monotonic()
    counts: collections.Counter[str] = collections.Counter()
    failed: list[Outcome] = []

    def take(outcome: Outcome, how: str) -> None:
        counts[how] += 1
        counts["faults"] += len(outcome.schedule.faults)
        if outcome.notes:
            counts["noted"] += 1
            if counts["noted"] == 1:
                print(f"NOTE (as Curator): {outcome.schedule}: {outcome.notes[0]}")
        if outcome.violations:
            failed.append(outcome)
            print(f"FAILED: {outcome.schedule}")
            for violation in outcome.violations:
                print(f"    {violation}")

    if not args.no_systematic:
        per_layout = None if args.exhaustive else SUITE_PER_LAYOUT
        for outcome in systematic(protocols, per_layout=per_layout):
            take(outcome, "systematic")
            if time.monotonic() - started > args.seconds:
                break
    seeds = itertools.count(args.seed)
    shape = Shape(args.participants, args.clients, args.faults)
    until = started + args.seconds
    for outcome in randomly(seeds, protocols, until, shape=shape):
        take(outcome, "random")
    seconds = time.monotonic() - started
    print(
        f"{len(protocols)} protocols ({', '.join(protocols)}), {len(FAULTS)} kinds of fault;"
        f" {counts['systematic']} systematic and {counts['random']} random schedules"
        f" (seeds {args.seed}..{args.seed + counts['random'] - 1}), {counts['faults']} faults,"
        f" in {seconds:.1f} s; {len(failed)} broke an invariant; in {counts['noted']} an acquire"
        " failed with NoNodeError as Curator's does (its node, or its lock's parent container,"
        " gone as it was made)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
