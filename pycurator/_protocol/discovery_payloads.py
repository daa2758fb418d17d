"""A service instance's payload as Jackson types it: Curator marks the payload
``@JsonTypeInfo(use = CLASS, defaultImpl = Object.class)``, so Jackson writes a Java class name
beside every value that is not a plain string, ``int``, ``double`` or boolean.

Top level (the payload itself): ``"hello"``, ``42``, ``1.5``, ``true`` and ``null`` bare; a
``long`` as ``["java.lang.Long",1099511627776]``, a map as
``{"@class":"java.util.LinkedHashMap","k":"v"}``, a list as ``["java.util.ArrayList",["a"]]``, a
Java object as ``{"@class":"com.example.Details",...}``. Inside a map, a list or an object,
values are plain JSON: no class names. A Python ``int`` is an ``Integer`` when it fits 32 bits,
a ``Long`` when it fits 64 (as Jackson reads a bare number), else a ``BigInteger``;
:class:`JavaLong` makes a smaller one a ``Long``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from .discovery import INT_MAX, INT_MIN, JAVA_BLANKS, LONG_MAX, LONG_MIN
from .errors import InstanceFormatError, PayloadTypeError
from .jackson import to_boolean, to_int, to_str

T = TypeVar("T")

#: Where Jackson's ``@JsonTypeInfo(use = CLASS)`` puts the class name of an object.
CLASS_PROPERTY = "@class"
LONG = "java.lang.Long"
BIG_INTEGER = "java.math.BigInteger"
#: The Java classes whose values read as a dict, and the one a dict is written as.
MAP_CLASSES = frozenset(
    {
        "java.util.LinkedHashMap",
        "java.util.HashMap",
        "java.util.TreeMap",
        "java.util.concurrent.ConcurrentHashMap",
    }
)
MAP = "java.util.LinkedHashMap"
#: The Java classes whose values read as a list, and the one a list is written as.
LIST_CLASSES = frozenset({"java.util.ArrayList", "java.util.LinkedList"})
LIST = "java.util.ArrayList"
#: The whole numbers Jackson reads from a wrapper array, and their ranges.
_INT_RANGES = {
    LONG: (LONG_MIN, LONG_MAX),
    "java.lang.Integer": (INT_MIN, INT_MAX),
    "java.lang.Short": (-(2**15), 2**15 - 1),
    "java.lang.Byte": (-(2**7), 2**7 - 1),
}
#: Wrapped scalars Jackson reads (it writes only ``Long`` and ``BigInteger`` so).
SCALAR_CLASSES = frozenset(
    {*_INT_RANGES, BIG_INTEGER, "java.lang.String", "java.lang.Double", "java.lang.Float"}
    | {"java.lang.Boolean"}
)


class JavaLong(int):
    """An ``int`` written as a Java ``Long`` (``["java.lang.Long",5]``) whatever its size, as a
    Java service whose payload type is ``Long`` needs; a Long payload reads back as one."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"JavaLong({int(self)})"


@dataclass(frozen=True)
class RawPayload:
    """A payload of a Java class no Python class stands for, kept as Jackson's JSON: an
    object's members but ``@class`` (``value`` a dict), or the value of a wrapper array
    (``["java.util.HashSet",[1,2]]``: ``wrapped``). It is written back as it was read."""

    java_class: str
    value: Any
    wrapped: bool = False


@runtime_checkable
class JavaPayload(Protocol):
    """A payload class with a Java class name: ``java_class``, its fields as JSON members in
    the Java class's field order (:meth:`to_json`), and an instance from them
    (``from_json``). :func:`java_payload` makes a dataclass one."""

    java_class: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON members, named and ordered as Jackson writes the Java class's."""
        ...

    @classmethod
    def from_json(cls: type[T], members: Mapping[str, Any]) -> T:
        """An instance from the members of a JSON object (unknown ones ignored)."""
        ...


def java_payload(java_class: str) -> Callable[[type[T]], type[T]]:
    """Make a dataclass a :class:`JavaPayload` written under ``java_class``.

    Its fields are the Java class's, in the Java class's declaration order (Jackson's order);
    a field's JSON name is its own unless ``field(metadata={"java": "sslPort"})`` names it.
    Reading ignores members the class lacks, and gives a field the JSON lacks its default, or
    None when it has none (Java leaves it ``null``).
    """
    if not isinstance(java_class, str) or not java_class:
        raise PayloadTypeError(repr(java_class), "a Java class name must be a non-empty str")

    def decorate(cls: type[T]) -> type[T]:
        if not dataclasses.is_dataclass(cls):
            raise PayloadTypeError(cls.__qualname__, "java_payload() takes a dataclass")
        names = [(f.name, f.metadata.get("java", f.name)) for f in dataclasses.fields(cls)]

        def to_json(self: Any) -> dict[str, Any]:
            return {json_name: getattr(self, name) for name, json_name in names}

        def from_json(kind: type[T], members: Mapping[str, Any]) -> T:
            given = {name: members[key] for name, key in names if key in members}
            for f in dataclasses.fields(kind):  # type: ignore[arg-type]
                no_default = f.default is dataclasses.MISSING
                if f.name not in given and no_default and f.default_factory is dataclasses.MISSING:
                    given[f.name] = None
            return kind(**given)

        setattr(cls, "java_class", java_class)  # noqa: B010
        setattr(cls, "to_json", to_json)  # noqa: B010
        setattr(cls, "from_json", classmethod(from_json))  # noqa: B010
        return cls

    return decorate


