"""A session timeout spent while suspended ends the session, as Curator's ConnectionStateManager
ends it: every hold of the client is told, whatever its connection policy and front end, and the
session given up is not resumed. Real server, behind a fault proxy; Python alone (the ensemble
and Java are in interop/test_partitions.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.protocol.states import KazooState

from pycurator import (
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    aio,
    connect,
)
from pycurator._client import kazoo_internals
from pycurator._client.runtime import runtime_of
from pycurator._client.transport import KazooTransport
from pycurator._protocol.transport import SESSION_EXPIRED
from pycurator.menagerie import ReentrantZkLock
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer
from pycurator.zklocker import ZkLocker

from .support import SOON, STEADY_RECONNECT, cut, eventually, session_of

#: After each scenario, no lock node is left in the server's dump of ephemerals by session.
pytestmark = pytest.mark.usefixtures("zk_no_orphans")

#: The session timeout of the holders' clients, in seconds (the server grants it as asked).
TIMEOUT = 2.0
#: How late after the session timeout a holder may be told (a noisy machine's timer).
LATE = 3.0


@pytest.fixture
def front(zk_server: Any) -> Iterator[FaultProxy]:
    """A proxy in front of the test server (its first member)."""
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


class Told:
    """When each hold was told it is lost, and why, by name."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.why: dict[str, str] = {}
        self.all = threading.Event()
        self.expected: set[str] = set()

    def callback(self, name: str) -> Any:
        self.expected.add(name)

        def lost(_: object, reason: str) -> None:
            self.at.setdefault(name, time.monotonic())
            self.why.setdefault(name, reason)
            if self.expected <= set(self.at):
                self.all.set()

        return lost


