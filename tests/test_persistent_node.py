"""``PersistentNode`` against a real ZooKeeper where the parity scenarios cannot go: bad input,
a dropped connection (CURATOR-154 and -190 across a reconnect), rights refused, a close while
disconnected, a stopped client. (The scenarios both front ends share are in
tests/parity/test_persistent_node.py, the protocol's steps in
tests/test_persistent_node_protocol.py.)"""

from __future__ import annotations

import functools
import logging
import math
import threading
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, NoAuthError, NoChildrenForEphemeralsError
from kazoo.protocol.states import KazooState
from kazoo.security import ACL, ANYONE_ID_UNSAFE, Permissions

from pycurator import CreateMode, PersistentNode
from pycurator.testing import ClientFactory, FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, children, eventually


def bad(value: object) -> Any:
    """A value of the wrong type, passed on as a caller without type checks would."""
    return value


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (("node", CreateMode.EPHEMERAL), ValueError, "Path must start with / character"),
        (("/a/", CreateMode.EPHEMERAL), ValueError, "Path must not end with / character"),
        (("/a", "EPHEMERAL"), TypeError, "mode must be a CreateMode"),
        (("/a", 1), TypeError, "mode must be a CreateMode"),
        (("/a", CreateMode.EPHEMERAL, "text"), TypeError, "data must be bytes, not str"),
        (("/a", CreateMode.EPHEMERAL, None), TypeError, "data must be bytes, not NoneType"),
        (("/a", CreateMode.EPHEMERAL, b"x" * 0x100000), ValueError, "at most 1047549 at /a"),
        (("/a", CreateMode.EPHEMERAL, b"", "yes"), TypeError, "use_protection must be True"),
    ],
)
def test_bad_input_is_named_and_nothing_is_made(
    zk: KazooClient, arguments: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PersistentNode(zk, *(bad(argument) for argument in arguments))
    assert zk.exists("/a") is None and zk.exists("/node") is None


@pytest.mark.parametrize(
    ("mode", "ttl", "error", "message"),
    [
        (CreateMode.PERSISTENT_WITH_TTL, None, TypeError, "ttl must be a number of seconds"),
        (CreateMode.PERSISTENT_WITH_TTL, 0, ValueError, "ttl must be at least a millisecond"),
        (CreateMode.PERSISTENT_WITH_TTL, -1.0, ValueError, "at least a millisecond"),
        (CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, math.nan, ValueError, "not nan"),
        (CreateMode.EPHEMERAL, 10.0, ValueError, "a ttl is for the TTL modes"),
    ],
)
def test_a_ttl_missing_out_of_range_or_not_for_the_mode_is_named(
    zk: KazooClient, mode: CreateMode, ttl: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PersistentNode(zk, "/ttl", mode, ttl=ttl)
    assert zk.exists("/ttl") is None


def test_a_client_not_started_or_stopped_is_refused(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    never_started = KazooClient(hosts=zk_server.hosts)
    node = PersistentNode(never_started, f"{zk_path}/n", CreateMode.EPHEMERAL)
    node.start()
    with pytest.raises(ConnectionClosedError):
        node.wait_for_initial_create(SOON)
    node.close()
    stopped = zk_client_factory()
    stopped.stop()
    node = PersistentNode(stopped, f"{zk_path}/n", CreateMode.EPHEMERAL)
    node.start()
    with pytest.raises(ConnectionClosedError):
        node.wait_for_initial_create(SOON)
    node.close()
    assert zk_client_factory().exists(zk_path) is None


def holds(client: KazooClient, path: str, data: bytes) -> bool:
    """Whether the node at ``path`` holds ``data``."""
    return bool(client.get(path)[0] == data)


def suspended_on(client: KazooClient) -> threading.Event:
    """An event set once ``client`` is suspended."""
    suspended = threading.Event()

    def listener(state: str) -> bool:
        if state == KazooState.SUSPENDED:
            suspended.set()
        return False

    client.add_listener(listener)
    return suspended


@pytest.mark.parametrize("mode", [CreateMode.EPHEMERAL, CreateMode.EPHEMERAL_SEQUENTIAL])
def test_data_set_while_disconnected_is_the_nodes_once_reconnected_and_one_node_stays(
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    proxy: FaultProxy,
    zk_path: str,
    mode: CreateMode,
) -> None:
    """CURATOR-154 (the data lost across a reconnect) and CURATOR-190 (a protected node made
    again under a second prefix at each reconnect)."""
    client = zk_client_factory(hosts=proxy.hosts)
    suspended = suspended_on(client)
    with PersistentNode(client, f"{zk_path}/node", mode, b"before", True) as node:
        assert node.wait_for_initial_create(SOON)
        made = node.actual_path
        assert made is not None
        for data in (b"while down", b"while down again"):
            suspended.clear()
            proxy.blackhole()
            proxy.drop_connections()
            assert suspended.wait(SOON)
            node.set_data(data)
            proxy.heal()
            eventually(functools.partial(holds, zk, made, data), what="the data")
            assert zk.get_children(zk_path) == [made.rsplit("/", 1)[1]]
        assert node.actual_path == made
    assert children(zk, zk_path) == []


def test_a_close_while_disconnected_deletes_the_node_once_reconnected(
    zk_client_factory: ClientFactory, zk: KazooClient, proxy: FaultProxy, zk_path: str
) -> None:
    client = zk_client_factory(hosts=proxy.hosts)
    suspended = suspended_on(client)
    node = PersistentNode(client, f"{zk_path}/node", CreateMode.PERSISTENT, b"x")
    node.start()
    assert node.wait_for_initial_create(SOON)
    proxy.blackhole()
    proxy.drop_connections()
    assert suspended.wait(SOON)
    node.close()  # returns at once: the delete is owed
    assert zk.exists(f"{zk_path}/node") is not None
    proxy.heal()
    eventually(lambda: zk.exists(f"{zk_path}/node") is None, what="the owed delete")


def test_no_right_to_create_is_raised_by_the_wait_logged_once_and_tried_again_on_news(
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    read_only = [ACL(Permissions.READ | Permissions.ADMIN, ANYONE_ID_UNSAFE)]
    zk.ensure_path(zk_path.rsplit("/", 1)[0])
    zk.create(zk_path, acl=read_only)
    client = zk_client_factory()
    node = PersistentNode(client, f"{zk_path}/node", CreateMode.EPHEMERAL)
    with caplog.at_level(logging.ERROR, logger="pycurator"):
        node.start()
        with pytest.raises(NoAuthError):
            node.wait_for_initial_create(SOON)
        node.set_data(b"again")  # news: tried again, refused again
        with pytest.raises(NoAuthError):
            node.wait_for_initial_create(SOON)
    assert len([r for r in caplog.records if "NoAuthError" in r.getMessage()]) == 1
    assert zk.get_children(zk_path) == []
    zk.set_acls(zk_path, [ACL(Permissions.ALL, ANYONE_ID_UNSAFE)])
    node.set_data(b"now")
    assert node.wait_for_initial_create(SOON)
    assert zk.get(f"{zk_path}/node")[0] == b"now"
    node.close()


def test_a_node_under_an_ephemeral_one_is_refused_by_the_wait(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path, ephemeral=True, makepath=True)
    node = PersistentNode(zk_client_factory(), f"{zk_path}/n", CreateMode.PERSISTENT)
    with node, pytest.raises(NoChildrenForEphemeralsError):
        node.wait_for_initial_create(SOON)
    assert zk.get_children(zk_path) == []


def test_a_node_under_an_ephemeral_one_is_made_once_that_ones_session_ends(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """No news tells that an ephemeral parent went with its session: the node tries again on
    a timer meanwhile (as Curator's, which tries again at once), and is made then."""
    owner = zk_client_factory()
    zk.ensure_path(zk_path)
    owner.create(f"{zk_path}/parent", ephemeral=True)
    node = PersistentNode(zk_client_factory(), f"{zk_path}/parent/n", CreateMode.EPHEMERAL)
    with node:
        with pytest.raises(NoChildrenForEphemeralsError):
            node.wait_for_initial_create(SOON)
        owner.stop()
        eventually(lambda: zk.exists(f"{zk_path}/parent/n") is not None, what="made")
        # the server may have it before the node's own client reads the create's answer; till
        # then the wait rightly tells the failure that is being tried again
        eventually(lambda: node.actual_path is not None, what="its create's answer read")
        assert node.wait_for_initial_create(SOON)


def test_a_stopped_client_ends_the_node_and_a_persistent_one_stays(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    client = zk_client_factory()
    node = PersistentNode(client, f"{zk_path}/n", CreateMode.PERSISTENT, b"stays")
    node.start()
    assert node.wait_for_initial_create(SOON)
    client.stop()
    assert node.wait_for_initial_create(0)  # made once: so it stays, as Curator's
    node.close()
    assert zk.get(f"{zk_path}/n")[0] == b"stays"  # a persistent node outlives its client
    assert repr(node) == f"PersistentNode('{zk_path}/n', PERSISTENT, state=closed)"


@pytest.mark.parametrize(
    "mode", [CreateMode.PERSISTENT, CreateMode.PERSISTENT_SEQUENTIAL, CreateMode.EPHEMERAL]
)
@pytest.mark.parametrize("protected", [False, True], ids=["plain", "protected"])
def test_a_close_before_the_create_is_answered_deletes_what_it_made_when_it_lands(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    mode: CreateMode,
    protected: bool,
) -> None:
    """CURATOR-297: a node made by a create answered after close stayed."""
    zk.ensure_path(zk_path)
    with FaultProxy(zk_server.hosts.split(",")[0], latency=0.2) as slow:
        client = zk_client_factory(hosts=slow.hosts)
        node = PersistentNode(client, f"{zk_path}/node", mode, b"", protected)
        # told by the server: a poll could miss the node, there only until the delete lands
        landed = threading.Event()
        zk.get_children(zk_path, watch=lambda _: landed.set())
        node.start()
        node.close()  # the create is on its way: it lands after the close
        assert landed.wait(SOON), "the create landed"
        eventually(lambda: zk.get_children(zk_path) == [], what="what it made deleted")
