"""Barriers: pycurator and Java Curator 5.x members of one barrier, both ways, on Curator 5.4
and 5.9 alike: the same nodes and bytes, a barrier set by one side holding the other's waiters,
and a double barrier whose Java and Python members enter and leave together."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import DistributedBarrier, DistributedDoubleBarrier
from pycurator.testing import (
    SOON,
    ClientFactory,
    JavaDistributedBarrier,
    JavaDistributedDoubleBarrier,
    children,
    eventually,
    java_local_address,
)

from .conftest import CuratorFactory

pytestmark = pytest.mark.usefixtures("no_orphans")

#: A double barrier's member: Java's ``UUID.randomUUID().toString()``.
MEMBER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def in_threads(calls: list[Callable[[], bool]]) -> list[bool]:
    """Run each call in a thread of its own, all at once; their results, in order."""
    results: list[bool | None] = [None] * len(calls)

    def run(index: int) -> None:
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * SOON)
    assert None not in results, f"calls still waiting: {results}"
    return [bool(result) for result in results]


def test_a_barrier_set_by_either_side_holds_the_others_waiters(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/gate"
    java = JavaDistributedBarrier(curator, path)
    python = DistributedBarrier(zk, path)
    java.set_barrier()
    assert zk.get(path)[0] == java_local_address()
    assert python.wait_on_barrier(0.2) is False
    waiting = threading.Thread(target=lambda: python.wait_on_barrier(SOON))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()
    java.remove_barrier()
    waiting.join(SOON)
    assert not waiting.is_alive()
    python.set_barrier()
    assert zk.get(path)[0] == java_local_address()  # the same bytes as Java's
    assert java.wait_on_barrier(0.2) is False
    threading.Timer(0.2, python.remove_barrier).start()
    assert java.wait_on_barrier(SOON) is True


@pytest.fixture
def java_members(
    curator_factory: CuratorFactory,
) -> Iterator[Callable[[str, int], JavaDistributedDoubleBarrier]]:
    """Makes Java double barrier members, each on a Curator client of its own."""
    made: list[JavaDistributedDoubleBarrier] = []

    def make(path: str, qty: int) -> JavaDistributedDoubleBarrier:
        made.append(JavaDistributedDoubleBarrier(curator_factory(), path, qty))
        return made[-1]

    yield make
    for member in made:
        member.close()


def test_java_and_python_members_enter_and_leave_together(
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    zk_path: str,
    java_members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    """Two Java and two Python members of a barrier of 4: nobody passes while 3 are in; then
    all pass, on the same nodes (members ``path/<UUID>`` holding the local address, ``ready``
    made by whichever came last), and all leave together."""
    path = f"{zk_path}/double"
    javas = [java_members(path, 4) for _ in range(2)]
    pythons = [DistributedDoubleBarrier(zk_client_factory(), path, 4) for _ in range(2)]
    early = in_threads([lambda: javas[0].enter(0.3), lambda: pythons[0].enter(0.3)])
    assert early == [False, False]  # two of four: nobody passes (and Python's left no node)
    assert [name for name in children(zk, path)] == [javas[0].our_path.rsplit("/", 1)[1]]
    javas[0].close()  # Curator kept its node after its timeout: gone with the peer
    javas[0] = java_members(path, 4)
    entering = [m.enter for m in javas] + [m.enter for m in pythons]
    assert in_threads([lambda enter=enter: enter(SOON) for enter in entering]) == [True] * 4  # type: ignore[misc]
    names = children(zk, path)
    members = [name for name in names if name != "ready"]
    assert "ready" in names and len(members) == 4
    assert all(MEMBER.fullmatch(name) for name in members)
    for name in members:
        assert zk.get(f"{path}/{name}")[0] == java_local_address()
    assert zk.get(f"{path}/ready")[0] == java_local_address()
    leaving = [m.leave for m in javas] + [m.leave for m in pythons]
    assert in_threads([lambda leave=leave: leave(SOON) for leave in leaving]) == [True] * 4  # type: ignore[misc]
    eventually(lambda: children(zk, path) == [], what="the barrier empty")


def test_a_python_member_leaving_waits_for_a_java_one(
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    zk_path: str,
    java_members: Callable[[str, int], JavaDistributedDoubleBarrier],
) -> None:
    path = f"{zk_path}/double"
    java = java_members(path, 2)
    python = DistributedDoubleBarrier(zk_client_factory(), path, 2)
    assert in_threads([lambda: java.enter(SOON), lambda: python.enter(SOON)]) == [True, True]
    left: list[bool] = []
    leaving = threading.Thread(target=lambda: left.append(python.leave(SOON)))
    leaving.start()
    leaving.join(0.3)
    assert left == []  # the Java member is still in
    assert java.leave(SOON) is True
    leaving.join(SOON)
    assert left == [True]
    assert children(zk, path) == []
