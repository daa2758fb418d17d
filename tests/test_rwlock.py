"""InterProcessReadWriteLock against a real ZooKeeper server, Python alone."""

from __future__ import annotations

import re
import threading

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessReadWriteLock
from pycurator._client.transport import default_node_data
from pycurator.testing import ClientFactory, expire_kazoo_session

from .support import SOON, Worker, children, eventually

UUID = r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-"


def test_node_data_names_the_nodes_data_as_in_every_other_recipe(
    zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessReadWriteLock(zk, f"{zk_path}/rw", node_data=b"service-a")
    with lock.write_lock() as write, lock.read_lock() as read:
        assert write.lock_path is not None and read.lock_path is not None
        assert zk.get(write.lock_path)[0] == b"service-a"
        assert zk.get(read.lock_path)[0] == b"service-a"


def test_lock_data_still_works_and_warns_that_it_is_node_data_now(
    zk: KazooClient, zk_path: str
) -> None:
    with pytest.warns(DeprecationWarning, match="node_data"):
        lock = InterProcessReadWriteLock(zk, f"{zk_path}/rw", lock_data=b"old-name")
    with lock.read_lock() as read:
        assert read.lock_path is not None
        assert zk.get(read.lock_path)[0] == b"old-name"
    with pytest.raises(TypeError, match="not both"):
        InterProcessReadWriteLock(zk, f"{zk_path}/rw", node_data=b"a", lock_data=b"b")


def test_sides_are_the_same_objects_on_every_call(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessReadWriteLock(zk, f"{zk_path}/rw")
    assert lock.read_lock() is lock.read_lock()
    assert lock.write_lock() is lock.write_lock()


def test_nodes_are_sibling_read_and_write_nodes_with_the_lock_data(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    plain = InterProcessReadWriteLock(zk, path)
    tagged = InterProcessReadWriteLock(zk, path, b"reader-7")
    with plain.read_lock(), tagged.read_lock():
        names = children(zk, path)
        assert len(names) == 2
        assert all(re.fullmatch(UUID + r"__READ__\d{10}", name) for name in names)
        data = sorted(zk.get(f"{path}/{name}")[0] for name in names)
        assert data == sorted([default_node_data(), b"reader-7"])
    with plain.write_lock():
        (name,) = children(zk, path)
        assert re.fullmatch(UUID + r"__WRIT__\d{10}", name)
    assert children(zk, path) == []


def test_readers_share_and_a_writer_waits_for_them(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    first = InterProcessReadWriteLock(zk_client_factory(), path)
    second = InterProcessReadWriteLock(zk_client_factory(), path)
    writer = InterProcessReadWriteLock(zk_client_factory(), path)
    with first.read_lock():
        assert second.read_lock().acquire(timeout=SOON)
        assert writer.write_lock().acquire(timeout=0.3) is False
        second.read_lock().release()
        assert writer.write_lock().acquire(timeout=0.3) is False
    assert writer.write_lock().acquire(timeout=SOON)
    try:
        assert first.read_lock().acquire(timeout=0.3) is False
        assert first.write_lock().acquire(timeout=0.3) is False
    finally:
        writer.write_lock().release()


def test_a_reader_arriving_after_a_queued_writer_waits_for_it(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    observer = zk_client_factory()
    reader = InterProcessReadWriteLock(zk_client_factory(), path)
    writer = InterProcessReadWriteLock(zk_client_factory(), path)
    late_reader = InterProcessReadWriteLock(zk_client_factory(), path)
    order: list[str] = []
    assert reader.read_lock().acquire()

    def write() -> None:
        assert writer.write_lock().acquire(timeout=SOON)
        order.append("writer")
        writer.write_lock().release()

    def read_late() -> None:
        assert late_reader.read_lock().acquire(timeout=SOON)
        order.append("late reader")
        late_reader.read_lock().release()

    writing = Worker(write)
    writing.start()
    eventually(lambda: len(children(observer, path)) == 2, what="writer queued")
    assert late_reader.read_lock().acquire(timeout=0.3) is False
    reading = Worker(read_late)
    reading.start()
    eventually(lambda: len(children(observer, path)) == 3, what="late reader queued")
    reader.read_lock().release()
    writing.outcome()
    reading.outcome()
    assert order == ["writer", "late reader"]


def test_the_writer_may_downgrade_and_a_queued_writer_stays_out(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    observer = zk_client_factory()
    lock = InterProcessReadWriteLock(zk_client_factory(), path)
    other = InterProcessReadWriteLock(zk_client_factory(), path)
    assert lock.write_lock().acquire()
    write_node = lock.write_lock().lock_path
    assert write_node is not None
    assert lock.read_lock().acquire(timeout=0)  # at once, for the write holder's thread
    read_node = lock.read_lock().lock_path
    assert read_node is not None
    # CURATOR-621: the read node carries the write node's sequence and is not sequential
    assert read_node.endswith("__READ__" + write_node.rsplit("__WRIT__", 1)[1])
    assert observer.exists(read_node) is not None
    got = threading.Event()

    def write_then_release() -> None:
        assert other.write_lock().acquire(timeout=60)
        got.set()
        other.write_lock().release()

    queued = Worker(write_then_release)
    queued.start()
    eventually(lambda: len(children(observer, path)) == 3, what="second writer queued")
    lock.write_lock().release()  # downgraded: still reading
    assert not got.wait(1.0)
    assert lock.read_lock().is_owned_by_current_thread()
    lock.read_lock().release()
    assert got.wait(SOON)
    queued.outcome()
    assert children(observer, path) == []


def test_a_reader_never_gets_the_write_lock(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessReadWriteLock(zk, f"{zk_path}/rw")
    with lock.read_lock():
        assert lock.write_lock().acquire(timeout=0.5) is False
        assert len(children(zk, f"{zk_path}/rw")) == 1


def test_each_side_is_reentrant_and_lists_its_own_participants(
    zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessReadWriteLock(zk, f"{zk_path}/rw")
    with lock.write_lock(), lock.write_lock(), lock.read_lock(), lock.read_lock():
        assert len(lock.write_lock().participant_nodes()) == 1
        assert len(lock.read_lock().participant_nodes()) == 1
        assert lock.write_lock().participant_nodes()[0] == lock.write_lock().lock_path
        assert lock.read_lock().participant_nodes()[0] == lock.read_lock().lock_path
    assert not lock.write_lock().is_acquired_in_this_process()
    assert not lock.read_lock().is_acquired_in_this_process()


def test_a_holder_whose_session_expires_is_told(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    lock = InterProcessReadWriteLock(client, f"{zk_path}/rw")
    reasons: list[str] = []
    lock.read_lock().on_lost(lambda side, reason: reasons.append(reason))
    with lock.read_lock():
        assert lock.read_lock().is_held()
        expire_kazoo_session(client)
        assert lock.read_lock().lost_event.wait(SOON)
        assert not lock.read_lock().is_held()
    eventually(lambda: reasons != [], what="on_lost called")


def test_mixed_readers_and_writers_keep_the_invariants(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    state = {"readers": 0, "writers": 0, "max_readers": 0, "violations": 0}
    guard = threading.Lock()

    def contend(lock: InterProcessReadWriteLock, writes: list[bool]) -> None:
        for write in writes:
            side = lock.write_lock() if write else lock.read_lock()
            assert side.acquire(timeout=60)
            try:
                with guard:
                    state["writers" if write else "readers"] += 1
                    if state["writers"] > 1 or (state["writers"] and state["readers"]):
                        state["violations"] += 1
                    state["max_readers"] = max(state["max_readers"], state["readers"])
                threading.Event().wait(0.01)
                with guard:
                    state["writers" if write else "readers"] -= 1
            finally:
                side.release()

    plans = [[False, False, True, False], [False, True, False, False], [False] * 4, [False] * 4]
    clients = [zk_client_factory() for _ in range(2)]
    workers = [
        Worker(lambda p=plan, c=clients[i % 2]: contend(InterProcessReadWriteLock(c, path), p))  # type: ignore[misc]
        for i, plan in enumerate(plans)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=120)
    assert state["violations"] == 0
    assert children(clients[0], path) == []
