"""The threaded and the asyncio locks answer alike where one rule decides for both: how a
multi-lock asks each member whether it is still held, and the read/write lock's ``lock_data``."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    LockLostError,
    aio,
)
from pycurator._cores.multilock import followed
from pycurator.testing import ClientFactory

from .aio_support import run
from .support import SOON

#: What a multi-lock says: in this process, ``is_held()``, and what ``check()`` says.
Answer = tuple[bool, bool, str]

#: What both front ends answer while every member is held, then once member b's node was
#: deleted on the server (and its client has seen it): a member that follows its node tells;
#: a plain member knows only its bookkeeping, and still counts as held.
EXPECTED: dict[str, list[Answer]] = {
    "mutexes": [(True, True, "held"), (True, False, "lost: lock node deleted")],
    "semaphore mutexes": [(True, True, "held"), (True, False, "lost: lock node deleted")],
    "plain members": [(True, True, "held"), (True, True, "held")],
}


class PlainMember:
    """A user's lock with only what a multi-lock needs: nothing that follows a node."""

    def __init__(self, lock: InterProcessMutex | InterProcessSemaphoreMutex) -> None:
        self.inner = lock

    def acquire(self, timeout: float | None = None) -> bool:
        return self.inner.acquire(timeout)

    def release(self) -> None:
        self.inner.release()

    def is_acquired_in_this_process(self) -> bool:
        return self.inner.is_acquired_in_this_process()


class AsyncPlainMember:
    """The asyncio form of :class:`PlainMember`."""

    def __init__(self, lock: aio.InterProcessMutex | aio.InterProcessSemaphoreMutex) -> None:
        self.inner = lock

    async def acquire(self, timeout: float | None = None) -> bool:
        return await self.inner.acquire(timeout)

    async def release(self) -> None:
        await self.inner.release()

    def is_acquired_in_this_process(self) -> bool:
        return self.inner.is_acquired_in_this_process()


def threaded_check(check: Callable[[], None]) -> str:
    try:
        check()
    except LockLostError as lost:
        return f"lost: {lost.reason}"
    return "held"


async def asyncio_check(check: Callable[[], Awaitable[None]]) -> str:
    try:
        await check()
    except LockLostError as lost:
        return f"lost: {lost.reason}"
    return "held"


def node_of(lock: Any) -> str:
    """The node a held mutex or semaphore mutex of either front end holds."""
    node = lock.lease.path if hasattr(lock, "lease") else lock.lock_path
    assert isinstance(node, str)
    return node


def threaded_answers(factory: ClientFactory, path: str, members: str) -> list[Answer]:
    client = factory()
    make = InterProcessSemaphoreMutex if members == "semaphore mutexes" else InterProcessMutex
    inner = [make(client, f"{path}/a"), make(client, f"{path}/b")]
    locks: list[Any] = [PlainMember(m) for m in inner] if members == "plain members" else inner
    multi = InterProcessMultiLock(locks)

    def answer() -> Answer:
        held = multi.is_held()
        return multi.is_acquired_in_this_process(), held, threaded_check(multi.check)

    answers = []
    with multi:
        answers.append(answer())
        factory().delete(node_of(inner[1]))
        assert inner[1].lost_event.wait(SOON)
        answers.append(answer())
    assert not multi.is_acquired_in_this_process()
    return answers


def asyncio_answers(factory: ClientFactory, path: str, members: str) -> list[Answer]:
    client = factory()

    async def main() -> list[Answer]:
        semaphores = members == "semaphore mutexes"
        make = aio.InterProcessSemaphoreMutex if semaphores else aio.InterProcessMutex
        inner = [make(client, f"{path}/a"), make(client, f"{path}/b")]
        locks: list[Any] = (
            [AsyncPlainMember(m) for m in inner] if members == "plain members" else inner
        )
        multi = aio.InterProcessMultiLock(locks)

        async def answer() -> Answer:
            held = await multi.is_held()
            return multi.is_acquired_in_this_process(), held, await asyncio_check(multi.check)

        answers = []
        async with multi:
            answers.append(await answer())
            factory().delete(node_of(inner[1]))
            await asyncio.wait_for(inner[1].lost_event.wait(), SOON)
            answers.append(await answer())
        assert not multi.is_acquired_in_this_process()
        return answers

    return run(main())


@pytest.mark.parametrize("members", sorted(EXPECTED))
def test_a_multi_lock_answers_alike_in_both_front_ends_held_and_after_a_node_is_deleted(
    zk_client_factory: ClientFactory, zk_path: str, members: str
) -> None:
    threaded = threaded_answers(zk_client_factory, f"{zk_path}/threaded", members)
    asynchronous = asyncio_answers(zk_client_factory, f"{zk_path}/asyncio", members)
    assert threaded == EXPECTED[members]
    assert asynchronous == threaded


def test_one_rule_says_which_member_follows_its_node_for_both_front_ends() -> None:
    client = KazooClient(hosts="127.0.0.1:1")  # never started: nothing is sent
    threaded, asynchronous = InterProcessMutex(client, "/a"), aio.InterProcessMutex(client, "/a")
    assert followed(threaded) is threaded
    assert followed(asynchronous) is asynchronous
    assert followed(InterProcessReadWriteLock(client, "/rw").read_lock()) is not None
    assert followed(InterProcessSemaphoreMutex(client, "/s")) is not None
    assert followed(aio.InterProcessSemaphoreMutex(client, "/s")) is not None
    assert followed(PlainMember(threaded)) is None
    assert followed(AsyncPlainMember(asynchronous)) is None


READ_WRITE_LOCKS: dict[str, Any] = {
    "threaded": InterProcessReadWriteLock,
    "asyncio": aio.InterProcessReadWriteLock,
}


@pytest.mark.parametrize("front_end", sorted(READ_WRITE_LOCKS))
def test_lock_data_is_the_node_data_with_a_warning_at_the_caller_in_both_front_ends(
    zk: KazooClient, zk_path: str, front_end: str
) -> None:
    make = READ_WRITE_LOCKS[front_end]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lock = make(zk, zk_path, lock_data=b"old-name")
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "use node_data=" in str(caught[0].message)
    assert caught[0].filename == __file__
    with pytest.raises(TypeError, match=r"give node_data or lock_data \(its former name\)"):
        make(zk, zk_path, node_data=b"a", lock_data=b"b")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="lock_data must be"):
        make(zk, zk_path, lock_data="text")

    if front_end == "threaded":
        with lock.read_lock() as read:
            assert zk.get(read.lock_path)[0] == b"old-name"
        return

    async def main() -> None:
        async with lock.read_lock() as read:
            assert zk.get(read.lock_path)[0] == b"old-name"

    run(main())
