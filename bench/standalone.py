"""Contended throughput with each side a program of its own, as services run: a Java program on
Curator (``bench/java/Contender.java``, compiled here with ``javac`` against the Curator jars in
use; no Python, no JPype) against a Python program on pycurator (no JVM).

As in the ``contended`` section, 5 threads (by default) each with a lock object of its own
acquire and release one path for a fixed time, with one client shared by the threads or a
client per thread; blocks alternate their order from round to round and the figures are medians
over rounds. Every recipe: the ``contended`` section's three (a mutex, a read/write lock taking
its read side 90% of the time, a semaphore of 2 leases), run by its Python worker, and the
others, run by this module's worker (``python -m bench.standalone SIDE RECIPE MODE HOSTS SECONDS
THREADS PATH WARMUP``), which sets up, times and counts as that one does:

- ``semaphore-mutex``: an ``InterProcessSemaphoreMutex``;
- ``multilock``: an ``InterProcessMultiLock`` of two mutexes under the block's path, both taken
  and released by each operation;
- ``latch``: a ``LeaderLatch`` per operation (a latch starts once), started, awaited until it
  leads, and closed: one election won;
- ``leader``: a ``LeaderSelector`` per thread with auto-requeue, whose ``lead`` counts its term
  and returns at once; an operation is a term, counted when it starts in the measured window.

pycurator runs on :func:`pycurator.connect`'s client (``pycurator-connect``), on that client
served by kazoo's connection loop instead of pycurator's (``pycurator-kazoo-loop``: the same
commit before and after the loop), and on a ``KazooClient`` built by hand on kazoo's handler
(``pycurator``) and on the fast handler (``pycurator-fast``).

What differs from ``contended``: there Curator's threads are Python threads blocked in Curator's
calls through JPype, in a Python process whose interpreter, GIL and JPype layer take part in
every call; here Curator runs as a Java service runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import contended
from .common import BENCH_ROOT, SESSION_TIMEOUT_S, SOON
from .contended import (
    Operation,
    block_arguments,
    python_client,
    ratio_table,
    run_workers,
    settings,
    total,
    worker_command,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "bench" / "java" / "Contender.java"
#: Curator in a Java program of its own.
JAVA = "curator-java"
#: pycurator on connect()'s client, on a KazooClient built by hand (kazoo's handler), on one
#: built by hand on the fast handler, and on connect()'s client served by kazoo's connection loop
#: (``lean_loop=False``: the client connect() gave before it had pycurator's loop).
PYTHON_SIDES = ("pycurator-connect", "pycurator", "pycurator-fast", "pycurator-kazoo-loop")
SIDES = (JAVA, *PYTHON_SIDES)
MODES = ("shared", "per-thread")
#: The targets for connect()'s client, as ratios to Curator's operations per second (its client
#: CPU per operation is judged against the Java program's too: bench.report.CPU_TARGET).
TARGETS = {"shared": 1.0, "per-thread": 1.0}
#: The recipes this module's worker runs (the ``contended`` section's worker runs the others).
LOCKS = ("semaphore-mutex", "multilock", "latch")
LEADER = "leader"
OWN_RECIPES = (*LOCKS, LEADER)
RECIPES = (*contended.RECIPES, *OWN_RECIPES)
#: The multi-lock's two mutexes, under the block's path (as ``Contender.java``'s MULTILOCK).
MULTILOCK = ("first", "second")


class JavaUnavailable(RuntimeError):
    """No ``javac`` or ``java`` to build and run the Java side."""


def curator_classpath() -> str:
    """The Curator jars in use: ``PYCURATOR_CURATOR_CLASSPATH``, or Debian's."""
    from pycurator.testing import curator_classpath as in_use

    return in_use()


