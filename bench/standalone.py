"""Contended throughput with each side a program of its own, as services run: a Java program on
Curator (``bench/java/Contender.java``, compiled here with ``javac`` against the Curator jars in
use; no Python, no JPype) against a Python program on pycurator (no JVM).

As in the ``contended`` section (whose Python worker this one runs), 5 threads (by default) each
with a lock object of its own acquire and release one path for a fixed time, with one client
shared by the threads or a client per thread, for a mutex, a read/write lock taking its read
side 90% of the time, and a semaphore of 2 leases; blocks alternate their order from round to
round and the figures are medians over rounds. pycurator runs on :func:`pycurator.connect`'s
client (``pycurator-connect``) and on a ``KazooClient`` built by hand on kazoo's handler
(``pycurator``) and on the fast handler (``pycurator-fast``).

What differs from ``contended``: there Curator's threads are Python threads blocked in Curator's
calls through JPype, in a Python process whose interpreter, GIL and JPype layer take part in
every call; here Curator runs as a Java service runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .common import BENCH_ROOT, SESSION_TIMEOUT_S
from .contended import (
    MAX_LEASES,
    READ_SHARE,
    RECIPES,
    run_workers,
    summarize_rounds,
    total,
    worker_command,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "bench" / "java" / "Contender.java"
#: Curator in a Java program of its own.
JAVA = "curator-java"
#: pycurator on connect()'s client, on a KazooClient built by hand (kazoo's handler), and on one
#: built by hand on the fast handler.
PYTHON_SIDES = ("pycurator-connect", "pycurator", "pycurator-fast")
SIDES = (JAVA, *PYTHON_SIDES)
MODES = ("shared", "per-thread")
#: The issue's targets for connect()'s client, as ratios to Curator's operations per second.
TARGETS = {"shared": 0.8, "per-thread": 0.6}


class JavaUnavailable(RuntimeError):
    """No ``javac`` or ``java`` to build and run the Java side."""


def curator_classpath() -> str:
    """The Curator jars in use: ``PYCURATOR_CURATOR_CLASSPATH``, or Debian's."""
    from pycurator.testing import curator_classpath as in_use

    return in_use()


@contextmanager
def compiled(classpath: str) -> Iterator[Path]:
    """``Contender.java`` compiled against ``classpath`` into a directory removed afterwards."""
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            raise JavaUnavailable(
                f"the standalone section needs {tool} (a JDK: apt-get install default-jdk-headless)"
            )
    build = Path(tempfile.mkdtemp(prefix="pycurator-bench-java-"))
    try:
        done = subprocess.run(
            ["javac", "-d", str(build), "-cp", classpath, str(SOURCE)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise JavaUnavailable(f"javac failed against {classpath}:\n{done.stderr}")
        yield build
    finally:
        shutil.rmtree(build, ignore_errors=True)


def java_command(
    build: Path,
    classpath: str,
    recipe: str,
    mode: str,
    hosts: str,
    seconds: float,
    threads: int,
    path: str,
    warmup: float,
) -> list[str]:
    """The Java program's command line for one block (its arguments as the Python worker's)."""
    return [
        "java",
        "-cp",
        f"{build}:{classpath}",
        "Contender",
        recipe,
        mode,
        hosts,
        f"{seconds}",
        f"{threads}",
        path,
        f"{warmup}",
        f"{int(SESSION_TIMEOUT_S * 1000)}",
    ]


def run(hosts: str, seconds: float, threads: int, rounds: int, warmup: float) -> dict[str, object]:
    """Medians over ``rounds`` of every side, recipe and mode, and each Python side's ratio to
    the Java program's rate in the same recipe and mode."""
    from .common import first_server

    hosts = first_server(hosts)
    classpath = curator_classpath()
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    versions: dict[str, str] = {}
    with compiled(classpath) as build:
        for round_ in range(rounds):
            for recipe in RECIPES:
                for mode in MODES:
                    sides = list(SIDES if round_ % 2 == 0 else reversed(SIDES))
                    for side in sides:
                        path = f"{BENCH_ROOT}/standalone-{recipe}-{uuid.uuid4().hex[:8]}"
                        args = (recipe, mode, hosts, seconds, threads, path, warmup)
                        if side == JAVA:
                            command = java_command(build, classpath, *args)
                        else:
                            command = worker_command(side, *args)
                        (result,) = run_workers([command], seconds)
                        _check(side, result, versions)
                        samples.setdefault((recipe, mode, side), []).append(
                            total([result], seconds)
                        )
    table: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for (recipe, mode, side), results in samples.items():
        table.setdefault(recipe, {}).setdefault(mode, {})[side] = summarize_rounds(results)
    print(f"\nstandalone, {threads} threads, {seconds:g} s blocks, medians of {rounds} rounds")
    print(f"{'recipe':<10} {'mode':<11} {'side':<18} {'ops/s':>8} {'cpu ms/op':>10} {'/ Java':>7}")
    for recipe, modes in table.items():
        for mode, by_side in modes.items():
            base = by_side[JAVA]["ops_per_s"]
            for side, row in by_side.items():
                row["ratio_to_curator"] = row["ops_per_s"] / base if base else 0.0
                print(
                    f"{recipe:<10} {mode:<11} {side:<18} {row['ops_per_s']:>8.1f}"
                    f" {row['cpu_ms_per_op']:>10.3f} {row['ratio_to_curator']:>7.2f}"
                )
    return {
        "seconds": seconds,
        "threads": threads,
        "rounds": rounds,
        "warmup_s": warmup,
        "max_leases": MAX_LEASES,
        "read_share": READ_SHARE,
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
