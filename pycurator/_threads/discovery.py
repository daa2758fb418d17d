"""``ServiceDiscovery``: Curator's service discovery (curator-x-discovery), for threads.

Instances are nodes ``base/name/id`` holding the JSON Jackson writes; Java and Python services
register, find and balance across each other's. What a discovery is lives in
:mod:`pycurator._cores.discovery`, which the asyncio discovery holds too; this shell runs its
steps on the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.discovery import DiscoveryCore, DiscoveryFace
from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_json import InstanceSerializer
from .._protocol.discovery_strategies import DownInstancePolicy, InstanceFilter, ProviderStrategy
from .._protocol.errors import InstanceFormatError
from .runner import run
from .service_cache import ServiceCache, ServiceProvider


class ServiceDiscovery(DiscoveryFace):
    """Registers this process's service instances under ``base_path`` and finds every
    instance there, Java's and Python's alike (Curator's ``ServiceDiscovery``).

    Once started, each instance registered is kept registered until unregistered or the
    discovery is closed: its node is made again after a session expiry, and checked after
    every reconnect, with the latest data. ``serializer`` writes and reads the nodes
    (:class:`~pycurator.discovery.JsonInstanceSerializer`, Curator's default, when None);
    ``this_instance`` is registered at start; with ``watch_instances``, a change another client
    makes to a registered instance's node is taken as that instance's data.
    A node that is no instance (invalid JSON, a field Jackson cannot read) is skipped by
    the queries, logged, and told to the :meth:`on_malformed` callbacks; Java's query fails
    for the whole service on one.
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

    def start(self) -> None:
        """Start keeping instances registered, and register ``this_instance`` if given.

        Raises RuntimeError when started before; as :meth:`register_service` for
        ``this_instance``.
        """
        run(self._transport, self._core.begin_steps())

    def close(self) -> None:
        """Unregister every instance and stop: waits for the server at most
        :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds (not at all while not connected);
        what is not deleted by then is deleted in the background, once the connection is back,
        until the client is stopped. The service caches and providers of this discovery still
        started are closed first. Closing twice does nothing more."""
        self._core.each_opened(lambda opened: opened.close())
        run(self._transport, self._core.close_steps())

    def __enter__(self) -> ServiceDiscovery:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def register_service(self, instance: ServiceInstance) -> None:
        """Register ``instance``: its node ``base/name/id`` is made (ephemeral for ``DYNAMIC``,
        ephemeral sequential for ``DYNAMIC_SEQUENTIAL``, persistent otherwise; container
        parents) and kept until :meth:`unregister_service` or :meth:`close`. Registering it
        again reads its node, written if it holds another. Returns once its node holds it.

        Raises RuntimeError unless started; InvalidServiceInstance, PayloadTypeError before
        anything is sent; the server's error no retry fixes (``NoAuthError``...), the instance
        then not registered; ``ConnectionLoss`` when not written within the client's session
        timeout, the instance still registered (written once the connection is back).
        """
        run(self._transport, self._core.register_steps(instance))

    def update_service(self, instance: ServiceInstance) -> None:
        """Write ``instance`` to the node of the registered instance of the same name and id
        (kept from now on, through reconnects and expiries); as :meth:`register_service`, and
        :class:`~pycurator.discovery.ServiceNotRegisteredError` unless it is registered."""
        run(self._transport, self._core.update_steps(instance))

    def unregister_service(self, instance: ServiceInstance) -> None:
        """Unregister the instance of ``instance``'s name and id and delete its node: waits for
        the server at most :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds (not at all
        while not connected), then deletes in the background. Nothing for an instance not
        registered: unregistering twice is fine."""
        run(self._transport, self._core.unregister_steps(instance))

    def query_for_names(self) -> list[str]:
        """The names of the services under the base path, in order (none if it is missing).

        Rides through a reconnect: waits for the connection up to the client's session
        timeout, then raises ``ConnectionLoss``.
        """
        return run(self._transport, self._core.names_steps())

    def query_for_instances(self, name: str) -> list[ServiceInstance]:
        """Every instance of service ``name``, in the order of their nodes' names (read as
        :meth:`query_for_names` reads); a node that is no instance is skipped and told to the
        :meth:`on_malformed` callbacks, on this thread. ValueError for a name that is no node
        name."""
        return run(self._transport, self._core.instances_steps(name))

    def query_for_instance(self, name: str, id: str) -> ServiceInstance | None:
        """The instance ``id`` of service ``name``, or None if it has no node;
        :class:`~pycurator.discovery.InstanceFormatError`, naming the node, when it is no
        instance."""
        return run(self._transport, self._core.instance_steps(name, id))

    def service_cache(self, name: str) -> ServiceCache:
        """A cache of the instances of service ``name`` (Curator's ``serviceCacheBuilder()``),
        to start; ValueError for a name that is no node name."""
        return ServiceCache(self._core, name)

    def service_provider(
        self,
        name: str,
        strategy: ProviderStrategy | None = None,
        down_instance_policy: DownInstancePolicy | None = None,
        filters: Iterable[InstanceFilter] = (),
    ) -> ServiceProvider:
        """A provider of the instances of service ``name`` (Curator's
        ``serviceProviderBuilder()``), to start: ``strategy`` picks (a new
        :class:`~pycurator.discovery.RoundRobinStrategy` when None), ``down_instance_policy``
        leaves out an instance with errors (Curator's, 2 errors within 30 s, when None),
        ``filters`` come first. TypeError or ValueError for a bad argument."""
        return ServiceProvider(self._core, name, strategy, down_instance_policy, filters)

    def on_malformed(self, callback: Callable[[InstanceFormatError], Any]) -> None:
        """Call ``callback(error)`` for each node a query or a cache skips because it is no
        instance: ``error`` names the node and what is wrong. A query calls it on its own
        thread; a cache, on a worker of the client's handler."""
        self._core.add_malformed_callback(callback)

    def __repr__(self) -> str:
        return self._core.describe("ServiceDiscovery")


__all__ = ["ServiceDiscovery"]
