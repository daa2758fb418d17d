"""LeaderLatch: pycurator and Java Curator 5.x elect one leader among them on one path."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator import LeaderLatch, Participant
from pycurator.testing import (
    ClientFactory,
    FaultProxy,
    JavaLatch,
    curator_at_least,
    curator_client,
    expire_kazoo_session,
    expire_session,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON, children, eventually

from .conftest import CuratorFactory

NODE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-\d{10}")

pytestmark = pytest.mark.usefixtures("no_orphans", "stable_parent")


@pytest.fixture
def stable_parent(zk: KazooClient, zk_path: str) -> Iterator[None]:
    """The test's base path as a plain node for the test's length. Curator's latch gives up a
    create that fails (it logs it and waits for a reconnect), and the test server reaps an
    empty container every 100 ms: a container parent reaped between Curator's check and its
    create would leave a Java latch out of the election."""
    zk.ensure_path(zk_path)
    yield
    eventually(lambda: not children(zk, zk_path), what="the test's containers reaped")
    with contextlib.suppress(NoNodeError):
        zk.delete(zk_path)


AnyLatch = LeaderLatch | JavaLatch


def our_path(latch: AnyLatch) -> str | None:
    return latch.our_path


@pytest.fixture
def opened() -> Iterator[list[AnyLatch]]:
    """Latches a test starts; those it did not close are closed afterwards."""
    latches: list[AnyLatch] = []
    yield latches
    for latch in latches:
        with contextlib.suppress(Exception):  # closed by the test already (Java raises too)
            latch.close()


def leaders(latches: list[AnyLatch]) -> list[str]:
    return [latch.id for latch in latches if latch.has_leadership()]


def queue_up(
    zk: KazooClient,
    path: str,
    makers: list[Callable[[], AnyLatch]],
    opened: list[AnyLatch],
) -> list[AnyLatch]:
    """Start each latch in turn, waiting until its node is queued before starting the next."""
    latches = []
    for n, make in enumerate(makers):
        latch = make()
        opened.append(latch)
        latch.start()
        latches.append(latch)
        eventually(lambda n=n: len(children(zk, path)) == n + 1, what=f"{n + 1} latch nodes")  # type: ignore[misc]
        eventually(lambda latch=latch: our_path(latch) is not None, what="our path known")  # type: ignore[misc]
    return latches


def test_python_latch_nodes_look_like_javas(
    curator: Any, zk: KazooClient, zk_path: str, opened: list[AnyLatch]
) -> None:
    java_path, python_path = f"{zk_path}/java", f"{zk_path}/python"
    for participant_id in ("billing-7", ""):
        java = JavaLatch(curator, java_path, participant_id)
        python = LeaderLatch(zk, python_path, participant_id)
        opened += [java, python]
        java.start()
        python.start()
        assert java.wait(SOON) and python.wait(SOON)
        (java_name,) = children(zk, java_path)
        (python_name,) = children(zk, python_path)
        assert NODE.fullmatch(java_name) and NODE.fullmatch(python_name)
        java_data, java_stat = zk.get(f"{java_path}/{java_name}")
        python_data, python_stat = zk.get(f"{python_path}/{python_name}")
        assert java_data == python_data == participant_id.encode()
        assert java_stat.ephemeralOwner != 0 and python_stat.ephemeralOwner != 0
        java.close()
        python.close()
    for parent in (java_path, python_path):
        eventually(lambda parent=parent: zk.exists(parent) is None, what="container reaped")  # type: ignore[misc]


def test_mixed_latches_elect_one_leader_share_participants_and_hand_over_in_queue_order(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk_path: str,
    opened: list[AnyLatch],
) -> None:
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    makers: list[Callable[[], AnyLatch]] = [
        lambda: JavaLatch(curator_factory(), path, "java-1"),
        lambda: LeaderLatch(zk_client_factory(), path, "python-1"),
        lambda: JavaLatch(curator_factory(), path, "java-2"),
        lambda: LeaderLatch(zk_client_factory(), path, "python-2"),
    ]
    latches = queue_up(observer, path, makers, opened)
    ids = [latch.id for latch in latches]
    while latches:
        assert latches[0].wait(SOON)
        assert leaders(latches) == [latches[0].id]  # exactly one leader, the first in queue
        expected = [Participant(i, n == 0) for n, i in enumerate(ids)]
        for latch in latches:
            assert latch.participants() == expected
        latches.pop(0).close()
        ids.pop(0)
        assert len(leaders(latches)) <= 1
    assert children(observer, path) == []


def test_a_python_leaders_expiry_lets_java_lead_and_python_rejoins(
    curator: Any,
    zk_client_factory: ClientFactory,
    zk_path: str,
    opened: list[AnyLatch],
) -> None:
    path = f"{zk_path}/election"
    python_client = zk_client_factory()
    observer = zk_client_factory()
    python, java = queue_up(
        observer,
        path,
        [
            lambda: LeaderLatch(python_client, path, "python"),
            lambda: JavaLatch(curator, path, "java"),
        ],
        opened,
    )
    assert isinstance(python, LeaderLatch)
    assert python.wait(SOON)
    old = python.our_path
    expire_kazoo_session(python_client)
    assert python.lost_event.wait(SOON)
    assert java.wait(SOON)
    assert not python.has_leadership()
    eventually(
        lambda: python.our_path not in (None, old) and len(children(observer, path)) == 2,
        what="the python latch rejoined",
    )
    expected = [Participant("java", True), Participant("python", False)]
    eventually(lambda: java.participants() == expected, what=f"participants {expected}")
    java.close()
    assert python.wait(SOON)


def test_a_java_leaders_expiry_lets_python_lead_and_java_rejoins(
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk_path: str,
    opened: list[AnyLatch],
) -> None:
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    java, python = queue_up(
        observer,
        path,
        [lambda: JavaLatch(curator, path, "java"), lambda: LeaderLatch(observer, path, "python")],
        opened,
    )
    assert java.wait(SOON)
    old = our_path(java)
    expire_session(zk_server.hosts, *session_of(curator))
    assert python.wait(SOON)
    eventually(lambda: not java.has_leadership(), what="java told it lost leadership")
    eventually(
        lambda: our_path(java) not in (None, old) and len(children(observer, path)) == 2,
        what="the java latch rejoined",
    )
    # Curator (5.4 to 5.9) may make a second node while replacing its first (it deletes the spare in
    # the background), so the list settles rather than holds at once
    expected = [Participant("python", True), Participant("java", False)]
    eventually(lambda: python.participants() == expected, what=f"participants {expected}")
    python.close()
    assert java.wait(SOON)


def test_a_java_latch_first_in_line_checks_its_node_is_its_sessions_from_5_7(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str, opened: list[AnyLatch]
) -> None:
    """CURATOR-696 (5.7): a Java latch whose node comes first reads the node's owner before it
    leads; its node swapped for another session's node of the same name, it makes a node of
    its own session and leads on that. 5.4 leads on the other session's node."""
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    python, java = queue_up(
        observer,
        path,
        [lambda: LeaderLatch(observer, path, "python"), lambda: JavaLatch(curator, path, "java")],
        opened,
    )
    assert python.wait(SOON)
    swapped = our_path(java)
    assert swapped is not None
    stranger = zk_client_factory()
    stranger.delete(swapped)  # the Java latch watches the leader's node, not its own
    stranger.create(swapped, b"java", ephemeral=True)
    python.close()
    assert java.wait(SOON)
    leading_on = our_path(java)
    assert leading_on is not None
    stat = observer.exists(leading_on)
    assert stat is not None
    if curator_at_least("5.7"):
        assert leading_on != swapped
        assert stat.ephemeralOwner == session_of(curator)[0]
        assert observer.exists(swapped) is None  # Curator deleted the node it gave up
    else:
        assert leading_on == swapped
        assert stat.ephemeralOwner == stranger.client_id[0]
    java.close()  # deletes the node it leads on, whoever's it is
    stranger.stop()
    assert children(observer, path) == []


