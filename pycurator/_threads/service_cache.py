"""``ServiceCache`` and ``ServiceProvider``: Curator's service cache and provider, for threads.

A cache holds the instances of one service, read from a ``CuratorCache`` of its path (no
thread of its own: its protocol runs on kazoo's callbacks, its listeners on the handler's
workers); a provider picks among a cache's instances. What they are lives in
:mod:`pycurator._cores.service_cache`, which the asyncio ones hold too.
"""

from __future__ import annotations

from types import TracebackType

from .._cores.service_cache import (
    ServiceCacheCore,
    ServiceCacheFace,
    ServiceProviderFace,
)
from .cache import CacheShell


class ServiceCache(ServiceCacheFace):
    """The instances of one service, Java's and Python's alike, kept up to date (Curator's
    ``ServiceCache``); made by ``discovery.service_cache(name)``.

    Once started it follows the children of ``base_path/name``: each node created, changed or
    deleted by anyone changes :meth:`get_instances` and is told to the listeners
    (``cache_changed()``, after the first load); after a reconnect or an expiry it reads the
    service again and tells only what changed. A node that is no instance is left out, logged
    and told to the discovery's ``on_malformed`` callbacks (Curator's cache throws on it).
    Unlike Curator's, it writes nothing (Curator makes the service's node at start).
    """

    _shell_class = CacheShell
    _shell: CacheShell
    _core: ServiceCacheCore

    def start(self) -> None:
        """Load the instances and follow them; returns once the first load is in (as
        Curator's ``start()``), or after the client's session timeout if the connection is
        down (the cache then loads once it is back). RuntimeError when started before."""
        core = self._core
        core.begin()
        self._shell.start()
        core.discovery.opened.add(self)
        self._shell.wait_initialized(core.discovery.transport.session_timeout())

    def close(self) -> None:
        """Stop following the service: listeners hear nothing more (the instances held
        stay, as in Curator). Closing twice, or an unstarted cache, does nothing more."""
        self._shell.close()
        self._core.end()
        self._core.discovery.opened.discard(self)

    def __enter__(self) -> ServiceCache:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return self._core.describe("ServiceCache")


class ServiceProvider(ServiceProviderFace):
    """Picks an instance of one service for each use (Curator's ``ServiceProvider``), among
    those of a :class:`ServiceCache` of it; made by ``discovery.service_provider(name, ...)``.

    The instances offered are the cache's that the caller's ``filters`` keep, not noted down
    (``note_error``: left out for ``down_instance_policy``'s time once they have had its
    errors; Curator's 30 s and 2 errors by default) and enabled, as Curator's; ``strategy``
    (round robin by default) picks one. Picking sends no request.
    """

    _cache_class = ServiceCache
    _cache: ServiceCache
    _cache_core: ServiceCacheCore

    def start(self) -> None:
        """Start the provider's cache (see :meth:`ServiceCache.start`)."""
        self._cache.start()
        self._cache_core.discovery.opened.add(self)

    def close(self) -> None:
        """Close the provider's cache. Closing twice does nothing more."""
        self._cache_core.discovery.opened.discard(self)
        self._cache.close()

    def __enter__(self) -> ServiceProvider:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return self._cache_core.describe("ServiceProvider")


__all__ = ["ServiceCache", "ServiceProvider"]
