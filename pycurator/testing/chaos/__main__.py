"""``python -m pycurator.testing.chaos --seconds 300 --seed 7``: a chaos run on an embedded
ensemble, its summary printed; ``... worker LANGUAGE HOSTS WHO`` is one of its workers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __doc__ as about
from .contenders import HANDLERS, quiet_logs
from .faults import CUT_GAPS, CUTS, FAULTS
from .run import Chaos
from .workers import worker_main


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["worker"]:
        worker_main(*args[1:4])
        return 0
    parser = argparse.ArgumentParser(prog="python -m pycurator.testing.chaos", description=about)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long faults go on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="threads per kind and language")
    parser.add_argument(
        "--quiet-every",
        type=float,
        default=30.0,
        help="seconds of faults between two quiet moments' audits of the lock nodes (one"
        " follows the first round of faults and one comes before the end in any case)",
    )
    parser.add_argument(
        "--cuts",
        action="store_true",
        help="no other fault than short cuts of every connection (10-300 ms), about 200 a minute",
    )
    parser.add_argument(
        "--asyncio",
        action="store_true",
        help="asyncio contenders of pycurator's mutex, read/write lock and semaphore as well",
    )
    parser.add_argument(
        "--handler",
        choices=HANDLERS,
        default="threading",
        help="the kazoo handler of the Python contenders' clients (fast: pycurator's; lean:"
        " pycurator's on pycurator's connection loop, as connect() makes them)",
    )
    parser.add_argument("--json", type=Path, help="write the report here too")
    options = parser.parse_args(args)
    quiet_logs()
    report = Chaos(
        options.seconds,
        options.seed,
        options.threads,
        quiet_every=options.quiet_every,
        faults=CUTS if options.cuts else FAULTS,
        gaps=CUT_GAPS if options.cuts else (0.3, 1.0),
        languages=("python", "java", "asyncio") if options.asyncio else ("python", "java"),
        handler=options.handler,
    ).run()
    print(report.summary())
    if options.json:
        options.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
