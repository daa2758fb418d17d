"""Nodes with a time to live (ZooKeeper's ``createTTL``, which kazoo lacks), sent by the
transport on kazoo's connection loop and on pycurator's: made with their data and their TTL (as
the server's transaction log tells: a stat shows none), reaped by the server once childless and
unchanged for their TTL, refused by a server with TTL nodes off by a clear error, and bad input
named before anything is sent. The kit's servers have TTL nodes on."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import UnimplementedError

from pycurator._client.transport import transport_of
from pycurator._protocol.errors import ServerFeatureError
from pycurator._protocol.requests import CreateMode, CreateNode, Transaction
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run
from pycurator.testing import ZooKeeperServer, created_modes
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import eventually
from .test_watches_that_stay import on_client


@pytest.fixture(params=["kazoo", "lean"])
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(zk_server: ZooKeeperTarget, loop: str) -> Iterator[KazooClient]:
    """A client of the kit's server (TTL nodes on) on ``loop``."""
    made = on_client(zk_server.hosts, loop)
    yield made
    made.stop()
    made.close()


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    """The kit's local server's data folder, whose transaction log tells a node's mode."""
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def create(client: KazooClient, request: CreateNode) -> Any:
    return run(transport_of(client), sent_steps(request))


def test_a_ttl_node_is_made_with_its_data_and_reaped_once_its_ttl_passed_unchanged(
    client: KazooClient, zk_path: str, server_log: Path
) -> None:
    client.ensure_path(zk_path)
    path = f"{zk_path}/ttl"
    made, _ = create(
        client, CreateNode(path, b"data", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=0.5)
    )
    assert made == path
    data, seen = client.get(path)
    assert data == b"data" and seen.ephemeralOwner == 0  # a stat shows it as persistent
    creation = created_modes(server_log, path)[path]
    assert (creation.mode, creation.ttl) == ("PERSISTENT_WITH_TTL", 0.5)
    eventually(lambda: client.exists(path) is None, what="the TTL node reaped")


@pytest.mark.parametrize(
    "mode", [CreateMode.PERSISTENT_WITH_TTL, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL]
)
def test_a_server_with_ttl_nodes_off_is_named_and_nothing_is_made(
    ttl_off: ZooKeeperServer, loop: str, mode: CreateMode
) -> None:
    refusing = on_client(ttl_off.hosts, loop)
    try:
        with pytest.raises(ServerFeatureError) as refused:
            create(refusing, CreateNode("/ttl", b"data", mode=mode, ttl=1.0))
        assert str(refused.value) == (
            "the ZooKeeper server has no TTL nodes (ZooKeeper 3.5.3 or later, started with "
            "zookeeper.extendedTypesEnabled=true): /ttl"
        )
        assert isinstance(refused.value, UnimplementedError)
        assert refusing.get_children("/") == ["zookeeper"]
    finally:
        refusing.stop()
        refusing.close()


def test_a_sequential_ttl_node_is_named_with_its_sequence_and_lives_while_it_has_children(
    client: KazooClient, zk_path: str, server_log: Path
) -> None:
    client.ensure_path(zk_path)
    mode = CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL
    made, _ = create(client, CreateNode(f"{zk_path}/n-", None, mode=mode, ttl=0.5))
    client.create(f"{made}/child")  # at once: a TTL node childless for its TTL is reaped
    assert made.startswith(f"{zk_path}/n-") and made[-10:].isdigit()
    creation = created_modes(server_log, made)[made]
    # (the log tells a TTL node from others, not a sequence: its name does)
    assert (creation.mode, creation.ttl) == ("PERSISTENT_WITH_TTL", 0.5)
    time.sleep(1.5)  # three TTLs: kept by its child
    assert client.exists(made) is not None
    client.delete(f"{made}/child")
    eventually(lambda: client.exists(made) is None, what="reaped once childless")


@pytest.mark.parametrize(
    ("mode", "ttl", "error", "message"),
    [
        (
            CreateMode.PERSISTENT_WITH_TTL,
            None,
            TypeError,
            "WITH_TTL must be a number of seconds, not None",
        ),
        (CreateMode.PERSISTENT_WITH_TTL, "1", TypeError, "must be a number of seconds, not '1'"),
        (CreateMode.PERSISTENT_WITH_TTL, True, TypeError, "must be a number of seconds, not True"),
        (CreateMode.PERSISTENT_WITH_TTL, 0, ValueError, "at least a millisecond"),
        (CreateMode.PERSISTENT_WITH_TTL, 0.0004, ValueError, "at least a millisecond"),
        (CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, -1, ValueError, "not -1"),
        (CreateMode.PERSISTENT_WITH_TTL, math.nan, ValueError, "not nan"),
        (CreateMode.PERSISTENT_WITH_TTL, math.inf, ValueError, "at most 1099511627775 ms"),
        (CreateMode.PERSISTENT_WITH_TTL, 2**40, ValueError, "at most 1099511627775 ms"),
        (CreateMode.PERSISTENT, 1.0, ValueError, "a ttl is for the TTL modes, not CreateMode"),
        (CreateMode.CONTAINER, 1.0, ValueError, "not CreateMode.CONTAINER: 1.0"),
        (CreateMode.EPHEMERAL, 1.0, ValueError, "not CreateMode.EPHEMERAL: 1.0"),
    ],
)
def test_bad_input_is_named_before_anything_is_sent(
    client: KazooClient,
    zk_path: str,
    mode: CreateMode,
    ttl: Any,
    error: type[Exception],
    message: str,
) -> None:
    client.ensure_path(zk_path)
    with pytest.raises(error, match=message.replace("(", r"\(")):
        create(client, CreateNode(f"{zk_path}/bad", b"", mode=mode, ttl=ttl))
    assert client.get_children(zk_path) == []


def test_a_transaction_takes_no_ttl_node(client: KazooClient, zk_path: str) -> None:
    part = CreateNode(f"{zk_path}/in-multi", b"", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=1.0)
    with pytest.raises(ValueError, match="a transaction creates no PERSISTENT_WITH_TTL node"):
        run(transport_of(client), sent_steps(Transaction((part,))))
    assert client.exists(zk_path) is None


def test_the_longest_ttl_zookeeper_takes_is_sent_whole(
    client: KazooClient, zk_path: str, server_log: Path
) -> None:
    client.ensure_path(zk_path)
    path, longest = f"{zk_path}/long", ((1 << 40) - 1) / 1000
    create(client, CreateNode(path, b"", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=longest))
    assert created_modes(server_log, path)[path].ttl == longest
    client.delete(path)
