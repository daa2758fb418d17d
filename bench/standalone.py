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
    RECIPES,
    block_arguments,
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


def java_command(build: Path, classpath: str, arguments: list[str]) -> list[str]:
    """The Java program's command line for one block (``arguments`` as the Python worker's,
    then the session timeout)."""
    session_ms = f"{int(SESSION_TIMEOUT_S * 1000)}"
    return ["java", "-cp", f"{build}:{classpath}", "Contender", *arguments, session_ms]


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
                        arguments = block_arguments(
                            recipe, mode, hosts, seconds, threads, path, warmup
                        )
                        if side == JAVA:
                            command = java_command(build, classpath, arguments)
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
