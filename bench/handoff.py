"""Hand-off latency: from the holder's release to the next waiter holding, within and across
languages, and for pycurator on the fast handler and on :func:`pycurator.connect`'s client.

Each pair runs in a process of its own (``python -m bench.handoff FIRST THEN HOSTS COUNT``, the
JVM loaded only when Curator takes part; the first :data:`WARMUP` hand-offs are not counted), in
rounds whose order of pairs alternates; medians
and p99 are over the samples of all rounds. Within the process holder and waiter have a client
each: the holder takes ``time.monotonic_ns()`` just before it calls release, the waiter just
after its acquire returns (for Curator, after the Java call returns to Python). One clock, so
the difference is the hand-off.
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .common import (
    CONNECT,
    FAST,
    SOON,
    Clients,
    Mutex,
    Server,
    Threads,
    new_client,
    new_mutex,
    session,
    summarize,
    unique_path,
    wait_for,
    wait_for_children,
)

ROOT = Path(__file__).resolve().parents[1]
#: Hand-offs each process makes first and does not count (Java's JIT compiles Curator then).
WARMUP = 5
PAIRS = [
    ("pycurator", "pycurator"),
    (FAST, FAST),
    (CONNECT, CONNECT),
    ("pycurator", "curator"),
    (FAST, "curator"),
    ("curator", "pycurator"),
    ("curator", FAST),
    ("curator", "curator"),
]


def _wait_then_release(waiter: Mutex, held: list[int]) -> None:
    if not waiter.acquire(SOON):
        raise TimeoutError("a hand-off waiter gave up")
    held.append(time.monotonic_ns())
    waiter.release()


def hand_offs(hosts: str, server: Server, first: str, then: str, count: int) -> list[int]:
    """``count`` hand-offs from a ``first`` holder to a ``then`` waiter, in nanoseconds."""
    path = unique_path(f"handoff-{first}-{then}")
    samples = []
    with Clients(hosts) as clients:
        holder = new_mutex(first, new_client(clients, first), path)
        waiter_client = new_client(clients, then)
        waiter = new_mutex(then, waiter_client, path)
        waiter_session = session(waiter_client)
        observer = clients.kazoo()
        for _ in range(count):
            if not holder.acquire(SOON):
                raise TimeoutError(f"the holder of {path} did not get it")
            held: list[int] = []
            threads = Threads()
            threads.start(functools.partial(_wait_then_release, waiter, held))
            wait_for_children(observer, path, 2, "the waiter's node")
            wait_for(lambda: server.watches_of([waiter_session]) > 0, "the waiter's watch")
            released = time.monotonic_ns()
            holder.release()
            threads.join()
            samples.append(held[0] - released)
    return samples


def _in_process(hosts: str, first: str, then: str, count: int) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.handoff", first, then, hosts, str(count)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    samples: list[int] = json.loads(out.stdout.strip().splitlines()[-1])
    return samples


def run(hosts: str, count: int, rounds: int = 1) -> dict[str, object]:
    """Median and p99 by ``first->then`` pair over ``rounds`` alternating rounds of ``count``
    hand-offs, and pycurator's (on each handler) as ratios to Curator's."""
    samples: dict[str, list[int]] = {f"{first}->{then}": [] for first, then in PAIRS}
    round_medians: dict[str, list[float]] = {key: [] for key in samples}
    for round_ in range(rounds):
        for first, then in PAIRS if round_ % 2 == 0 else list(reversed(PAIRS)):
            taken = _in_process(hosts, first, then, count)
            samples[f"{first}->{then}"] += taken
            round_medians[f"{first}->{then}"].append(statistics.median(taken) / 1e6)
    table: dict[str, dict[str, object]] = {}
    stats = {key: summarize(taken) for key, taken in samples.items()}
    print(f"\nhand-off: holder releases -> next waiter holds ({rounds} rounds of {count})")
    print(f"{'holder -> waiter':<34} {'median ms':>10} {'p99 ms':>9}")
    for key, stat in stats.items():
        row: dict[str, object] = dict(stat)
        row["round_medians_ms"] = round_medians[key]
        table[key] = row
        print(f"{key.replace('->', ' -> '):<34} {stat['median_ms']:>10.3f} {stat['p99_ms']:>9.3f}")
    base = stats["curator->curator"]
    ratios = {
        side: {
            stat: stats[f"{side}->{side}"][stat] / base[stat] for stat in ("median_ms", "p99_ms")
        }
        for side in ("pycurator", FAST, CONNECT)
    }
    return {"hand_offs": count, "rounds": rounds, "table": table, "ratio_to_curator": ratios}


if __name__ == "__main__":
    first_, then_, hosts_, count_ = sys.argv[1:]
    taken_ = hand_offs(hosts_, Server(hosts_), first_, then_, WARMUP + int(count_))
    print(json.dumps(taken_[WARMUP:]))
