"""InterProcessReadWriteLock: pycurator and Java Curator 5.x share readers and exclude writers."""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable
from typing import Any

import jpype
from kazoo.client import KazooClient

from pycurator import InterProcessReadWriteLock
from pycurator.testing import ClientFactory, curator_at_least, java_acquire
from tests.support import SOON, Worker, children, eventually

from .conftest import CuratorFactory, java_class

UUID = r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-"


def java_rw(client: Any, path: str, data: bytes | None = None) -> Any:
    cls = java_class("InterProcessReadWriteLock")
    if data is None:
        return cls(client, path)
    return cls(client, path, jpype.JArray(jpype.JByte)(data))


def test_nodes_and_data_match_what_java_writes(curator: Any, zk: KazooClient, zk_path: str) -> None:
    for data in (None, b"svc-42"):
        java_path, python_path = f"{zk_path}/java-{data!r}", f"{zk_path}/python-{data!r}"
        java, python = (
            java_rw(curator, java_path, data),
            InterProcessReadWriteLock(zk, python_path, data),
        )
        for side in ("read", "write"):
            java_side = java.readLock() if side == "read" else java.writeLock()
            python_side = python.read_lock() if side == "read" else python.write_lock()
            token = "__READ__" if side == "read" else "__WRIT__"
            assert java_acquire(java_side, SOON)
            try:
                with python_side:
                    (java_name,) = children(zk, java_path)
                    (python_name,) = children(zk, python_path)
                    for name in (java_name, python_name):
                        assert re.fullmatch(UUID + token + r"\d{10}", name)
                    java_data, java_stat = zk.get(f"{java_path}/{java_name}")
                    python_data, python_stat = zk.get(f"{python_path}/{python_name}")
                    assert python_data == java_data
                    assert java_stat.ephemeralOwner and python_stat.ephemeralOwner
            finally:
                java_side.release()


