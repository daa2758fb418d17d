"""A service cache's core, held by both front ends (``discovery.service_cache(name)`` of
``pycurator.discovery`` and ``pycurator.aio.discovery``): Curator's ``ServiceCacheImpl``, the
instances of one service read from a cache (:mod:`pycurator._cores.cache`) of its path.

:class:`ServiceCacheCore` turns the cache's events for the direct children of the service's
path into instances, by node name; a node that is no instance is left out and told to the
discovery's ``on_malformed`` callbacks, never failing the cache. Its listeners are told
``cache_changed()`` of each change once the first load is in (as Curator's), and
``state_changed(client, state)`` of each change of the connection; all on the cache's worker,
in order. :class:`ServiceCacheFace` and :class:`ServiceProviderFace` are what the front ends'
shells share.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .._protocol.cache import DELETED, CacheEventType, ChildData
from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_strategies import DownInstancePolicy, InstanceFilter, ProviderStrategy
from .._protocol.errors import InstanceFormatError
from .._protocol.registration import service_path
from .._recipes.discovery import read_instance
from .cache import CacheCore
from .cache_listeners import all_awaited
from .discovery import DiscoveryCore, ProviderCore, ProviderFace
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger("pycurator")


class SupportsCacheChanged(Protocol):
    """A service cache's listener: anything with ``cache_changed()``."""

    def cache_changed(self) -> Any: ...


class ServiceCacheListener:
    """Told of a service cache's changes (Curator's ``ServiceCacheListener``):
    ``cache_changed()`` once the instances held changed, and ``state_changed(client,
    state)`` (a kazoo ``KazooState``) of each change of the connection. Subclass it, or give a
    cache any callable ``()`` for ``cache_changed``."""

    def cache_changed(self) -> Any:
        """The instances held changed: read them again with ``get_instances()``."""

    def state_changed(self, client: Any, state: str) -> Any:
        """The client's connection changed to ``state``."""


class _Calls(ServiceCacheListener):
    """A callable ``()`` as a listener."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function

    def cache_changed(self) -> Any:
        return self.function()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Calls) and other.function == self.function

    def __hash__(self) -> int:
        return hash(self.function)


def as_service_listener(listener: object) -> Any:
    """``listener`` itself when it has ``cache_changed()`` (``state_changed()`` optional), a
    callable wrapped; TypeError otherwise."""
    if callable(getattr(listener, "cache_changed", None)):
        return listener
    if callable(listener):
        return _Calls(listener)
    raise TypeError(
        f"a service cache listener must have cache_changed() or be callable: {listener!r}"
    )


class _Events:
    """What the cache of the service's path tells: given to it as its listener."""

    __slots__ = ("owner",)

    def __init__(self, owner: ServiceCacheCore) -> None:
        self.owner = owner

    def event(self, type: CacheEventType, old: ChildData | None, new: ChildData | None) -> Any:
        return self.owner.take(type, old, new)

    def initialized(self) -> Any:
        self.owner.initialized = True
        return None


class ServiceCacheCore:
    """The instances of service ``name`` of ``discovery``, from a cache of its path, for a
    front end to hold and drive (it runs :attr:`cache`, and calls :meth:`begin` and
    :meth:`end` around it). Reads need no request and no wait."""

    def __init__(self, discovery: DiscoveryCore, name: str) -> None:
        self.discovery = discovery
        self.name = name
        self.path = service_path(discovery.base_path, name)  # checks the name
        self.cache = CacheCore(discovery.transport, self.path, None, None)
        #: Whether the first load has been told (Curator tells no change before).
        self.initialized = False
        self.listeners: list[Any] = []
        self._instances: dict[str, ServiceInstance] = {}
        self._lock = discovery.transport.lock_object()
        self._listed: list[ServiceInstance] | None = []
        self._unreadable: dict[str, InstanceFormatError] = {}
        self._listening = False

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self.discovery.client

    # -- what the cache holds --------------------------------------------------------------------

    def instances(self) -> list[ServiceInstance]:
        """The instances held, in the order of their nodes' names (a copy)."""
        with self._lock:
            if self._listed is None:
                self._listed = [self._instances[key] for key in sorted(self._instances)]
            return list(self._listed)

    def unreadable(self) -> list[InstanceFormatError]:
        """What is wrong with each node held that is no instance, in the order of their
        names (the command line shows them)."""
        return [error for _, error in sorted(dict(self._unreadable).items())]

    def take(self, type: CacheEventType, old: ChildData | None, new: ChildData | None) -> Any:
        """One event of the path's cache (on the cache's worker): the instance it makes or
        ends; the listeners told once the first load is in; an awaitable they returned."""
        node = old if type is DELETED else new
        if node is None:
            return None
        parent, _, key = node.path.rpartition("/")
        if (parent or "/") != self.path or node.path == self.path:
            return None  # the service's node itself, or a node below an instance's
        found: ServiceInstance | None = None
        self._unreadable.pop(key, None)
        if type is not DELETED:
            read = read_instance(self.discovery.serializer, node.data or b"", node.path)
            if isinstance(read, InstanceFormatError):
                self._unreadable[key] = read
                self.discovery.report([read])
            else:
                found = read
        with self._lock:
            had = self._instances.pop(key, None)
            if found is not None:
                self._instances[key] = found
            elif had is None:
                return None  # a node that was no instance, still none or gone: no change
            self._listed = None
        if not self.initialized:
            return None
        return self._tell("cache_changed")

    def _tell(self, method: str, *args: Any) -> Any:
        results = []
        for listener in list(self.listeners):
            call = getattr(listener, method, None)
            if not callable(call):
                continue
            try:
                results.append(call(*args))
            except Exception:
                log.exception("a service cache listener failed: %r", listener)
        return all_awaited(results)

    # -- listeners -------------------------------------------------------------------------------

    def add_listener(self, listener: object) -> None:
        """Tell ``listener`` from now on (TypeError unless it has ``cache_changed()`` or is
        callable)."""
        self.listeners.append(as_service_listener(listener))

    def remove_listener(self, listener: object) -> None:
        """Tell ``listener`` nothing more."""
        try:
            wrapped = as_service_listener(listener)
        except TypeError:
            return
        if wrapped in self.listeners:
            self.listeners.remove(wrapped)

    # -- the life cycle ----------------------------------------------------------------------------

    def begin(self) -> None:
        """Hear the path's cache and follow the connection, before the front end starts the
        cache; RuntimeError when started before (Curator: "Cannot be started more than
        once")."""
        if self.cache.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: service cache of {self.path}")
        self.cache.add_listener(_Events(self))  # cleared by the cache's close
        self.discovery.transport.listen(self._on_state)
        self._listening = True

    def end(self) -> None:
        """After the cache is closed: follow the connection no more, and tell no listener
        anything more (what is held stays, as in Curator)."""
        if self._listening:
            self._listening = False
            self.discovery.transport.unlisten(self._on_state)
        self.listeners.clear()

    def _on_state(self, state: str) -> None:  # kazoo's connection thread: only post
        self.cache.post(self._tell, "state_changed", self.client, state)

    def describe(self, kind: str) -> str:
        """The cache's repr, as a ``kind``."""
        count = len(self._instances)
        return f"{kind}({self.path!r}, state={self.cache.state.value}, instances={count})"


