"""Nodes with a time to live (ZooKeeper's ``createTTL``, which kazoo lacks), sent by the
transport on kazoo's connection loop and on pycurator's: made with their data, reaped by the
server once childless and unchanged for their TTL, refused by a server with TTL nodes off by a
clear error, and bad input named before anything is sent."""

from __future__ import annotations

import math
import stat
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
from pycurator.testing import ZooKeeperServer

from .support import eventually
from .test_watches_that_stay import on_client

#: ZooKeeper's switch for TTL nodes.
TTL_SWITCH = "zookeeper.extendedTypesEnabled"


def java_with(folder: Path, enabled: bool) -> str:
    """A ``java`` that runs ZooKeeper with TTL nodes ``enabled`` whatever the kit asks: the
    switch is set again right before the classpath, where the last setting wins."""
    script = folder / f"java-ttl-{'on' if enabled else 'off'}"
    value = "true" if enabled else "false"
    script.write_text(
        "#!/bin/sh\n"
        'for arg; do shift; [ "$arg" = -cp ] && set -- "$@" '
        f'"-D{TTL_SWITCH}={value}"; set -- "$@" "$arg"; done\n'
        'exec java "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture(scope="module")
def ttl_on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A server with TTL nodes on."""
    with ZooKeeperServer(java=java_with(tmp_path_factory.mktemp("java"), True)) as server:
        yield server


@pytest.fixture(scope="module")
def ttl_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A server with TTL nodes off, as ZooKeeper starts by default."""
    with ZooKeeperServer(java=java_with(tmp_path_factory.mktemp("java"), False)) as server:
        yield server


@pytest.fixture(params=["kazoo", "lean"])
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(ttl_on: ZooKeeperServer, loop: str) -> Iterator[KazooClient]:
    made = on_client(ttl_on.hosts, loop)
    yield made
    made.stop()
    made.close()


def create(client: KazooClient, request: CreateNode) -> Any:
    return run(transport_of(client), sent_steps(request))


def test_a_ttl_node_is_made_with_its_data_and_reaped_once_its_ttl_passed_unchanged(
    client: KazooClient,
) -> None:
    made, _ = create(
        client, CreateNode("/ttl", b"data", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=0.5)
    )
    assert made == "/ttl"
    data, seen = client.get("/ttl")
    assert data == b"data" and seen.ephemeralOwner == 0  # a stat shows it as persistent
    eventually(lambda: client.exists("/ttl") is None, what="the TTL node reaped")


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
    client: KazooClient,
) -> None:
    client.ensure_path("/seq")
    request = CreateNode("/seq/n-", None, mode=CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, ttl=0.3)
    made, _ = create(client, request)
    assert made.startswith("/seq/n-") and made[-10:].isdigit()
    client.create(f"{made}/child")
    time.sleep(1.0)  # three TTLs: kept by its child
    assert client.exists(made) is not None
    client.delete(f"{made}/child")
    eventually(lambda: client.exists(made) is None, what="reaped once childless")


@pytest.mark.parametrize(
    ("mode", "ttl", "error", "message"),
    [
        (CreateMode.PERSISTENT_WITH_TTL, None, TypeError, "needs a ttl in seconds, not None"),
        (CreateMode.PERSISTENT_WITH_TTL, "1", TypeError, "needs a ttl in seconds, not '1'"),
        (CreateMode.PERSISTENT_WITH_TTL, True, TypeError, "needs a ttl in seconds"),
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
    mode: CreateMode,
    ttl: Any,
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        create(client, CreateNode("/bad", b"", mode=mode, ttl=ttl))
    assert client.exists("/bad") is None


def test_a_transaction_takes_no_ttl_node(client: KazooClient) -> None:
    part = CreateNode("/in-multi", b"", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=1.0)
    with pytest.raises(ValueError, match="a transaction creates no PERSISTENT_WITH_TTL node"):
        run(transport_of(client), sent_steps(Transaction((part,))))
    assert client.exists("/in-multi") is None


def test_the_longest_ttl_zookeeper_takes_is_sent_whole(client: KazooClient) -> None:
    longest = ((1 << 40) - 1) / 1000
    create(client, CreateNode("/long", b"", mode=CreateMode.PERSISTENT_WITH_TTL, ttl=longest))
    assert client.exists("/long") is not None
    client.delete("/long")
