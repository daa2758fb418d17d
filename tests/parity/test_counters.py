"""Shared counts, atomic values and barriers behave the same from threads and from asyncio
tasks, on the test ZooKeeper and on the explorer's in-memory one."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import PromotedToLock

from ..support import SOON
from .fronts import Front
from .observe import Calls, nodes

FAST = KazooRetry(max_tries=-1, delay=0.001, backoff=1, max_jitter=0.5)


class Counts(Calls):
    """A shared count's listener that notes each count it is told."""

    def count_has_changed(self, _shared: Any, count: int) -> None:
        self.add(count)


def test_a_count_set_by_one_is_told_to_every_listener(front: Front, zk_path: str) -> None:
    path = f"{zk_path}/count"
    told_a, told_b = Counts(), Counts()
    a = front.actor(front.make("SharedCount", front.client(), path, 3), "a")
    b = front.actor(front.make("SharedCount", front.client(), path, 9), "b")
    a.do("add_listener", told_a)
    b.do("add_listener", told_b)
    a.do("start")
    b.do("start")
    assert b.do("get_count") == 3  # a made the node: b's seed changed nothing
    b.do("set_count", -1)
    assert told_a.wait_for(1) == [-1] and told_b.wait_for(1) == [-1]
    versioned = a.do("get_versioned_value")
    assert a.do("try_set_count", versioned, 4) is True
    assert b.do("try_set_count", versioned, 5) is False
    assert told_b.wait_for(2) == [-1, 4]
    a.do("close")
    b.do("close")
    observer = front.client()
    assert observer.get(path)[0] == (4).to_bytes(4, "big")


def _increments(counter: Any, front: Front, name: str, times: int) -> Any:
    actor = front.actor(counter, name)
    return [actor.start("increment") for _ in range(times)]


def test_increments_from_clients_of_their_own_add_up_each_told_its_own_value(
    front: Front, zk_path: str
) -> None:
    path = f"{zk_path}/counter"
    pending = [
        call
        for n in range(3)
        for call in _increments(
            front.make("DistributedAtomicLong", front.client(), path, FAST), front, f"p{n}", 10
        )
    ]
    results = [call.result() for call in pending]
    assert all(result.succeeded for result in results)
    assert sorted(result.pre_value for result in results) == list(range(30))
    observer = front.client()
    assert observer.get(path)[0] == (30).to_bytes(8, "big")


def test_promoted_increments_add_up_and_leave_no_lock_node(front: Front, zk_path: str) -> None:
    path, lock = f"{zk_path}/counter", f"{zk_path}/lock"
    promoted = PromotedToLock(lock, SOON, FAST)
    once = KazooRetry(max_tries=1)
    pending = [
        call
        for n in range(3)
        for call in _increments(
            front.make("DistributedAtomicLong", front.client(), path, once, promoted),
            front,
            f"p{n}",
            5,
        )
    ]
    results = [call.result() for call in pending]
    assert all(result.succeeded for result in results)
    observer: KazooClient = front.client()
    assert observer.get(path)[0] == (15).to_bytes(8, "big")
    assert nodes(observer, [lock]) == []


def test_double_barrier_members_enter_and_leave_together(front: Front, zk_path: str) -> None:
    path = f"{zk_path}/double"
    members = [
        front.actor(front.make("DistributedDoubleBarrier", front.client(), path, 3), f"m{n}")
        for n in range(3)
    ]
    first = members[0].start("enter", SOON)
    assert members[1].do("enter", 0.2) is False  # two of three in: nobody passes
    assert not first.done()
    entering = [member.start("enter", SOON) for member in members[1:]]
    assert first.result() is True and all(call.result() for call in entering)
    observer = front.client()
    assert len(nodes(observer, [path])) == 4  # three members and ready
    leaving = [member.start("leave", SOON) for member in members]
    assert all(call.result() for call in leaving)
    assert nodes(observer, [path]) == []


def test_a_barrier_holds_its_waiters_until_it_is_removed(front: Front, zk_path: str) -> None:
    path = f"{zk_path}/gate"
    setter = front.actor(front.make("DistributedBarrier", front.client(), path), "setter")
    waiter = front.actor(front.make("DistributedBarrier", front.client(), path), "waiter")
    setter.do("set_barrier")
    assert waiter.do("wait_on_barrier", 0.2) is False
    waiting = waiter.start("wait_on_barrier", SOON)
    setter.do("remove_barrier")
    assert waiting.result() is True
