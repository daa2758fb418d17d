"""curator-x-discovery's values: a service instance, its type and its URI template, as Curator
defines them (``ServiceInstance``, ``ServiceType``, ``UriSpec`` in
``org.apache.curator.x.discovery``), how Java writes the values a template is built from, and
which of the host's addresses Curator's builder picks.
"""

from __future__ import annotations

import enum
import math
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field, fields
from decimal import Decimal
from ipaddress import IPv4Address, IPv6Address
from typing import Any

from . import clock
from .errors import InvalidServiceInstance, InvalidUriSpec
from .paths import validate_path

#: Java's ``int`` and ``long`` (a port is an ``Integer``, the registration time a ``long``).
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
#: What Java's ``String.trim()`` removes at either end: every character up to the space.
JAVA_BLANKS = "".join(chr(c) for c in range(0x21))


class ServiceType(str, enum.Enum):
    """Curator's ``ServiceType``: how an instance's node is made. ``DYNAMIC`` is ephemeral,
    ``DYNAMIC_SEQUENTIAL`` ephemeral and sequential, ``STATIC`` and ``PERMANENT`` persistent."""

    DYNAMIC = "DYNAMIC"
    STATIC = "STATIC"
    PERMANENT = "PERMANENT"
    DYNAMIC_SEQUENTIAL = "DYNAMIC_SEQUENTIAL"

    @property
    def is_dynamic(self) -> bool:
        """Whether the node goes with the session that made it (Curator's ``isDynamic()``)."""
        return self in (ServiceType.DYNAMIC, ServiceType.DYNAMIC_SEQUENTIAL)


def java_double(value: float) -> str:
    """A finite float as Java's ``Double.toString`` writes it (and so Jackson, and a URI
    built from it): ``1.5``, ``100.0``, ``1.0E7``, ``1.0E-4``. The digits are the shortest
    that read back to the same float, as Java 19 on writes them; Java 17's may carry a
    needless last digit on rare values, which both read back alike."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number, which JSON cannot hold")
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    point = len(digit_tuple) + exponent  # digits before the decimal point
    if len(digits) == 1:  # Java weighs two digits too, and takes the closer: 4.9E-324
        exact = abs(Decimal(value))
        places = exact.adjusted() + 1
        two = round(exact.scaleb(2 - places), 0).scaleb(places - 2)
        one = Decimal(f"{digits}E{point - 1}")
        if float(two) == abs(value) and abs(two - exact) < abs(one - exact):
            _, two_digits, two_exponent = two.normalize().as_tuple()
            assert isinstance(two_exponent, int)
            digits = "".join(map(str, two_digits))
            point = len(two_digits) + two_exponent
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{minus}{whole}.{digits[point:] or '0'}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


#: How Java's ``Double.toString`` writes the values JSON has no number for.
_JAVA_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def java_text(value: object) -> str:
    """A value as Java's ``String.valueOf`` writes the Java value it stands for: ``true``,
    ``8080`` (a :class:`~pycurator.discovery.JavaLong` too), ``1.5``, ``NaN``, ``null``
    inside a list or a map, a list as ``[1, a]`` and a map as ``{k=v}`` (Java's collections'
    ``toString``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, int):
        return str(int(value))  # a subclass's repr is not its number
    if isinstance(value, float):
        return java_double(value) if math.isfinite(value) else _JAVA_NON_FINITE[str(value)]
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_text(k)}={java_text(v)}" for k, v in value.items()) + "}"
    return str(value)


@dataclass(frozen=True)
class UriPart:
    """One part of a :class:`UriSpec`: a literal, or the name of a field to replace."""

    value: str
    variable: bool = False


_NESTED = "{ is not allowed inside of a variable specification"


