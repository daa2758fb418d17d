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

from kazoo.client import KazooClient

KINDS = (
    "pycurator",
    "pycurator-fast",
    "pycurator-metrics",
    "pycurator-connect",
    "curator",
    "kazoo-lock",
    "raw-floor",
)
#: Where pycurator's lock listeners are measured: ``pycurator-fast`` with nobody listening,
#: ``pycurator-metrics`` the same client with the Prometheus listener added.
LISTENED = "pycurator-metrics"
#: Not a lock: one bare request (getData) as the "acquire", to measure what a round trip costs.
ROUND_TRIP = "round-trip"

Step = Callable[[], None]


def _kazoo_steps(kind: str, hosts: str, path: str) -> tuple[Step, Step, Step]:
    if kind == "pycurator-connect":  # the client pycurator.connect() makes, as users call it
        from pycurator import connect

        client = connect(hosts, connect_timeout=30)
    else:
        if kind in ("pycurator-fast", LISTENED):  # a client built by hand on the fast handler
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
