"""pycurator.aio against a real ZooKeeper server: every recipe awaited from asyncio tasks."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError

from pycurator import InterProcessMutex as ThreadedMutex
from pycurator import LockLostError, LockNotOwnedError, LockTimeout, aio
from pycurator._client import kazoo_internals
from pycurator._client.sending import prefixed
from pycurator.testing import (
    ClientFactory,
    expire_kazoo_session,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import has_child_watch, run, until, watched_paths
from .support import SOON, Worker, children, eventually


def test_a_mutex_is_held_in_async_with_and_released_after(zk: KazooClient, zk_path: str) -> None:
    lock = aio.InterProcessMutex(zk, zk_path)

    async def main() -> None:
        async with lock:
            assert len(children(zk, zk_path)) == 1
            transaction = lock.guarded_transaction()
            transaction.create(f"{zk_path}-written", b"x")
            assert await aio.commit(transaction) == [True, f"{zk_path}-written"]
            assert await lock.is_held()
            await lock.check()
            assert lock.fencing_token > 0
            assert lock.lock_path is not None
            assert await lock.participant_nodes() == [lock.lock_path]
        assert children(zk, zk_path) == []
        assert not lock.is_acquired_in_this_process()

    run(main())
    zk.delete(f"{zk_path}-written")


def test_the_recipes_run_under_uvloop(zk: KazooClient, zk_path: str) -> None:
    uvloop = pytest.importorskip("uvloop")

    async def main() -> None:
        async with aio.InterProcessMutex(zk, zk_path) as lock:
            assert await lock.is_held()
        lease = await aio.InterProcessSemaphoreV2(zk, f"{zk_path}-sem", 1).acquire(SOON)
        assert lease is not None
        await lease.close()

    uvloop.run(main())
    assert children(zk, zk_path) == []


def test_a_timed_acquire_returns_false_and_leaves_no_node(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = ThreadedMutex(zk_client_factory(), zk_path)
    waiter_client = zk_client_factory()
    assert holder.acquire(SOON)

    async def main() -> None:
        lock = aio.InterProcessMutex(waiter_client, zk_path)
        assert await lock.acquire(0.3) is False
        assert await lock.acquire(0) is False
        with pytest.raises(LockTimeout):
            async with lock.hold(0.1):
                pass

    run(main())
    assert children(waiter_client, zk_path) == [holder.lock_path.rsplit("/", 1)[1]]  # type: ignore[union-attr]
    assert watched_paths(waiter_client) == []
    holder.release()


def test_the_mutex_is_reentrant_per_task_and_exclusive_between_tasks(
    zk: KazooClient, zk_path: str
) -> None:
    lock = aio.InterProcessMutex(zk, zk_path)

    async def other_task() -> tuple[bool, bool]:
        owned = lock.is_owned_by_current_task()
        return owned, await lock.acquire(0.2)

    async def release_elsewhere() -> None:
        await lock.release()

    async def main() -> None:
        assert await lock.acquire()
        assert await lock.acquire(0)  # re-entry: no request
        assert len(children(zk, zk_path)) == 1
        assert await asyncio.create_task(other_task()) == (False, False)
        with pytest.raises(LockNotOwnedError):
            await asyncio.create_task(release_elsewhere())
        await lock.release()
        assert lock.is_owned_by_current_task()
        await lock.release()
        assert children(zk, zk_path) == []
        with pytest.raises(LockNotOwnedError):
            await lock.release()

    run(main())


def test_a_waiting_task_gets_the_lock_when_the_holder_releases(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        first, second = aio.InterProcessMutex(a, zk_path), aio.InterProcessMutex(b, zk_path)
        assert await first.acquire()

        async def wait_in_a_task() -> bool:
            return await second.acquire(SOON)

        waiter = asyncio.create_task(wait_in_a_task())
        await until(lambda: len(children(a, zk_path)) == 2, "the waiter queued")
        assert not waiter.done()
        await first.release()
        assert await waiter
        assert second.is_owned_by_current_task() is False  # held by the waiter task
        assert second.is_acquired_in_this_process()

    run(main())


@pytest.mark.parametrize("how", ["cancel", "timeout", "wait_for"])
def test_a_task_cancelled_while_waiting_leaves_no_node_and_no_watch(
    zk_client_factory: ClientFactory, zk_path: str, how: str
) -> None:
    holder_client, waiter_client = zk_client_factory(), zk_client_factory()
    holder = ThreadedMutex(holder_client, zk_path)
    assert holder.acquire(SOON)

    async def main() -> None:
        lock = aio.InterProcessMutex(waiter_client, zk_path)
        if how == "cancel":
            task = asyncio.create_task(lock.acquire())
            await until(lambda: len(children(holder_client, zk_path)) == 2, "queued")
            await until(lambda: watched_paths(waiter_client) != [], "the waiter watches")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        elif how == "timeout":
            if sys.version_info < (3, 11):
                pytest.skip("asyncio.timeout is new in Python 3.11")
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(1.0):  # type: ignore[attr-defined,unused-ignore]
                    await lock.acquire()
        else:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(lock.acquire(), 1.0)
        assert not lock.is_acquired_in_this_process()

    run(main())
    eventually(lambda: len(children(holder_client, zk_path)) == 1, what="the waiter's node gone")
    eventually(lambda: watched_paths(waiter_client) == [], what="the waiter's watch gone")
    holder.release()


def test_a_task_cancelled_while_holding_in_async_with_releases(
    zk: KazooClient, zk_path: str
) -> None:
    lock = aio.InterProcessMutex(zk, zk_path)
    inside = asyncio.Event

    async def main() -> None:
        entered = inside()

        async def hold() -> None:
            async with lock:
                entered.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(hold())
        await entered.wait()
        assert len(children(zk, zk_path)) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert children(zk, zk_path) == []
        assert not lock.is_acquired_in_this_process()

    run(main())


def test_500_waiting_tasks_add_no_threads_and_leave_nothing_when_cancelled(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder_client, waiter_client = zk_client_factory(), zk_client_factory()
    holder = ThreadedMutex(holder_client, zk_path)
    assert holder.acquire(SOON)
    assert holder.is_held()  # its node's watch is set now, not by a worker later
    lock = aio.InterProcessMutex(waiter_client, zk_path)

    async def waiter() -> bool:  # its own task calls acquire: each waiter owns its attempt
        return await lock.acquire()

    async def main() -> None:
        threads = threading.active_count()
        tasks = [asyncio.create_task(waiter()) for _ in range(500)]
        await until(lambda: len(children(holder_client, zk_path)) == 501, "500 waiters queued")
        await until(lambda: len(watched_paths(waiter_client)) == 500, "500 watches set")
        assert threading.active_count() <= threads
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(result, asyncio.CancelledError) for result in results)

    run(main())
    eventually(lambda: len(children(holder_client, zk_path)) == 1, what="every waiter's node gone")
    eventually(lambda: watched_paths(waiter_client) == [], what="every waiter's watch gone")
    holder.release()


def test_one_client_serves_threads_and_tasks_on_one_lock_with_mutual_exclusion(
    zk: KazooClient, zk_path: str
) -> None:
    inside = 0
    overlaps = 0
    guard = threading.Lock()

    def enter() -> None:
        nonlocal inside, overlaps
        with guard:
            inside += 1
            overlaps += inside > 1

    def leave() -> None:
        nonlocal inside
        with guard:
            inside -= 1

    threaded = ThreadedMutex(zk, zk_path)

    def thread_loop() -> None:
        for _ in range(20):
            with threaded:
                enter()
                threading.Event().wait(0.002)
                leave()

    async def task_loop(lock: aio.InterProcessMutex) -> None:
        for _ in range(20):
            async with lock:
                enter()
                await asyncio.sleep(0.002)
                leave()

    async def main() -> None:
        worker = Worker(thread_loop)
        worker.start()
        await asyncio.gather(
            task_loop(aio.InterProcessMutex(zk, zk_path)),
            task_loop(aio.InterProcessMutex(zk, zk_path)),
        )
        await asyncio.get_running_loop().run_in_executor(None, worker.outcome)

    run(main())
    assert overlaps == 0
    assert children(zk, zk_path) == []


def test_read_locks_share_write_locks_exclude_and_the_writer_may_downgrade(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        ours, theirs = (
            aio.InterProcessReadWriteLock(a, zk_path),
            aio.InterProcessReadWriteLock(b, zk_path),
        )
        assert await ours.read_lock().acquire(SOON)
        assert await theirs.read_lock().acquire(SOON)
        assert await theirs.write_lock().acquire(0.2) is False
        await ours.read_lock().release()
        await theirs.read_lock().release()
        assert await ours.write_lock().acquire(SOON)
        assert await theirs.read_lock().acquire(0.2) is False
        assert await ours.read_lock().acquire(0)  # downgrade by the writing task
        await ours.write_lock().release()
        assert await theirs.read_lock().acquire(SOON)
        assert len(await ours.read_lock().participant_nodes()) == 2
        await ours.read_lock().release()
        await theirs.read_lock().release()

    run(main())
    assert children(a, zk_path) == []


def test_semaphore_leases_count_time_out_and_return(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        ours, theirs = (aio.InterProcessSemaphoreV2(c, zk_path, max_leases=3) for c in (a, b))
        leases = await ours.acquire_many(2, timeout=SOON)
        assert leases is not None and len(leases) == 2
        lease = await theirs.acquire(timeout=SOON)
        assert lease is not None
        assert await lease.is_held()
        assert await lease.data() == lease_data(b)
        assert await theirs.acquire(timeout=0.3) is None
        assert await theirs.acquire_many(2, timeout=0.3) is None
        assert len(await ours.participant_nodes()) == 3
        waiter = asyncio.create_task(theirs.acquire(timeout=SOON))
        await lease.close()
        got = await waiter
        assert got is not None
        await got.close()
        await ours.return_all(leases)
        assert await ours.participant_nodes() == []

    run(main())
    assert children(a, f"{zk_path}/locks") == []


def lease_data(client: KazooClient) -> bytes:
    from pycurator._client.transport import default_node_data

    return default_node_data()


def test_a_task_cancelled_waiting_for_a_lease_leaves_no_node_and_no_watch(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        held = await aio.InterProcessSemaphoreV2(a, zk_path, 1).acquire(SOON)
        assert held is not None
        waiting = aio.InterProcessSemaphoreV2(b, zk_path, 1)
        task = asyncio.create_task(waiting.acquire())
        await until(lambda: len(children(a, f"{zk_path}/leases")) == 2, "the waiter's lease")
        leases = prefixed(b, f"{zk_path}/leases")
        await until(
            lambda: bool(kazoo_internals.watchers(b, leases, children=True)), "the waiter watches"
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: len(children(a, f"{zk_path}/leases")) == 1, "its lease gone")
        assert children(a, f"{zk_path}/locks") == []
        assert watched_paths(b) == []
        assert not has_child_watch(b, f"{zk_path}/leases")
        assert kazoo_internals.watchers(b, leases, children=True) == set()
        await held.close()

    run(main())


def test_the_semaphore_mutex_is_released_from_any_task(zk: KazooClient, zk_path: str) -> None:
    async def main() -> None:
        lock = aio.InterProcessSemaphoreMutex(zk, zk_path)
        assert await lock.acquire(SOON)
        assert await lock.acquire(0.2) is False  # not re-entrant
        assert await lock.is_held()
        assert lock.fencing_token > 0
        assert not lock.lost_event.is_set()
        await asyncio.create_task(lock.release())
        assert lock.lost_event.is_set()
        with pytest.raises(LockNotOwnedError):
            await lock.release()
        async with lock:
            assert lock.is_acquired_in_this_process()
            lost: list[str] = []
            lock.on_lost(lambda _lock, reason: lost.append(reason))
            zk.delete(lock.lease.path)  # type: ignore[union-attr]
            await asyncio.wait_for(lock.lost_event.wait(), SOON)
            await until(lambda: lost == ["lock node deleted"], "the callback ran")

    run(main())
    assert children(zk, f"{zk_path}/leases") == []


def test_a_multi_lock_takes_all_or_none(zk_client_factory: ClientFactory, zk_path: str) -> None:
    a, b = zk_client_factory(), zk_client_factory()
    paths = [f"{zk_path}/one", f"{zk_path}/two"]

    async def main() -> None:
        blocker = aio.InterProcessMutex(b, paths[1])
        assert await blocker.acquire(SOON)
        multi = aio.InterProcessMultiLock(a, paths)
        assert await multi.acquire(0.3) is False
        assert children(a, paths[0]) == []
        await blocker.release()
        async with multi:
            assert await multi.is_held()
            await multi.check()
        assert children(a, paths[0]) == [] and children(a, paths[1]) == []

    run(main())


def test_a_lost_session_sets_the_lost_event_and_runs_callbacks_on_the_loop(
    zk: KazooClient, zk_path: str
) -> None:
    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        reasons: list[tuple[Any, str]] = []
        loop_thread = threading.get_ident()
        threads: list[int] = []

        def on_lost(lost: Any, reason: str) -> None:
            threads.append(threading.get_ident())
            reasons.append((lost, reason))

        lock.on_lost(on_lost)
        assert await lock.acquire(SOON)
        await asyncio.get_running_loop().run_in_executor(None, expire_kazoo_session, zk)
        await asyncio.wait_for(lock.lost_event.wait(), SOON)
        await until(lambda: bool(reasons), "the callback ran")
        assert reasons[0][0] is lock and threads == [loop_thread]
        assert not await lock.is_held()
        await lock.release()

    run(main())


def test_the_recipes_run_from_anyio_on_its_asyncio_backend(zk: KazooClient, zk_path: str) -> None:
    anyio = pytest.importorskip("anyio")

    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        async with lock:
            with anyio.move_on_after(0.2):
                async with anyio.create_task_group() as group:
                    group.start_soon(aio.InterProcessMutex(zk, zk_path).acquire)
        # the cancelled waiter's node goes (in the background if the scope cancels its delete)
        await until(lambda: children(zk, zk_path) == [], "the waiter's node gone")

    anyio.run(main, backend="asyncio")


def test_a_task_cancelled_at_any_step_of_its_first_try_leaves_no_node(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder_client, waiter_client = zk_client_factory(), zk_client_factory()
    holder = ThreadedMutex(holder_client, zk_path)
    assert holder.acquire(SOON)

    async def main() -> None:
        lock = aio.InterProcessMutex(waiter_client, zk_path)
        for steps in range(12):  # cancelled before, during and after the create and the watch
            task = asyncio.create_task(lock.acquire())
            for _ in range(steps):
                await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    run(main())
    eventually(lambda: len(children(holder_client, zk_path)) == 1, what="every waiter node gone")
    eventually(lambda: watched_paths(waiter_client) == [], what="every waiter watch gone")
    holder.release()


def test_bad_input_is_refused_before_any_request(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    with pytest.raises(ValueError):
        aio.InterProcessMutex(zk, "relative/path")
    with pytest.raises(TypeError):
        aio.InterProcessSemaphoreV2(zk, zk_path, max_leases="3")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        aio.LeaderSelector(zk, zk_path, "not callable")  # type: ignore[arg-type]
    stopped = KazooClient(hosts=zk_server.hosts)  # never started

    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        with pytest.raises(ValueError):
            await lock.acquire(-1)
        with pytest.raises(TypeError):
            await aio.InterProcessSemaphoreV2(zk, zk_path, 2).acquire_many(0.5)  # type: ignore[arg-type]
        with pytest.raises(LockLostError, match="not acquired by this task"):
            await lock.check()
        with pytest.raises(ConnectionClosedError):
            await aio.InterProcessMutex(stopped, zk_path).acquire(0)

    run(main())
    assert children(zk, zk_path) == []
