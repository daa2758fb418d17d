"""Who owns an asyncio hold: the task that calls ``acquire()``, whatever idiom awaits the call.

Before Python 3.12, ``asyncio.wait_for`` awaits its argument in a task of its own; a hold that
belonged to the task running the acquire would then belong to a task that has ended, and nobody
could release it. These tests acquire through each idiom users write and release from the
awaiting code, for every asyncio recipe.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient

from pycurator import LockNotOwnedError, aio

from .aio_support import run
from .support import SOON, children

T = TypeVar("T")

#: How users await an acquire (asyncio.timeout is new in Python 3.11).
IDIOMS = ["await", "wait_for", *(["timeout"] if sys.version_info >= (3, 11) else []), "fail_after"]
IDIOMS.append("task")


async def take(acquire: Callable[[], Awaitable[T]], idiom: str) -> T:
    """Call ``acquire()`` in this task and await it the way ``idiom`` does."""
    if idiom == "await":
        return await acquire()
    if idiom == "wait_for":
        return await asyncio.wait_for(acquire(), SOON)
    if idiom == "timeout":
        async with asyncio.timeout(SOON):  # type: ignore[attr-defined,unused-ignore]
            return await acquire()
    if idiom == "fail_after":
        import anyio

        with anyio.fail_after(SOON):
            return await acquire()
    assert idiom == "task"
    return await asyncio.create_task(acquire())  # type: ignore[arg-type]


def lock_recipes(zk: KazooClient, path: str) -> dict[str, Any]:
    rw = aio.InterProcessReadWriteLock(zk, f"{path}/rw")
    return {
        "mutex": aio.InterProcessMutex(zk, f"{path}/mutex"),
        "read lock": rw.read_lock(),
        "write lock": rw.write_lock(),
        "multi-lock": aio.InterProcessMultiLock(zk, [f"{path}/a", f"{path}/b"]),
        "semaphore mutex": aio.InterProcessSemaphoreMutex(zk, f"{path}/semaphore"),
    }


def nodes_below(zk: KazooClient, path: str) -> list[str]:
    """Every lock and lease node below ``path`` (parents left by the recipes aside)."""
    found: list[str] = []
    for child in children(zk, path):
        full = f"{path}/{child}"
        if child.startswith("_c_"):
            found.append(full)
        else:
            found.extend(nodes_below(zk, full))
    return found


@pytest.mark.parametrize("idiom", IDIOMS)
@pytest.mark.parametrize(
    "recipe", ["mutex", "read lock", "write lock", "multi-lock", "semaphore mutex"]
)
def test_the_awaiting_task_owns_and_releases_what_it_acquired(
    zk: KazooClient, zk_path: str, recipe: str, idiom: str
) -> None:
    async def main() -> None:
        lock = lock_recipes(zk, zk_path)[recipe]
        assert await take(lambda: lock.acquire(SOON), idiom)
        assert lock.is_acquired_in_this_process()
        if hasattr(lock, "is_owned_by_current_task"):
            assert lock.is_owned_by_current_task()
        assert len(nodes_below(zk, zk_path)) in (1, 2)  # two for the multi-lock
        await lock.release()
        assert not lock.is_acquired_in_this_process()
        assert nodes_below(zk, zk_path) == []

    run(main())


@pytest.mark.parametrize("idiom", IDIOMS)
def test_a_lease_taken_through_any_idiom_is_returned_by_the_awaiting_code(
    zk: KazooClient, zk_path: str, idiom: str
) -> None:
    async def main() -> None:
        semaphore = aio.InterProcessSemaphoreV2(zk, zk_path, 2)
        lease = await take(lambda: semaphore.acquire(SOON), idiom)
        assert lease is not None and await lease.is_held()
        await lease.close()
        assert nodes_below(zk, zk_path) == []

    run(main())


@pytest.mark.parametrize("idiom", [idiom for idiom in IDIOMS if idiom != "await"])
def test_re_entry_stays_per_task_after_any_idiom(zk: KazooClient, zk_path: str, idiom: str) -> None:
    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        assert await take(lambda: lock.acquire(SOON), idiom)
        node = lock.lock_path
        assert await lock.acquire(0)  # re-entry: the same node, no request
        assert lock.lock_path == node and len(children(zk, zk_path)) == 1

        async def other() -> bool:
            return await lock.acquire(0.2)

        assert await asyncio.create_task(other()) is False  # another task still waits
        await lock.release()
        assert children(zk, zk_path) == [node.rsplit("/", 1)[1]] if node else False
        await lock.release()
        assert children(zk, zk_path) == []

    run(main())


def test_a_timed_out_wait_for_leaves_the_caller_holding_nothing(
    zk_client_factory: Any, zk_path: str
) -> None:
    holder_client, waiter_client = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        holder = aio.InterProcessMutex(holder_client, zk_path)
        waiter = aio.InterProcessMutex(waiter_client, zk_path)
        assert await holder.acquire(SOON)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(waiter.acquire(), 0.5)
        assert not waiter.is_acquired_in_this_process()
        with pytest.raises(LockNotOwnedError):
            await waiter.release()
        await holder.release()
        assert await asyncio.wait_for(waiter.acquire(), SOON)  # and the next try works
        await waiter.release()

    run(main())
    assert children(holder_client, zk_path) == []


def test_acquires_of_one_task_awaited_together_hold_once_and_count_twice(
    zk: KazooClient, zk_path: str
) -> None:
    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        assert list(await asyncio.gather(lock.acquire(SOON), lock.acquire(SOON))) == [True, True]
        assert len(children(zk, zk_path)) == 1
        await lock.release()
        assert lock.is_owned_by_current_task()
        await lock.release()
        assert children(zk, zk_path) == []

    run(main())


def test_a_hold_whose_task_ended_is_logged_and_any_task_may_release_it(
    zk: KazooClient, zk_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)

        async def acquire_and_leave() -> None:
            assert await lock.acquire(SOON)

        with caplog.at_level(logging.WARNING, logger="pycurator"):
            await asyncio.create_task(acquire_and_leave(), name="forgetful")
            await asyncio.sleep(0)  # the task's done callbacks run
        assert lock.is_acquired_in_this_process() and not lock.is_owned_by_current_task()
        assert any(
            "forgetful ended holding" in record.getMessage()
            and getattr(record, "path", None) == zk_path
            for record in caplog.records
        )
        await lock.release()  # nobody's hold: this task may release it
        assert children(zk, zk_path) == []
        with pytest.raises(LockNotOwnedError):
            await lock.release()

    run(main())


def test_a_hold_released_by_its_task_leaves_no_callback_on_that_task(
    zk: KazooClient, zk_path: str
) -> None:
    """10,000 acquire/release cycles in one long-lived task must not pile up done callbacks."""

    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)
        task = asyncio.current_task()
        assert task is not None
        for _ in range(3):
            async with lock:
                pass
        # a Task keeps its done callbacks in a private list: count through the public API
        seen: list[object] = []
        task.add_done_callback(seen.append)
        assert task.remove_done_callback(seen.append) == 1
        assert task.remove_done_callback(lock._owner_ended) == 0

    run(main())
