"""Service discovery for asyncio, on curator-x-discovery's exact bytes: the same values,
serializer and strategies as :mod:`pycurator.discovery`, and its recipes awaited instead of
blocked on (a :class:`ServiceDiscovery` here is awaited; its instances, nodes and queries are
the threaded one's).
"""

from __future__ import annotations

from .._client.interfaces import local_address, local_addresses, local_instance
from .._cores.service_cache import ServiceCacheListener
from .._protocol.discovery import ServiceInstance, ServiceType, UriPart, UriSpec
from .._protocol.discovery_json import InstanceSerializer, JsonInstanceSerializer
from .._protocol.discovery_payloads import (
    DubboZookeeperInstance,
    JavaLong,
    JavaPayload,
    RawPayload,
    SpringZookeeperInstance,
    java_payload,
)
from .._protocol.discovery_strategies import (
    DownInstancePolicy,
    DownInstances,
    InstanceFilter,
    ProviderStrategy,
    RandomStrategy,
    RoundRobinStrategy,
    StickyStrategy,
    available,
    is_enabled,
)
from .._protocol.errors import (
    InstanceFormatError,
    InvalidServiceInstance,
    InvalidUriSpec,
    PayloadTypeError,
    ServiceNotRegisteredError,
)
from ._discovery import ServiceDiscovery
from ._service_cache import ServiceCache, ServiceProvider

__all__ = [
    "DownInstancePolicy",
    "DownInstances",
    "DubboZookeeperInstance",
    "InstanceFilter",
    "InstanceFormatError",
    "InstanceSerializer",
    "InvalidServiceInstance",
    "InvalidUriSpec",
    "JavaLong",
    "JavaPayload",
    "JsonInstanceSerializer",
    "PayloadTypeError",
    "ProviderStrategy",
    "RandomStrategy",
    "RawPayload",
    "RoundRobinStrategy",
    "ServiceCache",
    "ServiceCacheListener",
    "ServiceDiscovery",
    "ServiceInstance",
    "ServiceNotRegisteredError",
    "ServiceProvider",
    "ServiceType",
    "SpringZookeeperInstance",
    "StickyStrategy",
    "UriPart",
    "UriSpec",
    "available",
    "is_enabled",
    "java_payload",
    "local_address",
    "local_addresses",
    "local_instance",
]
