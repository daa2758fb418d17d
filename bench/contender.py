"""One benchmark contender in a process of its own; prints its measurements as one JSON line.

``python -m bench.contender KIND HOSTS CYCLES WARMUP`` runs CYCLES uncontended acquire+release
cycles of KIND on a fresh path, after WARMUP cycles that are not measured; it times each whole
cycle and, within it, the acquire alone.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

KINDS = (
    "pycurator",
    "pycurator-fast",
    "pycurator-silent",
    "pycurator-metrics",
    "pycurator-connect",
    "curator",
    "kazoo-lock",
    "raw-floor",
)
#: Where pycurator's lock listeners are measured: ``pycurator-fast`` with nobody listening,
#: ``pycurator-metrics`` the same client with the Prometheus listener added.
LISTENED = "pycurator-metrics"
#: ``pycurator-fast`` with pycurator's reporting replaced by no-ops in its process (see
#: :func:`_silence`): what reporting costs when nobody listens is ``pycurator-fast``'s cycle
#: less this one's.
SILENT = "pycurator-silent"
#: Not a lock: one bare request (getData) as the "acquire", to measure what a round trip costs.
ROUND_TRIP = "round-trip"

Step = Callable[[], None]


def _silence() -> None:
    """Replace every method of pycurator's reporting (``Reporter``, ``HoldReport``) by a no-op,
    in this process: no clock reading, no check, no event; an acquire's steps run unwrapped but
    for the pair its caller expects (the node, and one shared report that does nothing)."""
    from collections.abc import Generator

    from pycurator._recipes.reports import HoldReport, Reporter

    silent = HoldReport.__new__(HoldReport)  # nothing set: its methods read nothing

    def wait_steps(self: Reporter, steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        node = yield from steps
        return None if node is None else (node, silent)

    stubs: dict[type, dict[str, Callable[..., Any]]] = {
        Reporter: {
            "waiting": lambda self: 0.0,
            "acquired": lambda self, started, node: silent,
            "ended": lambda self, started, kind, reason="": None,
            "wait_steps": wait_steps,
        },
        HoldReport: {
            name: lambda self, reason="": None for name in ("lost", "regained", "released")
        },
    }
    for owner, methods in stubs.items():
        for name, stub in methods.items():
            setattr(owner, name, stub)


def _kazoo_steps(kind: str, hosts: str, path: str) -> tuple[Step, Step, Step]:
    if kind == "pycurator-connect":  # the client pycurator.connect() makes, as users call it
        from pycurator import connect

        client = connect(hosts, connect_timeout=30)
    else:
        if kind in ("pycurator-fast", SILENT, LISTENED):  # built by hand on the fast handler
            from pycurator.handlers import FastThreadingHandler

            client = KazooClient(hosts=hosts, handler=FastThreadingHandler())
        else:
            client = KazooClient(hosts=hosts)
        client.start(timeout=30)
    if kind == LISTENED:
        from prometheus_client import CollectorRegistry

        from pycurator import add_lock_listener
        from pycurator.contrib.prometheus import PrometheusMetrics

        add_lock_listener(PrometheusMetrics(CollectorRegistry()))
    elif kind == SILENT:
        _silence()
    if kind.startswith("pycurator"):
        from pycurator import InterProcessMutex

        lock = InterProcessMutex(client, path)

        def acquire() -> None:
            lock.acquire()

        release = lock.release
    elif kind == "kazoo-lock":
        kazoo_lock = client.Lock(path)
        acquire, release = kazoo_lock.acquire, kazoo_lock.release
    elif kind == ROUND_TRIP:
        client.ensure_path(path)

        def acquire() -> None:
            client.get(path)

        def release() -> None:
            pass
    else:  # the floor: the three requests a lock needs, with no lock logic at all
        client.ensure_path(path)
        nodes = []

        def acquire() -> None:
            nodes.append(client.create(f"{path}/n-", b"", ephemeral=True, sequence=True))
            client.get_children(path)

        def release() -> None:
            client.delete(nodes.pop())

    def close() -> None:
        client.stop()
        client.close()

    return acquire, release, close


def _curator_steps(hosts: str, path: str) -> tuple[Step, Step, Step]:
    from pycurator.testing import JavaMutex, new_curator

    client = new_curator(hosts)
    lock = JavaMutex(client, path)
    return lock.java.acquire, lock.java.release, client.close  # Curator's own calls, timed bare


def main(kind: str, hosts: str, cycles: int, warmup: int) -> dict[str, object]:
    path = f"/pycurator-bench/{kind}-{uuid.uuid4().hex[:8]}"
    acquire, release, close = (
        _curator_steps(hosts, path) if kind == "curator" else _kazoo_steps(kind, hosts, path)
    )
    try:
        for _ in range(warmup):
            acquire()
            release()
        cycle_ns, acquire_ns = [], []
        cpu_start = time.process_time()
        for _ in range(cycles):
            start = time.perf_counter_ns()
            acquire()
            held = time.perf_counter_ns()
            release()
            cycle_ns.append(time.perf_counter_ns() - start)
            acquire_ns.append(held - start)
        cpu = time.process_time() - cpu_start
    finally:
        close()
    return {
        "kind": kind,
        "cycle_ns": cycle_ns,
        "acquire_ns": acquire_ns,
        "cpu_s_per_cycle": cpu / cycles,
    }


if __name__ == "__main__":
    kind, hosts, cycles, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if kind not in (*KINDS, ROUND_TRIP):
        raise SystemExit(f"unknown contender {kind!r}; one of {', '.join(KINDS)}")
    print(json.dumps(main(kind, hosts, cycles, warmup)))
