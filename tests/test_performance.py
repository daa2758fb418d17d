"""The engine's costs as counts on a real server: requests, listings, watches and wake-ups.

No timing is asserted here; the benchmark measures times.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator._client import kazoo_internals
from pycurator._recipes import hold_monitor
from pycurator.testing import (
    ClientFactory,
    expire_kazoo_session,
    four_letter_word,
    paths_by_session,
    split_hosts,
)

from .support import SOON, RequestCounter, Worker, children, eventually


@pytest.fixture(autouse=True)
def no_deferred_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts here are the engine's: a hold that a loaded machine stretches past the deferred
    watch's delay would add an ``exists`` (tested on its own below)."""
    monkeypatch.setattr(hold_monitor, "WATCH_DELAY", 3600.0)


def watched_paths(client: KazooClient) -> list[str]:
    """The paths the server holds data watches on for ``client``'s session (``wchc``)."""
    session = f"0x{client.client_id[0]:x}"
    host, port = split_hosts(",".join(f"{h}:{p}" for h, p in client.hosts))[0]
    paths = paths_by_session(four_letter_word(host, port, "wchc"))
    chroot = client.chroot or ""
    return [path[len(chroot) :] for path in paths.get(session, [])]


def _queue(
    path: str, locks: list[InterProcessMutex], observer: KazooClient, clients: list[KazooClient]
) -> list[Worker]:
    """Start a thread per lock that acquires and releases it; return once all are queued and
    every node but the last is watched by one of ``clients`` (those of every waiter)."""
    workers = []
    queued = len(children(observer, path))
    for lock in locks:

        def run(lock: InterProcessMutex = lock) -> None:
            assert lock.acquire(timeout=60)
            lock.release()

        worker = Worker(run)
        worker.start()
        workers.append(worker)
        queued += 1
        eventually(lambda n=queued: len(children(observer, path)) == n)  # type: ignore[misc]

    def every_waiter_watches() -> bool:
        nodes = sorted(children(observer, path), key=lambda name: name[-10:])
        watched = {p for client in clients for p in watched_paths(client)}
        return {f"{path}/{node}" for node in nodes[:-1]} <= watched

    eventually(every_waiter_watches, what="every waiter watching its predecessor")
    return workers


def _drain_requests(zk_client_factory: ClientFactory, path: str, waiters: int) -> Counter[str]:
    clients = [zk_client_factory() for _ in range(3)]
    holder = InterProcessMutex(clients[0], path)
    assert holder.acquire()
    workers = _queue(
        path, [InterProcessMutex(clients[i % 3], path) for i in range(waiters)], clients[0], clients
    )
    counters = [RequestCounter(client) for client in clients]
    try:
        holder.release()
        for worker in workers:
            worker.outcome(timeout=60)
    finally:
        for counter in counters:
            counter.close()
    total: Counter[str] = Counter()
    for counter in counters:
        total.update(counter.counts)
    return total


