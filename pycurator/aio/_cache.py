"""The asyncio ``CuratorCache``: the cache's core (:mod:`pycurator._cores.cache`), whose
protocol runs as a task on the event loop, with no thread and no executor; its events told to
listeners on the loop and to ``async for`` loops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from .._cores.cache import CLOSE_WAIT, CacheCore, CacheFace
from .._cores.cache_listeners import SupportsEvent
from .._cores.constructors import CacheConstructor
from .._protocol.cache import CacheEvent
from .._protocol.checks import check_timeout
from .._protocol.transport import Transport
from ._runner import LoopEvent, log_failure, loop_spawner, run_async, transport_of, wait_event


class AsyncCacheEvents:
    """A cache's events from the moment it was made (see :meth:`CuratorCache.events`), for an
    ``async for`` loop on the loop that made it, which ends once the cache (or this iterator)
    is closed."""

    def __init__(self, core: CacheCore) -> None:
        self._core = core
        self._queue: asyncio.Queue[CacheEvent | None] = asyncio.Queue()
        self._ended = False
        core.subscribe(self._queue.put_nowait)

    def __aiter__(self) -> AsyncCacheEvents:
        return self

    async def __anext__(self) -> CacheEvent:
        if self._ended:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._ended = True
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stop following the cache: the loop ends once the events already told are taken."""
        self._core.unsubscribe(self._queue.put_nowait)
        self._queue.put_nowait(None)

    async def __aenter__(self) -> AsyncCacheEvents:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class CacheShell:
    """How the asyncio caches (``CuratorCache``, a group member's) run a
    :class:`~pycurator._cores.cache.CacheCore`: its protocol as a task on the loop that started
    it, its news on that loop, its waits on an :class:`asyncio.Event`."""

    def __init__(self, core: CacheCore) -> None:
        self.core = core
        self._settled = asyncio.Event()  # set once loaded or closed
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Load the tree and follow it on the running loop; RuntimeError when started before."""
        loop = asyncio.get_running_loop()
        mirror = self.core.begin(loop_spawner(), LoopEvent(loop, self._settled).set)
        self._task = loop.create_task(run_async(self.core.transport, mirror.steps()))
        self._task.add_done_callback(log_failure)

    async def close(self) -> None:
        """Stop following the tree (waiting at most :data:`CLOSE_WAIT` for the task)."""
        if self.core.finish():
            task = self._task
            if task is not None:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_WAIT)
        self.core.closed()

    async def wait_initialized(self, timeout: float | None) -> bool:
        """Wait for the first load to be told (see :meth:`CuratorCache.wait_initialized`)."""
        timeout = check_timeout(timeout)
        if self._task is None:
            raise RuntimeError(f"the cache is not started: {self.core.path}")
        await wait_event(self._settled, timeout)
        return self.core.loaded and self.core.started


class CuratorCache(CacheConstructor, CacheFace):
    """The asyncio form of :class:`pycurator.CuratorCache`: the same watch, reads and events
    as Curator's ``CuratorCache``; ``async for event in cache.events()`` besides listeners.

    The protocol runs as a task on the loop that started the cache; listeners run on that
    loop, in order (an awaitable they return runs as a task). If the loop ends with the cache
    still started, its task is cancelled and its watch removed, as by :meth:`close`.
    """

    _shell_class = CacheShell
    _shell: CacheShell

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    async def start(self) -> None:
        """Load the tree and follow it, in the background, on the running loop.

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        self._shell.start()

    async def close(self) -> None:
        """Stop following the tree (see the threaded cache's ``close()``); returns once
        done."""
        await self._shell.close()

    async def __aenter__(self) -> CuratorCache:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_initialized(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the first load to be told: True
        once it is, False on timeout or once closed. RuntimeError before :meth:`start`."""
        return await self._shell.wait_initialized(timeout)

    def add_listener(self, listener: SupportsEvent | Callable[..., Any]) -> None:
        """Tell ``listener`` (a :class:`CuratorCacheListener`, or any callable ``(type,
        old_data, data)``) of each event from now on, in order, on the loop (an awaitable it
        returns runs as a task). TypeError for anything else."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: SupportsEvent | Callable[..., Any]) -> None:
        """Tell ``listener`` nothing more."""
        self._core.remove_listener(listener)

    def events(self) -> AsyncCacheEvents:
        """The events told from now on, as :class:`~pycurator._protocol.cache.CacheEvent`
        (``type``, ``old_data``, ``data``, ``path``), for an ``async for`` loop that ends once
        the cache closes (or the iterator's ``aclose()`` is awaited); made on the running
        loop."""
        return AsyncCacheEvents(self._core)

    def __repr__(self) -> str:
        return self._core.describe("aio.CuratorCache")


__all__ = ["AsyncCacheEvents", "CacheShell", "CuratorCache"]