def test_java_reader_admits_python_readers_and_excludes_python_writers(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    java = java_rw(curator, path)
    python = InterProcessReadWriteLock(zk, path)
    assert java_acquire(java.readLock(), SOON)
    try:
        assert python.read_lock().acquire(timeout=SOON)
        python.read_lock().release()
        assert python.write_lock().acquire(timeout=0.5) is False
    finally:
        java.readLock().release()
    assert python.write_lock().acquire(timeout=SOON)
    python.write_lock().release()


def test_python_writer_excludes_java_readers_and_writers(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    java = java_rw(curator, path)
    python = InterProcessReadWriteLock(zk, path)
    with python.write_lock():
        assert java_acquire(java.readLock(), 0.5) is False
        assert java_acquire(java.writeLock(), 0.5) is False
        assert len(children(zk, path)) == 1
    assert java_acquire(java.readLock(), SOON)
    java.readLock().release()
    assert java_acquire(java.writeLock(), SOON)
    java.writeLock().release()


def _late_reader_waits_for_the_queued_writer(
    first_reader: tuple[Callable[[], bool], Callable[[], None]],
    writer: tuple[Callable[[], bool], Callable[[], None]],
    late_reader: tuple[Callable[[], bool], Callable[[], None]],
    observer: KazooClient,
    path: str,
) -> list[str]:
    order: list[str] = []
    assert first_reader[0]()

    def run(name: str, side: tuple[Callable[[], bool], Callable[[], None]]) -> Callable[[], None]:
        def body() -> None:
            assert side[0]()
            order.append(name)
            side[1]()

        return body

    writing = Worker(run("writer", writer))
    writing.start()
    eventually(lambda: len(children(observer, path)) == 2, what="writer queued")
    reading = Worker(run("late reader", late_reader))
    reading.start()
    eventually(lambda: len(children(observer, path)) == 3, what="late reader queued")
    assert order == []
    first_reader[1]()
    writing.outcome()
    reading.outcome()
    return order


def test_a_python_writer_queued_behind_a_java_reader_holds_back_a_later_java_reader(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    first, late = java_rw(curator_factory(), path), java_rw(curator_factory(), path)
    python = InterProcessReadWriteLock(zk, path)
    order = _late_reader_waits_for_the_queued_writer(
        (lambda: java_acquire(first.readLock(), SOON), first.readLock().release),
        (lambda: python.write_lock().acquire(timeout=SOON), python.write_lock().release),
        (lambda: java_acquire(late.readLock(), SOON), late.readLock().release),
        zk,
        path,
    )
    assert order == ["writer", "late reader"]


def test_a_java_writer_queued_behind_a_python_reader_holds_back_a_later_python_reader(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    observer = zk_client_factory()
    first = InterProcessReadWriteLock(zk_client_factory(), path)
    late = InterProcessReadWriteLock(zk_client_factory(), path)
    java = java_rw(curator, path)
    order = _late_reader_waits_for_the_queued_writer(
        (lambda: first.read_lock().acquire(timeout=SOON), first.read_lock().release),
        (lambda: java_acquire(java.writeLock(), SOON), java.writeLock().release),
        (lambda: late.read_lock().acquire(timeout=SOON), late.read_lock().release),
        observer,
        path,
    )
    assert order == ["writer", "late reader"]


def test_a_python_downgrade_keeps_a_queued_java_writer_out(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    python = InterProcessReadWriteLock(zk, path)
    java = java_rw(curator, path)
    got = threading.Event()

    def java_writes() -> None:
        assert java_acquire(java.writeLock(), 60)
        got.set()
        java.writeLock().release()

    assert python.write_lock().acquire()
    assert python.read_lock().acquire(timeout=0)
    writer = Worker(java_writes)
    writer.start()
    eventually(lambda: len(children(zk, path)) == 3, what="java writer queued")
    python.write_lock().release()
    assert not got.wait(1.5)  # the downgraded read still holds the Java writer back
    assert python.write_lock().acquire(timeout=0.3) is False  # no upgrade either
    python.read_lock().release()
    assert got.wait(SOON)
    writer.outcome()
    assert children(zk, path) == []


def test_a_java_downgrade_makes_the_read_node_of_its_curator_version(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """CURATOR-621 (5.5): the write holder's read node takes its write node's sequence, so a
    writer queued before the downgrade stays behind the reader. 5.4 makes a new sequential read
    node, behind the queued writer, who then gets in while the Java holder still reads."""
    path = f"{zk_path}/rw"
    observer = zk_client_factory()
    java = java_rw(curator, path)
    python = InterProcessReadWriteLock(zk_client_factory(), path)
    held, done = threading.Event(), threading.Event()

    def python_writes() -> None:
        assert python.write_lock().acquire(timeout=60)
        held.set()
        assert done.wait(60)
        python.write_lock().release()

    assert java_acquire(java.writeLock(), SOON)
    writer = Worker(python_writes)
    writer.start()
    eventually(lambda: len(children(observer, path)) == 2, what="python writer queued")
    assert java_acquire(java.readLock(), 0)  # the write holder reads at once
    names = children(observer, path)
    java_write, python_write = sorted(int(n[-10:]) for n in names if "__WRIT__" in n)
    (read,) = [n for n in names if "__READ__" in n]
    assert re.fullmatch(UUID + r"__READ__\d{10}", read)
    java.writeLock().release()
    try:
        if curator_at_least("5.5"):
            assert int(read[-10:]) == java_write
            assert not held.wait(1.5)  # the read node sorts first: the writer stays out
            java.readLock().release()
            assert held.wait(SOON)
        else:
            assert int(read[-10:]) > python_write
            assert held.wait(SOON)  # in beside the Java reader: CURATOR-621's bug
            java.readLock().release()
    finally:
        done.set()
        writer.outcome()
    assert children(observer, path) == []


def test_mixed_random_readers_and_writers_of_both_languages(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/rw"
    state = {"readers": 0, "writers": 0, "max_readers": 0, "violations": 0, "writes": 0}
    guard = threading.Lock()
    both_in = threading.Barrier(2, timeout=SOON)

    def enter(write: bool) -> None:
        with guard:
            state["writers" if write else "readers"] += 1
            if state["writers"] > 1 or (state["writers"] and state["readers"]):
                state["violations"] += 1
            state["max_readers"] = max(state["max_readers"], state["readers"])
            if write:
                state["writes"] += 1
        threading.Event().wait(0.005)
        with guard:
            state["writers" if write else "readers"] -= 1

    def plan(seed: int) -> list[bool]:
        rng = random.Random(seed)
        return [rng.random() < 0.3 for _ in range(6)]

    def java_contender(seed: int) -> None:
        lock = java_rw(curator_factory(), path)
        for write in plan(seed):
            side = lock.writeLock() if write else lock.readLock()
            assert java_acquire(side, 60)
            try:
                enter(write)
            finally:
                side.release()

    def python_contender(seed: int) -> None:
        lock = InterProcessReadWriteLock(zk_client_factory(), path)
        for write in plan(seed):
            side = lock.write_lock() if write else lock.read_lock()
            assert side.acquire(timeout=60)
            try:
                enter(write)
            finally:
                side.release()

    def readers_together(java_side: Any, python_side: Any) -> None:
        # one moment with a Java and a Python reader inside together, whatever the random run
        assert java_acquire(java_side, SOON)
        try:
            with python_side:
                both_in.wait()
                both_in.wait()
        finally:
            java_side.release()

    workers = [Worker(lambda s=seed: java_contender(s)) for seed in range(3)]  # type: ignore[misc]
    workers += [Worker(lambda s=seed: python_contender(s)) for seed in range(3, 6)]  # type: ignore[misc]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=180)
    together = Worker(
        lambda: readers_together(
            java_rw(curator_factory(), path).readLock(),
            InterProcessReadWriteLock(zk_client_factory(), path).read_lock(),
        )
    )
    together.start()
    both_in.wait()
    assert len(children(zk_client_factory(), path)) == 2
    both_in.wait()
    together.outcome()
    assert state["violations"] == 0
    assert state["writes"] == sum(sum(plan(seed)) for seed in range(6))
    assert children(zk_client_factory(), path) == []
