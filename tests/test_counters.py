"""Shared counts and atomic values on a real ZooKeeper: Curator's bytes, listeners told of
every change whoever makes it, and an update never applied twice, a lost answer's included
(the server really takes the write, and its answer is really thrown away)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from pycurator import (
    AtomicValue,
    CorruptedDataError,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    PromotedToLock,
    SharedCount,
    SharedValue,
    VersionedValue,
)
from pycurator._client.transport import transport_of
from pycurator._recipes.atomic import AtomicSteps
from pycurator._threads.runner import run
from pycurator.testing import FaultProxy

from .support import SOON, ClientFactory, children, eventually

FAST = KazooRetry(max_tries=-1, delay=0.001, backoff=1, max_jitter=0.5)


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


class Told:
    """A listener that records each count it is told, and each connection state."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.states: list[str] = []
        self._changed = threading.Condition()

    def count_has_changed(self, shared: SharedCount, count: int) -> None:
        with self._changed:
            self.counts.append(count)
            self._changed.notify_all()

    def state_changed(self, client: KazooClient, state: str) -> None:
        self.states.append(state)

    def wait_for(self, counts: list[int]) -> list[int]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.counts) >= len(counts), SOON)
            return list(self.counts)


def test_a_shared_count_is_four_big_endian_bytes_seeded_once(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/shared/count"
    with SharedCount(zk, path, -2) as first, SharedCount(zk_client_factory(), path, 7) as second:
        assert zk.get(path)[0] == bytes.fromhex("fffffffe")
        assert second.get_count() == -2  # the node existed: its seed changed nothing
        first.set_count(2**31 - 1)
        assert zk.get(path)[0] == bytes.fromhex("7fffffff")
        assert first.get_versioned_value().version == 1


def test_a_change_by_anyone_is_told_to_every_listener_once(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/count"
    mine, theirs = Told(), Told()
    with SharedCount(zk, path, 0) as ours, SharedCount(zk_client_factory(), path, 0) as other:
        ours.add_listener(mine)
        other.add_listener(theirs)
        other.set_count(5)
        assert mine.wait_for([5]) == [5] and theirs.wait_for([5]) == [5]  # its own too
        zk.set(path, (9).to_bytes(4, "big"))  # a writer that is no SharedCount
        assert mine.wait_for([5, 9]) == [5, 9] and theirs.wait_for([5, 9]) == [5, 9]
        versioned = ours.get_versioned_value()
        assert ours.try_set_count(versioned, 10)
        assert not other.try_set_count(versioned, 11)  # stale: refused, nothing written
        assert theirs.wait_for([5, 9, 10]) == [5, 9, 10]
        assert other.get_count() == 10
    assert zk.get(path)[0] == (10).to_bytes(4, "big")


def test_a_change_made_while_away_is_told_once_after_the_reconnect(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, proxy: FaultProxy
) -> None:
    path = f"{zk_path}/count"
    told = Told()
    with SharedCount(zk_client_factory(hosts=proxy.hosts), path, 1) as away:
        away.add_listener(told)
        proxy.blackhole()
        zk.set(path, (2).to_bytes(4, "big"))
        proxy.drop_connections()
        proxy.heal()
        assert told.wait_for([2]) == [2]
        eventually(lambda: KazooState.CONNECTED in told.states, what="the reconnect told")
        assert told.counts == [2] and away.get_count() == 2


def test_a_count_whose_node_is_deleted_hears_it_made_again(zk: KazooClient, zk_path: str) -> None:
    """Curator's SharedCount hears nothing more once its node is deleted (its read after the
    deletion finds no node and leaves no watch); ours watches for the node to be made again."""
    path = f"{zk_path}/count"
    told = Told()
    with SharedCount(zk, path, 1) as count:
        count.add_listener(told)
        zk.delete(path)
        zk.create(path, (9).to_bytes(4, "big"))
        assert told.wait_for([9]) == [9]
        zk.set(path, (11).to_bytes(4, "big"))
        assert told.wait_for([9, 11]) == [9, 11]
        assert count.get_count() == 11


def test_a_short_count_names_the_node_and_its_bytes(zk: KazooClient, zk_path: str) -> None:
    """kazoo's ``Counter(support_curator=True)`` makes its node empty: Java's ``SharedCount``
    throws ``BufferUnderflowException`` on it, ours says what it is."""
    path = f"{zk_path}/empty"
    zk.create(path, b"", makepath=True)
    with (
        SharedCount(zk, path, 0) as count,
        pytest.raises(CorruptedDataError, match=rf'"{path}": \[\]: not a Java int'),
    ):
        count.get_count()


def test_a_shared_value_holds_bytes_as_they_are(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/value"
    with SharedValue(zk, path, b"\x00seed") as value:
        assert zk.get(path)[0] == b"\x00seed"
        assert value.try_set_value(value.get_versioned_value(), b"next")
        assert zk.get(path)[0] == value.get_value() == b"next"
        assert isinstance(value.get_versioned_value(), VersionedValue)


def test_an_atomic_long_is_eight_big_endian_bytes_and_wraps_as_java(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/atomic/long"
    counter = DistributedAtomicLong(zk, path, KazooRetry(max_tries=3))
    assert counter.get() == AtomicValue(True, 0, 0)  # no node: 0, and nothing made
    assert zk.exists(path) is None
    first = counter.increment()
    assert (first.succeeded, first.pre_value, first.post_value) == (True, 0, 1)
    assert first.stats.optimistic_tries == 1 and first.stats.promoted_lock_tries == 0
    assert zk.get(path)[0] == long_bytes(1)
    counter.force_set(2**63 - 1)
    wrapped = counter.increment()
    assert (wrapped.pre_value, wrapped.post_value) == (2**63 - 1, -(2**63))
    assert zk.get(path)[0] == bytes.fromhex("8000000000000000")
    assert counter.subtract(1).post_value == 2**63 - 1
    assert not counter.compare_and_set(0, 5).succeeded
    assert counter.compare_and_set(2**63 - 1, -1).succeeded
    assert counter.initialize(3) is False
    zk.set(path, b"")
    assert counter.get().pre_value == 0 and counter.add(7).post_value == 7
    zk.set(path, (7).to_bytes(4, "big"))
    with pytest.raises(CorruptedDataError, match=r"\[0x0, 0x0, 0x0, 0x7\]: not a Java long"):
        counter.get()


def test_an_atomic_integer_is_four_bytes_and_an_atomic_value_raw_bytes(
    zk: KazooClient, zk_path: str
) -> None:
    numbers = DistributedAtomicInteger(zk, f"{zk_path}/int", KazooRetry(max_tries=1))
    assert numbers.initialize(2**31 - 1)
    assert numbers.increment().post_value == -(2**31)
    assert zk.get(f"{zk_path}/int")[0] == bytes.fromhex("80000000")
    raw = DistributedAtomicValue(zk, f"{zk_path}/raw", KazooRetry(max_tries=1))
    assert raw.get().pre_value is None
    assert raw.initialize(b"one") and not raw.initialize(b"two")
    assert not raw.compare_and_set(b"two", b"three").succeeded
    assert raw.compare_and_set(b"one", b"three").post_value == b"three"
    assert raw.try_set(b"\x00\xff").post_value == b"\x00\xff"
    assert zk.get(f"{zk_path}/raw")[0] == b"\x00\xff"


def test_increments_through_one_client_are_combined_each_told_its_own_value(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, proxy: FaultProxy
) -> None:
    """Increments that come while a write is under way go in the next write as their sum (the
    client is 50 ms away, so they do); each is told its own value, as if made one after the
    other: every value from 0 to 19 was some increment's, once."""
    path = f"{zk_path}/counter"
    proxy.latency = 0.05
    client = zk_client_factory(hosts=proxy.hosts)
    results: list[AtomicValue[int]] = []

    def increments() -> None:
        counter = DistributedAtomicLong(client, path, KazooRetry(max_tries=1))
        results.extend(counter.increment() for _ in range(4))

    threads = [threading.Thread(target=increments) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert all(result.succeeded for result in results)
    assert sorted(result.pre_value for result in results) == list(range(20))
    assert all(result.post_value == result.pre_value + 1 for result in results)
    data, stat = zk.get(path)
    assert data == long_bytes(20) and stat.version < 19  # fewer writes than increments


def test_clients_of_one_process_take_turns_rather_than_fail(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """One try each, and no increment fails: clients of one process on one counter write in
    turn, never at one version together."""
    path = f"{zk_path}/counter"
    results: list[AtomicValue[int]] = []

    def increments(client: KazooClient) -> None:
        counter = DistributedAtomicLong(client, path, KazooRetry(max_tries=1))
        results.extend(counter.increment() for _ in range(10))

    clients = [zk_client_factory() for _ in range(3)]
    threads = [threading.Thread(target=increments, args=(c,)) for c in clients * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert [result.succeeded for result in results] == [True] * 60
    assert sorted(result.pre_value for result in results) == list(range(60))
    assert zk.get(path)[0] == long_bytes(60)


def test_when_the_optimistic_tries_fail_the_promoted_lock_is_taken(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, proxy: FaultProxy
) -> None:
    """Another writer rewrites the counter (its own bytes, a new version each time) until the
    lock is taken: the optimistic try of a client 50 ms away fails, the increment is made under
    the lock, which is released."""
    path, lock = f"{zk_path}/counter", f"{zk_path}/lock"
    zk.create(path, long_bytes(41), makepath=True)
    proxy.latency = 0.05
    promoted = PromotedToLock(lock, SOON, KazooRetry(max_tries=5, delay=0.01))
    far = zk_client_factory(hosts=proxy.hosts)
    counter = DistributedAtomicLong(far, path, KazooRetry(max_tries=1), promoted)
    done = threading.Event()

    def rewrite() -> None:
        while not done.is_set() and not children(zk, lock):
            zk.set(path, zk.get(path)[0])

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        result = counter.increment()
    finally:
        done.set()
        writer.join(SOON)
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 41, 42)
    assert result.stats.optimistic_tries == 1 and result.stats.promoted_lock_tries >= 1
    assert zk.get(path)[0] == long_bytes(42) and children(zk, lock) == []


class Increment:
    """An increment of the counter at ``path`` through ``client``, with ``fault()`` called
    once, between its read and its write (as the new value is made), on the caller's thread."""

    def __init__(self, client: KazooClient, path: str, fault: Callable[[], None]) -> None:
        self.steps = AtomicSteps(transport_of(client), path, FAST)
        self.fault: Callable[[], None] | None = fault
        self.result: list[AtomicValue[bytes | None]] = []

    def _make(self, previous: bytes | None) -> bytes:
        fault, self.fault = self.fault, None
        if fault is not None:
            fault()
        return long_bytes(int.from_bytes(previous or b"", "big", signed=True) + 1)

    def start(self) -> threading.Thread:
        steps = self.steps
        thread = threading.Thread(
            target=lambda: self.result.append(run(steps.transport, steps.update_steps(self._make)))
        )
        thread.start()
        return thread


def test_an_increment_whose_answer_is_lost_is_never_applied_twice(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, proxy: FaultProxy
) -> None:
    """The server takes the write; its answer is thrown away and the connection dropped.
    Curator's framework would send the write again (refused: the version moved on) and its loop
    apply the increment again, to 7. Here it is sent again unchanged, refused, and the node
    read: 6, at the version our write made: ours, or an identical increment of another:
    unknown, said so, and the count stays 6."""
    path = f"{zk_path}/counter"
    zk.create(path, long_bytes(5), makepath=True)
    increment = Increment(zk_client_factory(hosts=proxy.hosts), path, proxy.drop_replies)
    thread = increment.start()
    eventually(lambda: zk.get(path)[0] == long_bytes(6), what="the write taken")
    proxy.drop_connections()
    thread.join(SOON)
    (result,) = increment.result
    assert (result.succeeded, result.unknown) == (False, True)
    assert (result.pre_value, result.post_value) == (long_bytes(5), long_bytes(6))
    assert zk.get(path)[0] == long_bytes(6)


def test_an_increment_whose_write_never_reached_the_server_is_applied_once(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, proxy: FaultProxy
) -> None:
    """The write is held back and lost with its connection, while another client writes:
    sent again, it is refused, and the node holds the other's bytes at the version ours would
    have made: ours did not take, so the increment is tried again, on the new value."""
    path = f"{zk_path}/counter"
    zk.create(path, long_bytes(5), makepath=True)

    def hold_the_write_and_write_another() -> None:
        proxy.blackhole()
        zk.set(path, long_bytes(100))

    increment = Increment(
        zk_client_factory(hosts=proxy.hosts), path, hold_the_write_and_write_another
    )
    thread = increment.start()
    eventually(lambda: zk.get(path)[0] == long_bytes(100), what="the other write")
    thread.join(0.3)  # the write held back
    proxy.drop_connections()
    proxy.heal()
    thread.join(SOON)
    (result,) = increment.result
    assert result.succeeded and result.stats.optimistic_tries == 2
    assert zk.get(path)[0] == long_bytes(101)
