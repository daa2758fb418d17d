"""Shared counts and atomic values: pycurator and Java Curator 5.x on one node, both ways, on
Curator 5.4 and 5.9 alike: the same bytes, a count set by either told to the other's listeners,
and increments of either side adding up, optimistic and promoted to one lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import (
    AtomicValue,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    PromotedToLock,
    SharedCount,
    SharedValue,
)
from pycurator.testing import (
    SOON,
    ClientFactory,
    JavaDistributedAtomicInteger,
    JavaDistributedAtomicLong,
    JavaDistributedAtomicValue,
    JavaPromotedToLock,
    JavaSharedCount,
    JavaSharedValue,
    children,
    created_modes,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .conftest import CuratorFactory

pytestmark = pytest.mark.usefixtures("no_orphans")


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


class Told:
    """A pycurator listener that records each count or value it is told."""

    def __init__(self) -> None:
        self.told: list[Any] = []
        self._changed = threading.Condition()

    def count_has_changed(self, _shared: Any, count: int) -> None:
        with self._changed:
            self.told.append(count)
            self._changed.notify_all()

    value_has_changed = count_has_changed

    def wait_for(self, last: Any) -> list[Any]:
        with self._changed:
            self._changed.wait_for(lambda: self.told[-1:] == [last], SOON)
            return list(self.told)


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def test_a_shared_count_has_javas_bytes_and_each_side_reads_the_others(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    python_path, java_path = f"{zk_path}/python/count", f"{zk_path}/java/count"
    with SharedCount(zk, python_path, -2), JavaSharedCount(curator, java_path, -2) as java:
        java.start()
        assert zk.get(python_path)[0] == zk.get(java_path)[0] == bytes.fromhex("fffffffe")
        with JavaSharedCount(curator, python_path, 0) as reader:
            reader.start()
            assert reader.get_count() == -2  # Java reads the node Python made
        with SharedCount(zk, java_path, 0) as ours:
            assert ours.get_count() == -2  # and the other way
    made = created_modes(server_log, zk_path)
    for path in (python_path, java_path):
        assert made[path].mode == "PERSISTENT"
        assert made[path.rsplit("/", 1)[0]].mode == "CONTAINER"


def test_a_count_set_by_either_side_is_told_to_the_others_listeners(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/count"
    python_told = Told()
    with JavaSharedCount(curator, path, 1) as java, SharedCount(zk, path, 1) as python:
        java.start()
        python.add_listener(python_told)
        java.set_count(5)
        assert python_told.wait_for(5)[-1] == 5
        python.set_count(-7)
        assert java.told.wait_for(lambda counts: counts[-1:] == [-7], SOON)
        assert java.get_count() == -7
        seen = python.get_versioned_value()
        assert python.try_set_count(seen, 8)
        assert java.told.wait_for(lambda counts: counts[-1:] == [8], SOON)
        stale = java.get_versioned_value()
        java.set_count(9)
        assert python_told.wait_for(9)[-1] == 9
        assert not java.try_set_count(stale, 10)  # Java's versioned set, refused as ours are
        assert zk.get(path)[0] == (9).to_bytes(4, "big")
        java_seen = java.get_versioned_value()
        assert java.try_set_count(java_seen, 11)
        assert python_told.wait_for(11)[-1] == 11
        assert not python.try_set_count(seen, 12)  # stale: refused, nothing written
    assert zk.get(path)[0] == (11).to_bytes(4, "big")


def test_a_shared_value_holds_the_same_bytes_both_ways(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/value"
    told = Told()
    with SharedValue(zk, path, b"\x00seed") as python, JavaSharedValue(curator, path, b"x") as java:
        python.add_listener(told)
        java.start()
        assert java.get_value() == b"\x00seed"
        java.set_value(b"\xff from Java")
        assert told.wait_for(b"\xff from Java")[-1] == python.get_value() == b"\xff from Java"
        python.set_value(b"from Python")
        assert java.told.wait_for(lambda values: values[-1:] == [b"from Python"], SOON)


def test_atomic_values_have_javas_bytes_and_read_each_others(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    retry = KazooRetry(max_tries=3)
    ours = DistributedAtomicLong(zk, f"{zk_path}/long", retry)
    theirs = JavaDistributedAtomicLong(curator, f"{zk_path}/long", retry)
    assert ours.increment().post_value == 1
    assert zk.get(f"{zk_path}/long")[0] == long_bytes(1)
    assert theirs.add(2**63 - 2).post_value == 2**63 - 1
    wrapped = ours.increment()
    assert (wrapped.pre_value, wrapped.post_value) == (2**63 - 1, -(2**63))
    assert theirs.get().pre_value == -(2**63)
    python_int = DistributedAtomicInteger(zk, f"{zk_path}/int", retry)
    java_int = JavaDistributedAtomicInteger(curator, f"{zk_path}/int", retry)
    assert python_int.initialize(2**31 - 1) and not java_int.initialize(0)
    assert java_int.increment().post_value == -(2**31)
    assert python_int.get().pre_value == -(2**31)
    assert zk.get(f"{zk_path}/int")[0] == bytes.fromhex("80000000")
    python_raw = DistributedAtomicValue(zk, f"{zk_path}/raw", retry)
    java_raw = JavaDistributedAtomicValue(curator, f"{zk_path}/raw", retry)
    assert java_raw.initialize(b"one")
    assert python_raw.compare_and_set(b"one", b"two").succeeded
    assert java_raw.compare_and_set(b"two", b"\x00\xff").post_value == b"\x00\xff"
    assert python_raw.get().pre_value == b"\x00\xff"
    made = created_modes(server_log, zk_path)
    assert {made[f"{zk_path}/{name}"].mode for name in ("long", "int", "raw")} == {"PERSISTENT"}


def _together(
    python: list[Callable[[], AtomicValue[int]]], java: list[Callable[[], Any]], times: int
) -> tuple[list[AtomicValue[int]], list[Any]]:
    """Each call ``times`` times in a thread of its own, all at once: their results."""
    ours: list[AtomicValue[int]] = []
    theirs: list[Any] = []

    def run(call: Callable[[], Any], into: list[Any]) -> None:
        for _ in range(times):
            into.append(call())

    threads = [threading.Thread(target=run, args=(call, ours)) for call in python]
    threads += [threading.Thread(target=run, args=(call, theirs)) for call in java]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * SOON)
    assert not any(thread.is_alive() for thread in threads)
    return ours, theirs


@pytest.mark.parametrize("promoted", [False, True], ids=["optimistic", "promoted"])
def test_java_and_python_increments_of_one_counter_add_up(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    promoted: bool,
) -> None:
    """Two Java clients and two Python ones increment one DistributedAtomicLong together; the
    count ends at the sum of the increments that succeeded, on either side. Promoted, one try
    each before the lock: Java's and Python's take the same InterProcessMutex, which is left
    empty."""
    path, lock = f"{zk_path}/counter", f"{zk_path}/lock"
    if promoted:
        retry = KazooRetry(max_tries=1)
        under = KazooRetry(max_tries=20, delay=0.005, backoff=1)
        python_lock: PromotedToLock | None = PromotedToLock(lock, SOON, under)
        java_lock: JavaPromotedToLock | None = JavaPromotedToLock(lock, SOON, under)
    else:
        retry = KazooRetry(max_tries=50, delay=0.002, backoff=1)
        python_lock = java_lock = None
    pythons = [
        DistributedAtomicLong(zk_client_factory(), path, retry, python_lock) for _ in range(2)
    ]
    javas = [JavaDistributedAtomicLong(curator_factory(), path, retry, java_lock) for _ in range(2)]
    ours, theirs = _together(
        [counter.increment for counter in pythons], [counter.increment for counter in javas], 20
    )
    succeeded = sum(value.succeeded for value in ours) + sum(value.succeeded for value in theirs)
    assert not any(value.unknown for value in ours)
    assert any(value.succeeded for value in ours) and any(value.succeeded for value in theirs)
    assert zk.get(path)[0] == long_bytes(succeeded)
    if promoted:
        assert children(zk, lock) == []
