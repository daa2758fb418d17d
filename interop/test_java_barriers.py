"""Curator's barriers on the wire, as the kit's Java peers make them and kazoo reads them: the
nodes, names and bytes a Python DistributedBarrier and DistributedDoubleBarrier must match, and
the peers' waits, which end with their timeout or their close(), on Curator 5.4 and 5.9."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.testing import (
    SOON,
    JavaDistributedBarrier,
    JavaDistributedDoubleBarrier,
    PeerClosedError,
    children,
    created_modes,
    eventually,
    java_local_address,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

#: A double barrier's member: Java's ``UUID.randomUUID().toString()``.
MEMBER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def in_threads(calls: list[Callable[[float], bool]]) -> list[bool]:
    """Run each call, with the timeout ``SOON``, in a thread of its own; their results, in the
    calls' order."""
    results: list[bool | None] = [None] * len(calls)

    def run(index: int) -> None:
        results[index] = calls[index](SOON)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert all(result is not None for result in results), f"calls still waiting: {results}"
    return [bool(result) for result in results]


def test_a_java_barrier_is_its_node_with_curators_default_data(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """The barrier node is PERSISTENT (container parents) holding the local address; a waiter
    with a timeout gets False while it is there, and every waiter goes once it is gone."""
    path = f"{zk_path}/barriers/gate"
    with (
        JavaDistributedBarrier(curator, path) as setter,
        JavaDistributedBarrier(curator, path) as waiter,
    ):
        setter.set_barrier()
        setter.set_barrier()  # set again: harmless
        assert zk.get(path)[0] == java_local_address()
        began = time.monotonic()
        assert waiter.wait_on_barrier(0.3) is False
        assert time.monotonic() - began >= 0.29  # Curator counts whole milliseconds
        done = threading.Event()

        def wait() -> None:
            if waiter.wait_on_barrier():
                done.set()

        thread = threading.Thread(target=wait)
        thread.start()
        assert not done.wait(0.2)
        zk.delete(path)  # anyone may remove it
        assert done.wait(SOON)
        thread.join(SOON)
        assert waiter.wait_on_barrier(0) is True
        setter.remove_barrier()  # none there: harmless
    made = created_modes(server_log, zk_path)
    assert made[path].mode == "PERSISTENT"
    assert made[f"{zk_path}/barriers"].mode == made[zk_path].mode == "CONTAINER"


def test_a_java_barrier_wait_ends_when_its_peer_closes(curator: Any, zk_path: str) -> None:
    barrier = JavaDistributedBarrier(curator, f"{zk_path}/gate")
    barrier.set_barrier()
    ended: list[BaseException] = []

    def wait() -> None:
        try:
            barrier.wait_on_barrier()
        except PeerClosedError as exc:
            ended.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    eventually(lambda: barrier.calls_in_java == 1, what="the wait in Java")
    barrier.close()
    thread.join(SOON)
    assert not thread.is_alive() and len(ended) == 1
    with pytest.raises(PeerClosedError, match="closed"):
        barrier.wait_on_barrier(0)
    barrier.close()  # again: harmless


@pytest.fixture
def members(curator_factory: Any) -> Iterator[Callable[[str, int], JavaDistributedDoubleBarrier]]:
    """Makes double barrier members, each on a Curator client of its own."""
    made: list[JavaDistributedDoubleBarrier] = []

    def make(path: str, qty: int) -> JavaDistributedDoubleBarrier:
        made.append(JavaDistributedDoubleBarrier(curator_factory(), path, qty))
        return made[-1]

    yield make
    for member in made:
        member.close()


def test_a_java_double_barrier_member_is_an_ephemeral_uuid_and_the_last_makes_ready(
    zk: KazooClient,
    zk_path: str,
    server_log: Path,
    members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    """Members are ``path/<UUID>``, EPHEMERAL, holding the local address; the one that finds
    ``member_qty`` children makes ``path/ready`` (PERSISTENT, the local address); all leave
    together, and the last to leave deletes ``ready``."""
    path = f"{zk_path}/double"
    trio = [members(path, 3) for _ in range(3)]
    assert len({member.our_path for member in trio}) == 3
    for member in trio:
        assert member.our_path.startswith(f"{path}/")
        assert MEMBER.fullmatch(member.our_path.rsplit("/", 1)[1])
    assert in_threads([m.enter for m in trio]) == [True] * 3
    names = children(zk, path)
    assert sorted(names) == sorted([m.our_path.rsplit("/", 1)[1] for m in trio] + ["ready"])
    for member in trio:
        data, stat = zk.get(member.our_path)
        assert data == java_local_address()
        assert stat.ephemeralOwner == session_of(member.curator)[0]
    assert zk.get(f"{path}/ready")[0] == java_local_address()
    assert zk.exists(f"{path}/ready").ephemeralOwner == 0
    assert in_threads([m.leave for m in trio]) == [True] * 3
    assert children(zk, path) == []
    made = created_modes(server_log, zk_path)
    assert made[f"{path}/ready"].mode == "PERSISTENT"
    assert made[path].mode == "CONTAINER"
    assert {made[m.our_path].mode for m in trio} == {"EPHEMERAL"}


def test_a_java_double_barrier_enter_that_times_out_keeps_its_member_node(
    zk: KazooClient,
    zk_path: str,
    members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    """Curator keeps the node of an ``enter`` that timed out: it still counts, so the next
    member completes the barrier with it (the peer's close() deletes it).

    In ``leave`` the lowest member waits for the highest to go; a member above it deletes its
    node, waits on the lowest, and returns at its first wake-up, even a stale one (its own watch
    on ``ready``, told late): so the member whose leave must wait here is the lowest."""
    path = f"{zk_path}/double"
    late, early = sorted((members(path, 2), members(path, 2)), key=lambda m: m.our_path)
    assert early.enter(0.3) is False
    assert children(zk, path) == [early.our_path.rsplit("/", 1)[1]]
    assert late.enter(SOON) is True  # the early member's node counted
    assert zk.exists(f"{path}/ready") is not None
    late_leave = threading.Thread(target=lambda: late.leave(SOON))
    late_leave.start()
    eventually(lambda: late.calls_in_java == 1, what="the late member's leave waits")
    late_leave.join(0.3)
    assert late_leave.is_alive()  # it waits for the early member's node
    early.close()  # its node goes: the late member's leave completes
    late_leave.join(SOON)
    assert not late_leave.is_alive()
    eventually(lambda: children(zk, path) == [], what="the barrier empty")


def test_curators_leave_lets_a_member_above_the_lowest_out_at_its_first_wake_up(
    zk: KazooClient,
    zk_path: str,
    members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    """Curator's ``leave``, as its ``enter`` (GH-1290), takes any wake-up for the one it waits
    for: a member above the lowest deletes its node, waits on the lowest, and once woken finds
    one child left and returns True, though the lowest has not left. A change to the lowest's
    data is such a wake-up. (pycurator's double barrier must not do this.)"""
    path = f"{zk_path}/double"
    low, high = sorted((members(path, 2), members(path, 2)), key=lambda m: m.our_path)
    assert in_threads([low.enter, high.enter]) == [True, True]
    results: list[bool] = []
    leaving = threading.Thread(target=lambda: results.append(high.leave(SOON)))
    leaving.start()
    eventually(lambda: zk.exists(high.our_path) is None, what="the high member's node deleted")
    zk.set(low.our_path, b"a change, not a leave")
    leaving.join(SOON)
    assert results == [True]
    assert zk.exists(low.our_path) is not None  # the lowest is still inside
    assert low.leave(SOON) is True
    assert children(zk, path) == []


def test_a_java_double_barrier_wait_ends_when_its_peer_closes(
    zk: KazooClient,
    zk_path: str,
    members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    path = f"{zk_path}/double"
    lonely = members(path, 2)
    ended: list[BaseException] = []

    def enter() -> None:
        try:
            lonely.enter()
        except PeerClosedError as exc:
            ended.append(exc)

    thread = threading.Thread(target=enter)
    thread.start()
    eventually(lambda: children(zk, path) != [], what="the member entered")
    eventually(lambda: lonely.calls_in_java == 1, what="its enter waits")
    lonely.close()
    thread.join(SOON)
    assert not thread.is_alive() and len(ended) == 1
    assert children(zk, path) == []  # close() deleted its node