def test_a_hand_off_costs_the_same_requests_whatever_the_queue_length(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    short = _drain_requests(zk_client_factory, f"{zk_path}/short", 3)
    long = _drain_requests(zk_client_factory, f"{zk_path}/long", 12)
    per_hand_off = (sum(short.values()) - 1) / 3  # the first holder's release is the extra 1
    assert sum(long.values()) - 1 == per_hand_off * 12
    # only a waiter that was not right behind the holder when it listed lists again
    assert (short["GetChildren"], long["GetChildren"]) == (2, 11)


def test_the_waiter_right_behind_the_holder_takes_over_without_listing(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    counts = _drain_requests(zk_client_factory, f"{zk_path}/lock", 1)
    assert counts["GetChildren"] == 0
    assert counts["Exists"] == 1  # the waiter confirms its node


def test_an_uncontended_cycle_sends_create_list_and_delete_only(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    lock = InterProcessMutex(client, f"{zk_path}/lock")
    with lock:  # the first cycle also creates the parent
        pass
    counter = RequestCounter(client)
    try:
        with lock:
            pass
    finally:
        counter.close()
    assert counter.counts == Counter({"Create2": 1, "GetChildren": 1, "Delete": 1})


def test_a_hold_watches_its_node_when_asked_or_once_it_has_lasted(
    zk_client_factory: ClientFactory, zk_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = zk_client_factory()
    asked = InterProcessMutex(client, f"{zk_path}/asked")
    with asked:
        assert watched_paths(client) == []
        assert asked.is_held()  # one exists: sets the watch and sees the node
        assert watched_paths(client) == [asked.lock_path]
    monkeypatch.setattr(hold_monitor, "WATCH_DELAY", 0.2)
    lasting = InterProcessMutex(client, f"{zk_path}/lasting")
    with lasting:
        eventually(lambda: watched_paths(client) == [lasting.lock_path], what="deferred watch")


def test_each_waiting_contender_holds_exactly_one_watch(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    assert holder.acquire()
    waiter_clients = [zk_client_factory() for _ in range(4)]
    workers = _queue(
        path, [InterProcessMutex(c, path) for c in waiter_clients], holder_client, waiter_clients
    )
    try:
        queue = holder.participant_nodes()
        for position, client in enumerate(waiter_clients, start=1):
            # each waiter watches the node right before its own, and nothing else
            eventually(lambda c=client, p=position: watched_paths(c) == [queue[p - 1]])  # type: ignore[misc]
    finally:
        holder.release()
    for worker in workers:
        worker.outcome()


def test_a_release_wakes_only_the_next_waiter(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    assert holder.acquire()
    next_client, *later_clients = [zk_client_factory() for _ in range(4)]
    next_lock = InterProcessMutex(next_client, path)
    got, done = threading.Event(), threading.Event()

    def next_waiter() -> None:
        assert next_lock.acquire(timeout=SOON)
        got.set()
        done.wait(SOON)
        next_lock.release()

    first = Worker(next_waiter)
    first.start()
    eventually(lambda: len(children(holder_client, path)) == 2)
    later = _queue(
        path,
        [InterProcessMutex(c, path) for c in later_clients],
        holder_client,
        [next_client, *later_clients],
    )
    counters = [RequestCounter(client) for client in later_clients]
    try:
        holder.release()
        assert got.wait(SOON)
        # the later waiters' predecessors are all still there: none of them woke or sent anything
        assert [counter.total() for counter in counters] == [0, 0, 0]
    finally:
        for counter in counters:
            counter.close()
        done.set()
    first.outcome()
    for worker in later:
        worker.outcome()


def test_threads_sharing_one_lock_object_wake_one_at_a_time(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    # Java's idiom is one lock object per process shared by its threads; Curator's waiters of one
    # object then share one monitor, and every release wakes them all to list the children.
    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    assert holder.acquire()
    client = zk_client_factory()
    shared = InterProcessMutex(client, path)
    workers = _queue(path, [shared] * 4, holder_client, [client])
    counter = RequestCounter(client)
    try:
        holder.release()
        for worker in workers:
            worker.outcome(timeout=60)
    finally:
        counter.close()
    # the first takes over with one exists; each later one lists once, when its turn comes
    assert counter.counts == Counter({"Exists": 1, "GetChildren": 3, "Delete": 4})


def test_a_timed_out_acquire_leaves_no_watch_behind(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    waiter_client = zk_client_factory()
    waiter = InterProcessMutex(waiter_client, path)
    with holder:
        assert waiter.acquire(timeout=0.5) is False
        eventually(lambda: watched_paths(waiter_client) == [], what="the waiter's watch removed")
        # nor an emptied entry in kazoo's registry, which would grow with every give-up
        assert kazoo_internals.watched_paths(waiter_client, children=False) == set()


def test_a_last_try_sets_no_watch(zk_client_factory: ClientFactory, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    waiter_client = zk_client_factory()
    counter = RequestCounter(waiter_client)
    try:
        with holder:
            assert InterProcessMutex(waiter_client, path).acquire(0) is False
    finally:
        counter.close()
    assert counter.counts["GetData"] == 0
    assert watched_paths(waiter_client) == []


def test_a_timed_out_waiter_keeps_the_watch_its_own_client_still_needs(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    # The holder's lost-lock monitor watches the holder's node; a waiter of the same client that
    # gives up on that node must not take the server's watch away from it.
    path = f"{zk_path}/lock"
    client = zk_client_factory()
    holder = InterProcessMutex(client, path)
    waiter = InterProcessMutex(client, path)
    assert holder.acquire()
    try:
        assert holder.is_held()  # its monitor now watches the node
        assert waiter.acquire(timeout=0.5) is False
        assert holder.lock_path is not None
        assert watched_paths(client) == [holder.lock_path]
        zk_client_factory().delete(holder.lock_path)
        assert holder.lost_event.wait(SOON)
    finally:
        holder.release()


def test_a_waiter_whose_session_expires_queues_again_and_gets_the_lock(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    waiter_client = zk_client_factory()
    waiter = InterProcessMutex(waiter_client, path)
    assert holder.acquire()

    def wait_then_release() -> None:
        assert waiter.acquire(timeout=60)
        waiter.release()

    worker = Worker(wait_then_release)
    try:
        worker.start()
        eventually(lambda: len(children(holder_client, path)) == 2)
        (first_node,) = [n for n in holder.participant_nodes() if n != holder.lock_path]
        expire_kazoo_session(waiter_client)
        eventually(
            lambda: (
                len(holder.participant_nodes()) == 2
                and first_node not in holder.participant_nodes()
            ),
            what="the waiter queued again with a new node",
        )
    finally:
        holder.release()
    worker.outcome(timeout=60)
