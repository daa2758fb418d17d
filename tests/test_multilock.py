"""InterProcessMultiLock against a real ZooKeeper server, Python alone."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    LockNotOwnedError,
    LockReleaseError,
    LockTimeout,
    PyCuratorError,
)
from pycurator.testing import ClientFactory

from .support import SOON, Worker, children


def test_takes_every_path_and_releases_every_path(zk: KazooClient, zk_path: str) -> None:
    paths = [f"{zk_path}/a", f"{zk_path}/b", f"{zk_path}/c"]
    lock = InterProcessMultiLock(zk, paths)
    with lock:
        assert lock.is_acquired_in_this_process()
        assert [len(children(zk, path)) for path in paths] == [1, 1, 1]
    assert not lock.is_acquired_in_this_process()
    assert [children(zk, path) for path in paths] == [[], [], []]


def test_one_held_path_makes_it_time_out_holding_none(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    paths = [f"{zk_path}/a", f"{zk_path}/b", f"{zk_path}/c"]
    observer = zk_client_factory()
    blocker = InterProcessMutex(zk_client_factory(), paths[2])
    lock = InterProcessMultiLock(zk_client_factory(), paths)
    with blocker:
        assert lock.acquire(timeout=0.5) is False
        assert not any(member.is_acquired_in_this_process() for member in lock.locks)
        assert [len(children(observer, path)) for path in paths] == [0, 0, 1]
    assert lock.acquire(timeout=SOON)
    lock.release()


def test_takes_any_pycurator_locks_and_nested_multi_locks(zk: KazooClient, zk_path: str) -> None:
    rw = InterProcessReadWriteLock(zk, f"{zk_path}/rw")
    inner = InterProcessMultiLock(zk, [f"{zk_path}/x", f"{zk_path}/y"])
    outer = InterProcessMultiLock([rw.write_lock(), InterProcessMutex(zk, f"{zk_path}/m"), inner])
    with outer:
        assert inner.is_acquired_in_this_process()
        assert rw.write_lock().is_owned_by_current_thread()
        assert outer.is_held()
        outer.check()
    assert not inner.is_acquired_in_this_process()
    assert not outer.is_held()


def test_a_failed_release_still_releases_the_others_and_reports_it(
    zk: KazooClient, zk_path: str
) -> None:
    first, second, third = (InterProcessMutex(zk, f"{zk_path}/{n}") for n in "abc")
    lock = InterProcessMultiLock([first, second, third])
    assert lock.acquire()
    second.release()  # behind the multi-lock's back: its own release of it must fail
    with pytest.raises(LockReleaseError) as info:
        lock.release()
    assert isinstance(info.value, PyCuratorError)
    assert [type(error) for error in info.value.exceptions] == [LockNotOwnedError]
    assert not first.is_acquired_in_this_process()
    assert not third.is_acquired_in_this_process()
    assert [children(zk, f"{zk_path}/{n}") for n in "abc"] == [[], [], []]


def test_every_failure_is_reported(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMultiLock(zk, [f"{zk_path}/a", f"{zk_path}/b"])
    assert lock.acquire()
    other_thread = Worker(lock.release)  # holds nothing: every member fails
    other_thread.start()
    with pytest.raises(LockReleaseError, match="2 of 2") as info:
        other_thread.outcome()
    assert len(info.value.exceptions) == 2
    lock.release()


def test_opposite_orders_resolve_by_timeout_without_leaving_nodes(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = f"{zk_path}/a", f"{zk_path}/b"
    observer = zk_client_factory()
    barrier = threading.Barrier(2, timeout=SOON)

    def contend(first_path: str, second_path: str) -> bool:
        client = zk_client_factory()
        first = InterProcessMutex(client, first_path)
        lock = InterProcessMultiLock([first, InterProcessMutex(client, second_path)])
        assert first.acquire()  # each side holds its first lock before the other tries
        try:
            barrier.wait()
            acquired = lock.acquire(timeout=1.0)
            if acquired:
                lock.release()
            return acquired
        finally:
            first.release()

    forward, backward = Worker(lambda: contend(a, b)), Worker(lambda: contend(b, a))
    forward.start()
    backward.start()
    outcomes = (forward.outcome(), backward.outcome())
    # the deadlock ends by a timeout; the side that times out first releases its first lock,
    # and on a loaded machine the other may still be inside its own second and get both
    assert False in outcomes, outcomes
    assert children(observer, a) == children(observer, b) == []


def test_bad_arguments_are_refused(zk: KazooClient, zk_path: str) -> None:
    with pytest.raises(ValueError, match="must start with /"):
        InterProcessMultiLock(zk, [f"{zk_path}/a", "relative"])
    with pytest.raises(TypeError, match="sequence of paths"):
        InterProcessMultiLock(zk, f"{zk_path}/a")
    with pytest.raises(ValueError, match="at least one lock"):
        InterProcessMultiLock([])
    with pytest.raises(TypeError, match="not a lock"):
        InterProcessMultiLock(["/a"])
    assert zk.exists(zk_path) is None


def test_hold_with_a_timeout_raises_lock_timeout_naming_the_paths(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    paths = [f"{zk_path}/a", f"{zk_path}/b"]
    blocker = InterProcessMutex(zk_client_factory(), paths[1])
    lock = InterProcessMultiLock(zk_client_factory(), paths)
    with blocker, pytest.raises(LockTimeout, match=f"{paths[0]}, {paths[1]}"), lock.hold(0.3):
        pytest.fail("entered a multi-lock with a member held elsewhere")
    with lock.hold(timeout=SOON):
        assert lock.is_acquired_in_this_process()
