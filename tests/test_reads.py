"""Read-only queries ride through a reconnect: ``participants()``, ``leader()``,
``participant_nodes()`` and a lease's ``data()`` wait for the connection, up to the client's
session timeout, instead of raising the moment it is gone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from pycurator import (
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    Participant,
    aio,
)
from pycurator.testing import ClientFactory, FaultProxy, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run
from .support import SOON, STEADY_RECONNECT, Worker, children, eventually


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


def queries(client: KazooClient, other: KazooClient, path: str) -> dict[str, Callable[[], Any]]:
    """Each recipe's read-only query on ``client``, with something to read (made by
    ``other``), and the answer it must give."""
    leader = LeaderLatch(other, f"{path}/latch", "leader")
    leader.start()
    assert leader.wait(SOON)
    holder = InterProcessMutex(other, f"{path}/mutex")
    assert holder.acquire(SOON)
    held = holder.lock_path  # the holding thread's node
    lease = InterProcessSemaphoreV2(other, f"{path}/semaphore", 2).acquire(SOON)
    assert lease is not None
    latch = LeaderLatch(client, f"{path}/latch", "reader")
    selector = LeaderSelector(client, f"{path}/latch", lambda _: None, "reader")
    mutex = InterProcessMutex(client, f"{path}/mutex")
    semaphore = InterProcessSemaphoreV2(client, f"{path}/semaphore", 2)
    return {
        "latch participants": lambda: latch.participants() == [Participant("leader", True)],
        "latch leader": lambda: latch.leader() == Participant("leader", True),
        "selector participants": lambda: selector.participants()[0].id == "leader",
        "mutex participant_nodes": lambda: mutex.participant_nodes() == [held],
        "semaphore participant_nodes": lambda: len(semaphore.participant_nodes()) == 1,
    }


QUERIES = [
    "latch participants",
    "latch leader",
    "selector participants",
    "mutex participant_nodes",
    "semaphore participant_nodes",
]


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_right_after_a_session_expiry_answers_once_reconnected(
    zk_client_factory: ClientFactory, zk_path: str, query: str
) -> None:
    client, other = zk_client_factory(), zk_client_factory()
    ask = queries(client, other, zk_path)[query]
    expire_kazoo_session(client)  # kazoo reconnects with a new session meanwhile
    assert ask() is True


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_made_while_disconnected_answers_once_the_connection_is_back(
    zk_client_factory: ClientFactory, front: FaultProxy, zk_path: str, query: str
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    ask = queries(client, zk_client_factory(), zk_path)[query]
    front.blackhole()
    front.drop_connections()
    eventually(lambda: not client.connected, what="the client saw the connection go")
    worker = Worker(ask)
    worker.start()
    assert not worker.done.wait(1.0)  # it waits rather than raising
    front.heal()
    assert worker.outcome(SOON) is True


def test_a_query_left_without_a_connection_raises_once_the_session_timeout_passes(
    zk_client_factory: ClientFactory, front: FaultProxy, zk_path: str
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT)
    latch = LeaderLatch(client, zk_path, "reader")
    front.blackhole()
    front.drop_connections()
    eventually(lambda: not client.connected, what="the client saw the connection go")
    began = time.monotonic()
    with pytest.raises(ConnectionLoss, match="4s"):
        latch.participants()
    assert 3.5 < time.monotonic() - began < 4.0 + SOON
    front.heal()


def test_a_query_made_while_disconnected_survives_the_session_expiring_meanwhile(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    front: FaultProxy,
    zk_path: str,
) -> None:
    """kazoo drops a request queued while disconnected when the session then expires; the
    query sends it again on the new session."""
    from pycurator.testing import expire_session

    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    other = zk_client_factory()
    ask = queries(client, other, zk_path)["latch participants"]
    session_id, password = client.client_id
    front.blackhole()
    front.drop_connections()
    eventually(lambda: not client.connected, what="the client saw the connection go")
    worker = Worker(ask)
    worker.start()
    assert not worker.done.wait(0.5)
    expire_session(zk_server.hosts, session_id, password)  # ended while the client is away
    front.heal()
    assert worker.outcome(SOON) is True
    assert client.client_id[0] != session_id


def test_asyncio_queries_ride_through_a_session_expiry(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client, other = zk_client_factory(), zk_client_factory()
    queries(client, other, zk_path)  # something to read

    async def main() -> None:
        latch = aio.LeaderLatch(client, f"{zk_path}/latch", "reader")

        async def noop(_: aio.Leadership) -> None:
            return None

        selector = aio.LeaderSelector(client, f"{zk_path}/latch", noop, "reader")
        mutex = aio.InterProcessMutex(client, f"{zk_path}/mutex")
        semaphore = aio.InterProcessSemaphoreV2(client, f"{zk_path}/semaphore", 2)
        await asyncio.get_running_loop().run_in_executor(None, expire_kazoo_session, client)
        assert await latch.leader() == Participant("leader", True)
        assert (await selector.participants())[0].id == "leader"
        assert len(await mutex.participant_nodes()) == 1
        assert len(await semaphore.participant_nodes()) == 1

    run(main())


def test_a_lease_reads_its_data_through_a_reconnect(
    zk_client_factory: ClientFactory, front: FaultProxy, zk_path: str
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    lease = InterProcessSemaphoreV2(client, zk_path, 1, node_data=b"payload").acquire(SOON)
    assert lease is not None
    front.drop_connections()
    assert lease.data() == b"payload"
    lease.close()
    assert children(client, f"{zk_path}/leases") == []


def test_selector_participants_in_a_lead_see_themselves_leading(
    zk: KazooClient, zk_path: str
) -> None:
    seen: list[list[Participant]] = []

    def lead(leadership: Leadership) -> None:
        seen.append(selector.participants())

    selector = LeaderSelector(zk, zk_path, lead, "me")
    selector.start()
    eventually(lambda: bool(seen), what="lead ran")
    assert seen[0] == [Participant("me", True)]
    assert selector.close(SOON)
