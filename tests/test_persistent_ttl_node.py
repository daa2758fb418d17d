"""``PersistentTtlNode`` on a server with TTL nodes on (and one with them off): Curator's layout
(the node, PERSISTENT_WITH_TTL, and its ``touch`` child holding the host's address, made at once
and set every ttl/2), a container found there (as Curator 5.4 made it) adopted, the node made
again when deleted, left to its TTL on close; bad input named; both front ends."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import PersistentTtlNode, ServerFeatureError, aio
from pycurator._client.transport import default_node_data, transport_of
from pycurator._protocol.modes import CreateMode
from pycurator._protocol.requests import CreateNode
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run
from pycurator.testing import ZooKeeperServer

from .aio_support import run as run_loop
from .support import SOON, eventually
from .test_watches_that_stay import on_client

TTL = 1.0


@pytest.fixture(params=["kazoo", "lean"])
def client(ttl_on: ZooKeeperServer, request: pytest.FixtureRequest) -> Iterator[KazooClient]:
    made = on_client(ttl_on.hosts, str(request.param))
    yield made
    made.stop()
    made.close()


@pytest.fixture
def observer(ttl_on: ZooKeeperServer) -> Iterator[KazooClient]:
    made = on_client(ttl_on.hosts, "kazoo")
    yield made
    made.stop()
    made.close()


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    """A path of the test's own on the module's server."""
    return f"/ttl/{request.node.name.replace('[', '-').replace(']', '')}/node"


def test_the_node_and_its_touch_child_are_curators_and_go_a_ttl_after_close(
    client: KazooClient, observer: KazooClient, path: str
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
        observer.delete(path, recursive=True)
        eventually(lambda: observer.exists(f"{path}/touch") is not None, what="made and touched")
        assert observer.get(path)[0] == b"x"


def test_the_asyncio_form_keeps_the_same_pair(
    client: KazooClient, observer: KazooClient, path: str
) -> None:
    async def scenario() -> None:
        async with aio.PersistentTtlNode(client, path, TTL, b"a") as node:
            assert await node.wait_for_initial_create(SOON)
            node.set_data(b"b")
            for _ in range(100):
                if observer.exists(f"{path}/touch") is not None:
                    break
                await asyncio.sleep(0.05)

    run_loop(scenario())
    assert observer.get(path)[0] == b"b"
    assert observer.exists(f"{path}/touch") is not None


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
    client: KazooClient, arguments: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PersistentTtlNode(client, *arguments)
    assert client.exists("/n") is None


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
