"""The asyncio ``ServiceCache`` and ``ServiceProvider``: the service cache's core
(:mod:`pycurator._cores.service_cache`), its cache run as a task on the event loop, with no
thread and no executor; its listeners told on that loop."""

from __future__ import annotations

from .._cores.service_cache import (
    ServiceCacheCore,
    ServiceCacheFace,
    ServiceProviderFace,
)
from ._cache import CacheShell


class ServiceCache(ServiceCacheFace):
    """The asyncio form of :class:`pycurator.discovery.ServiceCache`: the same instances and
    changes as Curator's ``ServiceCache``; ``start()`` and ``close()`` awaited, the instances
    read at once. Listeners run on the loop that started the cache (an awaitable they return
    runs as a task)."""

    _shell_class = CacheShell
    _shell: CacheShell
    _core: ServiceCacheCore

    async def start(self) -> None:
        """Load the instances and follow them on the running loop; returns once the first
        load is in, or after the client's session timeout. RuntimeError when started
        before."""
        core = self._core
        core.begin()
        self._shell.start()
        core.discovery.opened.add(self)
        await self._shell.wait_initialized(core.discovery.transport.session_timeout())

    async def close(self) -> None:
        """Stop following the service (see the threaded cache's ``close()``)."""
        await self._shell.close()
        self._core.end()
        self._core.discovery.opened.discard(self)

    async def __aenter__(self) -> ServiceCache:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return self._core.describe("aio.ServiceCache")


class ServiceProvider(ServiceProviderFace):
    """The asyncio form of :class:`pycurator.discovery.ServiceProvider`: the same picks, over
    an asyncio :class:`ServiceCache`; ``start()`` and ``close()`` awaited, picks at once."""

    _cache_class = ServiceCache
    _cache: ServiceCache
    _cache_core: ServiceCacheCore

    async def start(self) -> None:
        """Start the provider's cache (see :meth:`ServiceCache.start`)."""
        await self._cache.start()
        self._cache_core.discovery.opened.add(self)

    async def close(self) -> None:
        """Close the provider's cache. Closing twice does nothing more."""
        self._cache_core.discovery.opened.discard(self)
        await self._cache.close()

    async def __aenter__(self) -> ServiceProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return self._cache_core.describe("aio.ServiceProvider")


__all__ = ["ServiceCache", "ServiceProvider"]
