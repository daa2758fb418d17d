"""Hand-off latency: from the holder's release to the next waiter holding, within and across
languages.

Both sides live in this process, one client each: the holder takes ``time.monotonic_ns()`` just
before it calls release, the waiter just after its acquire returns (for Curator, after the
Java call returns to Python). One clock, so the difference is the hand-off.
"""

from __future__ import annotations

import functools
import time

from .common import (
    LANGUAGES,
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

PAIRS = [(first, then) for first in LANGUAGES for then in LANGUAGES]


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


def run(hosts: str, count: int) -> dict[str, object]:
    """Median and p99 by ``first->then`` pair."""
    server = Server(hosts)
    table = {}
    print("\nhand-off: holder releases -> next waiter holds")
    print(f"{'holder -> waiter':<22} {'median ms':>10} {'p99 ms':>9}")
    for first, then in PAIRS:
        row = summarize(hand_offs(hosts, server, first, then, count))
        table[f"{first}->{then}"] = row
        print(f"{first + ' -> ' + then:<22} {row['median_ms']:>10.3f} {row['p99_ms']:>9.3f}")
    return {"hand_offs": count, "table": table}
