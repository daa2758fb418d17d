"""InterProcessMutex: pycurator and Java Curator 5.x exclude and queue behind each other."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessMutex, attempt_revoke
from pycurator.testing import (
    ClientFactory,
    classpath_curator_version,
    curator_at_least,
    curator_version,
    java_acquire,
    session_of,
)
from pycurator.testing._curator import release_of
from tests.support import SOON, Worker, children, eventually

from .conftest import CuratorFactory, java_class, java_revocation_listener

NODE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}")


def java_mutex(client: Any, path: str) -> Any:
    return java_class("InterProcessMutex")(client, path)


def test_the_java_peer_is_curator_5_as_the_test_header_reports() -> None:
    version = curator_version()
    assert (release_of(version) or (0,))[:1] == (5,), version
    assert classpath_curator_version() == version  # what the header read from the jar
    assert curator_at_least(version) and curator_at_least("5")
    assert not curator_at_least("5.99") and not curator_at_least("6.0")


def test_a_release_is_read_from_the_leading_numbers_of_a_version() -> None:
    assert release_of("5.4.0") == (5, 4, 0)
    assert release_of("5.9.0-SNAPSHOT") == (5, 9, 0)
    assert release_of("unknown") is None
    assert release_of("5.4.0") < (5, 5) <= release_of("5.5.0")  # type: ignore[operator]


def test_python_node_has_the_name_data_and_mode_java_writes(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    java_path, python_path = f"{zk_path}/java/lock", f"{zk_path}/python/lock"
    java = java_mutex(curator, java_path)
    python = InterProcessMutex(zk, python_path)
    assert java_acquire(java, SOON)
    try:
        with python:
            (java_name,) = children(zk, java_path)
            (python_name,) = children(zk, python_path)
            assert NODE.fullmatch(java_name) and NODE.fullmatch(python_name)
            java_data, java_stat = zk.get(f"{java_path}/{java_name}")
            python_data, python_stat = zk.get(f"{python_path}/{python_name}")
            assert python_data == java_data
            assert java_stat.ephemeralOwner != 0 and python_stat.ephemeralOwner != 0
            for parent in (java_path, python_path):
                stat = zk.exists(parent)
                assert stat is not None
                assert (stat.ephemeralOwner, stat.dataLength) == (0, 0)
    finally:
        java.release()
    # Java's parent and ours are both containers: the server reaps both once empty.
    eventually(lambda: zk.exists(zk_path) is None, what="container parents reaped")


def test_revocable_nodes_are_empty_in_both_languages(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    java_path, python_path = f"{zk_path}/java/lock", f"{zk_path}/python/lock"
    java = java_mutex(curator, java_path)
    java.makeRevocable(java_revocation_listener(lambda lock: None))
    python = InterProcessMutex(zk, python_path)
    python.make_revocable(lambda lock: None)
    assert java_acquire(java, SOON)
    try:
        with python:
            (java_name,) = children(zk, java_path)
            (python_name,) = children(zk, python_path)
            assert zk.get(f"{java_path}/{java_name}")[0] == b""
            assert zk.get(f"{python_path}/{python_name}")[0] == b""
    finally:
        java.release()


def test_java_holds_then_python_times_out_then_gets_it_after_release(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    java = java_mutex(curator, path)
    python = InterProcessMutex(zk, path)
    assert java_acquire(java, SOON)
    try:
        assert python.acquire(timeout=0.5) is False
        assert len(children(zk, path)) == 1  # the timed-out attempt left nothing
        got = threading.Event()
        done = threading.Event()

        def python_waits() -> None:
            assert python.acquire(timeout=SOON)
            got.set()
            done.wait(SOON)
            python.release()

        waiter = Worker(python_waits)
        waiter.start()
        eventually(lambda: len(children(zk, path)) == 2, what="python queued behind java")
        assert not got.is_set()
    finally:
        java.release()
    assert got.wait(SOON)
    assert java_acquire(java, 0.3) is False  # Python holds it now
    done.set()
    waiter.outcome()
    assert java_acquire(java, SOON)
    java.release()


def test_python_holds_then_java_times_out_then_gets_it_after_release(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    java = java_mutex(curator, path)
    python = InterProcessMutex(zk, path)
    assert python.acquire()
    try:
        assert java_acquire(java, 0.5) is False
        assert len(children(zk, path)) == 1
        got = threading.Event()
        done = threading.Event()

        def java_waits() -> None:
            assert java_acquire(java, SOON)
            got.set()
            done.wait(SOON)
            java.release()

        waiter = Worker(java_waits)
        waiter.start()
        eventually(lambda: len(children(zk, path)) == 2, what="java queued behind python")
        assert not got.is_set()
    finally:
        python.release()
    assert got.wait(SOON)
    assert python.acquire(timeout=0.3) is False  # Java holds it now
    done.set()
    waiter.outcome()
    assert python.acquire(timeout=SOON)
    python.release()


def test_interleaved_java_and_python_waiters_are_served_in_arrival_order(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    holder = InterProcessMutex(observer, path)
    assert holder.acquire()
    order: list[str] = []
    workers: list[Worker] = []

    def java_waiter(name: str) -> Callable[[], None]:
        lock = java_mutex(curator_factory(), path)

        def run() -> None:
            assert java_acquire(lock, SOON)
            order.append(name)
            lock.release()

        return run

    def python_waiter(name: str) -> Callable[[], None]:
        lock = InterProcessMutex(zk_client_factory(), path)

        def run() -> None:
            assert lock.acquire(timeout=SOON)
            order.append(name)
            lock.release()

        return run

    names = ["java-0", "python-1", "java-2", "python-3", "java-4", "python-5"]
    for index, name in enumerate(names):
        make = java_waiter if name.startswith("java") else python_waiter
        worker = Worker(make(name))
        worker.start()
        workers.append(worker)
        eventually(
            lambda n=index + 2: len(children(observer, path)) == n,  # type: ignore[misc]
            what=f"{name} queued",
        )
    holder.release()
    for worker in workers:
        worker.outcome()
    assert order == names
    assert children(observer, path) == []


def test_mixed_contention_has_no_overlap_and_no_lost_update(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    rounds = 8
    state = {"inside": 0, "max_inside": 0, "counter": 0}
    holds = {"java": 0, "python": 0}
    guard = threading.Lock()

    def critical_section(language: str) -> None:
        with guard:
            state["inside"] += 1
            state["max_inside"] = max(state["max_inside"], state["inside"])
        value = state["counter"]
        threading.Event().wait(0.002)  # widen the read-modify-write window
        state["counter"] = value + 1
        with guard:
            state["inside"] -= 1
            holds[language] += 1

    def java_contender() -> None:
        lock = java_mutex(curator_factory(), path)
        for _ in range(rounds):
            assert java_acquire(lock, 60)
            try:
                critical_section("java")
            finally:
                lock.release()

    def python_contender() -> None:
        lock = InterProcessMutex(zk_client_factory(), path)
        for _ in range(rounds):
            assert lock.acquire(timeout=60)
            try:
                critical_section("python")
            finally:
                lock.release()

    workers = [Worker(java_contender) for _ in range(3)] + [
        Worker(python_contender) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=180)
    assert state["max_inside"] == 1
    assert holds == {"java": 3 * rounds, "python": 3 * rounds}
    assert state["counter"] == 6 * rounds
    assert children(zk_client_factory(), path) == []


def test_participant_nodes_equal_curators(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    java_holder_client = curator_factory()
    java_holder = java_mutex(java_holder_client, path)
    python = InterProcessMutex(zk_client_factory(), path)
    java_observer = java_mutex(curator_factory(), path)
    assert java_acquire(java_holder, SOON)
    java_waiter_lock = java_mutex(curator_factory(), path)

    def python_waits() -> None:
        assert python.acquire(timeout=SOON)
        python.release()

    def java_waits() -> None:
        assert java_acquire(java_waiter_lock, SOON)
        java_waiter_lock.release()

    python_waiter, java_waiter = Worker(python_waits), Worker(java_waits)
    try:
        python_waiter.start()
        eventually(lambda: len(python.participant_nodes()) == 2, what="python queued")
        java_waiter.start()
        eventually(lambda: len(python.participant_nodes()) == 3, what="java queued")
        ours = python.participant_nodes()
        theirs = [str(node) for node in java_observer.getParticipantNodes()]
        assert ours == theirs
        owners = [zk_client_factory().exists(node).ephemeralOwner for node in ours]
        assert owners[0] == session_of(java_holder_client)[0]
        assert owners[1] == python.client.client_id[0]
    finally:
        java_holder.release()
    python_waiter.outcome()
    java_waiter.outcome()
    assert python.participant_nodes() == []


def test_python_revokes_a_java_holder(curator: Any, zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    asked = threading.Event()
    java = java_mutex(curator, path)
    java.makeRevocable(java_revocation_listener(lambda lock: asked.set()))
    assert java_acquire(java, SOON)
    try:
        (name,) = children(zk, path)
        attempt_revoke(zk, f"{path}/{name}")
        assert asked.wait(SOON)
    finally:
        java.release()


def test_java_revokes_a_python_holder(curator: Any, zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    asked = threading.Event()
    python = InterProcessMutex(zk, path)
    python.make_revocable(lambda lock: asked.set())
    with python:
        assert python.lock_path is not None
        java_class("Revoker").attemptRevoke(curator, python.lock_path)
        assert asked.wait(SOON)
