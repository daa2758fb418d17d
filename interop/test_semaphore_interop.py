"""Semaphores: pycurator and Java Curator 5.x draw leases from one pool and share one mutex."""

from __future__ import annotations

import re
import threading
from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessSemaphoreMutex, InterProcessSemaphoreV2
from pycurator.testing import ClientFactory, JavaLease, JavaSemaphore, JavaSemaphoreMutex
from tests.support import SOON, Worker, children, eventually

from .conftest import CuratorFactory

LEASE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}")


def java_semaphore(client: Any, path: str, max_leases: int) -> JavaSemaphore:
    return JavaSemaphore(client, path, max_leases)


def java_lease(semaphore: JavaSemaphore, timeout: float) -> JavaLease | None:
    """A Java lease, or None on timeout."""
    return semaphore.acquire(timeout)


def test_python_and_java_leases_have_the_same_layout(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    java_path, python_path = f"{zk_path}/java", f"{zk_path}/python"
    java = java_lease(java_semaphore(curator, java_path, 2), SOON)
    python = InterProcessSemaphoreV2(zk, python_path, 2).acquire(timeout=SOON)
    assert java is not None and python is not None
    try:
        for path in (java_path, python_path):
            (name,) = children(zk, f"{path}/leases")
            assert LEASE.fullmatch(name)
            assert children(zk, f"{path}/locks") == []
            for parent in (path, f"{path}/leases"):  # an empty locks/ may be reaped already
                stat = zk.exists(parent)
                assert stat is not None and (stat.ephemeralOwner, stat.dataLength) == (0, 0)
        assert python.data() == bytes(java.java.getData())
        assert python.node_name == children(zk, f"{python_path}/leases")[0]
        assert java.node_name == children(zk, f"{java_path}/leases")[0]
    finally:
        java.close()
        python.close()


def test_semaphore_mutex_excludes_across_languages_both_ways(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/mutex"
    java = JavaSemaphoreMutex(curator, path)
    python = InterProcessSemaphoreMutex(zk, path)
    assert java.acquire(SOON)
    try:
        assert python.acquire(timeout=0.5) is False
    finally:
        java.release()
    assert python.acquire(timeout=SOON)
    try:
        assert java.acquire(0.5) is False
    finally:
        python.release()
    assert java.acquire(SOON)
    java.release()
    assert children(zk, f"{path}/leases") == []
    assert children(zk, f"{path}/locks") == []


def test_a_pool_of_three_shared_by_java_and_python(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/pool"
    observer = zk_client_factory()
    java = java_semaphore(curator, path, 3)
    python = InterProcessSemaphoreV2(zk_client_factory(), path, 3)
    java_leases: list[Any] = [java_lease(java, SOON), java_lease(java, SOON)]
    assert all(lease is not None for lease in java_leases)
    python_lease = python.acquire(timeout=SOON)
    assert python_lease is not None
    # a fourth, in either language, times out and leaves nothing behind
    assert python.acquire(timeout=0.5) is None
    assert java_lease(java, 0.5) is None
    assert len(children(observer, f"{path}/leases")) == 3
    # Java returns one: a waiting Python acquire gets it
    waiting_python = Worker(lambda: python.acquire(timeout=SOON))
    waiting_python.start()
    eventually(lambda: len(children(observer, f"{path}/leases")) == 4, what="python waits")
    java.return_lease(java_leases.pop())
    second_python_lease = waiting_python.outcome()
    assert second_python_lease is not None
    # Python returns one: a waiting Java acquire gets it
    waiting_java = Worker(lambda: java_lease(java, SOON))
    waiting_java.start()
    eventually(lambda: len(children(observer, f"{path}/leases")) == 4, what="java waits")
    python.return_lease(python_lease)
    java_leases.append(waiting_java.outcome())
    assert java_leases[-1] is not None
    for lease in java_leases:
        java.return_lease(lease)
    second_python_lease.close()
    assert children(observer, f"{path}/leases") == []
    assert children(observer, f"{path}/locks") == []


def test_mixed_holders_never_exceed_the_maximum(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/pool"
    maximum, rounds = 2, 5
    state = {"inside": 0, "max_inside": 0, "holds": 0}
    guard = threading.Lock()

    def inside() -> None:
        with guard:
            state["inside"] += 1
            state["holds"] += 1
            state["max_inside"] = max(state["max_inside"], state["inside"])
        threading.Event().wait(0.005)
        with guard:
            state["inside"] -= 1

    def java_contender() -> None:
        semaphore = java_semaphore(curator_factory(), path, maximum)
        for _ in range(rounds):
            lease = java_lease(semaphore, 60)
            assert lease is not None
            try:
                inside()
            finally:
                semaphore.return_lease(lease)

    def python_contender() -> None:
        semaphore = InterProcessSemaphoreV2(zk_client_factory(), path, maximum)
        for _ in range(rounds):
            lease = semaphore.acquire(timeout=60)
            assert lease is not None
            with lease:
                inside()

    workers = [Worker(java_contender) for _ in range(3)]
    workers += [Worker(python_contender) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=180)
    assert 1 <= state["max_inside"] <= maximum
    assert state["holds"] == 6 * rounds
    observer = zk_client_factory()
    assert children(observer, f"{path}/leases") == []
    assert children(observer, f"{path}/locks") == []
