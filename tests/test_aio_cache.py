"""pycurator.aio's CuratorCache against a real ZooKeeper server: ``async for`` over its events,
listeners on the loop (coroutines run as tasks), its first load awaited, and its end."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import aio
from pycurator._recipes import cache as cache_protocol

from .aio_support import run
from .support import SOON


@pytest.fixture(params=["watch that stays", "one-shot watches"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(cache_protocol, "ONE_SHOT_ONLY", request.param == "one-shot watches")
    return str(request.param)


def test_async_for_tells_the_load_and_each_change_until_the_cache_closes(
    mode: str, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/a", b"1", makepath=True)

    async def main() -> list[tuple[str, str]]:
        cache = aio.CuratorCache(zk, zk_path)
        events = cache.events()
        await cache.start()
        assert await cache.wait_initialized(SOON)
        assert cache.size() == 2 and cache.get(f"{zk_path}/a") is not None
        seen: list[tuple[str, str]] = []

        async def follow() -> None:
            async for event in events:
                seen.append((event.type.name, event.path))
                if event.type.name == "NODE_DELETED":
                    await cache.close()

        following = asyncio.create_task(follow())
        await asyncio.to_thread(zk.set, f"{zk_path}/a", b"2")
        while len(seen) < 3:  # a delete sent at once may be read before the change is
            await asyncio.sleep(0.01)
        await asyncio.to_thread(zk.delete, f"{zk_path}/a")
        await asyncio.wait_for(following, SOON)  # the loop ended with the cache
        assert cache.size() == 0
        return seen

    assert run(main()) == [
        ("NODE_CREATED", zk_path),
        ("NODE_CREATED", f"{zk_path}/a"),
        ("NODE_CHANGED", f"{zk_path}/a"),
        ("NODE_DELETED", f"{zk_path}/a"),
    ]


def test_listeners_run_on_the_loop_in_order_and_their_coroutines_as_tasks(
    mode: str, zk: KazooClient, zk_path: str
) -> None:
    async def main() -> None:
        loop_thread = threading.current_thread()
        heard: list[Any] = []
        done = asyncio.Event()

        async def later(node: Any) -> None:
            await asyncio.sleep(0)
            heard.append(("later", node.path, threading.current_thread() is loop_thread))
            done.set()

        async with aio.CuratorCache(zk, zk_path) as cache:
            cache.add_listener(
                lambda kind, old, new: heard.append(
                    (kind.name, threading.current_thread() is loop_thread)
                )
            )
            cache.add_listener(aio.CuratorCacheListener.builder().for_creates(later).build())
            assert await cache.wait_initialized(SOON)
            await asyncio.to_thread(zk.create, zk_path, b"r", makepath=True)
            await asyncio.wait_for(done.wait(), SOON)
        assert heard == [("NODE_CREATED", True), ("later", zk_path, True)]
        assert not await cache.wait_initialized(0)  # closed

    run(main())


def test_an_events_iterator_closed_early_ends_and_hears_nothing_more(
    mode: str, zk: KazooClient, zk_path: str
) -> None:
    async def main() -> None:
        async with aio.CuratorCache(zk, zk_path) as cache:
            async with cache.events() as events:
                assert await cache.wait_initialized(SOON)
            assert [event async for event in events] == []
            with pytest.raises(RuntimeError, match="Cannot be started more than once"):
                await cache.start()

    run(main())
