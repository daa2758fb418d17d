"""More scenarios across languages (see ``test_recipe_scenarios``): SharedCount, the atomic
numbers, barriers, and the asyncio front end on each recipe beside Java's, on Curator 5.4 and
5.9 alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import (
    CorruptedDataError,
    CreateMode,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    SharedCount,
    aio,
)
from pycurator.testing import (
    SOON,
    ClientFactory,
    JavaCuratorCache,
    JavaDistributedAtomicInteger,
    JavaDistributedAtomicLong,
    JavaDistributedBarrier,
    JavaDistributedDoubleBarrier,
    JavaGroupMember,
    JavaSharedCount,
    children,
    eventually,
)
from pycurator.testing._java_calls import java_bytes

from .conftest import CuratorFactory
from .test_recipe_scenarios import CountHeard, _event_of
from .test_recipe_scenarios import closing as closing  # the fixture

pytestmark = pytest.mark.usefixtures("no_orphans")


# -- SharedCount --------------------------------------------------------------------------------


def test_shared_counts_hear_each_change_and_refuse_stale_versions_alike(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """Each side's listener is told each value the other sets, in order; a versioned set from
    a value read before the other's change fails on both sides, and leaves each reading the
    newest value at once."""
    path = f"{zk_path}/count"
    heard = CountHeard()
    with (
        JavaSharedCount(curator, path, 0) as java,
        SharedCount(zk_client_factory(), path, 0) as python,
    ):
        java.start()
        python.add_listener(heard)
        for value in (1, 2, 3):
            java.set_count(value)
            heard.wait_for(lambda told, value=value: told[-1:] == [value], f"{value} told")  # type: ignore[misc]
        stale_python, stale_java = python.get_versioned_value(), java.get_versioned_value()
        assert stale_python.value == stale_java.value == 3
        python.set_count(4)
        assert java.told.wait_for(lambda told: told[-1:] == [4], SOON)
        assert not java.try_set_count(stale_java, 5)
        assert java.get_count() == 4
        java.set_count(6)
        heard.wait_for(lambda told: told[-1:] == [6], "6 told")
        assert not python.try_set_count(stale_python, 7)
        assert python.get_count() == 6
        fresh = python.get_versioned_value()
        assert python.try_set_count(fresh, 8)
        assert java.told.wait_for(lambda told: told[-1:] == [8], SOON)
        told = heard.wait_for(lambda told: told[-1:] == [8], "8 told")
        # each told once, in order (Python's own 4, overtaken by Java's 6, may come as one)
        assert [count for count in told if count != 4] == [1, 2, 3, 6, 8]


# -- DistributedAtomicLong / Integer ------------------------------------------------------------


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def test_a_long_java_initialized_takes_python_and_java_operations_alike(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/long"
    retry = KazooRetry(max_tries=3)
    java = JavaDistributedAtomicLong(curator, path, retry)
    python = DistributedAtomicLong(zk, path, retry)
    assert java.initialize(10) is True
    assert python.initialize(0) is False
    value = python.increment()
    assert (value.succeeded, value.pre_value, value.post_value) == (True, 10, 11)
    assert java.get().pre_value == 11
    failed, theirs = python.compare_and_set(10, 20), java.compare_and_set(10, 20)
    assert (
        (failed.succeeded, failed.pre_value, failed.post_value)
        == (
            theirs.succeeded,
            theirs.pre_value,
            theirs.post_value,
        )
        == (False, 11, 0)
    )
    assert java.compare_and_set(11, -5).succeeded
    assert python.subtract(2).post_value == -7
    value = python.try_set(42)
    assert (value.succeeded, value.pre_value, value.post_value) == (True, -7, 42)
    java.force_set(-1)
    assert python.get().pre_value == -1
    python.force_set(2**40)
    assert java.get().pre_value == 2**40
    assert zk.get(path)[0] == long_bytes(2**40)


def test_atomic_numbers_read_nodes_of_another_length_as_java_does(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    """Java reads the first 4 or 8 bytes of a longer node; an Integer's node read by a Long
    is refused by both; a Long written on an Integer's node writes 8 bytes on both sides."""
    retry = KazooRetry(max_tries=3)
    path = f"{zk_path}/n"
    zk.create(path, long_bytes(7), makepath=True)  # a Long's 7: an Integer reads 0
    java_int = JavaDistributedAtomicInteger(curator, path, retry)
    python_int = DistributedAtomicInteger(zk, path, retry)
    assert python_int.get().pre_value == java_int.get().pre_value == 0
    value = python_int.increment()
    assert (value.pre_value, value.post_value) == (0, 1)
    assert zk.get(path)[0] == (1).to_bytes(4, "big")
    java_long = JavaDistributedAtomicLong(curator, path, retry)
    python_long = DistributedAtomicLong(zk, path, retry)
    with pytest.raises(Exception, match="Corrupted"):
        java_long.get()
    with pytest.raises(CorruptedDataError):
        python_long.get()
    with pytest.raises(CorruptedDataError):
        python_long.increment()
    assert zk.get(path)[0] == (1).to_bytes(4, "big")  # nothing written
    python_long.force_set(3)
    assert java_int.get().pre_value == 0 and java_long.get().pre_value == 3
    zk.set(path, b"")
    assert python_long.get().pre_value == java_long.get().pre_value == 0
    assert python_long.compare_and_set(0, 1).succeeded is java_long.compare_and_set(0, 1).succeeded


# -- barriers -----------------------------------------------------------------------------------