class UriSpec:
    """Curator's ``UriSpec``: a URI template with fields in braces, ``{scheme}://{address}:{port}``.

    Parsed as Curator parses it (a field's name trimmed as Java trims; ``{[}`` and ``{]}`` are
    literal braces); equal when the parts are. :meth:`build` fills the fields as Curator does:
    ``scheme`` is ``https`` when the instance has an SSL port (``http`` otherwise) while
    ``{port}`` stays the plain port, so a template for TLS names ``{ssl-port}``.
    """

    FIELD_SCHEME = "scheme"
    FIELD_NAME = "name"
    FIELD_ID = "id"
    FIELD_ADDRESS = "address"
    FIELD_PORT = "port"
    FIELD_SSL_PORT = "ssl-port"
    FIELD_REGISTRATION_TIME_UTC = "registration-time-utc"
    FIELD_SERVICE_TYPE = "service-type"
    FIELD_OPEN_BRACE = "["
    FIELD_CLOSE_BRACE = "]"

    __slots__ = ("_parts",)

    def __init__(self, template: str = "") -> None:
        if not isinstance(template, str):
            raise TypeError(f"a URI template must be a str, not {type(template).__name__}")
        parts: list[UriPart] = []
        inside = False
        for token in (t for t in re.split(r"([{}])", template) if t):
            if token == "{":
                if inside:
                    raise InvalidUriSpec(template, _NESTED)
                inside = True
            elif token == "}":
                if not inside:
                    raise InvalidUriSpec(template, "} must be preceded by {")
                inside = False
            else:
                parts.append(UriPart(token.strip(JAVA_BLANKS) if inside else token, inside))
        if inside:
            raise InvalidUriSpec(template, "Final variable not closed - expected }")
        self._parts = tuple(parts)

    @classmethod
    def from_parts(cls, parts: Iterable[UriPart]) -> UriSpec:
        """A spec of these parts, as Jackson reads one from its ``parts``."""
        spec = cls()
        spec._parts = tuple(parts)
        return spec

    @property
    def parts(self) -> tuple[UriPart, ...]:
        """The literals and fields, in order (Curator's ``getParts()``)."""
        return self._parts

    def __iter__(self) -> Iterator[UriPart]:
        return iter(self._parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriSpec) and self._parts == other._parts

    def __hash__(self) -> int:
        return hash(self._parts)

    def __repr__(self) -> str:
        text = "".join("{" + p.value + "}" if p.variable else p.value for p in self._parts)
        return f"UriSpec({text!r})"

    def build(
        self,
        instance: ServiceInstance | None = None,
        variables: Mapping[str, object] | None = None,
    ) -> str:
        """The URI, fields replaced as Curator's ``build`` replaces them: from ``instance``
        (``name``, ``id``, ``address``, ``port``, ``ssl-port``, ``registration-time-utc``,
        ``service-type`` in lower case; a field the instance lacks is empty), then from
        ``variables``, which win; a field that none of them names, or that they map to None,
        is left out. Values are written as Java writes them (``true``, ``1.5``, ``NaN``, a
        list as ``[1, a]``, a dict as ``{k=v}``)."""
        values: dict[str, object] = {"[": "{", "]": "}", "scheme": "http"}
        if instance is not None:
            values.update(
                {
                    "name": instance.name,
                    "id": instance.id,
                    "address": _or_empty(instance.address),
                    "port": _or_empty(instance.port),
                    "ssl-port": _or_empty(instance.ssl_port),
                    "registration-time-utc": instance.registration_time_utc,
                    "service-type": instance.service_type.value.lower(),
                }
            )
            if instance.ssl_port is not None:
                values["scheme"] = "https"
        values.update(variables or {})
        out = []
        for part in self._parts:
            if not part.variable:
                out.append(part.value)
            elif (value := values.get(part.value)) is not None:
                out.append(java_text(value))
        return "".join(out)


def _or_empty(value: object) -> object:
    return "" if value is None else value


def new_id() -> str:
    """A random id, as Curator's builder makes one (``UUID.randomUUID()``)."""
    return str(uuid.uuid4())


def now_ms() -> int:
    """Now, in milliseconds since the epoch (Java's ``System.currentTimeMillis()``)."""
    return clock.time_ns() // 1_000_000


@dataclass(frozen=True)
class ServiceInstance:
    """One instance of a service, with Curator's fields (``ServiceInstance``).

    Only ``name`` is required: ``id`` defaults to a random UUID and ``registration_time_utc``
    (milliseconds) to now, as Curator's builder does; ``address`` defaults to None (use
    :func:`pycurator.discovery.local_instance` for the address Curator's builder picks). A
    name or id that is empty, holds ``/`` or is no node name, a port outside 0-65535, raise
    :class:`~pycurator.discovery.InvalidServiceInstance`; a wrong type, ``TypeError``.
    Equal when every field is; the hash leaves the payload out (a payload may be a dict).
    """

    name: str
    _: KW_ONLY
    id: str = field(default_factory=new_id)
    address: str | None = None
    port: int | None = None
    ssl_port: int | None = None
    payload: Any = None
    registration_time_utc: int = field(default_factory=now_ms)
    service_type: ServiceType = ServiceType.DYNAMIC
    uri_spec: UriSpec | None = None
    enabled: bool = True

    def __post_init__(self) -> None:
        for name in ("name", "id"):
            _check_node_name(name, getattr(self, name))
        if self.address is not None and not isinstance(self.address, str):
            raise TypeError(f"address must be a str or None, not {type(self.address).__name__}")
        for name in ("port", "ssl_port"):
            _check_port(name, getattr(self, name))
        _check_int("registration_time_utc", self.registration_time_utc, LONG_MIN, LONG_MAX)
        if not isinstance(self.service_type, ServiceType):
            try:
                object.__setattr__(self, "service_type", ServiceType(self.service_type))
            except ValueError:
                names = ", ".join(t.value for t in ServiceType)
                raise InvalidServiceInstance(
                    "service_type", self.service_type, f"not one of {names}"
                ) from None
        if isinstance(self.uri_spec, str):
            object.__setattr__(self, "uri_spec", UriSpec(self.uri_spec))
        elif self.uri_spec is not None and not isinstance(self.uri_spec, UriSpec):
            kind = type(self.uri_spec).__name__
            raise TypeError(f"uri_spec must be a UriSpec or None, not {kind}")
        if not isinstance(self.enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(self.enabled).__name__}")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in fields(self) if f.name != "payload"))

    def build_uri_spec(self, variables: Mapping[str, object] | None = None) -> str:
        """This instance's URI (Curator's ``buildUriSpec``), or ``""`` without a ``uri_spec``."""
        return "" if self.uri_spec is None else self.uri_spec.build(self, variables)


