"""Service discovery on curator-x-discovery's exact bytes: what Java Curator, Spring Cloud
Zookeeper and Dubbo 3 register, read and balance across, written and read as they do.

:class:`ServiceInstance` and :class:`UriSpec` are Curator's values;
:class:`JsonInstanceSerializer` writes an instance as the bytes Jackson writes and reads it as
Jackson reads it, payloads typed as Curator's ``@JsonTypeInfo`` types them;
:class:`RoundRobinStrategy`, :class:`RandomStrategy`, :class:`StickyStrategy`,
:class:`DownInstances` and :func:`available` are how Curator's provider picks an instance.
"""

from __future__ import annotations

from typing import Any

from ._client.interfaces import local_addresses
from ._protocol.discovery import ServiceInstance, ServiceType, UriPart, UriSpec, new_id, now_ms
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
)

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
    "ServiceInstance",
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


def local_address() -> str | None:
    """The address Curator's ``ServiceInstance.builder()`` gives an instance: the first of
    :func:`local_addresses`, or None when the host has none (then so does Java's)."""
    found = local_addresses()
    return found[0] if found else None


def local_instance(
    name: str,
    *,
    port: int | None = None,
    ssl_port: int | None = None,
    payload: Any = None,
    service_type: ServiceType = ServiceType.DYNAMIC,
    uri_spec: UriSpec | None = None,
    enabled: bool = True,
    id: str | None = None,
    address: str | None = None,
    registration_time_utc: int | None = None,
) -> ServiceInstance:
    """An instance of ``name`` on this host, with the defaults of Curator's
    ``ServiceInstance.builder()``: a random UUID for ``id``, :func:`local_address` for
    ``address``, now (in milliseconds) for ``registration_time_utc``; each may be given."""
    when = registration_time_utc
    fields: dict[str, Any] = {
        "id": new_id() if id is None else id,
        "address": local_address() if address is None else address,
        "registration_time_utc": now_ms() if when is None else when,
    }
    return ServiceInstance(
        name,
        port=port,
        ssl_port=ssl_port,
        payload=payload,
        service_type=service_type,
        uri_spec=uri_spec,
        enabled=enabled,
        **fields,
    )
