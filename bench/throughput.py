"""Throughput with Java and Python clients mixed on one path, for a fixed time: an
``InterProcessSemaphoreV2`` of 5 leases (acquire a lease, return it), and an
``InterProcessReadWriteLock`` with 90% reads (take a side, release it).

Each thread has a client of its own; the Java threads are Python threads calling Curator's
blocking methods through JPype, in this process. Operations per second are counted by language.
The whole is run twice: with pycurator's clients on kazoo's handler, then (under ``fast``) on
``pycurator.handlers.FastThreadingHandler``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pycurator import InterProcessReadWriteLock, InterProcessSemaphoreV2
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import JavaReadWriteLock, JavaSemaphore

from .common import SOON, Clients, Threads, unique_path

MAX_LEASES = 5
READ_SHARE = 0.9

#: One operation of a thread: True when done, False when it timed out.
Operation = Callable[[], bool]


def _kazoo(clients: Clients, fast: bool) -> Any:
    return clients.kazoo(FastThreadingHandler() if fast else None)


def _semaphore_ops(clients: Clients, path: str, java: bool, fast: bool = False) -> Operation:
    if java:
        semaphore = JavaSemaphore(clients.curator(), path, MAX_LEASES)

        def java_op() -> bool:
            lease = semaphore.acquire(SOON)
            if lease is None:
                return False
            lease.close()
            return True

        return java_op
    pool = InterProcessSemaphoreV2(_kazoo(clients, fast), path, MAX_LEASES)

    def python_op() -> bool:
        lease = pool.acquire(timeout=SOON)
        if lease is None:
            return False
        lease.close()
        return True

    return python_op


def _rwlock_ops(
    clients: Clients, path: str, java: bool, seed: int, fast: bool = False
) -> tuple[Operation, Any]:
    """An operation that reads 90% of the time and writes otherwise, and its counts by side."""
    chance = random.Random(seed)
    counts = {"reads": 0, "writes": 0}
    if java:
        lock = JavaReadWriteLock(clients.curator(), path)
        sides = {"reads": lock.read_lock(), "writes": lock.write_lock()}

        def java_op() -> bool:
            kind = "reads" if chance.random() < READ_SHARE else "writes"
            if not sides[kind].acquire(SOON):
                return False
            sides[kind].release()
            counts[kind] += 1
            return True

        return java_op, counts
    rw = InterProcessReadWriteLock(_kazoo(clients, fast), path)
    python_sides = {"reads": rw.read_lock(), "writes": rw.write_lock()}

    def python_op() -> bool:
        kind = "reads" if chance.random() < READ_SHARE else "writes"
        side = python_sides[kind]
        if not side.acquire(timeout=SOON):
            return False
        side.release()
        counts[kind] += 1
        return True

    return python_op, counts


def _race(operations: dict[str, list[Operation]], seconds: float) -> dict[str, dict[str, float]]:
    """Run every operation in a loop on a thread of its own for ``seconds``; counts by language."""
    done = {language: [0] * len(ops) for language, ops in operations.items()}
    timeouts = {language: [0] * len(ops) for language, ops in operations.items()}
    start = threading.Barrier(sum(len(ops) for ops in operations.values()) + 1)
    end = [0.0]
    threads = Threads()
    for language, ops in operations.items():
        for index, op in enumerate(ops):

            def loop(language: str = language, index: int = index, op: Operation = op) -> None:
                start.wait(SOON)
                while time.monotonic() < end[0]:
                    if op():
                        done[language][index] += 1
                    else:
                        timeouts[language][index] += 1

            threads.start(loop)
    end[0] = time.monotonic() + seconds
    start.wait(SOON)
    threads.join(seconds + 2 * SOON)
    return {
        language: {
            "threads": len(counts),
            "operations": sum(counts),
            "ops_per_s": sum(counts) / seconds,
            "timeouts": sum(timeouts[language]),
        }
        for language, counts in done.items()
    }


def _both(hosts: str, seconds: float, threads_per_language: int, fast: bool) -> dict[str, Any]:
    """Both recipes, Java and Python threads together, pycurator on one handler."""
    results: dict[str, Any] = {}
    with Clients(hosts) as clients:
        path = unique_path("semaphore")
        semaphore = _race(
            {
                language: [
                    _semaphore_ops(clients, path, java=language == "java", fast=fast)
                    for _ in range(threads_per_language)
                ]
                for language in ("python", "java")
            },
            seconds,
        )
    results["semaphore"] = {"max_leases": MAX_LEASES, "by_language": semaphore}
    with Clients(hosts) as clients:
        path = unique_path("rwlock")
        counts: dict[str, list[Any]] = {"python": [], "java": []}
        operations: dict[str, list[Operation]] = {"python": [], "java": []}
        for language in ("python", "java"):
            for i in range(threads_per_language):
                op, side_counts = _rwlock_ops(clients, path, language == "java", i, fast)
                operations[language].append(op)
                counts[language].append(side_counts)
        rwlock = _race(operations, seconds)
    for language, row in rwlock.items():
        for kind in ("reads", "writes"):
            row[f"{kind}_per_s"] = sum(c[kind] for c in counts[language]) / seconds
    results["rwlock"] = {"read_share": READ_SHARE, "by_language": rwlock}
    return results


def run(hosts: str, seconds: float, threads_per_language: int) -> dict[str, object]:
    results: dict[str, object] = {
        "seconds": seconds,
        "threads_per_language": threads_per_language,
    }
    default = _both(hosts, seconds, threads_per_language, fast=False)
    fast = _both(hosts, seconds, threads_per_language, fast=True)
    results.update(default)
    results["fast"] = fast
    print(f"\nmixed Java and Python, {threads_per_language} threads each, {seconds:g} s")
    print(f"{'recipe':<28} {'language':<8} {'handler':<8} {'ops/s':>8} {'timeouts':>9}")
    for handler, both in (("kazoo", default), ("fast", fast)):
        for title, key in (
            (f"semaphore ({MAX_LEASES} leases)", "semaphore"),
            (f"read/write ({READ_SHARE:.0%} reads)", "rwlock"),
        ):
            for language, row in both[key]["by_language"].items():
                print(
                    f"{title:<28} {language:<8} {handler:<8} {row['ops_per_s']:>8.1f}"
                    f" {row['timeouts']:>9.0f}"
                )
    return results
