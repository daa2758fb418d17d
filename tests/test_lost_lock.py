"""A held lock knows when it is lost, and fences what it protects: real server, Python alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LockLostError,
)
from pycurator._client.transport import transport_of
from pycurator._protocol.drivers import StandardDriver
from pycurator._protocol.wire import LOCK_NAME
from pycurator._recipes.hold_monitor import HoldMonitor, HoldState
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.reports import Reporter
from pycurator._threads.runner import run
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer, expire_kazoo_session

from .support import SOON, STEADY_RECONNECT, eventually, restart_behind

#: After each scenario, no lock node is left in the server's dump of ephemerals by session.
pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def lost_reason(lock: InterProcessMutex) -> str:
    """Why ``lock.check()`` says the hold is lost ("" while it is held)."""
    try:
        lock.check()
    except LockLostError as lost:
        return lost.reason
    return ""


def test_session_expiry_while_holding_tells_the_holder_once(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    client = zk_client_factory()
    lock = InterProcessMutex(client, path)
    reasons: list[str] = []
    told = threading.Event()
    told_again = threading.Event()

    def on_lost(lost: InterProcessMutex, reason: str) -> None:
        reasons.append(reason)
        (told_again if told.is_set() else told).set()

    lock.on_lost(on_lost)
    assert lock.acquire()
    assert lock.is_held()
    lock.check()
    expire_kazoo_session(client)
    assert lock.lost_event.wait(SOON)
    assert told.wait(SOON)
    # the standard policy reports the suspension; the expiry that follows is the same loss,
    # and check() tells it as on_lost began it
    story = "connection suspended, then session expired"
    eventually(lambda: lost_reason(lock) == story, what="expiry seen")
    assert not told_again.wait(1.0), reasons
    assert reasons == ["connection suspended"]
    assert not lock.is_held()
    assert lock.is_owned_by_current_thread()  # local bookkeeping until release()
    with pytest.raises(LockLostError, match=story):
        lock.check()
    successor = InterProcessMutex(zk_client_factory(), path)
    assert successor.acquire(timeout=SOON)
    lock.release()  # no error, and the successor's node is untouched
    assert successor.is_held()
    assert successor.participant_nodes() == [successor.lock_path]
    successor.release()


def test_a_node_deleted_by_another_client_is_lost(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    lock = InterProcessMutex(zk_client_factory(), f"{zk_path}/lock")
    with lock:
        assert lock.lock_path is not None
        zk_client_factory().delete(lock.lock_path)
        assert lock.lost_event.wait(SOON)
        with pytest.raises(LockLostError, match="lock node deleted"):
            lock.check()


def lost(hold: Any) -> Callable[[], bool]:
    return lambda: not hold.is_held()


def test_a_lost_event_first_looked_at_after_the_loss_is_set(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """The event is made when first asked for (a hold nobody waits on keeps none), in the
    state the hold is in then; the next hold clears it."""
    client, other = zk_client_factory(), zk_client_factory()
    mutex = InterProcessMutex(client, f"{zk_path}/mutex")
    lease = InterProcessSemaphoreV2(client, f"{zk_path}/semaphore", 2).acquire(SOON)
    semaphore_mutex = InterProcessSemaphoreMutex(client, f"{zk_path}/semaphore-mutex")
    assert lease is not None and mutex.acquire(SOON) and semaphore_mutex.acquire(SOON)
    holds: list[Any] = [mutex, lease, semaphore_mutex]
    assert mutex.lock_path is not None and semaphore_mutex.lease is not None
    for node in (mutex.lock_path, lease.path, semaphore_mutex.lease.path):
        other.delete(node)
    for hold in holds:
        eventually(lost(hold), what=f"{hold!r} lost")
        assert hold.lost_event.is_set(), hold
    mutex.release()
    semaphore_mutex.release()
    assert mutex.acquire(SOON) and semaphore_mutex.acquire(SOON)
    assert not mutex.lost_event.is_set()
    assert not semaphore_mutex.lost_event.is_set()
    mutex.release()
    semaphore_mutex.release()
    lease.close()


def test_check_outside_a_hold_raises(zk: KazooClient, zk_path: str) -> None:
    lock = InterProcessMutex(zk, f"{zk_path}/lock")
    with pytest.raises(LockLostError, match="not acquired"):
        lock.check()
    assert not lock.is_held()


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    """A server of this test's own, to restart under a live session."""
    with ZooKeeperServer() as server:
        yield server


@pytest.fixture
def front(own_server: ZooKeeperServer) -> Iterator[FaultProxy]:
    """A proxy in front of that server."""
    with FaultProxy(own_server.hosts) as proxy:
        yield proxy


def _reconnected(client: KazooClient) -> threading.Event:
    event = threading.Event()
    seen = {"suspended": False}

    def listener(state: str) -> bool:
        if state == KazooState.SUSPENDED:
            seen["suspended"] = True
        elif state == KazooState.CONNECTED and seen["suspended"]:
            event.set()
            return True
        return False

    client.add_listener(listener)
    return event


