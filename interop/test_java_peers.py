"""The Java peers of Curator's other recipes as a kit: bad input named, retry policies carried
over from kazoo's, peers closed with their client by the fixture, and a process that leaves
them open, listening and waiting, still exits 0."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator.testing import (
    SOON,
    JavaCuratorCache,
    JavaDistributedBarrier,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    JavaSharedCount,
    PeerClosedError,
    eventually,
    java_retry_policy,
    jclass,
)
from pycurator.testing._java_calls import close_recipe_peers_on
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")


def test_bad_input_is_named_before_java_sees_it(curator: Any, zk_path: str) -> None:
    with pytest.raises(ValueError, match="create modes: 'EPHEMERAL_TTL'"):
        JavaPersistentNode(curator, zk_path, "EPHEMERAL_TTL")
    with pytest.raises(ValueError, match="option of CuratorCache: 'RECURSIVE'"):
        JavaCuratorCache(curator, zk_path, ["RECURSIVE"])
    with pytest.raises(ValueError, match="ttl must be at least a millisecond"):
        JavaPersistentTtlNode(curator, zk_path, 0)
    with pytest.raises(ValueError, match=r"seed_count must be an int in \[-2147483648"):
        JavaSharedCount(curator, zk_path, 2**31)
    with pytest.raises(TypeError, match="data must be bytes"):
        JavaPersistentNode(curator, zk_path, "PERSISTENT", "text")  # type: ignore[arg-type]


def test_a_kazoo_retry_becomes_curators_nearest_policy() -> None:
    steady = java_retry_policy(KazooRetry(max_tries=4, delay=0.02, backoff=1))
    assert str(steady.getClass().getSimpleName()) == "RetryNTimes"
    backing_off = java_retry_policy(KazooRetry(max_tries=-1, delay=0.01, max_delay=0.5))
    assert str(backing_off.getClass().getSimpleName()) == "BoundedExponentialBackoffRetry"
    assert int(backing_off.getMaxSleepTimeMs()) == 500
    assert str(java_retry_policy(None).getClass().getSimpleName()) == "RetryNTimes"
    own = jclass("org.apache.curator.retry.RetryOneTime")(5)
    assert java_retry_policy(own).equals(own)
    with pytest.raises(TypeError, match="not a KazooRetry or a Java RetryPolicy"):
        java_retry_policy(3)


def test_a_clients_peers_are_closed_before_it_and_only_its(
    curator_factory: Any, zk: KazooClient, zk_path: str
) -> None:
    """What the ``curator_factory`` fixture does for each of its clients as the test ends."""
    mine, other = curator_factory(), curator_factory()
    node = JavaPersistentNode(mine, f"{zk_path}/node", "EPHEMERAL", b"x")
    node.start()
    assert node.wait_for_initial_create(SOON)
    barrier = JavaDistributedBarrier(mine, f"{zk_path}/gate")
    kept = JavaDistributedBarrier(other, f"{zk_path}/gate")
    close_recipe_peers_on(mine)
    assert node.closed and barrier.closed and not kept.closed
    eventually(lambda: zk.exists(f"{zk_path}/node") is None, what="the node deleted")
    with pytest.raises(PeerClosedError):
        barrier.set_barrier()
    kept.close()


PROGRAM = textwrap.dedent(
    """
    import sys
    import threading

    from pycurator.testing import (
        JavaCuratorCache,
        JavaDistributedBarrier,
        JavaDistributedDoubleBarrier,
        JavaGroupMember,
        JavaSharedCount,
        new_curator,
    )

    hosts, path = sys.argv[1:]
    curator = new_curator(hosts)
    cache = JavaCuratorCache(curator, path)
    cache.start()
    member = JavaGroupMember(curator, path + "/group", "me")
    member.start()
    count = JavaSharedCount(curator, path + "/count", 1)
    count.start()
    barrier = JavaDistributedDoubleBarrier(curator, path + "/double", 2)
    gate = JavaDistributedBarrier(curator, path + "/gate")
    gate.set_barrier()
    for wait in (barrier.enter, gate.wait_on_barrier, gate.wait_on_barrier):
        threading.Thread(target=wait, daemon=True).start()
    cache.wait_for_events(5, 30)  # the group, its member, the count, the barrier's member, the gate
    print("left open", flush=True)
    """
)


def test_a_process_that_leaves_its_peers_open_and_waiting_exits_0(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    """At exit the kit closes the peers (their listeners quiet, the barrier's wait ended), then
    Curator's clients, then the JVM: the process ends 0, and its nodes go with its session."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, zk_server.hosts, zk_path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "left open"
    assert zk.exists(f"{zk_path}/group/me") is None
