"""pycurator.aio against Java Curator 5.x: coroutines queue behind Java holders and the reverse,
and Java threads, Python threads and Python tasks keep mutual exclusion on one path."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessMutex, aio
from pycurator.testing import (
    ClientFactory,
    JavaLatch,
    JavaMutex,
    JavaReadWriteLock,
    JavaSemaphore,
)
from tests.support import SOON, Worker, children, eventually


async def _until(predicate: Callable[[], bool], what: str) -> None:
    end = asyncio.get_running_loop().time() + SOON
    while not predicate():
        assert asyncio.get_running_loop().time() < end, f"not true within {SOON}s: {what}"
        await asyncio.sleep(0.02)


def test_java_holds_and_a_coroutine_waits_then_gets_it(
    curator: Any, zk: KazooClient, zk_path: str, no_orphans: None
) -> None:
    java = JavaMutex(curator, zk_path)
    assert java.acquire(SOON)

    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        assert await lock.acquire(0.3) is False

        async def take() -> None:
            assert await lock.acquire(SOON)
            assert await lock.participant_nodes() == [lock.lock_path]
            await lock.release()

        waiter = asyncio.create_task(take())
        await _until(lambda: len(children(zk, zk_path)) == 2, "the coroutine queued")
        assert not waiter.done()
        java.release()  # on the thread that acquired it, as Curator requires
        await waiter

    asyncio.run(main())


def test_a_coroutine_holds_and_java_waits_then_gets_it(
    curator: Any, zk: KazooClient, zk_path: str, no_orphans: None
) -> None:
    java = JavaMutex(curator, zk_path)

    def java_turn() -> bool:
        got = java.acquire(SOON)
        if got:
            java.release()
        return got

    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        assert await lock.acquire(SOON)
        worker = Worker(java_turn)
        worker.start()
        await _until(lambda: len(children(zk, zk_path)) == 2, "Java queued")
        assert not worker.done.is_set()
        java_view = java.participant_nodes()
        assert java_view == await lock.participant_nodes()
        await lock.release()
        assert await asyncio.get_running_loop().run_in_executor(None, worker.outcome)

    asyncio.run(main())


def test_a_java_thread_a_python_thread_and_a_python_task_keep_mutual_exclusion(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str, no_orphans: None
) -> None:
    rounds = 15
    inside = 0
    overlaps = 0
    turns: list[str] = []
    guard = threading.Lock()

    def enter(who: str) -> None:
        nonlocal inside, overlaps
        with guard:
            inside += 1
            overlaps += inside > 1
            turns.append(who)

    def leave() -> None:
        nonlocal inside
        with guard:
            inside -= 1

    java = JavaMutex(curator, zk_path)
    threaded = InterProcessMutex(zk_client_factory(), zk_path)
    pause = threading.Event()

    def java_loop() -> None:
        for _ in range(rounds):
            assert java.acquire(SOON)
            try:
                enter("java")
                pause.wait(0.003)
                leave()
            finally:
                java.release()

    def thread_loop() -> None:
        for _ in range(rounds):
            assert threaded.acquire(SOON)
            try:
                enter("thread")
                pause.wait(0.003)
                leave()
            finally:
                threaded.release()

    async def main() -> None:
        lock = aio.InterProcessMutex(zk_client_factory(), zk_path)
        workers = [Worker(java_loop), Worker(thread_loop)]
        for worker in workers:
            worker.start()
        for _ in range(rounds):
            async with lock.hold(SOON):
                enter("task")
                await asyncio.sleep(0.003)
                leave()
        loop = asyncio.get_running_loop()
        for worker in workers:
            await loop.run_in_executor(None, worker.outcome)

    asyncio.run(main())
    assert overlaps == 0
    assert sorted(set(turns)) == ["java", "task", "thread"] and len(turns) == 3 * rounds
    eventually(lambda: children(zk_client_factory(), zk_path) == [], what="every node gone")


def test_a_java_semaphore_lease_makes_a_coroutine_wait(
    curator: Any, zk: KazooClient, zk_path: str, no_orphans: None
) -> None:
    java = JavaSemaphore(curator, zk_path, 1)
    lease = java.acquire(SOON)
    assert lease is not None

    async def main() -> None:
        semaphore = aio.InterProcessSemaphoreV2(zk, zk_path, 1)
        assert await semaphore.acquire(timeout=0.3) is None
        waiter = asyncio.create_task(semaphore.acquire(timeout=SOON))
        await _until(lambda: len(children(zk, f"{zk_path}/leases")) == 2, "the coroutine waits")
        lease.close()
        got = await waiter
        assert got is not None
        await got.close()

    asyncio.run(main())


def test_a_java_latch_leads_and_an_awaiting_latch_takes_over_when_it_closes(
    curator: Any, zk: KazooClient, zk_path: str, no_orphans: None
) -> None:
    java = JavaLatch(curator, zk_path, "java-1")
    java.start()
    assert java.wait(SOON)

    async def main() -> None:
        latch = aio.LeaderLatch(zk, zk_path, "python-1")
        await latch.start()
        assert await latch.wait(0.3) is False
        # start() returns before the node is made: it is queued once there are two nodes
        await _until(lambda: len(children(zk, zk_path)) == 2, "the coroutine's latch queued")
        assert [p.id for p in await latch.participants()] == ["java-1", "python-1"]
        java.close()
        assert await latch.wait(SOON)
        assert (await latch.leader()).id == "python-1"
        await latch.close()

    asyncio.run(main())


def test_a_java_writer_excludes_coroutine_readers_and_a_coroutine_writer_excludes_java(
    curator: Any, zk: KazooClient, zk_path: str, no_orphans: None
) -> None:
    java = JavaReadWriteLock(curator, zk_path)
    assert java.write_lock().acquire(SOON)

    async def main() -> None:
        lock = aio.InterProcessReadWriteLock(zk, zk_path)
        assert await lock.read_lock().acquire(0.3) is False

        async def read() -> None:
            assert await lock.read_lock().acquire(SOON)
            await lock.read_lock().release()

        reader = asyncio.create_task(read())
        await _until(lambda: len(children(zk, zk_path)) == 2, "the coroutine reader queued")
        java.write_lock().release()
        await reader
        assert await lock.write_lock().acquire(SOON)
        assert java.read_lock().acquire(0.3) is False
        await lock.write_lock().release()
        assert java.read_lock().acquire(SOON)
        java.read_lock().release()

    asyncio.run(main())