def test_a_java_latch_whose_path_went_while_disconnected_rejoins_from_5_8(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, opened: list[AnyLatch]
) -> None:
    """CURATOR-724 (5.8): when the latch's path is gone at a reconnection (an ensemble rebuilt
    empty), a Java latch makes its node again and leads. 5.4 finds no path and stays out of
    the election, without a node, until it is restarted."""
    path = f"{zk_path}/election"
    with (
        FaultProxy(zk_server.hosts) as proxy,
        curator_client(proxy.hosts, session_timeout_ms=30_000) as curator,
    ):
        java = JavaLatch(curator, path, "java")
        opened.append(java)
        java.start()
        assert java.wait(SOON)
        gone = our_path(java)
        assert gone is not None
        proxy.blackhole()
        proxy.drop_connections()
        eventually(lambda: not java.has_leadership(), what="java suspended")
        zk.delete(path, recursive=True)
        proxy.heal()
        connected = curator.getZookeeperClient().isConnected
        eventually(lambda: bool(connected()), what="java reconnected")
        if curator_at_least("5.8"):
            assert java.wait(SOON)
            assert our_path(java) not in (None, gone)
            assert children(zk, path) == [str(our_path(java)).rsplit("/", 1)[1]]
        else:
            assert not java.wait(3.0)  # its session kept, and out of the election
            assert children(zk, path) == []
        java.close()