class ServiceCacheFace:
    """A service cache over a :class:`ServiceCacheCore`, run by the front end's cache shell
    (``_shell_class``): what it holds, with no request."""

    _shell_class: Callable[[CacheCore], Any]
    _core: ServiceCacheCore

    def __init__(self, discovery: DiscoveryCore, name: str) -> None:
        self._core = ServiceCacheCore(discovery, name)
        self._shell = self._shell_class(self._core.cache)

    @property
    def name(self) -> str:
        """The service whose instances the cache holds."""
        return self._core.name

    @property
    def path(self) -> str:
        """The service's path, ``base_path/name``, whose children are its instances."""
        return self._core.path

    def get_instances(self) -> list[ServiceInstance]:
        """The instances held now, in the order of their nodes' names (no request; empty
        until the first load is in)."""
        return self._core.instances()

    def malformed(self) -> list[InstanceFormatError]:
        """What is wrong with each node of the service held now that is no instance (left out
        of :meth:`get_instances`), in the order of the nodes' names."""
        return self._core.unreadable()

    def add_listener(self, listener: SupportsCacheChanged | Callable[[], Any]) -> None:
        """Tell ``listener`` (a :class:`ServiceCacheListener`, anything with
        ``cache_changed()`` and optionally ``state_changed(client, state)``, or a callable
        ``()`` for ``cache_changed``) from now on, in order, on the cache's worker. TypeError
        for anything else."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: SupportsCacheChanged | Callable[[], Any]) -> None:
        """Tell ``listener`` nothing more."""
        self._core.remove_listener(listener)


class ServiceProviderFace(ProviderFace):
    """A service provider over a :class:`ProviderCore` and the front end's service cache
    (``_cache_class``) of its service."""

    _cache_class: Callable[[DiscoveryCore, str], Any]

    def __init__(
        self,
        discovery: DiscoveryCore,
        name: str,
        strategy: ProviderStrategy | None = None,
        down_instance_policy: DownInstancePolicy | None = None,
        filters: Iterable[InstanceFilter] = (),
    ) -> None:
        self._cache = self._cache_class(discovery, name)
        self._cache_core: ServiceCacheCore = self._cache._core
        self._provider = provider_core(self._cache_core, strategy, down_instance_policy, filters)

    def get_all_instances(self) -> list[ServiceInstance]:
        """Every instance the provider offers now: the cache's, less those the filters, the
        down-instance policy or ``enabled`` leave out (no request)."""
        return self._provider.all(self._cache_core.instances())

    def get_instance(self) -> ServiceInstance | None:
        """The instance for one use, picked by the strategy among those offered; None when
        none is (no request)."""
        return self._provider.pick(self._cache_core.instances())

    def note_error(self, instance: ServiceInstance) -> None:
        """Count an error of ``instance``: once it has had the policy's errors within its
        time, it is left out for that time (Curator's ``noteError``)."""
        self._provider.note_error(instance)


def provider_core(
    cache: ServiceCacheCore,
    strategy: ProviderStrategy | None,
    down_instance_policy: DownInstancePolicy | None,
    filters: Iterable[InstanceFilter],
) -> ProviderCore:
    """The provider's core for ``cache``'s service (its arguments checked)."""
    transport = cache.discovery.transport
    return ProviderCore(transport, cache.name, strategy, down_instance_policy, filters)


__all__ = [
    "ServiceCacheCore",
    "ServiceCacheFace",
    "ServiceCacheListener",
    "ServiceProviderFace",
    "SupportsCacheChanged",
    "as_service_listener",
    "provider_core",
]
