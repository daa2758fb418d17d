"""A process holding 1,000 locks, leading 1,000 elections or keeping 1,000 nodes costs a constant
number of threads,
through a server bounce too; every hold is still held (or reported lost) after it, and nothing
is left behind on the server. (Memory and times per item are measured by ``./dev bench
--sections scale``, not here.)"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    CreateMode,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    PersistentNode,
    aio,
)
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer, expire_kazoo_session
from pycurator.testing._proxy import THREAD_NAME

from .aio_support import run
from .support import SOON, STEADY_RECONNECT, children, eventually, restart_behind

N = 1000
#: Threads the code under test may add, whatever N: kazoo's three per client, pycurator's
#: timer, deferred-watch worker and pool of four, and room to spare.
THREADS_ALLOWED = 12


def threads() -> int:
    """Threads of this process, the fault proxy's left out."""
    return sum(1 for thread in threading.enumerate() if thread.name != THREAD_NAME)


@contextmanager
def peak_threads() -> Iterator[list[int]]:
    """Samples the thread count every 5 ms while the block runs; yields ``[peak]``."""
    peak = [threads()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], threads() - 1)  # less this sampler

    sampler = threading.Thread(target=sample, name=THREAD_NAME)  # not counted either
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


@pytest.fixture
def bounced() -> Iterator[tuple[ZooKeeperServer, FaultProxy]]:
    """A server of this test's own behind a proxy, to stop and start again."""
    with ZooKeeperServer() as server, FaultProxy(server.hosts) as proxy:
        yield server, proxy


