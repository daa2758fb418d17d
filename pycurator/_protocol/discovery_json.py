"""Curator's ``JsonInstanceSerializer``: a service instance as the bytes Jackson writes, and
back as Jackson reads them.

Written (compatible mode, Curator's default, which writes its ``OldServiceInstance``)::

    {"name":"svc","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,
     "payload":"hello","registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC",
     "uriSpec":{"parts":[{"value":"scheme","variable":true},...]}}

on one line, in that order, nulls written; ``"enabled":true`` last when not compatible.
Read as Jackson reads into ``ServiceInstance`` either way: unknown members ignored, a missing
one its default (``enabled`` true), values converted as Jackson converts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from .discovery import ServiceInstance, ServiceType, UriPart, UriSpec, instance_as_read
from .discovery_payloads import (
    JavaLong,
    JavaPayload,
    RawPayload,
    payload_from_json,
    payload_to_json,
)
from .errors import InstanceFormatError, InvalidUriSpec, PayloadTypeError
from .jackson import (
    kind_of,
    object_heads,
    read_json,
    to_boolean,
    to_int,
    to_long,
    to_str,
    write_object,
)

#: The payload types a serializer takes besides classes made with ``java_payload``.
JSON_PAYLOAD_TYPES: tuple[type, ...] = (
    *(object, str, int, float, bool, dict, list),
    *(JavaLong, RawPayload),
)
_SERVICE_TYPES = list(ServiceType)
_TIME = "registrationTimeUTC"
#: The members Curator's serializer writes, in its order: ``enabled`` only when not compatible.
_MEMBERS = ("name", "id", "address", "port", "sslPort", "payload", _TIME, "serviceType", "uriSpec")
_COMPATIBLE_HEADS = object_heads(*_MEMBERS)
_HEADS = object_heads(*_MEMBERS, "enabled")


class InstanceSerializer(Protocol):
    """What a discovery needs of a serializer (Curator's ``InstanceSerializer``)."""

    def serialize(self, instance: ServiceInstance) -> bytes:
        """The node data of ``instance``."""
        ...

    def deserialize(self, data: bytes) -> ServiceInstance:
        """The instance a node's data holds; :class:`InstanceFormatError` if none."""
        ...


def _payload_class(kind: object) -> type[JavaPayload]:
    if (
        isinstance(kind, type)
        and isinstance(getattr(kind, "java_class", None), str)
        and callable(getattr(kind, "from_json", None))
        and callable(getattr(kind, "to_json", None))
    ):
        return kind
    name = getattr(kind, "__qualname__", repr(kind))
    raise PayloadTypeError(name, "decorate it with @java_payload('java.class.Name')")


class JsonInstanceSerializer:
    """Curator's ``JsonInstanceSerializer``, on the bytes Jackson writes.

    ``payload_type`` is what a payload read must be (Java's ``payloadClass.cast``): ``object``
    (anything; the default), ``str``, ``int``, ``float``, ``bool``, ``dict``, ``list``,
    :class:`JavaLong`, or a class made with :func:`java_payload`; a node whose payload is
    another type raises :class:`InstanceFormatError`. ``payload_classes`` are more
    :func:`java_payload` classes to read by their Java class name; an object of a Java class
    none stands for reads as a :class:`RawPayload` (Jackson would fail). ``compatible``
    (Curator's default) leaves ``enabled`` out, as Curator before 2.9.1 (CURATOR-275) reads
    only that; ``False`` writes it last.
    """

    def __init__(
        self,
        payload_type: type[Any] = object,
        *,
        compatible: bool = True,
        payload_classes: Iterable[type[Any]] = (),
    ) -> None:
        if not isinstance(compatible, bool):
            raise TypeError(f"compatible must be a bool, not {type(compatible).__name__}")
        known = [_payload_class(kind) for kind in payload_classes]
        if payload_type not in JSON_PAYLOAD_TYPES:
            known.insert(0, _payload_class(payload_type))
        self._payload_type = payload_type
        self._compatible = compatible
        self._classes = {kind.java_class: kind for kind in known}

    @property
    def payload_type(self) -> type[Any]:
        """What a payload read must be an instance of (``object``: anything)."""
        return self._payload_type

    @property
    def compatible(self) -> bool:
        """Whether ``enabled`` is left out of the bytes (Curator's default)."""
        return self._compatible

    def serialize(self, instance: ServiceInstance) -> bytes:
        """The bytes Curator's serializer writes for ``instance``; :class:`PayloadTypeError`
        for a payload with no Java class name."""
        if not isinstance(instance, ServiceInstance):
            raise TypeError(f"expected a ServiceInstance, not {type(instance).__name__}")
        spec = instance.uri_spec
        values = [
            instance.name,
            instance.id,
            instance.address,
            instance.port,
            instance.ssl_port,
            payload_to_json(instance.payload),
            instance.registration_time_utc,
            instance.service_type.value,
            None
            if spec is None
            else {"parts": [{"value": p.value, "variable": p.variable} for p in spec.parts]},
        ]
        if self._compatible:
            return write_object(_COMPATIBLE_HEADS, values)
        values.append(instance.enabled)
        return write_object(_HEADS, values)

    def deserialize(self, data: bytes) -> ServiceInstance:
        """The instance Jackson reads from ``data``; :class:`InstanceFormatError` naming the
        problem where Jackson fails (not JSON, not an object, a value it cannot convert), or
        where the payload is not a ``payload_type``."""
        members = read_json(data)
        if not isinstance(members, dict):
            raise InstanceFormatError(f"expected a JSON object, not {kind_of(members)}")
        payload = payload_from_json(members.get("payload"), self._classes)
        kind = self._payload_type
        wrong = not isinstance(payload, kind) or (kind is int and isinstance(payload, bool))
        if payload is not None and kind is not object and wrong:
            raise InstanceFormatError(
                f"payload: expected {kind.__qualname__}, not {type(payload).__qualname__}"
            )
        return instance_as_read(
            name=to_str("name", members.get("name", "")) or "",
            id=to_str("id", members.get("id", "")) or "",
            address=to_str("address", members.get("address")),
            port=to_int("port", members.get("port")),
            ssl_port=to_int("sslPort", members.get("sslPort")),
            payload=payload,
            registration_time_utc=to_long("registrationTimeUTC", members.get(_TIME)),
            service_type=_service_type(members.get("serviceType", "DYNAMIC")),
            uri_spec=_uri_spec(members.get("uriSpec")),
            enabled=to_boolean("enabled", members.get("enabled", True)),
        )


def _service_type(value: object) -> ServiceType:
    """Jackson's enum: the constant's name, or its position; null is DYNAMIC here (Java
    keeps null, which Curator cannot register)."""
    if value is None:
        return ServiceType.DYNAMIC
    if isinstance(value, str) and value in ServiceType.__members__:
        return ServiceType(value)
    position = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        position = int(value)
    if position is not None and 0 <= position < len(_SERVICE_TYPES):
        return _SERVICE_TYPES[position]
    names = ", ".join(t.value for t in ServiceType)
    raise InstanceFormatError(f"serviceType: {value!r} is not one of {names}")


def _uri_spec(value: object) -> UriSpec | None:
    """Jackson's ``UriSpec``: its ``parts``, or a template string (its one-string
    constructor)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return UriSpec(value)
        except InvalidUriSpec as exc:
            raise InstanceFormatError(f"uriSpec: {exc.reason}") from None
    if not isinstance(value, dict):
        raise InstanceFormatError(f"uriSpec: cannot read a URI spec from {kind_of(value)}")
    parts = value.get("parts") or []  # null: Java reads it, and fails when the spec is used
    if not isinstance(parts, list):
        raise InstanceFormatError(f"uriSpec.parts: expected an array, not {kind_of(parts)}")
    read = []
    for part in parts:
        if not isinstance(part, dict):
            raise InstanceFormatError(f"uriSpec.parts: expected objects, not {kind_of(part)}")
        text = to_str("uriSpec.parts.value", part.get("value", "")) or ""
        read.append(UriPart(text, to_boolean("uriSpec.parts.variable", part.get("variable"))))
    return UriSpec.from_parts(read)
