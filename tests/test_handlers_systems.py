"""The other Java systems' recipes (ZooKeeper's own, menagerie's, ZkLocker's) under each of
kazoo's handlers (threading, gevent and eventlet, unpatched) and the ``FastThreadingHandler``,
as ``tests/test_handlers.py`` runs Curator's: units of one handler (threads, greenlets, green
threads) exclude each other, re-enter per unit, and a leader is elected among them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import LockNotOwnedError
from pycurator.menagerie import ReentrantZkLock, ReentrantZkReadWriteLock, ZkSemaphore
from pycurator.zklocker import ZkLocker
from pycurator.zkrecipes import LeaderElection, WriteLock

from .support import SOON, children
from .test_handlers import Env, env

__all__ = ["env"]  # the fixture, under every handler

LOCKS: dict[str, Callable[[KazooClient, str], Any]] = {
    "zookeeper-write-lock": WriteLock,
    "menagerie-lock": ReentrantZkLock,
    "menagerie-write-lock": lambda client, path: ReentrantZkReadWriteLock(
        client, path
    ).write_lock(),
    "zklocker": lambda client, path: ZkLocker(client, path, "key"),
}


@pytest.mark.parametrize("make", LOCKS.values(), ids=list(LOCKS))
def test_units_sharing_one_lock_exclude_each_other_and_reenter(
    env: Env, zk_path: str, make: Callable[[KazooClient, str], Any]
) -> None:
    lock = make(env.client, zk_path)
    inside: list[int] = []
    most = [0]

    def contend(me: int) -> None:
        for _ in range(3):
            assert lock.acquire(SOON)
            assert lock.acquire(0)  # re-entry by the same unit: no wait
            inside.append(me)
            most[0] = max(most[0], len(inside))
            env.handler.sleep_func(0.01)  # lets the other units run while this one is inside
            inside.remove(me)
            lock.release()
            lock.release()
            env.handler.sleep_func(0.005)

    units = [env.spawn(functools.partial(contend, me)) for me in range(3)]
    for unit in units:
        unit.outcome()
    assert most[0] == 1
    assert not lock.is_acquired_in_this_process()
    with pytest.raises(LockNotOwnedError):
        lock.release()


@pytest.mark.parametrize("make", LOCKS.values(), ids=list(LOCKS))
def test_a_timed_acquire_by_another_unit_returns_false_and_leaves_no_node(
    env: Env, zk_path: str, make: Callable[[KazooClient, str], Any]
) -> None:
    lock = make(env.client, zk_path)
    assert lock.acquire(SOON)
    before = children(env.client, zk_path)
    assert env.spawn(lambda: lock.acquire(0.3)).outcome() is False
    assert children(env.client, zk_path) == before
    lock.release()
    assert env.spawn(lambda: lock.acquire(SOON)).outcome() is True


def test_menagerie_permits_are_counted_across_units(env: Env, zk_path: str) -> None:
    semaphore = ZkSemaphore(env.client, zk_path, 2)
    first, second = (env.spawn(lambda: semaphore.acquire(SOON)).outcome() for _ in range(2))
    assert first is not None and second is not None
    assert env.spawn(lambda: semaphore.acquire(0.2)).outcome() is None
    waiter = env.spawn(lambda: semaphore.acquire(SOON))
    env.eventually(lambda: len(children(env.client, zk_path)) == 3, "the waiter queued")
    first.close()
    third = waiter.outcome()
    assert third is not None
    second.close()
    third.close()
    assert children(env.client, zk_path) == []


def test_one_leader_among_units_and_the_next_on_close(env: Env, zk_path: str) -> None:
    elections = [LeaderElection(env.new_client(), zk_path, f"host-{n}") for n in range(3)]
    elections[0].start()
    try:
        assert env.spawn(lambda: elections[0].wait(SOON)).outcome() is True
        for election in elections[1:]:
            election.start()
        env.eventually(lambda: len(children(env.client, zk_path)) == 3, "all offers made")
        assert [e.has_leadership() for e in elections] == [True, False, False]
        assert env.spawn(elections[1].leader).outcome() == "host-0"
        # the two later offers raced: the one with the lower sequence is next in line
        following, last = sorted(elections[1:], key=lambda e: str(e.our_path))
        elections[0].close()
        assert env.spawn(lambda: following.wait(SOON)).outcome() is True
        assert env.spawn(last.leader).outcome() == following.host_name
        assert not last.has_leadership()
    finally:
        for election in elections[1:]:
            election.close()
    assert children(env.client, zk_path) == []
