"""A deadline is a deadline: acquire, release and the ``with`` exit with ZooKeeper gone.

Each scenario runs on a server of its own, killed (SIGKILL) before or during the call, or behind
a fault proxy that stops answering (as a SIGSTOPped server does). The bounds are generous: a call
must return within its timeout plus a few seconds, not at the end of the outage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator._protocol.deadline import FIRST_TRY_WAIT
from pycurator._protocol.waits import DELETE_WAIT
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer, assert_no_ephemerals

from .recipes import RECIPES, Recipe
from .support import SOON, STEADY_RECONNECT, Worker, children, eventually

#: What a call may take beyond its timeout on a loaded machine (the bound the docs give is
#: FIRST_TRY_WAIT for a short timeout's first try and DELETE_WAIT for the clean-up).
SLACK = 5.0
#: A session that outlives each outage here, so what is cleaned up is cleaned up by us.
SESSION = 30.0

recipes = pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: recipe.name)


class Server:
    """A server of a test's own, to kill and start again, behind a proxy that holds clients
    back while it starts (a client that met it still starting waits out a whole handshake)."""

    def __init__(self, server: ZooKeeperServer, proxy: FaultProxy) -> None:
        self.server = server
        self.proxy = proxy
        self.hosts = proxy.hosts

    def kill(self) -> None:
        self.server.kill()

    def start(self) -> None:
        self.proxy.blackhole()
        try:
            self.server.start()
        finally:
            self.proxy.heal()


@pytest.fixture
def server() -> Iterator[Server]:
    with ZooKeeperServer() as own, FaultProxy(own.hosts) as front:
        yield Server(own, front)


def _client(factory: ClientFactory, hosts: str) -> KazooClient:
    return factory(hosts=hosts, timeout=SESSION, connection_retry=STEADY_RECONNECT)


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


def _nodes_under(client: KazooClient, recipe: Recipe, path: str) -> list[str]:
    return [node for parent in recipe.node_parents(path) for node in children(client, parent)]


def _owned(client: KazooClient, recipe: Recipe, path: str, session: int) -> list[str]:
    """The recipe's nodes under ``path`` that belong to ``session``."""
    owned = []
    for parent in recipe.node_parents(path):
        for name in children(client, parent):
            stat = client.exists(f"{parent}/{name}")
            if stat is not None and stat.ephemeralOwner == session:
                owned.append(f"{parent}/{name}")
    return owned


@recipes
def test_acquire_with_the_server_down_returns_false_by_its_deadline(
    recipe: Recipe, server: Server, zk_client_factory: ClientFactory
) -> None:
    client = _client(zk_client_factory, server.hosts)
    session = client.client_id[0]
    lock = recipe.make(client, "/locks/down")
    server.kill()
    eventually(lambda: not client.connected, what="the client saw the server go")
    acquired, took = _timed(lambda: lock.acquire(timeout=2))
    assert acquired is False
    assert took < 2 + SLACK, took
    server.start()
    eventually(lambda: client.connected, what="reconnected")
    assert client.client_id[0] == session
    # whatever the queued requests made once the server was back is deleted by this session
    assert_no_ephemerals(server.server.hosts, "/locks")


@recipes
def test_acquire_when_the_server_dies_while_waiting_returns_false_by_its_deadline(
    recipe: Recipe, server: Server, zk_client_factory: ClientFactory
) -> None:
    path = "/locks/dies"
    holder = recipe.blocker(_client(zk_client_factory, server.hosts), path)
    waiter_client = _client(zk_client_factory, server.hosts)
    session = waiter_client.client_id[0]
    waiter = recipe.make(waiter_client, path)
    assert holder.acquire(timeout=SOON)
    worker = Worker(lambda: _timed(lambda: waiter.acquire(timeout=5)))
    worker.start()
    eventually(lambda: bool(_owned(waiter_client, recipe, path, session)), what="waiter queued")
    server.kill()
    acquired, took = worker.outcome(timeout=5 + SLACK + SOON)
    assert acquired is False
    assert took < 5 + SLACK, took
    server.start()
    eventually(lambda: waiter_client.connected, what="reconnected")
    assert waiter_client.client_id[0] == session
    end = time.monotonic() + SOON
    while left := _owned(waiter_client, recipe, path, session):
        assert time.monotonic() < end, f"the waiter's nodes were not deleted: {left}"
        time.sleep(0.1)
    holder.release()


@recipes
def test_release_with_the_server_down_returns_at_once_and_deletes_once_it_is_back(
    recipe: Recipe, server: Server, zk_client_factory: ClientFactory
) -> None:
    path = "/locks/release"
    client = _client(zk_client_factory, server.hosts)
    session = client.client_id[0]
    lock = recipe.make(client, path)
    assert lock.acquire(timeout=SOON)
    server.kill()
    eventually(lambda: not client.connected, what="the client saw the server go")
    _, took = _timed(lock.release)
    assert took < 1.0, took  # a disconnected client does not wait at all
    server.start()
    eventually(lambda: client.connected, what="reconnected")
    assert client.client_id[0] == session  # deleted by its live session, not by an expiry
    eventually(lambda: _nodes_under(client, recipe, path) == [], what="the deferred deletes")


def test_the_with_exit_does_not_wait_for_a_dead_server(
    server: Server, zk_client_factory: ClientFactory
) -> None:
    client = _client(zk_client_factory, server.hosts)
    start = 0.0
    with InterProcessMutex(client, "/locks/with"):
        server.kill()
        start = time.monotonic()
    assert time.monotonic() - start < DELETE_WAIT + SLACK


def test_a_server_that_stops_answering_does_not_hold_acquire_past_its_deadline(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    client = _client(zk_client_factory, proxy.hosts)
    lock = InterProcessMutex(client, path)
    observer.ensure_path(path)
    made: list[str] = []
    observer.get_children(path, watch=lambda event: made.append(event.type))
    proxy.blackhole()  # the connection stays up; nothing is answered (a stopped server)
    acquired, took = _timed(lambda: lock.acquire(timeout=1))
    assert acquired is False
    assert took < max(1, FIRST_TRY_WAIT) + SLACK, took
    proxy.heal()  # the create that was on its way lands now, and is deleted again
    eventually(lambda: made != [], what="the late create reached the server")
    eventually(lambda: children(observer, path) == [], what="the late create undone")
    assert client.connected


def test_release_to_a_server_that_stops_answering_returns_within_delete_wait(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    client = _client(zk_client_factory, proxy.hosts)
    lock = InterProcessMutex(client, path)
    assert lock.acquire(timeout=SOON)
    proxy.blackhole()
    _, took = _timed(lock.release)
    assert took < DELETE_WAIT + SLACK, took
    assert not lock.is_acquired_in_this_process()
    proxy.heal()
    eventually(lambda: children(observer, path) == [], what="the deferred delete went through")