@contextmanager
def compiled(classpath: str, source: Path = SOURCE) -> Iterator[Path]:
    """``source`` (``Contender.java``) compiled against ``classpath`` into a directory removed
    afterwards."""
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            raise JavaUnavailable(
                f"the standalone section needs {tool} (a JDK: apt-get install default-jdk-headless)"
            )
    build = Path(tempfile.mkdtemp(prefix="pycurator-bench-java-"))
    try:
        done = subprocess.run(
            ["javac", "-d", str(build), "-cp", classpath, str(source)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise JavaUnavailable(f"javac failed against {classpath}:\n{done.stderr}")
        yield build
    finally:
        shutil.rmtree(build, ignore_errors=True)


def java_command(build: Path, classpath: str, arguments: list[str]) -> list[str]:
    """The Java program's command line for one block (``arguments`` as the Python worker's,
    then the session timeout)."""
    session_ms = f"{int(SESSION_TIMEOUT_S * 1000)}"
    return ["java", "-cp", f"{build}:{classpath}", "Contender", *arguments, session_ms]


def run(
    hosts: str,
    seconds: float,
    threads: int,
    rounds: int,
    warmup: float,
    sides: tuple[str, ...] = SIDES,
    recipes: tuple[str, ...] = RECIPES,
) -> dict[str, object]:
    """Medians over ``rounds`` of every side and recipe of ``sides`` and ``recipes`` (all by
    default; the Java program always runs) in each mode, and each Python side's ratio to the
    Java program's rate in the same recipe and mode."""
    from .common import first_server

    unknown = sorted({*sides} - {*SIDES}) + sorted({*recipes} - {*RECIPES})
    if unknown:
        raise ValueError(f"unknown standalone sides or recipes: {', '.join(unknown)}")
    sides = (JAVA, *(side for side in SIDES if side in sides and side != JAVA))

    hosts = first_server(hosts)
    classpath = curator_classpath()
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    versions: dict[str, str] = {}
    with compiled(classpath) as build:
        for round_ in range(rounds):
            for recipe in (recipe for recipe in RECIPES if recipe in recipes):
                for mode in MODES:
                    for side in sides if round_ % 2 == 0 else reversed(sides):
                        path = f"{BENCH_ROOT}/standalone-{recipe}-{uuid.uuid4().hex[:8]}"
                        arguments = block_arguments(
                            recipe, mode, hosts, seconds, threads, path, warmup
                        )
                        if side == JAVA:
                            command = java_command(build, classpath, arguments)
                        elif recipe in OWN_RECIPES:
                            command = own_worker_command(side, arguments)
                        else:
                            command = worker_command(side, arguments)
                        (result,) = run_workers([command], seconds)
                        _check(side, result, versions)
                        samples.setdefault((recipe, mode, side), []).append(
                            total([result], seconds)
                        )
    print(f"\nstandalone, {threads} threads, {seconds:g} s blocks, medians of {rounds} rounds")
    table = ratio_table(samples, JAVA)
    return {
        **settings(seconds, threads, rounds, warmup),
        "curator_classpath": classpath,
        **versions,
        "targets": TARGETS,
        "table": table,
    }


def _check(side: str, result: dict[str, Any], versions: dict[str, str]) -> None:
    """Keep the Java program's versions; a Python side must have run without a JVM."""
    if side == JAVA:
        versions["curator"] = str(result.get("curator", "unknown"))
        versions["java"] = str(result.get("java", "unknown"))
    elif result.get("jvm", True):
        raise RuntimeError(f"the {side} worker loaded JPype: it must run without a JVM")


def own_worker_command(side: str, arguments: list[str]) -> list[str]:
    """The command line of this module's worker for one block of :data:`OWN_RECIPES`."""
    return [sys.executable, "-m", "bench.standalone", side, *arguments]


def _operation(recipe: str, client: Any, path: str) -> Operation:
    """One thread's operation on ``path`` for a recipe of :data:`LOCKS`."""
    from pycurator import InterProcessMultiLock, InterProcessSemaphoreMutex, LeaderLatch

    if recipe == "latch":

        def latch_op(counts: dict[str, int]) -> bool:
            latch = LeaderLatch(client, path)  # a latch starts once: one a time
            latch.start()
            try:
                return latch.wait(SOON)
            finally:
                latch.close()

        return latch_op
    lock: Any = (
        InterProcessSemaphoreMutex(client, path)
        if recipe == "semaphore-mutex"
        else InterProcessMultiLock(client, [f"{path}/{name}" for name in MULTILOCK])
    )

    def lock_op(counts: dict[str, int]) -> bool:
        if not lock.acquire(SOON):
            return False
        lock.release()
        return True

    return lock_op


class _Terms:
    """A thread's leader selector, requeued after every term: each term that starts within the
    measured window is counted, and returns at once."""

    def __init__(self, client: Any, path: str, window: list[float]) -> None:
        from pycurator import LeaderSelector

        self.window = window
        self.counted = 0  # by one term at a time
        self.selector = LeaderSelector(client, path, self._lead, auto_requeue=True)

    def _lead(self, leadership: Any) -> None:
        if self.window[0] <= time.monotonic() < self.window[1]:
            self.counted += 1

    def run(self, mine: dict[str, int]) -> None:
        """Queue until the end of the window, then leave; the terms counted go to ``mine``."""
        self.selector.start()
        time.sleep(max(0.0, self.window[1] - time.monotonic()))
        self.selector.close(SOON)
        mine["done"] += self.counted


def work(
    side: str,
    recipe: str,
    mode: str,
    hosts: str,
    seconds: float,
    threads: int,
    go: Callable[[], None],
    path: str,
    warmup: float,
) -> dict[str, float]:
    """As :func:`bench.contended.work`, for a recipe of :data:`OWN_RECIPES`: set up, call
    ``go``, run ``warmup`` seconds unmeasured and ``seconds`` measured; the counts and the
    process's CPU time in the measured part."""
    clients = [python_client(hosts, side) for _ in range(1 if mode == "shared" else threads)]
    window = [0.0, 0.0]  # measured from, until (time.monotonic()), set before the start
    parts = [
        _Terms(clients[i % len(clients)], path, window).run
        if recipe == LEADER
        else contended.loop(_operation(recipe, clients[i % len(clients)], path), window)
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
        lambda side, recipe, mode: side in PYTHON_SIDES and recipe in OWN_RECIPES and mode in MODES,
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
