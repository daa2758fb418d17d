"""InterProcessSemaphoreV2 and InterProcessSemaphoreMutex against a real server, Python alone."""

from __future__ import annotations

import re
import threading

import pytest
from kazoo.client import KazooClient

from pycurator import (
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LockLostError,
    LockNotOwnedError,
)
from pycurator._client.transport import default_node_data
from pycurator.testing import ClientFactory, expire_kazoo_session

from .support import SOON, Worker, children, eventually

LEASE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}")


def test_a_lease_is_one_lease_node_and_no_lock_node(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/sem"
    semaphore = InterProcessSemaphoreV2(zk, path, 2)
    lease = semaphore.acquire()
    assert lease is not None
    (name,) = children(zk, f"{path}/leases")
    assert LEASE.fullmatch(name)
    assert lease.node_name == name
    assert lease.path == f"{path}/leases/{name}"
    assert lease.data() == default_node_data()
    assert children(zk, f"{path}/locks") == []
    assert semaphore.participant_nodes() == [name]
    lease.close()
    assert children(zk, f"{path}/leases") == []
    eventually(lambda: zk.exists(zk_path) is None, what="container parents reaped")


def test_node_data_is_written_to_the_lease(zk: KazooClient, zk_path: str) -> None:
    semaphore = InterProcessSemaphoreV2(zk, f"{zk_path}/sem", 1, node_data=b"export-3")
    with semaphore.acquire(timeout=SOON) as lease:  # type: ignore[union-attr]
        assert lease.data() == b"export-3"


def test_at_most_max_leases_are_out_and_a_returned_one_goes_to_a_waiter(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/sem"
    semaphore = InterProcessSemaphoreV2(zk_client_factory(), path, 3)
    other = InterProcessSemaphoreV2(zk_client_factory(), path, 3)
    leases = semaphore.acquire_many(3, timeout=SOON)
    assert leases is not None and len(leases) == 3
    assert other.acquire(timeout=0.3) is None
    assert len(semaphore.participant_nodes()) == 3  # the timed-out attempt left nothing
    waiter = Worker(lambda: other.acquire(timeout=SOON))
    waiter.start()
    eventually(lambda: len(semaphore.participant_nodes()) == 4, what="waiter's lease node")
    semaphore.return_lease(leases[0])
    late = waiter.outcome()
    assert late is not None
    semaphore.return_all([*leases[1:], late])
    assert semaphore.participant_nodes() == []


def test_acquire_many_returns_every_lease_on_timeout(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/sem"
    observer = zk_client_factory()
    holder = InterProcessSemaphoreV2(zk_client_factory(), path, 3)
    taken = holder.acquire()
    assert taken is not None
    many = InterProcessSemaphoreV2(zk_client_factory(), path, 3)
    assert many.acquire_many(3, timeout=0.5) is None
    assert children(observer, f"{path}/leases") == [taken.node_name]
    assert children(observer, f"{path}/locks") == []
    taken.close()


@pytest.mark.parametrize("qty", [0, -1])
def test_qty_below_one_is_a_value_error(zk: KazooClient, zk_path: str, qty: int) -> None:
    with pytest.raises(ValueError, match="qty must be >= 1"):
        InterProcessSemaphoreV2(zk, f"{zk_path}/sem", 2).acquire_many(qty)
    assert zk.exists(zk_path) is None


def test_bad_max_leases_is_refused(zk: KazooClient, zk_path: str) -> None:
    with pytest.raises(ValueError, match="max_leases must be >= 1"):
        InterProcessSemaphoreV2(zk, f"{zk_path}/sem", 0)
    with pytest.raises(TypeError, match="max_leases must be an int"):
        InterProcessSemaphoreV2(zk, f"{zk_path}/sem", 1.5)  # type: ignore[arg-type]


def test_concurrent_holders_never_exceed_the_maximum(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/sem"
    state = {"inside": 0, "max_inside": 0}
    guard = threading.Lock()

    def contend(client: KazooClient) -> None:
        semaphore = InterProcessSemaphoreV2(client, path, 2)
        for _ in range(4):
            lease = semaphore.acquire(timeout=60)
            assert lease is not None
            with lease:
                with guard:
                    state["inside"] += 1
                    state["max_inside"] = max(state["max_inside"], state["inside"])
                threading.Event().wait(0.01)
                with guard:
                    state["inside"] -= 1

    clients = [zk_client_factory() for _ in range(2)]
    workers = [Worker(lambda c=clients[i % 2]: contend(c)) for i in range(5)]  # type: ignore[misc]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=120)
    assert 1 <= state["max_inside"] <= 2
    assert children(clients[0], f"{path}/leases") == []
    assert children(clients[0], f"{path}/locks") == []


def test_a_lease_whose_session_expires_is_lost_and_not_kept(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/sem"
    client = zk_client_factory()
    semaphore = InterProcessSemaphoreV2(client, path, 1)
    lease = semaphore.acquire()
    assert lease is not None
    token = lease.fencing_token
    reasons: list[str] = []
    lease.on_lost(lambda lost, reason: reasons.append(reason))
    expire_kazoo_session(client)
    assert lease.lost_event.wait(SOON)
    assert not lease.is_held()
    with pytest.raises(LockLostError):
        lease.check()
    eventually(lambda: reasons != [], what="on_lost called")
    successor = InterProcessSemaphoreV2(zk_client_factory(), path, 1).acquire(timeout=SOON)
    assert successor is not None
    assert successor.fencing_token > token
    lease.close()  # nothing to delete, nothing raised, the successor's lease untouched
    assert successor.is_held()
    assert len(children(zk_client_factory(), f"{path}/leases")) == 1
    successor.close()


def test_semaphore_mutex_is_not_reentrant_and_any_thread_may_release(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/mutex"
    lock = InterProcessSemaphoreMutex(zk, path)
    assert lock.acquire()
    assert lock.is_acquired_in_this_process()
    assert lock.acquire(timeout=0.3) is False  # waits for itself
    assert len(lock.participant_nodes()) == 1
    _release_elsewhere(lock)
    assert not lock.is_acquired_in_this_process()
    with pytest.raises(LockNotOwnedError, match="Not acquired"):
        lock.release()
    with lock:
        assert lock.is_held()
        assert lock.fencing_token > 0
    assert lock.participant_nodes() == []


def _release_elsewhere(lock: InterProcessSemaphoreMutex) -> None:
    worker = Worker(lock.release)
    worker.start()
    worker.outcome()


def test_semaphore_mutexes_exclude_each_other(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/mutex"
    first = InterProcessSemaphoreMutex(zk_client_factory(), path)
    second = InterProcessSemaphoreMutex(zk_client_factory(), path)
    with first:
        assert second.acquire(timeout=0.3) is False
    assert second.acquire(timeout=SOON)
    second.release()