def instance_as_read(**values: Any) -> ServiceInstance:
    """An instance holding what a node holds, as Jackson reads it, without the checks a new
    instance gets: Java reads a port of 70000 or an empty id, and so does a reader here. Every
    field must be given."""
    instance = object.__new__(ServiceInstance)
    state = instance.__dict__
    for name in _FIELDS:  # a frozen dataclass's fields, set as its __init__ sets them
        state[name] = values[name]
    return instance


#: The names of an instance's fields, in order.
_FIELDS = tuple(f.name for f in fields(ServiceInstance))


def _check_node_name(field_name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{field_name} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidServiceInstance(field_name, value, "must not be empty")
    if "/" in value:
        raise InvalidServiceInstance(
            field_name, value, "contains '/': it is one node of the path base/name/id"
        )
    try:
        validate_path("/" + value)
    except ValueError as exc:
        reason = f"not a ZooKeeper node name ({exc})"
        raise InvalidServiceInstance(field_name, value, reason) from None


def _check_int(field_name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{field_name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidServiceInstance(field_name, value, f"outside {low}-{high}")


def _check_port(field_name: str, value: object) -> None:
    if value is not None:
        _check_int(field_name, value, 0, 65535)


@dataclass(frozen=True)
class InterfaceAddress:
    """An address of one of the host's network interfaces, as Java's ``NetworkInterface``
    gives it: the interface's name, the address, and whether the interface is point-to-point."""

    interface: str
    address: IPv4Address | IPv6Address
    point_to_point: bool = False

    @property
    def java_text(self) -> str:
        """The address as Java's ``InetAddress.getHostAddress()`` writes it: IPv6 in eight
        groups without ``::`` and with the interface as its scope (``fd00:0:0:0:0:0:0:2%eth0``)."""
        if isinstance(self.address, IPv4Address):
            return str(self.address)
        packed = self.address.packed
        groups = (f"{packed[i] << 8 | packed[i + 1]:x}" for i in range(0, 16, 2))
        return ":".join(groups) + f"%{self.interface}"


def java_interface_order(
    ipv4: Iterable[InterfaceAddress], ipv6: Iterable[InterfaceAddress]
) -> list[InterfaceAddress]:
    """The addresses in the order Java's ``NetworkInterface.getNetworkInterfaces()`` and each
    interface's ``getInetAddresses()`` yield them on Linux, from the order the kernel lists
    them (IPv4 as ``SIOCGIFCONF`` does, IPv6 as ``/proc/net/if_inet6`` does): the JDK reads
    IPv4 first, then IPv6, and puts each new interface, and each interface's new address,
    first."""
    names: list[str] = []
    found: dict[str, list[InterfaceAddress]] = {}
    for entry in (*ipv4, *ipv6):
        if entry.interface not in found:
            names.insert(0, entry.interface)
            found[entry.interface] = []
        found[entry.interface].insert(0, entry)
    return [entry for name in names for entry in found[name]]


def curator_addresses(addresses: Iterable[InterfaceAddress]) -> list[str]:
    """Curator's ``ServiceInstanceBuilder.getAllLocalIPs()`` over addresses in Java's order:
    none of loopback, nor link-local but on a point-to-point interface, as Java writes them.
    The builder's default address is the first."""
    return [
        a.java_text
        for a in addresses
        if not a.address.is_loopback and (a.point_to_point or not a.address.is_link_local)
    ]
