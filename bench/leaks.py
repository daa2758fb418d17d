"""Watches left behind by a timed-out acquire: a holder holds, a contender on a client of its own
gives up after 0.2 s, and the server's data watches of the contender's session (``wchc``) are
counted while the holder still holds, after one more request of that session (the server answers
a session's requests in order, so anything the contender sent on giving up has been served).

pycurator, Java Curator and kazoo's ``Lock``, each against a holder of its own kind.
"""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

from .common import SOON, Clients, Mutex, Server, count_children, new_mutex, session, unique_path

GIVE_UP_S = 0.2
KINDS = ("pycurator", "curator", "kazoo-lock")


class _KazooLock:
    def __init__(self, client: KazooClient, path: str) -> None:
        self._lock = client.Lock(path)

    def acquire(self, timeout: float = SOON) -> bool:
        try:
            return bool(self._lock.acquire(timeout=timeout))
        except LockTimeout:  # kazoo's Lock raises where the others return False
            return False

    def release(self) -> None:
        self._lock.release()


def _lock(kind: str, client: Any, path: str) -> Mutex | _KazooLock:
    return _KazooLock(client, path) if kind == "kazoo-lock" else new_mutex(kind, client, path)


def _round_trip(client: Any) -> None:
    if isinstance(client, KazooClient):
        client.exists("/")
    else:
        client.checkExists().forPath("/")


def leak(hosts: str, server: Server, kind: str) -> dict[str, object]:
    path = unique_path(f"leak-{kind}")
    with Clients(hosts) as clients:
        new = clients.curator if kind == "curator" else clients.kazoo
        holder = _lock(kind, new(), path)
        contender_client = new()
        contender = _lock(kind, contender_client, path)
        if not holder.acquire(SOON):
            raise TimeoutError(f"the holder of {path} did not get it")
        try:
            gave_up = not contender.acquire(GIVE_UP_S)
            _round_trip(contender_client)
            paths = server.watches_by_session().get(session(contender_client), [])
            nodes_left = count_children(clients.kazoo(), path) - 1
        finally:
            holder.release()
    return {
        "timed_out": gave_up,
        "watches_left": len(paths),
        "watched": [p.rsplit("/", 1)[-1] for p in paths],
        "nodes_left": nodes_left,
    }


def run(hosts: str) -> dict[str, object]:
    server = Server(hosts)
    table = {kind: leak(hosts, server, kind) for kind in KINDS}
    print(
        f"\nwatches left by an acquire that timed out after {GIVE_UP_S:g} s, holder still holding"
    )
    print(f"{'contender':<12} {'watches left':>13} {'nodes left':>11}")
    for kind, row in table.items():
        print(f"{kind:<12} {row['watches_left']:>13} {row['nodes_left']:>11}")
    return {"give_up_s": GIVE_UP_S, "table": table}
