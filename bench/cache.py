"""The ``cache`` section: a ``CuratorCache`` of 10,000 nodes of 100 bytes, flat (one parent) and
three levels deep (10 x 10 x 100), each side a program of its own: Curator as a Java program
(``bench/java/CacheBench.java``, compiled here against the Curator jars in use) against pycurator
(``bench/cache_worker.py``) on a ``KazooClient`` built by hand and on ``connect()``'s client.

For each: the first load's time (``start()`` to ``initialized()``), the time from a write of a
node's data by another client to the cache's listener (median and p99 of sequential writes), and
the memory the loaded cache holds per node (Java's heap after a full GC; pycurator's
``tracemalloc``, after a collection). Ratios are Curator's time over pycurator's (at least 1:
at least Curator's speed), and pycurator's bytes per node over Curator's (the goal: at most 2).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .common import BENCH_ROOT, SESSION_TIMEOUT_S, SOON, first_server
from .standalone import ROOT, compiled, curator_classpath

SOURCE = ROOT / "bench" / "java" / "CacheBench.java"
JAVA = "curator-java"
#: The Python sides: a ``KazooClient`` built by hand (kazoo's handler), and ``connect()``'s.
PYTHON_SIDES = ("pycurator", "pycurator-connect")
SIDES = (JAVA, *PYTHON_SIDES)
SHAPES = ("flat", "deep")
#: Each side, as the table names it.
SIDE_NAMES = {
    JAVA: "Java Curator, a Java program",
    "pycurator": "pycurator, a `KazooClient` (kazoo's handler)",
    "pycurator-connect": "pycurator, `connect()`'s client",
}
#: The trees, as the table names them.
SHAPE_NAMES = {"flat": "flat", "deep": "three levels"}
#: The data of every node.
DATA = bytes(range(100))


def tree_paths(root: str, shape: str, n: int) -> list[str]:
    """The nodes of a tree of ``n`` leaves below ``root``, parents first: ``flat`` (the
    leaves under the root), ``deep`` (10 x 10 x n/100)."""
    if shape == "flat":
        return [f"{root}/n{i:05d}" for i in range(n)]
    paths: list[str] = []
    for a in range(10):
        paths.append(f"{root}/a{a}")
        for b in range(10):
            paths.append(f"{root}/a{a}/b{b}")
            paths += [f"{root}/a{a}/b{b}/c{c:04d}" for c in range(max(1, n // 100))]
    return paths


def _pipelined(client: KazooClient, calls: Sequence[Any], batch: int = 1000) -> None:
    for start in range(0, len(calls), batch):
        for result in [call() for call in calls[start : start + batch]]:
            result.get(timeout=SOON)


def make_tree(client: KazooClient, root: str, shape: str, n: int) -> list[str]:
    client.ensure_path(root)
    paths = tree_paths(root, shape, n)
    depth_first = sorted(paths, key=lambda path: path.count("/"))
    _pipelined(client, [lambda p=p: client.create_async(p, DATA) for p in depth_first])
    return paths


def delete_tree(client: KazooClient, root: str, paths: list[str]) -> None:
    deepest_first = sorted(paths, key=lambda path: -path.count("/"))
    _pipelined(client, [lambda p=p: client.delete_async(p) for p in deepest_first])
    client.delete(root)


def command(side: str, build: Any, classpath: str, hosts: str, root: str, writes: int) -> list[str]:
    if side == JAVA:
        session_ms = str(int(SESSION_TIMEOUT_S * 1000))
        return ["java", "-cp", f"{build}:{classpath}", "CacheBench", hosts, root, str(writes),
                session_ms]  # fmt: skip
    return [sys.executable, "-m", "bench.cache_worker", side, hosts, root, str(writes)]


def run(hosts: str, n: int = 10_000, writes: int = 200) -> dict[str, Any]:
    """Each side's figures on each shape of tree, and the ratios (see the module doc)."""
    hosts = first_server(hosts)
    classpath = curator_classpath()
    client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S)
    client.start(timeout=SOON)
    figures: dict[str, dict[str, Any]] = {}
    try:
        with compiled(classpath, SOURCE) as build:
            for shape in SHAPES:
                root = f"{BENCH_ROOT}/cache-{shape}-{uuid.uuid4().hex[:8]}"
                paths = make_tree(client, root, shape, n)
                figures[shape] = {}
                try:
                    for side in SIDES:
                        done = subprocess.run(
                            command(side, build, classpath, hosts, root, writes),
                            capture_output=True, text=True, cwd=ROOT, timeout=1800,
                        )  # fmt: skip
                        if done.returncode != 0:
                            raise RuntimeError(f"the {side} cache failed:\n{done.stderr[-3000:]}")
                        figures[shape][side] = json.loads(done.stdout.strip().splitlines()[-1])
                        print(f"cache {shape} {side}: {figures[shape][side]}", flush=True)
                finally:
                    delete_tree(client, root, paths)
    finally:
        client.stop()
        client.close()
    return {"n": n, "writes": writes, "figures": figures, "ratios": ratios(figures)}


def ratios(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """For each shape and Python side: Curator's load time and write-to-listener time over
    pycurator's, and pycurator's bytes per node over Curator's."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for shape, sides in figures.items():
        java = sides[JAVA]
        out[shape] = {
            side: {
                "load": java["load_s"] / sides[side]["load_s"],
                "latency": java["latency_median_ms"] / sides[side]["latency_median_ms"],
                "memory": sides[side]["bytes_per_node"] / java["bytes_per_node"],
            }
            for side in PYTHON_SIDES
            if side in sides
        }
    return out


def table(results: dict[str, Any]) -> list[str]:
    """The section's table, in Markdown."""
    section = results["cache"]
    lines = [
        "### Cache",
        "",
        f"({section['n']:,} nodes of 100 bytes; {section['writes']} writes; ratios:"
        " Curator's time over pycurator's, pycurator's bytes over Curator's)",
        "",
        "| tree | side | load (s) | ratio | write to listener, median / p99 (ms) | ratio |"
        " bytes per node | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for shape, sides in section["figures"].items():
        for side, figures in sides.items():
            ratio = section["ratios"][shape].get(side)
            load = f"{ratio['load']:.2f}" if ratio else "-"
            latency = f"{ratio['latency']:.2f}" if ratio else "-"
            memory = f"{ratio['memory']:.2f}" if ratio else "-"
            lines.append(
                f"| {SHAPE_NAMES.get(shape, shape)} | {SIDE_NAMES.get(side, side)} |"
                f" {figures['load_s']:.2f} | {load} |"
                f" {figures['latency_median_ms']:.2f} / {figures['latency_p99_ms']:.2f} |"
                f" {latency} | {figures['bytes_per_node']:.0f} | {memory} |"
            )
    return lines


__all__ = ["SHAPES", "SIDES", "ratios", "run", "table", "tree_paths"]