def test_every_threaded_hold_is_told_once_the_session_timeout_passes_while_suspended(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(
        hosts=front.hosts, timeout=TIMEOUT, connection_retry=STEADY_RECONNECT
    )
    told = Told()
    mutex = InterProcessMutex(client, f"{zk_path}/mutex", connection_policy="session")
    standard = InterProcessMutex(client, f"{zk_path}/standard")
    semaphore = InterProcessSemaphoreV2(client, f"{zk_path}/sem", 2, connection_policy="session")
    latch = LeaderLatch(client, f"{zk_path}/latch", "py", connection_policy="session")
    assert mutex.acquire(SOON) and standard.acquire(SOON)
    lease = semaphore.acquire(timeout=SOON)
    assert lease is not None
    latch.start()
    assert latch.wait(SOON)
    mutex.on_lost(told.callback("mutex"))
    lease.on_lost(told.callback("lease"))
    latch.on_lost(told.callback("latch"))
    others = [
        ZkLocker(client, f"{zk_path}/zklocker", connection_policy="session"),
        ReentrantZkLock(client, f"{zk_path}/menagerie", connection_policy="session"),
    ]
    for other in others:
        assert other.acquire(SOON)
        other.on_lost(told.callback(type(other).__name__))
    selector_lost = told.callback("selector")
    leading = threading.Event()

    def lead(leadership: Leadership) -> None:
        leading.set()
        assert leadership.lost_event.wait(4 * SOON)
        selector_lost(None, leadership.reason)

    selector = LeaderSelector(client, f"{zk_path}/selector", lead, connection_policy="session")
    selector.start()
    assert leading.wait(SOON)
    standard_lost = threading.Event()
    standard.on_lost(lambda *_: standard_lost.set())
    old = session_of(client)
    start = cut(front)
    assert standard_lost.wait(SOON)  # the standard policy counts the suspension itself
    assert told.all.wait(TIMEOUT + LATE), f"told: {told.at}"
    for name, at in told.at.items():
        assert TIMEOUT - 0.2 <= at - start <= TIMEOUT + LATE, (name, at - start)
        assert told.why[name] == SESSION_EXPIRED
    assert mutex.lost_event.is_set() and lease.lost_event.is_set()
    assert not latch.has_leadership()
    front.heal()
    # a new session: the old one is given up, and its nodes go with it on the server
    eventually(lambda: client.connected and session_of(client) != old, what="a new session")
    eventually(latch.has_leadership, what="the latch leads again in its new session")
    assert not mutex.is_held()
    mutex.release()
    standard.release()
    lease.close()
    latch.close()
    selector.close()
    for other in others:
        other.release()
    assert mutex.acquire(SOON)  # nothing left behind blocks the next acquire
    mutex.release()


def test_every_asyncio_hold_is_told_once_the_session_timeout_passes_while_suspended(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(
        hosts=front.hosts, timeout=TIMEOUT, connection_retry=STEADY_RECONNECT
    )

    async def main() -> dict[str, float]:
        told = Told()
        mutex = aio.InterProcessMutex(client, f"{zk_path}/mutex", connection_policy="session")
        semaphore = aio.InterProcessSemaphoreV2(
            client, f"{zk_path}/sem", 2, connection_policy="session"
        )
        latch = aio.LeaderLatch(client, f"{zk_path}/latch", "py", connection_policy="session")
        assert await mutex.acquire(SOON)
        lease = await semaphore.acquire(timeout=SOON)
        assert lease is not None
        await latch.start()
        assert await latch.wait(SOON)
        mutex.on_lost(told.callback("mutex"))
        lease.on_lost(told.callback("lease"))
        latch.on_lost(told.callback("latch"))
        start = cut(front)
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, told.all.wait, TIMEOUT + LATE), told.at
        assert mutex.lost_event.is_set() and not latch.has_leadership()
        front.heal()
        await mutex.release()
        await lease.close()
        await latch.close()
        return {name: at - start for name, at in told.at.items()}

    async def bounded() -> dict[str, float]:
        return await asyncio.wait_for(main(), 4 * SOON)

    for name, after in asyncio.run(bounded()).items():
        assert TIMEOUT - 0.2 <= after <= TIMEOUT + LATE, (name, after)


def test_a_hold_kept_through_a_short_suspension_is_not_told(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(
        hosts=front.hosts, timeout=TIMEOUT, connection_retry=STEADY_RECONNECT
    )
    mutex = InterProcessMutex(client, f"{zk_path}/mutex", connection_policy="session")
    assert mutex.acquire(SOON)
    old = session_of(client)
    cut(front)
    time.sleep(TIMEOUT / 4)  # a suspension well within the session timeout
    front.heal()
    eventually(lambda: client.connected, what="reconnected")
    time.sleep(TIMEOUT + 0.5)  # the count from the suspension would have run out by now
    assert session_of(client) == old
    assert mutex.is_held() and not mutex.lost_event.is_set()
    mutex.release()


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    """A server of this test's own, to stop and start under a live session."""
    with ZooKeeperServer() as server:
        yield server


def test_a_session_given_up_is_not_resumed_when_its_server_comes_back_with_it(
    own_server: ZooKeeperServer, zk_client_factory: ClientFactory
) -> None:
    with FaultProxy(own_server.hosts) as proxy:
        client = zk_client_factory(
            hosts=proxy.hosts, timeout=TIMEOUT, connection_retry=STEADY_RECONNECT
        )
        states: list[str] = []

        def listener(state: str) -> bool:
            states.append(state)
            return False

        client.add_listener(listener)
        mutex = InterProcessMutex(client, "/locks/given-up", connection_policy="session")
        assert mutex.acquire(SOON)
        node = mutex.lock_path
        old = session_of(client)
        proxy.blackhole()
        own_server.stop()  # the server keeps the session in its log, and restores it
        assert mutex.lost_event.wait(TIMEOUT + LATE)
        # the protocols take it as ended at once: none of its nodes is ours any more
        assert kazoo_internals.session_of(client) == old
        assert KazooTransport(client).session_id() is None
        own_server.start()  # the session lives on there, for a session timeout from now
        proxy.heal()
        eventually(lambda: client.connected, what="reconnected")
        # kazoo ended the session given up instead of resuming it: a new one, after a LOST
        assert session_of(client) != old
        assert KazooState.LOST in states
        observer = zk_client_factory(hosts=own_server.hosts)
        # the old session ends on the server once nobody resumes it, and its node with it
        eventually(lambda: observer.exists(node) is None, what="the old node is gone")
        assert runtime_of(client).session_timeout() == TIMEOUT
        mutex.release()


def test_the_count_lasts_the_session_timeout_the_server_granted(zk_server: Any) -> None:
    if zk_server.local is None:
        pytest.skip("the server's bounds are known of a local server only")
    shortest = 2 * zk_server.local.tick_time_ms / 1000.0  # ZooKeeper's minSessionTimeout
    client = connect(zk_server.hosts, session_timeout=shortest / 2)  # raised by the server
    try:
        assert runtime_of(client).session_timeout() == shortest
    finally:
        client.stop()
        client.close()
