"""ZooKeeper's failure modes, on a real server through a fault proxy: Python alone."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from pycurator import InterProcessMutex
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer

from .support import SOON, STEADY_RECONNECT, Worker, children, eventually, restart_behind

#: After each scenario, no lock node is left in the server's dump of ephemerals by session.
pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def _states(client: KazooClient) -> list[str]:
    seen: list[str] = []

    def listener(state: str) -> bool:
        seen.append(state)
        return False

    client.add_listener(listener)
    return seen


def test_the_proxy_forwards_adds_latency_and_drops_connections(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(hosts=proxy.hosts)
    client.create(f"{zk_path}/a", b"x", makepath=True)
    proxy.latency = 0.05
    start = time.monotonic()
    assert client.get(f"{zk_path}/a")[0] == b"x"
    assert time.monotonic() - start >= 0.1  # a round trip crosses the proxy twice
    proxy.latency = 0.0
    states = _states(client)
    proxy.drop_connections()
    eventually(lambda: KazooState.SUSPENDED in states and client.connected, what="reconnected")
    assert client.get(f"{zk_path}/a")[0] == b"x"
    client.delete(f"{zk_path}/a")


def test_the_proxy_delays_pipelined_requests_together_not_one_after_another(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(hosts=proxy.hosts)
    client.create(f"{zk_path}/a", b"x", makepath=True)
    proxy.latency = 0.2
    start = time.monotonic()
    replies = [client.get_async(f"{zk_path}/a") for _ in range(8)]
    assert [reply.get(timeout=SOON)[0] for reply in replies] == [b"x"] * 8
    elapsed = time.monotonic() - start
    proxy.latency = 0.0
    assert 0.4 <= elapsed < 0.7  # one round trip for all: no chunk waits out another's delay


def test_a_create_whose_reply_is_lost_is_found_again_not_made_twice(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    observer.ensure_path(path)  # the create is then the first request that goes unanswered
    client = zk_client_factory(hosts=proxy.hosts, timeout=4.0)
    lock = InterProcessMutex(client, path)
    states = _states(client)
    proxy.drop_replies()
    assert lock.acquire(timeout=60)
    try:
        assert KazooState.SUSPENDED in states  # the reply was lost and the connection with it
        (name,) = children(observer, path)  # one node for the one attempt: found, not remade
        assert lock.lock_path == f"{path}/{name}"
        assert observer.exists(lock.lock_path).ephemeralOwner == client.client_id[0]
    finally:
        lock.release()
    assert children(observer, path) == []


def test_release_while_the_connection_is_down_deletes_once_it_is_back(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    client = zk_client_factory(hosts=proxy.hosts, timeout=6.0)
    lock = InterProcessMutex(client, path)
    assert lock.acquire()
    node = lock.lock_path
    session = client.client_id[0]
    proxy.blackhole()
    lock.release()  # the delete cannot get through: it goes on in the background
    assert not lock.is_acquired_in_this_process()
    assert observer.exists(node) is not None
    proxy.heal()
    eventually(lambda: observer.exists(node) is None, what="the deferred delete went through")
    eventually(lambda: client.connected, what="client reconnected")
    assert client.client_id[0] == session  # deleted by its live session, not by an expiry


def test_a_server_restart_finishes_holder_and_waiter_without_overlap(
    zk_client_factory: ClientFactory,
) -> None:
    with ZooKeeperServer() as server, FaultProxy(server.hosts) as front:
        holder_client, waiter_client = (
            zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
            for _ in range(2)
        )
        holder = InterProcessMutex(holder_client, "/locks/restart")
        waiter = InterProcessMutex(waiter_client, "/locks/restart")
        inside = {"holder": False, "waiter": False, "overlap": False}
        assert holder.acquire()
        inside["holder"] = True

        def wait_then_hold() -> None:
            assert waiter.acquire(timeout=90)
            inside["waiter"] = True
            inside["overlap"] = inside["holder"]
            waiter.release()

        worker = Worker(wait_then_hold)
        worker.start()
        eventually(lambda: len(children(holder_client, "/locks/restart")) == 2)
        restart_behind(front, server)
        eventually(lambda: holder_client.connected and waiter_client.connected, timeout=60)
        assert holder.is_acquired_in_this_process()
        eventually(holder.is_held, what="holder's node verified after the restart")
        inside["holder"] = False
        holder.release()
        worker.outcome(timeout=90)
        assert inside["waiter"] and not inside["overlap"]
        assert children(holder_client, "/locks/restart") == []


def test_session_expiry_while_holding_passes_the_lock_to_the_next_waiter(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    from pycurator.testing import expire_kazoo_session

    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    waiter = InterProcessMutex(zk_client_factory(), path)
    assert holder.acquire()
    got = threading.Event()

    def wait_then_hold() -> None:
        assert waiter.acquire(timeout=60)
        got.set()
        waiter.release()

    worker = Worker(wait_then_hold)
    worker.start()
    eventually(lambda: len(waiter.participant_nodes()) == 2)
    expire_kazoo_session(holder_client)
    assert got.wait(SOON)
    worker.outcome()
    holder.release()  # lost already: nothing to delete, nothing raised
    assert children(zk_client_factory(), path) == []


def test_a_create_that_gives_up_leaves_no_orphan(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    observer.ensure_path(path)
    client = zk_client_factory(hosts=proxy.hosts, timeout=4.0)
    lock = InterProcessMutex(client, path)
    created = threading.Event()
    observer.get_children(path, watch=lambda event: created.set())
    proxy.drop_replies()  # the create reaches the server; its reply never comes back
    assert lock.acquire(timeout=0.5) is False
    assert created.wait(SOON)  # the server did make the node
    # the node the lost create made is found by its protected name and deleted
    eventually(lambda: children(observer, path) == [], what="the orphan deleted")
    assert client.connected
