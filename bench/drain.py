"""Drain of a queue: a holder holds, N waiters queue behind it (N mutexes on N/10 clients, one
thread each), the holder releases, and each waiter releases as soon as it holds.

Twice: with a lock object per thread, and with one lock object per client shared by its 10
threads (Java's usual way: one lock object, many threads). Curator's waiters of one object wait
on one monitor that each of its watches notifies in full, so there every release wakes all the
waiting threads of the object that was watching, and each lists the children.

Reported per N and implementation: the time from the holder's release to the last waiter's, and
from the server's ``mntr`` counters, read once every waiter watches its predecessor and again
when the queue is empty, the requests, bytes in and bytes out (replies and notifications) per
hand-off. Curator's waiters are Python threads blocked in Java's ``acquire()``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence

from .common import (
    BYTES_IN,
    LANGUAGES,
    REQUESTS,
    SOON,
    Clients,
    Mutex,
    Server,
    Threads,
    bytes_out,
    fired,
    new_client,
    new_mutex,
    session,
    settle,
    unique_path,
    wait_for_children,
)

#: Waiters per client.
PER_CLIENT = 10
#: Bound on one waiter's wait, and on the whole queue forming (many threads on 2 cores).
WAIT = 300.0


def drain_once(
    hosts: str, server: Server, language: str, waiters: int, *, shared: bool = False
) -> dict[str, float]:
    path = unique_path(f"drain-{language}")
    with Clients(hosts) as clients:
        holder_client = new_client(clients, language)
        waiter_clients = [
            new_client(clients, language) for _ in range(max(1, -(-waiters // PER_CLIENT)))
        ]
        observer = clients.kazoo()
        holder = new_mutex(language, holder_client, path)
        if not holder.acquire(SOON):
            raise TimeoutError(f"the holder of {path} did not get it")
        finished: list[int] = []
        guard = threading.Lock()

        def wait_then_release(lock: Mutex) -> None:
            if not lock.acquire(WAIT):
                raise TimeoutError(f"a waiter on {path} gave up")
            lock.release()
            done = time.monotonic_ns()
            with guard:
                finished.append(done)

        threads = Threads()
        objects = [new_mutex(language, client, path) for client in waiter_clients] if shared else []
        for i in range(waiters):
            client = waiter_clients[i % len(waiter_clients)]
            lock = objects[i % len(objects)] if shared else new_mutex(language, client, path)
            threads.start(functools.partial(wait_then_release, lock))
        wait_for_children(observer, path, waiters + 1, "the queue", WAIT)
        sessions = [session(client) for client in waiter_clients]
        watching = settle(lambda: server.watches_of(sessions), waiters, timeout=WAIT)
        before = server.mntr()
        start = time.monotonic_ns()
        holder.release()
        threads.join(WAIT)
        after = server.mntr()
    delta = server.delta(before, after)
    return {
        "waiters": waiters,
        "clients": len(waiter_clients),
        "waiters_watching_at_start": watching,
        "drain_ms": (max(finished) - start) / 1e6,
        "requests_per_hand_off": delta[REQUESTS] / waiters,
        "bytes_in_per_hand_off": delta[BYTES_IN] / waiters,
        "bytes_out_per_hand_off": bytes_out(delta) / waiters,
        "notifications_per_hand_off": fired(delta) / waiters,
    }


def run(hosts: str, sizes: Sequence[int]) -> dict[str, object]:
    """Rows by implementation, one per queue length: ``rows`` with a lock object per thread,
    ``shared_rows`` with one per client."""
    server = Server(hosts)
    result: dict[str, object] = {"waiters_per_client": PER_CLIENT}
    for key, shared in (("rows", False), ("shared_rows", True)):
        rows: dict[str, list[dict[str, float]]] = {language: [] for language in LANGUAGES}
        objects = f"one lock object per client ({PER_CLIENT} threads)" if shared else "a lock each"
        print(f"\ndrain of a queue, {objects}: each waiter releases as soon as it holds")
        print(
            f"{'contender':<10} {'N':>5} {'drain ms':>9} {'ms/hand-off':>12} {'req/h-o':>8}"
            f" {'B in/h-o':>9} {'B out/h-o':>10}"
        )
        for waiters in sizes:
            for language in LANGUAGES:
                row = drain_once(hosts, server, language, waiters, shared=shared)
                rows[language].append(row)
                print(
                    f"{language:<10} {waiters:>5} {row['drain_ms']:>9.1f}"
                    f" {row['drain_ms'] / waiters:>12.2f} {row['requests_per_hand_off']:>8.2f}"
                    f" {row['bytes_in_per_hand_off']:>9.0f}"
                    f" {row['bytes_out_per_hand_off']:>10.0f}"
                )
        result[key] = rows
    return result