def test_a_dropped_connection_suspends_a_standard_hold_until_the_node_is_proved_ours(
    own_server: ZooKeeperServer, front: FaultProxy, zk_client_factory: ClientFactory
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    standard = InterProcessMutex(client, "/locks/standard")
    session = InterProcessMutex(client, "/locks/session", connection_policy="session")
    reasons: list[str] = []
    standard.on_lost(lambda lost, reason: reasons.append(reason))
    assert standard.acquire() and session.acquire()
    write = InterProcessReadWriteLock(client, "/locks/rw").write_lock()
    semaphore = InterProcessSemaphoreMutex(client, "/locks/semaphore")
    assert write.acquire() and semaphore.acquire()
    reconnected = _reconnected(client)
    restart_behind(front, own_server)  # drops the connection; the session outlives it
    assert reconnected.wait(60)
    assert "connection suspended" in reasons
    # once reconnected in the same session, the standard hold is checked and held again
    eventually(standard.is_held, what="standard hold verified after reconnect")
    eventually(write.is_held, what="write hold verified after reconnect")
    eventually(semaphore.is_held, what="semaphore mutex hold verified after reconnect")
    assert not standard.lost_event.is_set()
    assert not write.lost_event.is_set()
    assert not semaphore.lost_event.is_set()
    assert session.is_held()
    assert not session.lost_event.is_set()  # the session policy never counted the suspension
    for lock in (standard, session, write, semaphore):
        lock.release()


def test_a_session_hold_whose_node_is_deleted_after_a_reconnect_is_lost(
    own_server: ZooKeeperServer, front: FaultProxy, zk_client_factory: ClientFactory
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    lock = InterProcessMutex(client, "/locks/session", connection_policy="session")
    assert lock.acquire() and lock.is_held()  # confirmed: its node is watched from now on
    reconnected = _reconnected(client)
    restart_behind(front, own_server)  # drops the connection; the session outlives it
    assert reconnected.wait(60)
    assert not lock.lost_event.is_set()  # the session policy kept the hold through it
    other = zk_client_factory(hosts=own_server.hosts)
    (node,) = other.get_children("/locks/session")
    other.delete(f"/locks/session/{node}")
    # the watch that went with the connection is set again: the deletion is seen
    assert lock.lost_event.wait(SOON)
    assert not lock.is_held()


def test_a_stale_holders_guarded_write_is_rejected(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path, resource = f"{zk_path}/lock", f"{zk_path}-resource"
    writer = zk_client_factory()
    writer.create(resource, b"initial", makepath=True)
    stale_client = zk_client_factory()
    stale = InterProcessMutex(stale_client, path)
    assert stale.acquire()
    stale_token = stale.fencing_token
    expire_kazoo_session(stale_client)  # as if the holder paused past its session timeout
    fresh = InterProcessMutex(zk_client_factory(), path)
    assert fresh.acquire(timeout=SOON)
    assert fresh.fencing_token > stale_token
    transaction = fresh.guarded_transaction()
    transaction.set_data(resource, b"fresh")
    assert not any(isinstance(result, Exception) for result in transaction.commit())
    eventually(lambda: stale_client.connected, what="stale client back in a new session")
    late = stale.guarded_transaction()
    late.set_data(resource, b"stale")
    results = late.commit()
    assert isinstance(results[0], NoNodeError)
    assert isinstance(results[1], Exception)  # not applied: all or nothing
    assert writer.get(resource)[0] == b"fresh"
    fresh.release()
    stale.release()
    writer.delete(resource)


def test_tokens_of_successive_holders_strictly_increase(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    tokens = []
    for client in [zk_client_factory() for _ in range(3)] * 2:
        lock = InterProcessMutex(client, path)
        with lock:
            tokens.append(lock.fencing_token)
    assert tokens == sorted(set(tokens))
    with pytest.raises(LockLostError):
        _ = InterProcessMutex(zk_client_factory(), path).fencing_token


def test_a_multi_lock_is_lost_when_any_member_is(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    first = InterProcessMutex(zk_client_factory(), f"{zk_path}/a")
    second = InterProcessMutex(zk_client_factory(), f"{zk_path}/b")
    lock = InterProcessMultiLock([first, second])
    lost: list[str] = []
    lock.on_lost(lambda member, reason: lost.append(reason))
    with lock:
        assert lock.is_held()
        assert second.lock_path is not None
        zk_client_factory().delete(second.lock_path)
        eventually(lambda: not lock.is_held(), what="multi-lock sees its member lost")
        with pytest.raises(LockLostError, match="lock node deleted"):
            lock.check()
        eventually(lambda: lost == ["lock node deleted"], what="on_lost called")


def test_a_session_that_ended_between_taking_the_node_and_following_it_is_seen(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    # The connection listener starts with the hold, after the decision that the node holds: an
    # expiry in between is caught by comparing the node's session with the client's.
    client = zk_client_factory()
    transport = transport_of(client)
    engine = LockEngine(transport, f"{zk_path}/lock", StandardDriver(LOCK_NAME, 1))
    node = run(transport, engine.acquire_steps(SOON))
    assert node is not None
    expire_kazoo_session(client)
    eventually(lambda: client.connected, what="a new session")
    changes: list[tuple[HoldState, str]] = []
    report = Reporter("mutex", engine.base_path).acquired(time.monotonic(), node.path)
    monitor = HoldMonitor(
        transport, node.path, "session", lambda *c: changes.append(c), node.session_id, report
    )
    assert not monitor.held
    assert changes == [(HoldState.LOST, "session expired")]
    monitor.close()