def hold_many(client: KazooClient) -> list[tuple[str, Any, Callable[[], bool]]]:
    """N holds of every recipe on ``client``: (kind, what to release, is it held now)."""
    holds: list[tuple[str, Any, Callable[[], bool]]] = []
    for n in range(N // 2):
        mutex = InterProcessMutex(client, f"/scale/mutex/{n}")
        assert mutex.acquire(SOON)
        holds.append(("mutex", mutex, mutex.is_held))
    for n in range(N // 8):
        read = InterProcessReadWriteLock(client, f"/scale/rw/{n}").read_lock()
        assert read.acquire(SOON)
        holds.append(("read", read, read.is_held))
        write = InterProcessReadWriteLock(client, f"/scale/rw-w/{n}").write_lock()
        assert write.acquire(SOON)
        holds.append(("write", write, write.is_held))
        lease = InterProcessSemaphoreV2(client, f"/scale/semaphore/{n}", 2).acquire(SOON)
        assert lease is not None
        holds.append(("lease", lease, lease.is_held))
        semaphore_mutex = InterProcessSemaphoreMutex(client, f"/scale/semaphore-mutex/{n}")
        assert semaphore_mutex.acquire(SOON)
        holds.append(("semaphore mutex", semaphore_mutex, semaphore_mutex.is_held))
    return holds


def release_all(holds: list[tuple[str, Any, Callable[[], bool]]]) -> None:
    for kind, hold, _ in holds:
        if kind == "lease":
            hold.close()
        else:
            hold.release()


def test_a_bounce_with_1000_held_locks_costs_a_constant_number_of_threads(
    bounced: tuple[ZooKeeperServer, FaultProxy], zk_client_factory: ClientFactory
) -> None:
    server, proxy = bounced
    client = zk_client_factory(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    before = threads()
    holds = hold_many(client)
    assert all(held() for _, _, held in holds)  # each watched now
    with peak_threads() as peak:
        restart_behind(proxy, server)  # the session outlives the restart
        eventually(lambda: client.connected, what="reconnected")
        eventually(lambda: all(held() for _, _, held in holds), what="every hold ours again")
    assert peak[0] - before <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
    release_all(holds)
    for parent in ("mutex", "rw", "rw-w", "semaphore", "semaphore-mutex"):
        eventually(lambda p=parent: not_held_below(client, f"/scale/{p}"), what="all released")  # type: ignore[misc]


def not_held_below(client: KazooClient, path: str) -> bool:
    """No lock or lease node anywhere below ``path``."""
    for name in children(client, path):
        if name.startswith("_c_") or not not_held_below(client, f"{path}/{name}"):
            return False
    return True


def test_1000_latches_waiting_and_leading_cost_a_constant_number_of_threads(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    heard: list[str] = []
    guard = threading.Lock()

    class Listener:
        def is_leader(self) -> None:
            with guard:
                heard.append("is_leader")

        def not_leader(self) -> None:
            with guard:
                heard.append("not_leader")

    before = threads()
    with peak_threads() as peak:
        # half lead (a path each), half wait behind them (a second latch on each path)
        leaders = [LeaderLatch(client, f"{zk_path}/{n}", f"leader-{n}") for n in range(N // 2)]
        followers = [LeaderLatch(client, f"{zk_path}/{n}", f"follower-{n}") for n in range(N // 2)]
        for latch in leaders:
            latch.add_listener(Listener())
            latch.start()
        assert all(latch.wait(SOON) for latch in leaders)
        for latch in followers:
            latch.add_listener(Listener())
            latch.start()
        eventually(lambda: all(f.our_path for f in followers), what="every follower queued")
        eventually(lambda: len(heard) == N // 2, what="every leader's listener heard")
        assert not any(latch.has_leadership() for latch in followers)
        for latch in leaders:
            latch.close()
        assert all(latch.wait(SOON) for latch in followers)
        eventually(lambda: len(heard) == N, what="every follower's listener heard")
        for latch in followers:
            latch.close()
    assert peak[0] - before <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
    assert all_empty(client, zk_path)


def test_1000_kept_nodes_made_again_after_deletes_and_an_expiry_cost_a_constant_number_of_threads(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    client = zk_client_factory()
    before = threads()
    with peak_threads() as peak:
        nodes = [
            PersistentNode(client, f"{zk_path}/e{n}", CreateMode.EPHEMERAL, b"%d" % n)
            if n % 2
            else PersistentNode(
                client, f"{zk_path}/s-", CreateMode.EPHEMERAL_SEQUENTIAL, b"%d" % n, True
            )
            for n in range(N)
        ]
        for node in nodes:
            node.start()
        assert all(node.wait_for_initial_create(SOON) for node in nodes)
        paths = {str(node.actual_path) for node in nodes}
        assert len(paths) == N and all(node.actual_path for node in nodes)
        for name in children(zk, zk_path)[: N // 2]:
            zk.delete(f"{zk_path}/{name}")
        eventually(lambda: len(children(zk, zk_path)) == N, what="every deleted node made again")
        expire_kazoo_session(client)
        eventually(
            lambda: (
                sorted(f"{zk_path}/{name}" for name in children(zk, zk_path)) == sorted(paths)
                and all(zk.exists(path).ephemeralOwner == client.client_id[0] for path in paths)
            ),
            timeout=3 * SOON,
            what="every node made again in the new session, under its name",
        )
        for node in nodes:
            node.close()
    assert peak[0] - before <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
    assert children(zk, zk_path) == []


def all_empty(client: KazooClient, path: str) -> bool:
    return all(children(client, f"{path}/{name}") == [] for name in children(client, path))


def test_1000_asyncio_latches_add_no_thread(zk: KazooClient, zk_path: str) -> None:
    before = threads()

    async def main() -> None:
        latches = [aio.LeaderLatch(zk, f"{zk_path}/{n}", str(n)) for n in range(N)]
        for latch in latches:
            await latch.start()
        assert all(await asyncio.gather(*(latch.wait(SOON) for latch in latches)))
        assert threads() - before <= THREADS_ALLOWED
        for latch in latches:
            await latch.close()

    run(main())
    assert all_empty(zk, zk_path)


def test_a_waiter_keeps_no_listing_while_it_waits(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """1,000 waiters on one path each keep O(1) state: their memory grows linearly, not with
    the square of the queue (each listing holds a thousand names), at its peak too: the
    listings that came with a thousand creates queued at once are not kept until the loop
    reads them."""
    import tracemalloc

    holder_client, waiter_client = zk_client_factory(), zk_client_factory()
    holder = InterProcessMutex(holder_client, zk_path)
    assert holder.acquire(SOON)

    async def main() -> tuple[int, int]:
        lock = aio.InterProcessMutex(waiter_client, zk_path)

        async def waiter() -> bool:
            return await lock.acquire()

        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            tasks = [asyncio.create_task(waiter()) for _ in range(N)]
            deadline = time.monotonic() + SOON
            while len(children(holder_client, zk_path)) < N + 1:
                assert time.monotonic() < deadline, "the waiters did not queue"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # every waiter past its listing
            used, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return used - start, peak - start

    used, peak = run(main())
    holder.release()
    assert used / N < 20_000, f"{used / N:.0f} bytes per waiter"
    assert peak / N < 20_000, f"{peak / N:.0f} bytes per waiter at the peak"
    eventually(lambda: children(holder_client, zk_path) == [], what="nothing left")


def test_1000_deletes_owed_while_disconnected_are_sent_once_the_connection_is_back(
    zk_server: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """Their requests are not sent from kazoo's connection thread, which alone empties the pipe
    that wakes it: a thousand of them would fill it and stop the client for good."""
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = zk_client_factory(
            hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT
        )
        locks = [InterProcessMutex(client, f"{zk_path}/{n}") for n in range(N)]
        for lock in locks:
            assert lock.acquire(SOON)
        proxy.blackhole()
        proxy.drop_connections()
        eventually(lambda: not client.connected, what="disconnected")
        for lock in locks:
            lock.release()  # owed: sent once the connection is back
        proxy.heal()
        observer = zk_client_factory()
        eventually(lambda: all_empty(observer, zk_path), what="every owed delete landed")
        assert client.connected
        client.stop()


@pytest.mark.parametrize("kind", ["mutex", "read", "lease"])
def test_a_held_lock_keeps_a_few_kilobytes(
    zk_client_factory: ClientFactory, zk_path: str, kind: str
) -> None:
    """What a process keeps per held lock, the recipe object included: nothing is made for an
    event nobody waits on or callbacks nobody added (each a deque of 0.75 kB), and a read lock
    keeps no such pieces for its unused write side. (The benchmark measures RSS, its target 5 kB;
    this counts what Python allocates, which RSS exceeds.)"""
    import tracemalloc

    client = zk_client_factory()
    count = 300

    def hold(n: int) -> Any:
        path = f"{zk_path}/{n}"
        if kind == "mutex":
            mutex = InterProcessMutex(client, path)
            assert mutex.acquire(SOON)
            assert mutex.is_held()  # its node watched now
            return mutex
        if kind == "read":
            rwlock = InterProcessReadWriteLock(client, path)
            assert rwlock.read_lock().acquire(SOON)
            assert rwlock.read_lock().is_held()
            return rwlock
        semaphore = InterProcessSemaphoreV2(client, path, 2)
        lease = semaphore.acquire(SOON)
        assert lease is not None
        assert lease.is_held()
        return semaphore, lease

    def settled() -> int:
        """Traced memory once the client is idle: the least of a few readings between round
        trips, so that what the client's own threads hold for a moment (a reply being read, a
        request being written) is not counted as kept."""
        readings = []
        for _ in range(5):
            client.sync("/")
            gc.collect()
            readings.append(tracemalloc.get_traced_memory()[0])
        return min(readings)

    warm = [hold(n) for n in range(10)]  # the client's and the services' own memory first
    tracemalloc.start()
    try:
        start = settled()
        held = [hold(n) for n in range(10, 10 + count)]
        used = settled() - start
    finally:
        tracemalloc.stop()
    assert used / count < 5_000, f"{used / count:.0f} bytes per held {kind}"
    for item in warm + held:
        if kind == "lease":
            item[1].close()
        elif kind == "read":
            item.read_lock().release()
        else:
            item.release()
    eventually(lambda: all_empty(client, zk_path), what="nothing left")
