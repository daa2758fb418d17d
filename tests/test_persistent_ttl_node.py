"""``PersistentTtlNode`` on a server with TTL nodes on (and one with them off): Curator's layout
(the node, PERSISTENT_WITH_TTL, and its ``touch`` child holding the host's address, made at once
and set every ttl/2), a container found there (as Curator 5.4 made it) adopted, the node made
again when deleted, left to its TTL on close; bad input named; both front ends."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import PersistentTtlNode, ServerFeatureError, aio
from pycurator._client.transport import default_node_data, transport_of
from pycurator._protocol.modes import CreateMode
from pycurator._protocol.requests import CreateNode
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run
from pycurator.testing import ZooKeeperServer, created_modes
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run as run_loop
from .support import SOON, eventually
from .test_watches_that_stay import on_client

TTL = 1.0


@pytest.fixture(params=["kazoo", "lean"])
def client(zk_server: ZooKeeperTarget, request: pytest.FixtureRequest) -> Iterator[KazooClient]:
    """A client of the kit's server (TTL nodes on), on kazoo's loop and on pycurator's."""
    made = on_client(zk_server.hosts, str(request.param))
    yield made
    made.stop()
    made.close()


@pytest.fixture
def observer(zk: KazooClient) -> KazooClient:
    return zk


@pytest.fixture
def path(zk_path: str) -> str:
    """The kept node's path: below the test's own."""
    return f"{zk_path}/group/node"


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path | None:
    """The kit's local server's data folder (its transaction log tells a node's mode), or None
    for a server elsewhere."""
    return zk_server.local.data_dir if zk_server.local is not None else None


def modes(log: Path | None, under: str) -> dict[str, tuple[str, float | None]]:
    """Each node's create mode and TTL below ``under``, as the server's log tells them."""
    if log is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return {path: (made.mode, made.ttl) for path, made in created_modes(log, under).items()}


def test_the_node_and_its_touch_child_are_curators_and_go_a_ttl_after_close(
    client: KazooClient, observer: KazooClient, path: str, server_log: Path | None
) -> None:
    node = PersistentTtlNode(client, path, TTL, b"payload")
    assert node.ttl == TTL and node.path == path
    node.start()
    assert node.wait_for_initial_create(SOON)
    assert node.get_data() == b"payload"
    assert observer.get(path)[0] == b"payload"
    touch = f"{path}/touch"
    eventually(lambda: observer.exists(touch) is not None, what="the first touch, at once")
    assert observer.get(touch)[0] == default_node_data()  # Curator's default: the host
    parent, child = observer.exists(path), observer.exists(touch)
    assert child.ctime - parent.ctime < TTL * 1000 / 2  # sooner than Curator's ttl/2
    eventually(lambda: observer.exists(touch).version >= 2, what="touched every ttl/2")
    time.sleep(2 * TTL)  # alive while touched, a TTL and more after its creation
    assert observer.exists(path) is not None
    node.close()
    assert observer.exists(path) is not None  # close deletes nothing: the TTL will
    made = modes(server_log, path.rsplit("/", 1)[0])
    assert made[path] == made[touch] == ("PERSISTENT_WITH_TTL", TTL)  # as Curator 5.9
    assert made[path.rsplit("/", 1)[0]] == ("CONTAINER", None)
    eventually(lambda: observer.exists(path) is None, what="the pair reaped after a TTL")


def test_a_container_found_there_is_adopted_given_our_data_and_touched(
    client: KazooClient, observer: KazooClient, path: str
) -> None:
    """Curator 5.4's PersistentTtlNode made its node a CONTAINER: one is adopted."""
    observer.ensure_path(path.rsplit("/", 1)[0])
    run(transport_of(observer), sent_steps(CreateNode(path, b"5.4", mode=CreateMode.CONTAINER)))
    with PersistentTtlNode(client, path, TTL, b"ours") as node:
        assert node.wait_for_initial_create(SOON)
        assert observer.get(path)[0] == b"ours"
        eventually(lambda: observer.exists(f"{path}/touch") is not None, what="touched")


def test_the_node_deleted_is_made_again_and_touched_again(
    client: KazooClient, observer: KazooClient, path: str
) -> None:
    with PersistentTtlNode(client, path, TTL, b"x") as node:
        assert node.wait_for_initial_create(SOON)
        eventually(lambda: observer.exists(f"{path}/touch") is not None, what="touched")
        # both at once: a touch landing between two deletes makes the child again, and the
        # parent's delete fails NotEmpty
        deletes = observer.transaction()
        deletes.delete(f"{path}/touch")
        deletes.delete(path)
        assert deletes.commit() == [True, True]
        eventually(lambda: observer.exists(f"{path}/touch") is not None, what="made and touched")
        assert observer.get(path)[0] == b"x"


def test_the_asyncio_form_keeps_the_same_pair(
    client: KazooClient, observer: KazooClient, path: str
) -> None:
    def written() -> bool:
        return observer.exists(f"{path}/touch") is not None and observer.get(path)[0] == b"b"

    async def scenario() -> bool:
        async with aio.PersistentTtlNode(client, path, TTL, b"a") as node:
            assert await node.wait_for_initial_create(SOON)
            node.set_data(b"b")
            for _ in range(200):
                if written():
                    return True
                await asyncio.sleep(0.05)
        return False

    assert run_loop(scenario()), "the data written and the touch made while started"


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (("/n", 0), ValueError, "ttl must be at least a millisecond"),
        (("/n", -5), ValueError, "ttl must be at least a millisecond"),
        (("/n", math.inf), ValueError, "not inf"),
        (("/n", "10"), TypeError, "ttl must be a number of seconds, not '10'"),
        (("/n", None), TypeError, "ttl must be a number of seconds, not None"),
        (("n", 10), ValueError, "Path must start with / character"),
        (("/n", 10, "data"), TypeError, "data must be bytes, not str"),
    ],
)
def test_bad_input_is_named_and_nothing_is_made(
    client: KazooClient,
    zk_path: str,
    arguments: tuple[Any, ...],
    error: type[Exception],
    message: str,
) -> None:
    path, *rest = arguments
    with pytest.raises(error, match=message):
        PersistentTtlNode(client, zk_path + path if path.startswith("/") else path, *rest)
    assert client.exists(zk_path) is None


def test_a_server_with_ttl_nodes_off_is_named_by_the_wait(ttl_off: ZooKeeperServer) -> None:
    refusing = on_client(ttl_off.hosts, "kazoo")
    try:
        node = PersistentTtlNode(refusing, "/ttl/node", TTL)
        with node, pytest.raises(ServerFeatureError, match="no TTL nodes"):
            node.wait_for_initial_create(SOON)
        assert refusing.exists("/ttl/node") is None
    finally:
        refusing.stop()
        refusing.close()
