"""Contended increments of one ``DistributedAtomicLong``, each side a program of its own, as in
the ``standalone`` section: 5 threads (by default) increment one counter for a fixed time, with
one client shared by the threads or a client each, against Curator in a Java program
(``bench/java/Contender.java``'s ``atomic`` and ``atomic-promoted``). Two ways of incrementing:

- ``atomic``: optimistic, with Curator's ``RetryNTimes(100, 1)`` (101 tries, 1 ms apart), and
  pycurator's ``KazooRetry(max_tries=101, delay=0.001, backoff=1, max_jitter=0)``;
- ``atomic-promoted``: one optimistic try, then the ``InterProcessMutex`` at ``PATH-lock``
  (waited for up to a minute) and up to 11 tries under it, 1 ms apart.

An operation is an increment that succeeded; one that did not counts as a timeout. Blocks
alternate their order from round to round and the figures are medians over rounds, each Python
side's rate as a ratio to the Java program's. Run alone (``--sections counters``), its JSON goes
to ``docs/counters-bench.json`` and its tables to the page's counters region.

As a worker: ``python -m bench.counters SIDE RECIPE MODE HOSTS SECONDS THREADS PATH WARMUP``.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

from . import contended, standalone
from .common import BENCH_ROOT, SOON
from .contended import Operation, block_arguments, python_client, ratio_table, run_workers, total

RECIPES = ("atomic", "atomic-promoted")
#: What each recipe is, as the tables name it.
TITLES = {
    "atomic": "DistributedAtomicLong.increment(), optimistic (101 tries, 1 ms apart)",
    "atomic-promoted": "DistributedAtomicLong.increment(), promoted to a lock (1 try, then 11)",
}
#: The Java program, and pycurator on connect()'s client and on a KazooClient built by hand.
SIDES = (standalone.JAVA, "pycurator-connect", "pycurator")
MODES = standalone.MODES
#: The targets for connect()'s client, as ratios to the Java program's increments per second.
TARGETS = {"shared": 1.0, "per-thread": 1.0}
#: The tries, as Contender.java's ATOMIC_* constants.
TRIES, SLEEP_S, PROMOTED_TRIES = 101, 0.001, 11
#: The region of the benchmarks page the section's tables go to when it runs alone.
BEGIN = "<!-- bench-counters: begin (python -m bench.report --write) -->"
END = "<!-- bench-counters: end -->"


def run(hosts: str, seconds: float, threads: int, rounds: int, warmup: float) -> dict[str, object]:
    """Medians over ``rounds`` of every side in each mode, with each Python side's ratio to the
    Java program's rate in the same mode."""
    from .common import first_server

    hosts = first_server(hosts)
    classpath = standalone.curator_classpath()
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    versions: dict[str, str] = {}
    with standalone.compiled(classpath) as build:
        for round_ in range(rounds):
            for recipe in RECIPES:
                for mode in MODES:
                    for side in SIDES if round_ % 2 == 0 else reversed(SIDES):
                        path = f"{BENCH_ROOT}/counters-{recipe}-{uuid.uuid4().hex[:8]}"
                        arguments = block_arguments(
                            recipe, mode, hosts, seconds, threads, path, warmup
                        )
                        if side == standalone.JAVA:
                            command = standalone.java_command(build, classpath, arguments)
                        else:
                            command = [sys.executable, "-m", "bench.counters", side, *arguments]
                        (result,) = run_workers([command], seconds)
                        standalone.check(side, result, versions)
                        samples.setdefault((recipe, mode, side), []).append(
                            total([result], seconds)
                        )
    print(f"\ncounters, {threads} threads, {seconds:g} s blocks, medians of {rounds} rounds")
    table = ratio_table(samples, standalone.JAVA)
    return {
        **contended.settings(seconds, threads, rounds, warmup),
        "curator_classpath": classpath,
        **versions,
        "targets": TARGETS,
        "table": table,
    }


def _operation(recipe: str, client: Any, path: str) -> Operation:
    """One thread's increment of the counter at ``path``, with a counter object of its own."""
    from kazoo.retry import KazooRetry

    from pycurator import DistributedAtomicLong, PromotedToLock

    def tries(count: int) -> KazooRetry:
        return KazooRetry(max_tries=count, delay=SLEEP_S, backoff=1, max_jitter=0)

    if recipe == "atomic":
        counter = DistributedAtomicLong(client, path, tries(TRIES))
    else:
        promoted = PromotedToLock(f"{path}-lock", SOON, tries(PROMOTED_TRIES))
        counter = DistributedAtomicLong(client, path, tries(1), promoted)

    def increment(counts: dict[str, int]) -> bool:
        return counter.increment().succeeded

    return increment


def work(
    side: str,
    recipe: str,
    mode: str,
    hosts: str,
    seconds: float,
    threads: int,
    go: Any,
    path: str,
    warmup: float,
) -> dict[str, float]:
    """As :func:`bench.contended.work`, for the increments of :data:`RECIPES`."""
    clients = [python_client(hosts, side) for _ in range(1 if mode == "shared" else threads)]
    window = [0.0, 0.0]
    parts = [
        contended.loop(_operation(recipe, clients[i % len(clients)], path), window)
        for i in range(threads)
    ]
    counts, cpu = contended.run_parts(parts, go, window, warmup, seconds)
    for client in clients:
        client.stop()
        client.close()
    return contended.summary(counts, seconds, cpu)


def _main(argv: list[str]) -> None:
    contended.serve(
        argv,
        work,
        lambda side, recipe, mode: side in SIDES[1:] and recipe in RECIPES and mode in MODES,
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
