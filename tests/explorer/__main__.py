"""``python -m tests.explorer [--seconds N] [--seed S] [--protocol P ...] [--replay LINE]
[--participants N] [--clients N] [--faults N]``: the systematic pass, then random schedules from
seed S on until N seconds have passed (both within the N seconds); prints the
protocols, schedules, faults and seconds, and each schedule that breaks an invariant with the line
that replays it (``--replay``, which prints its steps). Exits 1 when any did."""

from __future__ import annotations

import argparse
import collections
import itertools
import sys
import time

from .explore import FAULTS, Outcome, Shape, exploring, randomly, replay, systematic
from .protocols import PROTOCOLS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.explorer", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="the whole run's budget")
    parser.add_argument("--seed", type=int, default=1, help="the first random schedule's seed")
    parser.add_argument("--protocol", action="append", choices=sorted(PROTOCOLS))
    parser.add_argument("--no-systematic", action="store_true", help="random schedules only")
    parser.add_argument("--replay", help="run one schedule again, printing its steps")
    parser.add_argument("--participants", type=int, default=4, help="at most, per schedule")
    parser.add_argument("--clients", type=int, default=3, help="at most, per schedule")
    parser.add_argument("--faults", type=int, default=4, help="at most, per schedule")
    args = parser.parse_args(argv)
    with exploring():
        if args.replay:
            outcome = replay(args.replay)
            print("\n".join(outcome.applied))
            print("\n".join(outcome.violations) or "no invariant broken")
            return 1 if outcome.violations else 0
        protocols = args.protocol or list(PROTOCOLS)
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
            for outcome in systematic(protocols):
                take(outcome, "systematic")
        seeds = itertools.count(args.seed)
        shape = Shape(args.participants, args.clients, args.faults)
        for outcome in randomly(seeds, protocols, started + args.seconds, shape=shape):
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