@java_payload("org.springframework.cloud.zookeeper.discovery.ZookeeperInstance")
@dataclass
class SpringZookeeperInstance:
    """Spring Cloud Zookeeper's payload: the registering application's instance id, its name
    (``spring.application.name``) and its metadata. Spring registers under ``/services``
    (``spring.cloud.zookeeper.discovery.root``), an instance id a random UUID, the URI template
    ``{scheme}://{address}:{port}``."""

    java_class: ClassVar[str]

    id: str | None = None
    name: str | None = None
    metadata: dict[str, str] | None = field(default_factory=dict)


@java_payload("org.apache.dubbo.registry.zookeeper.ZookeeperInstance")
@dataclass
class DubboZookeeperInstance:
    """Dubbo 3's payload (its application-level service discovery): ``id`` is ``host:port``
    as the instance's, ``name`` the application, ``metadata`` Dubbo's instance metadata. Dubbo
    registers under ``/services`` (its registry's ``rootPath``, or ``/<group>`` when a group
    is set), the instance id ``host:port``, no URI template."""

    java_class: ClassVar[str]

    id: str | None = None
    name: str | None = None
    metadata: dict[str, str] | None = field(default_factory=dict)


def payload_to_json(payload: object) -> Any:
    """The payload as Jackson writes it at the top: JSON values, typed where Jackson types
    them; :class:`PayloadTypeError` for a value with no Java class name."""
    if payload is None or isinstance(payload, (bool, str)):
        return payload
    if isinstance(payload, JavaLong):
        return [LONG, int(payload)]
    if isinstance(payload, int):
        if INT_MIN <= payload <= INT_MAX:
            return payload
        return [LONG if LONG_MIN <= payload <= LONG_MAX else BIG_INTEGER, payload]
    if isinstance(payload, float):
        return plain_json(payload)
    if isinstance(payload, dict):
        if CLASS_PROPERTY in payload:
            raise PayloadTypeError(
                "dict", f"a map payload cannot have the key {CLASS_PROPERTY!r}, Jackson's type id"
            )
        return {CLASS_PROPERTY: MAP, **plain_json(payload)}
    if isinstance(payload, (list, tuple)):
        return [LIST, plain_json(payload)]
    if isinstance(payload, RawPayload):
        if payload.wrapped or not isinstance(payload.value, dict):
            return [payload.java_class, plain_json(payload.value)]
        return {CLASS_PROPERTY: payload.java_class, **plain_json(payload.value)}
    if isinstance(payload, JavaPayload):
        return {CLASS_PROPERTY: type(payload).java_class, **plain_json(payload.to_json())}
    raise PayloadTypeError(type(payload).__qualname__, _NO_CLASS)


_NO_CLASS = (
    "a payload is None, a str, int, float, bool, dict, list, JavaLong, RawPayload, or of a "
    "class made with java_payload('java.class.Name')"
)


def plain_json(value: object) -> Any:
    """A value inside a payload as Jackson writes it there: plain JSON, no class names."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number, which JSON cannot hold")
        return value
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise PayloadTypeError(
                    type(key).__qualname__, f"a map's key must be a str, not {key!r}"
                )
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    if isinstance(value, RawPayload):
        return plain_json(value.value)
    if isinstance(value, JavaPayload):
        return plain_json(value.to_json())
    raise PayloadTypeError(type(value).__qualname__, _NO_CLASS)


def payload_from_json(value: Any, classes: Mapping[str, type[JavaPayload]]) -> Any:
    """The payload Jackson reads from ``value`` (parsed JSON), with ``classes`` the Python
    classes that stand for Java ones; a class name no one knows is kept as a
    :class:`RawPayload`. :class:`InstanceFormatError` where Jackson fails."""
    if isinstance(value, dict):
        if CLASS_PROPERTY not in value:
            return value
        members = {k: v for k, v in value.items() if k != CLASS_PROPERTY}
        java_class = _class_name(value[CLASS_PROPERTY])
        if java_class in classes:
            return classes[java_class].from_json(members)
        return members if java_class in MAP_CLASSES else RawPayload(java_class, members)
    if isinstance(value, list):
        if len(value) != 2 or not isinstance(value[0], str):
            raise InstanceFormatError(
                f"payload: a typed array is [class name, value], not {_short(value)}"
            )
        java_class, inner = value
        if java_class in LIST_CLASSES and isinstance(inner, list):
            return inner
        if java_class in classes and isinstance(inner, dict):
            return classes[java_class].from_json(inner)
        if java_class in SCALAR_CLASSES:
            return _scalar(java_class, inner)
        return RawPayload(java_class, inner, wrapped=True)
    return value


def _class_name(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (dict, list)):
        raise InstanceFormatError(f"payload: {CLASS_PROPERTY} must be a class name, not {value!r}")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _scalar(java_class: str, value: object) -> Any:
    """A wrapped scalar, converted as Jackson converts it."""
    where = f"payload ({java_class})"
    if value is None:
        return None
    if java_class in _INT_RANGES:
        number = to_int(where, value, *_INT_RANGES[java_class])
        return JavaLong(number) if java_class == LONG and number is not None else number
    if java_class == BIG_INTEGER:
        if isinstance(value, float):
            return math.trunc(value)
        if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip(JAVA_BLANKS)):
            return int(value.strip(JAVA_BLANKS))
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
    elif java_class == "java.lang.String":
        return to_str(where, value)
    elif java_class == "java.lang.Boolean":
        return to_boolean(where, value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise InstanceFormatError(f"{where}: cannot read {_short(value)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
