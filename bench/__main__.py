"""``python -m bench``: pycurator against Java Curator (and kazoo's Lock where it applies).

Sections (``--sections``, all by default):

- ``cycle``: uncontended acquire+release on loopback, and through a proxy adding latency, where
  the acquire alone is also counted in round trips;
- ``drain``: a queue of N waiters drained, with time and the server's requests and bytes per
  hand-off;
- ``handoff``: release-to-acquire latency within and across languages;
- ``herd``: watches per waiting contender and waiters woken per release;
- ``throughput``: a semaphore and a read/write lock shared by Java and Python threads;
- ``contended``: each side alone, 5 threads on a mutex, a read/write lock and a semaphore, with
  one shared client, a client per thread, and (pycurator) 5 processes; Curator through JPype;
- ``standalone``: the same three and every other recipe (the semaphore mutex, a multi-lock, a
  latch won, a selector's terms), each side a program of its own, as services run: a Java
  program on Curator (compiled with ``javac`` against the Curator jars in use) against a Python
  program on pycurator, on ``connect()``'s client (on pycurator's connection loop and on
  kazoo's) and on ``KazooClient``s built by hand (it takes the ``--contended-*`` options, and
  ``--standalone-sides`` and ``--standalone-recipes``); when it runs alone (or with ``cycle``
  and ``handoff`` only) its JSON goes to ``docs/loop-bench.json`` and its tables, with the
  targets table, to the page's loop region;
- ``leaks``: watches left on the server by an acquire that timed out;
- ``aio``: the asyncio API's uncontended cycle and hand-off against the threaded API and Curator;
- ``counters``: contended increments of one ``DistributedAtomicLong``, optimistic and promoted
  to a lock, with one shared client and a client per thread, against Curator in a Java program
  (it takes the ``--contended-*`` options); when it runs alone its JSON goes to
  ``docs/counters-bench.json`` and its tables to the page's counters region;
- ``cache``: a ``CuratorCache``'s first load of 10,000 nodes (flat and three levels deep), the
  time from a write to its listener, and the memory it holds per node, each side a program of
  its own (Curator as a Java program, ``bench/java/CacheBench.java``);
- ``discovery``: service discovery, each side a program of its own (a Java program on
  curator-x-discovery against a Python one on ``connect()``'s client): ``query_for_instances``
  of a service of 1,000 instances, registering and unregistering 1,000 instances, a service
  cache's update latency; the two run alone (either or both), their part of
  ``docs/recipes-bench.json`` is replaced (the other kept) and their tables go to the page's
  recipes region;
- ``soak`` (only when named): mixed recipes for ``--seconds``, sampling RSS, threads, kazoo's
  registries and the server's watches; when it runs alone its JSON goes to ``docs/soak.json``
  and its table to the page's soak region.
- ``scale`` (only when named): N held locks per recipe, latches, selectors and waiters on one
  path, each case in a process of its own, with a bounce of the section's own server; threads,
  RSS per item and times, for pycurator and Curator. Run alone, it replaces the ``scale`` part
  of ``docs/benchmarks.json`` and the page's scale region, and leaves the rest.

pycurator is measured on kazoo's default handler and, where a section says ``pycurator-fast``,
on ``pycurator.handlers.FastThreadingHandler``; ``pycurator-connect`` is the client
``pycurator.connect()`` makes (the fast handler, and Curator's settings).

Results go to a JSON file with the machine, the versions and the command, and a chart of them
to a PNG (``python -m bench.chart`` redraws it from the JSON alone), and the tables to
``docs/benchmarks.md`` (``python -m bench.report``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pycurator.testing import ZooKeeperServer, four_letter_word, split_hosts

from . import (
    aio,
    cache,
    contended,
    counters,
    cycle,
    discovery,
    drain,
    handoff,
    herd,
    leaks,
    loop_report,
    report,
    scale,
    soak,
    standalone,
    throughput,
)
from .common import chosen

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = (
    "cycle",
    "drain",
    "handoff",
    "herd",
    "throughput",
    "contended",
    "standalone",
    "leaks",
    "aio",
    "counters",
    "cache",
    "discovery",
    "soak",
    "scale",
)
#: What runs when ``--sections`` is not given: all but the soak and the scale.
DEFAULT_SECTIONS = tuple(name for name in SECTIONS if name not in ("soak", "scale"))


def machine(hosts: str) -> dict[str, object]:
    host, port = split_hosts(hosts)[0]
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "unknown",
        "zookeeper": four_letter_word(host, port, "srvr").splitlines()[0],
    }


def sections(text: str) -> list[str]:
    return chosen(text, SECTIONS, "sections")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--hosts", help="an existing server (default: an embedded one, standalone)")
    p.add_argument(
        "--sections",
        type=sections,
        default=list(DEFAULT_SECTIONS),
        help="comma-separated (default: all but soak and scale)",
    )
    p.add_argument(
        "--json",
        type=Path,
        help="default docs/benchmarks.json (scale alone: its scale part), docs/soak.json for soak"
        " alone",
    )
    p.add_argument("--chart", type=Path, default=ROOT / "docs" / "benchmarks.png")
    p.add_argument("--no-chart", action="store_true", help="write the JSON only")
    p.add_argument(
        "--page",
        type=Path,
        default=ROOT / "docs" / "benchmarks.md",
        help="a page whose bench-report region gets the result tables (skipped if it has none)",
    )
    cycles = p.add_argument_group("cycle")
    cycles.add_argument("--cycles", type=int, default=200, help="measured cycles per round")
    cycles.add_argument("--warmup", type=int, default=50, help="unmeasured cycles first")
    cycles.add_argument("--rounds", type=int, default=2, help="alternating rounds per contender")
    cycles.add_argument(
        "--cycle-repeats", type=int, default=5, help="loopback measurements, each reported"
    )
    cycles.add_argument(
        "--latency-ms",
        type=float,
        nargs="+",
        default=[1.0, 20.0],
        help="latencies added each way, one run each (fewer cycles at higher ones); 0: none",
    )
    p.add_argument(
        "--drain", type=int, nargs="+", default=[10, 100, 500], help="queue lengths to drain"
    )
    p.add_argument("--handoffs", type=int, default=50, help="hand-offs per pair and round")
    p.add_argument("--handoff-rounds", type=int, default=3, help="alternating rounds of pairs")
    p.add_argument("--herd", type=int, default=10, help="waiters behind one holder")
    p.add_argument("--throughput-s", type=float, default=5.0, help="seconds per recipe")
    p.add_argument("--throughput-threads", type=int, default=5, help="threads per language")
    busy = p.add_argument_group("contended and standalone")
    busy.add_argument("--contended-s", type=float, default=5.0, help="measured seconds a block")
    busy.add_argument("--contended-warmup", type=float, default=2.0, help="unmeasured seconds")
    busy.add_argument("--contended-threads", type=int, default=5, help="threads (or processes)")
    busy.add_argument("--contended-rounds", type=int, default=3, help="alternating rounds")
    busy.add_argument(
        "--standalone-sides",
        help="the standalone section's Python sides, comma-separated (default: all)",
    )
    busy.add_argument(
        "--standalone-recipes",
        help="the standalone section's recipes, comma-separated (default: all)",
    )
    caching = p.add_argument_group("cache")
    caching.add_argument("--cache-n", type=int, default=10_000, help="nodes in each tree")
    caching.add_argument(
        "--cache-writes", type=int, default=200, help="writes timed to the listener"
    )
    found = p.add_argument_group("discovery")
    found.add_argument(
        "--discovery-instances", type=int, default=1000, help="instances of the queried service"
    )
    found.add_argument("--discovery-rounds", type=int, default=3, help="alternating rounds")
    soaking = p.add_argument_group("soak")
    soaking.add_argument("--seconds", type=float, default=60.0, help="how long the soak runs")
    soaking.add_argument("--soak-interval", type=float, help="between samples (default: 1/10)")
    scaling = p.add_argument_group("scale")
    scaling.add_argument(
        "--scale-n", type=int, nargs="+", default=[1000, 10000], help="items per case, one run each"
    )
    scaling.add_argument(
        "--scale-waiters",
        type=int,
        help=f"waiters on one path (default: N, at most {scale.MAX_WAITERS:,})",
    )
    scaling.add_argument(
        "--scale-cases",
        type=scale.cases,
        default=list(scale.CASES),
        help=f"comma-separated, from {','.join(scale.CASES)}",
    )
    scaling.add_argument(
        "--scale-down-s", type=float, default=scale.DOWN_S, help="seconds the server is down"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # ZooKeeper's own container reaping interval (60 s), not the tests' 100 ms: a lock path
    # reaped between two cycles would be timed as the cost of making it again
    server = None if args.hosts else ZooKeeperServer(container_check_interval_ms=None).start()
    hosts = args.hosts or server.hosts  # type: ignore[union-attr]
    runs: dict[str, Callable[[], dict[str, object]]] = {
        "cycle": lambda: cycle.run(
            hosts,
            cycles=args.cycles,
            warmup=args.warmup,
            rounds=args.rounds,
            latencies_ms=args.latency_ms,
            repeats=args.cycle_repeats,
        ),
        "drain": lambda: drain.run(hosts, args.drain),
        "handoff": lambda: handoff.run(hosts, args.handoffs, args.handoff_rounds),
        "herd": lambda: herd.run(hosts, args.herd),
        "throughput": lambda: throughput.run(hosts, args.throughput_s, args.throughput_threads),
        "contended": lambda: contended.run(
            hosts,
            args.contended_s,
            args.contended_threads,
            args.contended_rounds,
            args.contended_warmup,
        ),
        "standalone": lambda: standalone.run(
            hosts,
            args.contended_s,
            args.contended_threads,
            args.contended_rounds,
            args.contended_warmup,
            tuple(args.standalone_sides.split(",")) if args.standalone_sides else standalone.SIDES,
            tuple(args.standalone_recipes.split(","))
            if args.standalone_recipes
            else standalone.RECIPES,
        ),
        "leaks": lambda: leaks.run(hosts),
        "aio": lambda: aio.run(hosts, args.cycles, args.warmup, args.handoffs),
        "counters": lambda: counters.run(
            hosts,
            args.contended_s,
            args.contended_threads,
            args.contended_rounds,
            args.contended_warmup,
        ),
        "cache": lambda: cache.run(hosts, args.cache_n, args.cache_writes),
        "discovery": lambda: discovery.run(
            hosts, args.discovery_instances, rounds=args.discovery_rounds
        ),
        "soak": lambda: soak.run(hosts, args.seconds, args.soak_interval),
        "scale": lambda: scale.run(
            args.scale_n, args.scale_waiters, args.scale_cases, args.scale_down_s
        ),
    }
    soak_alone = args.sections == ["soak"]
    scale_alone = args.sections == ["scale"]
    counters_alone = args.sections == ["counters"]
    recipes_alone = set(args.sections) <= set(discovery.RECIPES)
    # the standalone section alone (or with the cycle and the hand-off) measures connect()'s
    # client on both loops: its own JSON, and its own region of the page (bench.loop_report)
    loop_alone = "standalone" in args.sections and set(args.sections) <= {
        "standalone",
        *loop_report.WITH_LOOP,
    }
    if args.json is None:
        name = (
            "soak.json" if soak_alone
            else "loop-bench.json" if loop_alone
            else "counters-bench.json" if counters_alone
            else "recipes-bench.json" if recipes_alone
            else "benchmarks.json"
        )  # fmt: skip
        args.json = ROOT / "docs" / name
    try:
        host = machine(hosts)
        results: dict[str, object] = {
            "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": host,
        }
        for name in SECTIONS:
            if name in args.sections:
                results[name] = runs[name]()
        host["load_average_after"] = os.getloadavg()
        if scale_alone:
            results = scale.merge(args.json, results)
        elif recipes_alone:
            results = discovery.merge(args.json, results)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
        alone = soak_alone or scale_alone or loop_alone or counters_alone or recipes_alone
        if not args.no_chart and not alone:
            from .chart import draw

            draw(results, args.chart)
            print(f"chart drawn to {args.chart}")
        page = args.page.read_text() if args.page.exists() else ""
        published = report.publish(page, results)
        if published != page:
            args.page.write_text(published)
            print(f"tables written to {args.page}")
    finally:
        if server is not None:
            server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
