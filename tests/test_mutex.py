"""InterProcessMutex against a real ZooKeeper server, Python alone."""

from __future__ import annotations

import math
import re
import threading

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError

from pycurator import (
    InterProcessMutex,
    LockNotOwnedError,
    LockTimeout,
    PyCuratorError,
    attempt_revoke,
)
from pycurator._client.transport import default_node_data
from pycurator.testing import ClientFactory

from .support import SOON, RequestCounter, Worker, children, eventually

NODE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}")


def test_default_node_data_is_an_ascii_address() -> None:
    data = default_node_data()
    assert data == b"" or re.fullmatch(rb"[0-9a-fA-F:.]+", data)


def test_acquire_creates_one_protected_ephemeral_sequential_node(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    lock = InterProcessMutex(zk, path)
    assert lock.acquire()
    try:
        names = children(zk, path)
        assert len(names) == 1
        assert NODE.fullmatch(names[0])
        data, stat = zk.get(f"{path}/{names[0]}")
        assert data == default_node_data()
        assert stat.ephemeralOwner == zk.client_id[0]
        assert lock.lock_path == f"{path}/{names[0]}"
    finally:
        lock.release()
    assert children(zk, path) == []


def test_node_data_can_be_given(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock", node_data=b"worker-7")
    with lock:
        assert lock.lock_path is not None
        assert zk.get(lock.lock_path)[0] == b"worker-7"


def test_a_second_client_times_out_and_leaves_no_node(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    observer = zk_client_factory()
    other = InterProcessMutex(zk_client_factory(), path)
    assert holder.acquire()
    try:
        assert other.acquire(timeout=0.3) is False
        assert not other.is_acquired_in_this_process()
        assert len(children(observer, path)) == 1
    finally:
        holder.release()


def test_acquire_zero_tries_once_and_cleans_up(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    other = InterProcessMutex(zk_client_factory(), path)
    assert other.acquire(0) is True
    other.release()
    with holder:
        assert other.acquire(0) is False
        assert len(holder.participant_nodes()) == 1


def test_waiter_gets_the_lock_when_the_holder_releases(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    waiter = InterProcessMutex(zk_client_factory(), path)
    assert holder.acquire()
    got = threading.Event()
    release_waiter = threading.Event()

    def wait_then_hold() -> None:
        assert waiter.acquire(timeout=SOON)
        got.set()
        release_waiter.wait(SOON)
        waiter.release()

    worker = Worker(wait_then_hold)
    worker.start()
    eventually(lambda: len(holder.participant_nodes()) == 2, what="waiter queued")
    assert not got.is_set()
    holder.release()
    assert got.wait(SOON)
    release_waiter.set()
    worker.outcome()


def test_a_waiter_whose_node_was_deleted_queues_again_when_the_holder_releases(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    waiter_client = zk_client_factory()
    waiter = InterProcessMutex(waiter_client, path)
    assert holder.acquire()
    counter = RequestCounter(waiter_client)

    def hold() -> str | None:
        assert waiter.acquire(timeout=SOON)
        try:
            assert waiter.participant_nodes() == [waiter.lock_path]
            return waiter.lock_path
        finally:
            waiter.release()

    worker = Worker(hold)
    try:
        worker.start()
        eventually(lambda: counter.counts["GetData"] == 1, what="the waiter watching the holder")
        [first] = [node for node in holder.participant_nodes() if node != holder.lock_path]
        zk.delete(first)
        holder.release()
        held = worker.outcome()
    finally:
        counter.close()
    # the deletion woke it; the exists that confirms its node found none: a new node held (its
    # create made again after the lock path's container, once the server reaped it empty)
    assert held is not None and held != first
    assert counter.counts["Exists"] == 1
    assert counter.counts["Create2"] == 2 + counter.counts["CreateContainer"]


def test_reentry_counts_locally_and_sends_nothing(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock")
    assert lock.acquire()
    node = lock.lock_path
    counter = RequestCounter(zk)
    try:
        assert lock.acquire()
        assert lock.acquire(timeout=0)
        lock.release()
        lock.release()
        assert counter.count == 0
    finally:
        counter.close()
    assert lock.is_owned_by_current_thread()
    assert lock.lock_path == node
    lock.release()
    assert not lock.is_owned_by_current_thread()
    assert not lock.is_acquired_in_this_process()


def test_release_by_a_thread_that_does_not_hold_it_raises(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    lock = InterProcessMutex(zk, path)
    with pytest.raises(LockNotOwnedError, match=f"You do not own the lock: {path}") as info:
        lock.release()
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value, PyCuratorError)
    assert lock.acquire()
    try:
        other_thread = Worker(lock.release)
        other_thread.start()
        with pytest.raises(LockNotOwnedError):
            other_thread.outcome()
        assert lock.is_owned_by_current_thread()
    finally:
        lock.release()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "Path length must be > 0"),
        ("no-slash", "must start with /"),
        ("/trailing/", "must not end with /"),
        ("/a//b", "empty node name"),
        ("/a/./b", "relative paths not allowed"),
        ("/a/../b", "relative paths not allowed"),
        ("/a\x00b", "null character"),
        ("/a\x07b", "invalid character"),
        ("/a\U0001f512", "invalid character"),
    ],
)
def test_bad_paths_are_rejected_before_any_request(
    zk: KazooClient, zk_path: str, path: str, message: str
) -> None:
    counter = RequestCounter(zk)
    try:
        with pytest.raises(ValueError, match=message):
            InterProcessMutex(zk, path)
        assert counter.count == 0
    finally:
        counter.close()


@pytest.mark.parametrize("timeout", [-1.0, math.nan])
def test_bad_timeouts_are_value_errors(zk: KazooClient, zk_path: str, timeout: float) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock")
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        lock.acquire(timeout)
    assert zk.exists(f"{zk_path}/lock") is None


def test_wrong_types_are_type_errors(zk: KazooClient, zk_path: str) -> None:
    with pytest.raises(TypeError, match="KazooClient"):
        InterProcessMutex("not a client", f"{zk_path}/lock")
    with pytest.raises(TypeError, match="node_data must be bytes"):
        InterProcessMutex(zk, f"{zk_path}/lock", node_data="text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="timeout"):
        InterProcessMutex(zk, f"{zk_path}/lock").acquire("1")  # type: ignore[arg-type]


def test_a_client_that_is_not_started_is_refused(zk_server: object, zk_path: str) -> None:
    client = KazooClient(hosts=zk_server.hosts)  # type: ignore[attr-defined]
    lock = InterProcessMutex(client, f"{zk_path}/lock")
    with pytest.raises(ConnectionClosedError, match="not started"):
        lock.acquire(1)


def test_context_manager_holds_and_releases(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock")
    with lock as held:
        assert held is lock
        assert lock.is_owned_by_current_thread()
    assert not lock.is_acquired_in_this_process()
    assert children(zk, f"{zk_path}/lock") == []


def test_hold_with_a_timeout_raises_lock_timeout(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    other = InterProcessMutex(zk_client_factory(), path)
    with holder:
        with pytest.raises(LockTimeout, match=path) as info, other.hold(timeout=0.2):
            pytest.fail("entered a lock that is held elsewhere")
        assert isinstance(info.value, TimeoutError)
    with other.hold(timeout=SOON):
        assert other.is_owned_by_current_thread()


def test_many_threads_on_one_lock_object_exclude_each_other(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock")
    _assert_mutual_exclusion([lock] * 6, rounds=5)


def test_many_lock_objects_on_one_path_exclude_each_other(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    clients = [zk_client_factory() for _ in range(3)]
    locks = [InterProcessMutex(clients[i % 3], f"{zk_path}/lock") for i in range(6)]
    _assert_mutual_exclusion(locks, rounds=5)


def _assert_mutual_exclusion(locks: list[InterProcessMutex], rounds: int) -> None:
    state = {"inside": 0, "max_inside": 0, "counter": 0}
    guard = threading.Lock()

    def contend(lock: InterProcessMutex) -> None:
        for _ in range(rounds):
            assert lock.acquire(timeout=60)
            try:
                with guard:
                    state["inside"] += 1
                    state["max_inside"] = max(state["max_inside"], state["inside"])
                value = state["counter"]
                threading.Event().wait(0.002)
                state["counter"] = value + 1
                with guard:
                    state["inside"] -= 1
            finally:
                lock.release()

    workers = [Worker(lambda lock=lock: contend(lock)) for lock in locks]  # type: ignore[misc]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=120)
    assert state["max_inside"] == 1
    assert state["counter"] == rounds * len(locks)
    assert locks[0].participant_nodes() == []


def test_parents_are_containers_reaped_after_release(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/a/b/lock"
    lock = InterProcessMutex(zk, path)
    with lock:
        for parent in (zk_path, f"{zk_path}/a", f"{zk_path}/a/b", path):
            stat = zk.exists(parent)
            assert stat is not None
            assert stat.ephemeralOwner == 0
            assert stat.dataLength == 0
    # The server deletes empty containers that once had children, one level per check.
    eventually(lambda: zk.exists(zk_path) is None, what="container parents reaped")


def test_participant_nodes_lists_holder_then_waiters_in_arrival_order(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    assert holder.participant_nodes() == []
    assert holder.acquire()
    waiters = [InterProcessMutex(zk_client_factory(), path) for _ in range(3)]
    order: list[int] = []
    workers = []
    for index, waiter in enumerate(waiters):

        def run(waiter: InterProcessMutex = waiter, index: int = index) -> None:
            assert waiter.acquire(timeout=SOON)
            order.append(index)
            waiter.release()

        worker = Worker(run)
        worker.start()
        workers.append(worker)
        eventually(lambda n=index + 2: len(holder.participant_nodes()) == n)  # type: ignore[misc]
    nodes = holder.participant_nodes()
    assert nodes[0] == holder.lock_path
    assert all(node.startswith(f"{path}/_c_") for node in nodes)
    holder.release()
    for worker in workers:
        worker.outcome()
    assert order == [0, 1, 2]


def test_revocation_between_python_clients(zk_client_factory: ClientFactory, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    holder = InterProcessMutex(zk_client_factory(), path)
    asked = threading.Event()
    seen: list[InterProcessMutex] = []

    def on_revoke(lock: InterProcessMutex) -> None:
        seen.append(lock)
        asked.set()

    holder.make_revocable(on_revoke)
    with holder:
        node = holder.lock_path
        assert node is not None
        assert zk_client_factory().get(node)[0] == b""  # revocable nodes are empty, as Curator's
        attempt_revoke(zk_client_factory(), node)
        assert asked.wait(SOON)
    assert seen == [holder]
    attempt_revoke(zk_client_factory(), node)  # the node is gone: ignored