def test_a_barrier_java_sets_holds_python_coroutines_until_java_removes_it(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/gate"
    java = JavaDistributedBarrier(curator, path)
    java.set_barrier()
    client = zk_client_factory()

    async def main() -> None:
        barrier = aio.DistributedBarrier(client, path)
        assert await barrier.wait_on_barrier(0.2) is False
        waiters = [asyncio.ensure_future(barrier.wait_on_barrier(SOON)) for _ in range(3)]
        await asyncio.sleep(0.2)
        assert not any(waiter.done() for waiter in waiters)
        await asyncio.get_running_loop().run_in_executor(None, java.remove_barrier)
        assert await asyncio.gather(*waiters) == [True] * 3
        await barrier.set_barrier()
        java_waits = asyncio.get_running_loop().run_in_executor(None, java.wait_on_barrier, SOON)
        await asyncio.sleep(0.2)
        assert not java_waits.done()
        await barrier.remove_barrier()
        assert await java_waits is True

    asyncio.run(main())


def test_java_and_asyncio_members_of_a_double_barrier_enter_and_leave_together(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    closing: list[Any],
) -> None:
    path = f"{zk_path}/double"
    javas = [JavaDistributedDoubleBarrier(curator_factory(), path, 4) for _ in range(2)]
    closing += javas
    clients = [zk_client_factory() for _ in range(2)]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pythons = [aio.DistributedDoubleBarrier(client, path, 4) for client in clients]
        entering = [loop.run_in_executor(None, java.enter, SOON) for java in javas]
        entering += [asyncio.ensure_future(python.enter(SOON)) for python in pythons]
        assert await asyncio.gather(*entering) == [True] * 4
        assert "ready" in children(zk, path) and len(children(zk, path)) == 5
        leaving = [loop.run_in_executor(None, java.leave, SOON) for java in javas]
        leaving += [asyncio.ensure_future(python.leave(SOON)) for python in pythons]
        assert await asyncio.gather(*leaving) == [True] * 4

    asyncio.run(main())
    eventually(lambda: children(zk, path) == [], what="the barrier empty")


def test_asyncio_recipes_beside_javas(
    curator: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    closing: list[Any],
) -> None:
    """The asyncio front end on each recipe, Java beside it: a cache's ``async for`` stream
    tells Java's events, a member sees Java's and is seen, a count hears Java's sets, a node
    deleted by Java comes back, increments of both sides add up."""
    root, group, count_path = f"{zk_path}/tree", f"{zk_path}/group", f"{zk_path}/count"
    zk.ensure_path(root)
    java_cache = JavaCuratorCache(curator, root)
    java_member = JavaGroupMember(curator, group, "java", b"j")
    java_count = JavaSharedCount(curator, count_path, 0)
    java_long = JavaDistributedAtomicLong(curator, f"{zk_path}/long", KazooRetry(max_tries=20))
    closing += [java_cache, java_member, java_count, java_long]
    java_cache.start()
    java_member.start()
    java_count.start()
    assert java_cache.initialized.wait(SOON)
    client = zk_client_factory()

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def in_java(call: Callable[..., Any], *args: Any) -> Any:
            return loop.run_in_executor(None, call, *args)

        cache = aio.CuratorCache(client, root)
        stream = cache.events()
        await cache.start()
        assert await cache.wait_initialized(SOON)
        member = aio.GroupMember(client, group, "python", b"p")
        await member.start()
        count = aio.SharedCount(client, count_path, 0)
        told: list[int] = []
        count.add_listener(lambda _shared, value: told.append(value))
        await count.start()
        node = aio.PersistentNode(client, f"{zk_path}/kept", CreateMode.EPHEMERAL, b"k")
        await node.start()
        try:
            assert await node.wait_for_initial_create(SOON)
            for write, held in (
                (lambda: curator.create().forPath(f"{root}/a", java_bytes(b"1")), b"1"),
                (lambda: curator.setData().forPath(f"{root}/a", java_bytes(b"2")), b"2"),
                (lambda: curator.delete().forPath(f"{root}/a"), None),
            ):
                await in_java(write)  # each awaited in the cache: states a read may merge
                await in_java(
                    eventually,
                    lambda held=held: getattr(cache.get(f"{root}/a"), "data", None) == held,
                )
            events: list[tuple[str, str, bytes | None, bytes | None]] = []

            async def four() -> None:
                async for event in stream:
                    events.append(_event_of(*event))
                    if len(events) == 4:
                        return

            await asyncio.wait_for(four(), SOON)
            await in_java(java_cache.wait_for_events, 4, SOON)
            theirs = [(e.type, e.path, e.old_data, e.data) for e in java_cache.events]
            assert events == theirs
            everyone = {"java": b"j", "python": b"p"}
            await in_java(eventually, lambda: member.get_current_members() == everyone)
            await in_java(eventually, lambda: java_member.get_current_members() == everyone)
            await in_java(java_count.set_count, 5)
            await in_java(eventually, lambda: told[-1:] == [5])
            await count.set_count(6)
            assert await in_java(java_count.told.wait_for, lambda t: t[-1:] == [6], SOON)
            await in_java(curator.delete().forPath, f"{zk_path}/kept")
            await in_java(eventually, lambda: zk.exists(f"{zk_path}/kept") is not None)
            along = aio.DistributedAtomicLong(client, f"{zk_path}/long", KazooRetry(max_tries=20))

            async def ours() -> int:
                return sum([(await along.increment()).succeeded for _ in range(10)])

            def theirs_count() -> int:
                return sum(java_long.increment().succeeded for _ in range(10))

            done = await asyncio.gather(ours(), in_java(theirs_count))
            assert (await along.get()).pre_value == sum(done)
        finally:
            await node.close()
            await count.close()
            await member.close()
            await stream.aclose()
            await cache.close()

    asyncio.run(main())
