"""Service discovery on curator-x-discovery's exact bytes: what Java Curator, Spring Cloud
Zookeeper and Dubbo 3 register, read and balance across, written and read as they do.

:class:`ServiceInstance` and :class:`UriSpec` are Curator's values;
:class:`JsonInstanceSerializer` writes an instance as the bytes Jackson writes and reads it as
Jackson reads it, payloads typed as Curator's ``@JsonTypeInfo`` types them;
:class:`RoundRobinStrategy`, :class:`RandomStrategy`, :class:`StickyStrategy`,
:class:`DownInstances` and :func:`available` are how Curator's provider picks an instance.
"""

from __future__ import annotations

from ._client.interfaces import local_address, local_addresses, local_instance
from ._cores.service_cache import ServiceCacheListener
from ._protocol.discovery import ServiceInstance, ServiceType, UriPart, UriSpec
from ._protocol.discovery_json import InstanceSerializer, JsonInstanceSerializer
from ._protocol.discovery_payloads import (
    DubboZookeeperInstance,
    JavaLong,
    JavaPayload,
    RawPayload,
    SpringZookeeperInstance,
    java_payload,
)
from ._protocol.discovery_strategies import (
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
from ._protocol.errors import (
    InstanceFormatError,
    InvalidServiceInstance,
    InvalidUriSpec,
    PayloadTypeError,
    ServiceNotRegisteredError,
)
from ._threads.discovery import ServiceDiscovery
from ._threads.service_cache import ServiceCache, ServiceProvider

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
