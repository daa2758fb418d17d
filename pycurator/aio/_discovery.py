"""The asyncio service discovery: the discovery's core (:mod:`pycurator._cores.discovery`),
whose steps run on the event loop, with no thread and no executor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.client import KazooClient

from .._cores.discovery import DiscoveryCore, DiscoveryFace
from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_json import InstanceSerializer
from .._protocol.discovery_strategies import DownInstancePolicy, InstanceFilter, ProviderStrategy
from .._protocol.errors import InstanceFormatError
from ._runner import run_async, transport_of
from ._service_cache import ServiceCache, ServiceProvider


class ServiceDiscovery(DiscoveryFace):
    """The asyncio form of :class:`pycurator.discovery.ServiceDiscovery`: the same nodes,
    registrations and queries as Curator's ``ServiceDiscovery``, awaited.

    Registrations are kept through reconnects and expiries in the background, on kazoo's
    callbacks, whichever loop made them; ``on_malformed`` callbacks run on the loop of the
    query that skipped the node.
    """

    def __init__(
        self,
        client: KazooClient,
        base_path: str,
        *,
        serializer: InstanceSerializer | None = None,
        this_instance: ServiceInstance | None = None,
        watch_instances: bool = False,
    ) -> None:
        self._transport = transport_of(client)
        self._core = DiscoveryCore(
            self._transport, base_path, serializer, this_instance, watch_instances
        )

    async def start(self) -> None:
        """Start keeping instances registered, and register ``this_instance`` if given
        (RuntimeError when started before)."""
        await run_async(self._transport, self._core.begin_steps())

    async def close(self) -> None:
        """Close the caches and providers still started, unregister every instance and stop,
        as the threaded discovery's ``close()``. Cancelled, it still unregisters every
        instance before the cancellation propagates (the deletes not done within the wait go
        on in the background)."""
        try:
            await asyncio.gather(*self._core.each_opened(lambda opened: opened.close()))
        finally:
            await run_async(self._transport, self._core.close_steps())

    async def __aenter__(self) -> ServiceDiscovery:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def register_service(self, instance: ServiceInstance) -> None:
        """Register ``instance`` and return once its node holds it (see the threaded
        ``register_service`` for its nodes and errors)."""
        await run_async(self._transport, self._core.register_steps(instance))

    async def update_service(self, instance: ServiceInstance) -> None:
        """Write ``instance`` to the node of the registered instance of the same name and id;
        ``ServiceNotRegisteredError`` unless it is registered."""
        await run_async(self._transport, self._core.update_steps(instance))

    async def unregister_service(self, instance: ServiceInstance) -> None:
        """Unregister the instance and delete its node (see the threaded
        ``unregister_service``); nothing for an instance not registered."""
        await run_async(self._transport, self._core.unregister_steps(instance))

    async def query_for_names(self) -> list[str]:
        """The names of the services under the base path, in order."""
        return await run_async(self._transport, self._core.names_steps())

    async def query_for_instances(self, name: str) -> list[ServiceInstance]:
        """Every instance of service ``name``; a node that is no instance is skipped and told
        to the ``on_malformed`` callbacks, on the loop."""
        return await run_async(self._transport, self._core.instances_steps(name))

    async def query_for_instance(self, name: str, id: str) -> ServiceInstance | None:
        """The instance ``id`` of service ``name``, or None; ``InstanceFormatError`` naming the
        node when it is no instance."""
        return await run_async(self._transport, self._core.instance_steps(name, id))

    def service_cache(self, name: str) -> ServiceCache:
        """A cache of the instances of service ``name``, to start (see the threaded
        ``service_cache``)."""
        return ServiceCache(self._core, name)

    def service_provider(
        self,
        name: str,
        strategy: ProviderStrategy | None = None,
        down_instance_policy: DownInstancePolicy | None = None,
        filters: Iterable[InstanceFilter] = (),
    ) -> ServiceProvider:
        """A provider of the instances of service ``name``, to start (see the threaded
        ``service_provider`` for its defaults)."""
        return ServiceProvider(self._core, name, strategy, down_instance_policy, filters)

    def on_malformed(self, callback: Callable[[InstanceFormatError], Any]) -> None:
        """Call ``callback(error)`` for each node a query or a cache skips because it is no
        instance (a query's on its loop; a cache's on the loop that started it)."""
        self._core.add_malformed_callback(callback)

    def __repr__(self) -> str:
        return self._core.describe("aio.ServiceDiscovery")


__all__ = ["ServiceDiscovery"]
