"""Herd: one holder and K waiters, each on a client of its own; how many watches each waiting
contender holds, and how many watchers each release wakes.

Watches are the server's: data watches by session (``wchc``) of the waiters' sessions, less
what the same sessions held when connected but not waiting, and ``mntr``'s ``zk_watch_count``
(data and child watches) less its value then. Then the queue is released one holder at a time:
for each release, the watch notifications the server fired (``mntr``), and of them the ones
that went to waiters (sessions other than the releasing holder's watching its node, by
``wchc`` just before the release).
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable

from kazoo.client import KazooClient

from .common import (
    LANGUAGES,
    SOON,
    WATCH_COUNT,
    Clients,
    Mutex,
    Server,
    Threads,
    fired,
    new_client,
    new_mutex,
    session,
    settle,
    unique_path,
    wait_for_children,
)


class _Waiter:
    """A thread that acquires, says so, and releases when told."""

    def __init__(self, lock: Mutex, threads: Threads) -> None:
        self.held = threading.Event()
        self.go = threading.Event()
        self._lock = lock
        threads.start(self._run)

    def _run(self) -> None:
        if not self._lock.acquire(SOON):
            raise TimeoutError("a herd waiter gave up")
        self.held.set()
        self.go.wait(SOON)
        self._lock.release()


def _quiet(read: Callable[[], int]) -> None:
    """Wait until ``read`` stays the same for 0.3 s."""
    settle(read, target=1 << 62, quiet=0.3)


def herd(hosts: str, server: Server, language: str, waiters: int) -> dict[str, float]:
    path = unique_path(f"herd-{language}")
    with Clients(hosts) as clients:
        holder_client = new_client(clients, language)
        waiter_clients = [new_client(clients, language) for _ in range(waiters)]
        observer = clients.kazoo()
        sessions = [session(client) for client in waiter_clients]
        holder = new_mutex(language, holder_client, path)
        if not holder.acquire(SOON):
            raise TimeoutError(f"the holder of {path} did not get it")
        _quiet(server.total_watches)
        base_watches = server.watches_of(sessions)
        base_count = server.mntr()[WATCH_COUNT]

        threads = Threads()
        queue = []
        for client in waiter_clients:
            queue.append(_Waiter(new_mutex(language, client, path), threads))
            # one at a time, so the queue is in client order
            wait_for_children(observer, path, len(queue) + 1, "a waiter")
        settle(lambda: server.watches_of(sessions) - base_watches, waiters)
        watches = server.watches_of(sessions) - base_watches
        count = server.mntr()[WATCH_COUNT] - base_count

        holder_sessions = [session(holder_client), *sessions]
        notifications, woken = [], []
        release: Callable[[], None] = holder.release
        for position, waiter in enumerate(queue):
            _quiet(server.total_watches)
            node = _first(observer, path)
            by_session = server.watches_by_session()
            releasing = holder_sessions[position]
            woken.append(
                sum(
                    1
                    for sid, paths in by_session.items()
                    if sid != releasing and any(p.endswith("/" + node) for p in paths)
                )
            )
            before = server.mntr()
            release()
            if not waiter.held.wait(SOON):
                raise TimeoutError(f"waiter {position} on {path} did not get the lock")
            notifications.append(fired(server.delta(before, server.mntr())))
            release = waiter.go.set
        release()
        threads.join()
    return {
        "waiters": waiters,
        "watches_per_waiter": watches / waiters,
        "watch_count_per_waiter": count / waiters,
        "notifications_per_release": statistics.mean(notifications),
        "waiters_woken_per_release": statistics.mean(woken),
        "max_waiters_woken_by_a_release": max(woken),
    }


def _first(observer: KazooClient, path: str) -> str:
    """The holder's node name: the lowest sequence (Curator's and pycurator's names alike)."""
    return str(min(observer.get_children(path), key=lambda name: name[-10:]))


def run(hosts: str, waiters: int) -> dict[str, object]:
    server = Server(hosts)
    table = {language: herd(hosts, server, language, waiters) for language in LANGUAGES}
    print(f"\nherd: one holder, {waiters} waiters on clients of their own")
    print(
        f"{'contender':<10} {'watches/waiter':>15} {'notified/release':>17} {'woken/release':>14}"
    )
    for language, row in table.items():
        print(
            f"{language:<10} {row['watches_per_waiter']:>15.2f}"
            f" {row['notifications_per_release']:>17.2f}"
            f" {row['waiters_woken_per_release']:>14.2f}"
        )
    return {"waiters": waiters, "table": table}
