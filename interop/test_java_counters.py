"""Curator's shared and atomic values on the wire, as the kit's Java peers write them and kazoo
reads them: the bytes a Python SharedCount and DistributedAtomicLong must match, and what the
Java side does with bytes it did not write, on Curator 5.4 and 5.9 alike."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator.testing import (
    SOON,
    FaultProxy,
    JavaDistributedAtomicInteger,
    JavaDistributedAtomicLong,
    JavaDistributedAtomicValue,
    JavaMutex,
    JavaPromotedToLock,
    JavaSharedCount,
    JavaSharedValue,
    PeerClosedError,
    children,
    created_modes,
    curator_client,
    eventually,
)
from pycurator.testing._java_calls import proxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def int_bytes(value: int) -> bytes:
    return value.to_bytes(4, "big", signed=True)


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def test_a_shared_count_is_four_big_endian_bytes_told_to_every_listener(
    curator_factory: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """The node is made PERSISTENT with the seed (container parents) by the first to start; a
    later seed changes nothing. A count set by one is told to the other's listener, and to its
    own (Curator's watch sees its own writes)."""
    path = f"{zk_path}/shared/count"
    with (
        JavaSharedCount(curator_factory(), path, -2) as first,
        JavaSharedCount(curator_factory(), path, 7) as second,
    ):
        first.start()
        assert zk.get(path)[0] == bytes.fromhex("fffffffe")
        second.start()
        assert second.get_count() == -2
        first.set_count(2**31 - 1)
        assert zk.get(path)[0] == bytes.fromhex("7fffffff")
        assert second.told.wait_for(lambda counts: counts[-1:] == [2**31 - 1], SOON)
        assert first.told.wait_for(lambda counts: counts[-1:] == [2**31 - 1], SOON)
        versioned = second.get_versioned_value()
        assert (versioned.version, versioned.value) == (1, 2**31 - 1)
        assert second.try_set_count(versioned, -(2**31))
        assert zk.get(path)[0] == bytes.fromhex("80000000")
        assert not first.try_set_count(versioned, 5)  # stale: its version is gone
        assert zk.get(path)[0] == bytes.fromhex("80000000")
        assert first.get_count() == -(2**31)  # read again after the refused write
    made = created_modes(server_log, zk_path)
    assert made[path].mode == "PERSISTENT"
    assert made[f"{zk_path}/shared"].mode == made[zk_path].mode == "CONTAINER"


def test_java_reads_a_counts_first_four_bytes_and_cannot_read_fewer(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    """A longer node reads as its first four bytes; an empty node (as kazoo's Counter makes
    it) makes ``getCount()`` throw ``BufferUnderflowException``."""
    zk.create(f"{zk_path}/long", int_bytes(-5) + b"tail", makepath=True)
    with JavaSharedCount(curator, f"{zk_path}/long", 0) as long:
        long.start()
        assert long.get_count() == -5
    zk.create(f"{zk_path}/empty", b"")
    with JavaSharedCount(curator, f"{zk_path}/empty", 0) as empty:
        empty.start()
        with pytest.raises(Exception, match="BufferUnderflowException"):
            empty.get_count()


def test_a_java_shared_count_hears_nothing_once_its_node_was_deleted(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    """Curator reads its node again with a watch on every event; the read after a delete finds
    no node and leaves no watch, so the node made again, and every later change, go unheard
    (a node made again before that read is heard: the read finds it)."""
    path, signal = f"{zk_path}/count", f"{zk_path}/signal"
    zk.create(signal, makepath=True)
    with JavaSharedCount(curator, path, 1) as java:
        java.start()
        zk.set(path, int_bytes(5))
        assert java.told.wait_for(lambda counts: counts == [5], SOON)
        signalled = threading.Event()
        watcher = proxy("org.apache.zookeeper.Watcher", {"process": lambda _e: signalled.set()})
        curator.checkExists().usingWatcher(watcher).forPath(signal)
        zk.delete(path)
        zk.set(signal, b"after the delete")
        # The Java client's events come in order on one thread: once the signal's is told,
        # the delete's was, and Curator's read again is sent; a request sent now is answered
        # after it.
        assert signalled.wait(SOON)
        curator.checkExists().forPath(path)
        zk.create(path, int_bytes(9))
        zk.set(path, int_bytes(11))
        assert not java.told.wait_for(lambda counts: counts != [5], 1.0)
        assert java.get_count() == 5


def test_a_shared_value_holds_its_bytes_as_they_are(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/value"
    with JavaSharedValue(curator, path, b"\x00seed") as java:
        java.start()
        assert zk.get(path)[0] == b"\x00seed"
        versioned = java.get_versioned_value()
        assert java.try_set_value(versioned, b"next")
        assert zk.get(path)[0] == b"next"
        zk.set(path, b"kazoo")
        assert java.told.wait_for(lambda values: values[-1:] == [b"kazoo"], SOON)
        assert java.get_value() == b"kazoo"


def test_an_atomic_long_is_eight_big_endian_bytes_and_wraps_as_java(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """A missing node reads 0 and is made (PERSISTENT, container parents) by the first write;
    an empty node reads 0; the arithmetic wraps; a 4-byte node is corrupt to a long."""
    path = f"{zk_path}/atomic/long"
    with JavaDistributedAtomicLong(curator, path, KazooRetry(max_tries=3)) as java:
        missing = java.get()
        assert (missing.succeeded, missing.pre_value, missing.post_value) == (True, 0, 0)
        assert zk.exists(path) is None
        first = java.increment()
        assert (first.succeeded, first.pre_value, first.post_value) == (True, 0, 1)
        assert first.stats.optimistic_tries == 1 and first.stats.promoted_lock_tries == 0
        assert zk.get(path)[0] == long_bytes(1)
        java.force_set(LONG_MAX)
        wrapped = java.increment()
        assert (wrapped.pre_value, wrapped.post_value) == (LONG_MAX, LONG_MIN)
        assert zk.get(path)[0] == bytes.fromhex("8000000000000000")
        assert java.subtract(1).post_value == LONG_MAX
        assert not java.compare_and_set(0, 5).succeeded
        assert java.compare_and_set(LONG_MAX, -1).succeeded
        assert zk.get(path)[0] == bytes.fromhex("ffffffffffffffff")
        assert java.initialize(3) is False  # the node exists
        zk.set(path, b"")
        assert java.get().pre_value == 0
        assert java.add(7).post_value == 7
        zk.set(path, int_bytes(7))
        with pytest.raises(Exception, match="Corrupted data"):
            java.get()
    made = created_modes(server_log, zk_path)
    assert made[path].mode == "PERSISTENT"
    assert made[f"{zk_path}/atomic"].mode == "CONTAINER"


def test_an_atomic_integer_is_four_bytes_and_an_atomic_value_raw_bytes(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    with JavaDistributedAtomicInteger(curator, f"{zk_path}/int", None) as numbers:
        assert numbers.initialize(2**31 - 1)
        assert zk.get(f"{zk_path}/int")[0] == bytes.fromhex("7fffffff")
        assert numbers.increment().post_value == -(2**31)
        assert zk.get(f"{zk_path}/int")[0] == bytes.fromhex("80000000")
    with JavaDistributedAtomicValue(curator, f"{zk_path}/raw", None) as raw:
        assert raw.get().pre_value is None  # no node
        assert raw.initialize(b"one") and not raw.initialize(b"two")
        assert not raw.compare_and_set(b"two", b"three").succeeded
        swapped = raw.compare_and_set(b"one", b"three")
        assert (swapped.succeeded, swapped.pre_value, swapped.post_value) == (
            True,
            b"one",
            b"three",
        )
        assert raw.try_set(b"\x00\xff").post_value == b"\x00\xff"
        assert zk.get(f"{zk_path}/raw")[0] == b"\x00\xff"


def test_java_increments_from_two_clients_add_up(
    curator_factory: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/counter"
    retry = KazooRetry(max_tries=50, delay=0.005, backoff=1)
    peers = [JavaDistributedAtomicLong(curator_factory(), path, retry) for _ in range(2)]
    results: list[bool] = []

    def increments(peer: JavaDistributedAtomicLong) -> None:
        results.extend(peer.increment().succeeded for _ in range(25))

    threads = [threading.Thread(target=increments, args=(peer,)) for peer in peers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert len(results) == 50
    assert zk.get(path)[0] == long_bytes(sum(results))


class Interference:
    """Rewrites a node with its own bytes as fast as it can (a new version each time, the same
    value), so that every optimistic try of a client behind a slow link fails; with ``lock``,
    only until the lock path has a child, whose names ``seen`` then holds."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        self.seen: list[str] = []
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self, node: str, lock: str | None = None) -> None:
        written = threading.Event()

        def rewrite() -> None:
            while not self.stop.is_set():
                if lock is not None and (held := children(self.zk, lock)):
                    self.seen.extend(held)
                    return
                self.zk.set(node, self.zk.get(node)[0])
                written.set()

        self.threads.append(threading.Thread(target=rewrite, daemon=True))
        self.threads[-1].start()
        assert written.wait(SOON)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(SOON)


@pytest.fixture
def interference(zk: KazooClient) -> Iterator[Interference]:
    rewriter = Interference(zk)
    yield rewriter
    rewriter.close()


def test_promoted_to_lock_an_increment_takes_the_mutex_after_its_optimistic_try_fails(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, interference: Interference
) -> None:
    """With no optimistic retry left, the increment takes an InterProcessMutex at the lock
    path (its node ``_c_<uuid>-lock-<seq>``), tries under it, and releases it."""
    path, lock = f"{zk_path}/counter", f"{zk_path}/lock"
    zk.create(path, long_bytes(41), makepath=True)
    with (
        FaultProxy(zk_server.hosts.split(",")[0], latency=0.05) as proxy,
        curator_client(proxy.hosts) as slow,
    ):
        promoted = JavaPromotedToLock(lock, SOON, KazooRetry(max_tries=5, delay=0.05))
        with JavaDistributedAtomicLong(slow, path, KazooRetry(max_tries=0), promoted) as java:
            interference.start(path, lock)
            result = java.increment()
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 41, 42)
    assert result.stats.optimistic_tries == 1 and result.stats.promoted_lock_tries >= 1
    assert result.stats.promoted_time > 0
    (held,) = interference.seen
    assert held.startswith("_c_") and held.endswith("-lock-0000000000")
    assert zk.get(path)[0] == long_bytes(42)
    assert children(zk, lock) == []


def test_a_promoted_increment_waits_for_the_lock_no_longer_than_its_timeout(
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk: KazooClient,
    zk_path: str,
    interference: Interference,
) -> None:
    """While another holds the lock: with a timeout the increment fails after it; without one
    it waits, until the peer's close() ends it."""
    path, lock = f"{zk_path}/counter", f"{zk_path}/lock"
    zk.create(path, long_bytes(0), makepath=True)
    holder = JavaMutex(curator, lock)
    assert holder.acquire(SOON)
    try:
        with (
            FaultProxy(zk_server.hosts.split(",")[0], latency=0.05) as proxy,
            curator_client(proxy.hosts) as slow,
        ):
            interference.start(path)
            bounded = JavaPromotedToLock(lock, 0.5)
            with JavaDistributedAtomicLong(slow, path, KazooRetry(max_tries=0), bounded) as java:
                began = time.monotonic()
                result = java.increment()
                assert not result.succeeded and result.stats.promoted_lock_tries == 0
                assert 0.5 <= time.monotonic() - began < SOON
            waiting = JavaDistributedAtomicLong(
                slow, path, KazooRetry(max_tries=0), JavaPromotedToLock(lock)
            )
            ended: list[BaseException] = []

            def increment() -> None:
                try:
                    waiting.increment()
                except PeerClosedError as exc:
                    ended.append(exc)

            thread = threading.Thread(target=increment)
            thread.start()
            eventually(lambda: len(children(zk, lock)) == 2, what="the increment waits")
            waiting.close()
            thread.join(SOON)
            assert not thread.is_alive() and len(ended) == 1
    finally:
        holder.release()
    assert zk.get(path)[0] == long_bytes(0)
