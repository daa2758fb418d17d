"""Barriers on a real ZooKeeper: Curator's nodes and bytes, members that enter and leave
together, nobody through before ``member_qty`` have entered (whatever wakes them), and nothing
left behind by a wait that gives up."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from pycurator import DistributedBarrier, DistributedDoubleBarrier
from pycurator._client.transport import default_node_data
from pycurator.testing import FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, ClientFactory, children, eventually

#: A member's name: Java's ``UUID.randomUUID().toString()``.
MEMBER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def in_threads(calls: list[Callable[[], bool]]) -> list[bool]:
    """Run each call in a thread of its own; their results, in order."""
    results: list[bool | None] = [None] * len(calls)

    def run(index: int) -> None:
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert None not in results, f"calls still waiting: {results}"
    return [bool(result) for result in results]


def test_a_barrier_is_its_node_holding_curators_default_data(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/barriers/gate"
    barrier = DistributedBarrier(zk, path)
    barrier.set_barrier()
    barrier.set_barrier()  # again: harmless
    data, stat = zk.get(path)
    assert data == default_node_data() and stat.ephemeralOwner == 0
    began = time.monotonic()
    assert barrier.wait_on_barrier(0.3) is False
    assert time.monotonic() - began >= 0.3
    threading.Timer(0.2, lambda: zk.delete(path)).start()  # anyone may remove it
    assert barrier.wait_on_barrier(SOON) is True
    assert barrier.wait_on_barrier(0) is True
    barrier.remove_barrier()  # gone already: harmless


def test_members_enter_and_leave_together_on_curators_nodes(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/double"
    trio = [DistributedDoubleBarrier(zk_client_factory(), path, 3) for _ in range(3)]
    assert len({member.our_path for member in trio}) == 3
    assert all(MEMBER.fullmatch(member.our_path.rsplit("/", 1)[1]) for member in trio)
    assert in_threads([lambda m=m: m.enter(SOON) for m in trio]) == [True] * 3  # type: ignore[misc]
    assert sorted(zk.get_children(path)) == sorted(
        [m.our_path.rsplit("/", 1)[1] for m in trio] + ["ready"]
    )
    for member in trio:
        data, stat = zk.get(member.our_path)
        assert data == default_node_data() and stat.ephemeralOwner != 0
    assert zk.get(f"{path}/ready")[0] == default_node_data()
    assert in_threads([lambda m=m: m.leave(SOON) for m in trio]) == [True] * 3  # type: ignore[misc]
    assert children(zk, path) == []  # (a container: it may be reaped by now)


def test_nobody_passes_before_enough_have_entered_and_a_timeout_leaves_nothing(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/double"
    early = DistributedDoubleBarrier(zk_client_factory(), path, 2)
    assert early.enter(0.3) is False
    assert children(zk, path) == []  # Curator keeps the member's node; ours is deleted
    waiting = DistributedDoubleBarrier(zk_client_factory(), path, 2)
    entered: list[bool] = []
    thread = threading.Thread(target=lambda: entered.append(waiting.enter(SOON)))
    thread.start()
    eventually(lambda: len(children(zk, path)) == 1, what="the first member in")
    thread.join(0.3)
    assert entered == []
    late = DistributedDoubleBarrier(zk_client_factory(), path, 2)
    assert late.enter(SOON) is True
    thread.join(SOON)
    assert entered == [True]
    assert in_threads([lambda: waiting.leave(SOON), lambda: late.leave(SOON)]) == [True, True]


def test_a_reconnect_lets_no_member_through_early(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, zk_server: ZooKeeperTarget
) -> None:
    """Curator's GH-1290: a SyncConnected event woke a waiting member and let it through."""
    path = f"{zk_path}/double"
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        member = DistributedDoubleBarrier(zk_client_factory(hosts=proxy.hosts), path, 2)
        entered: list[bool] = []
        thread = threading.Thread(target=lambda: entered.append(member.enter(SOON)))
        thread.start()
        eventually(lambda: len(children(zk, path)) == 1, what="the member in")
        for _ in range(3):
            proxy.drop_connections()
            thread.join(0.3)
        assert entered == []
        assert DistributedDoubleBarrier(zk, path, 2).enter(SOON) is True
        thread.join(SOON)
        assert entered == [True]


def test_an_enter_or_a_leave_out_of_turn_is_refused(zk: KazooClient, zk_path: str) -> None:
    member = DistributedDoubleBarrier(zk, f"{zk_path}/double", 1)
    with pytest.raises(RuntimeError, match="not entered"):
        member.leave(0)
    assert member.enter(SOON) is True
    with pytest.raises(RuntimeError, match="entered already"):
        member.enter(0)
    assert member.leave(SOON) is True
    assert children(zk, f"{zk_path}/double") == []


def test_a_leave_waits_until_every_member_has_left_whatever_wakes_it(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """A member above the lowest deletes its node and waits for the lowest: a change to the
    lowest's data wakes it, and it waits on (Curator's returns, the lowest still in)."""
    path = f"{zk_path}/double"
    low, high = sorted(
        (DistributedDoubleBarrier(zk_client_factory(), path, 2) for _ in range(2)),
        key=lambda member: member.our_path,
    )
    assert in_threads([lambda: low.enter(SOON), lambda: high.enter(SOON)]) == [True, True]
    left: list[bool] = []
    leaving = threading.Thread(target=lambda: left.append(high.leave(SOON)))
    leaving.start()
    eventually(lambda: zk.exists(high.our_path) is None, what="the high member's node deleted")
    zk.set(low.our_path, b"a change, not a leave")
    leaving.join(0.3)
    assert left == []
    assert low.leave(SOON) is True
    leaving.join(SOON)
    assert left == [True] and children(zk, path) == []
