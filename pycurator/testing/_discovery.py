"""Java Curator's service discovery (curator-x-discovery) behind a small Python interface: a
Java peer that registers, updates, unregisters, queries and caches as a Java service does, so
a test can prove its Python service is seen by its Java ones, and the reverse.

Instances cross between the languages field by field (never through pycurator's serializer,
which the peer is there to check): a Python :class:`~pycurator.discovery.ServiceInstance`
becomes Curator's ``ServiceInstance`` with each payload as the Java value it stands for
(``str`` a ``String``, ``int`` an ``Integer``, ``Long`` or ``BigInteger`` by size,
:class:`~pycurator.discovery.JavaLong` a ``Long``, ``dict`` a ``LinkedHashMap``, ``list`` an
``ArrayList``, a :func:`~pycurator.discovery.java_payload` object its Java class through
Jackson), and back.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .._protocol.discovery import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    ServiceInstance,
    ServiceType,
    UriPart,
    UriSpec,
    instance_as_read,
)
from .._protocol.discovery_payloads import JavaLong, JavaPayload, RawPayload
from ._curator import CURATOR, close_on_shutdown, jclass

#: curator-x-discovery's Java package.
CURATOR_DISCOVERY = f"{CURATOR}.x.discovery"
_open: set[JavaServiceDiscovery] = set()
_open_lock = threading.Lock()


def discovery_class(simple_name: str) -> Any:
    """A class of curator-x-discovery by its name under ``org.apache.curator.x.discovery``
    (``ServiceInstance``, ``details.JsonInstanceSerializer``...)."""
    return jclass(f"{CURATOR_DISCOVERY}.{simple_name}")


def java_serializer(payload_class: str = "java.lang.Object", compatible: bool = True) -> Any:
    """Curator's ``JsonInstanceSerializer`` for ``payload_class`` (a Java class name)."""
    return discovery_class("details.JsonInstanceSerializer")(
        jclass(payload_class).class_, compatible
    )


def _mapper() -> Any:
    return jclass("com.fasterxml.jackson.databind.ObjectMapper")()


def to_java_payload(value: object) -> Any:
    """The Java value a Python payload stands for (see the module's docs)."""
    import jpype

    if value is None:
        return None
    if isinstance(value, bool):
        return jclass("java.lang.Boolean")(value)
    if isinstance(value, str):
        return jpype.JString(value)
    if isinstance(value, int):
        if INT_MIN <= value <= INT_MAX and not isinstance(value, JavaLong):
            return jclass("java.lang.Integer")(int(value))
        if LONG_MIN <= value <= LONG_MAX:
            return jclass("java.lang.Long")(int(value))
        return jclass("java.math.BigInteger")(str(value))
    if isinstance(value, float):
        return jclass("java.lang.Double")(value)
    if isinstance(value, dict):
        result = jclass("java.util.LinkedHashMap")()
        for key, item in value.items():
            result.put(jpype.JString(key), to_java_payload(item))
        return result
    if isinstance(value, (list, tuple)):
        items = jclass("java.util.ArrayList")()
        for item in value:
            items.add(to_java_payload(item))
        return items
    if isinstance(value, (JavaPayload, RawPayload)):
        name = type(value).java_class if isinstance(value, JavaPayload) else value.java_class
        members = value.to_json() if isinstance(value, JavaPayload) else value.value
        return _mapper().convertValue(to_java_payload(members), jclass(name).class_)
    raise TypeError(f"no Java value stands for a {type(value).__qualname__}")


def from_java_payload(value: Any, classes: Iterable[type[Any]] = (), *, top: bool = True) -> Any:
    """The Python value a Java payload stands for; an object of a class none of ``classes``
    stands for is a :class:`~pycurator.discovery.RawPayload` of its bean's fields."""
    if value is None:
        return None
    name = str(value.getClass().getName())
    simple: dict[str, Callable[[Any], Any]] = {
        "java.lang.String": str,
        "java.lang.Integer": int,
        "java.lang.Short": int,
        "java.lang.Byte": int,
        "java.math.BigInteger": lambda v: int(str(v)),
        "java.lang.Double": float,
        "java.lang.Float": float,
        "java.lang.Boolean": bool,
    }
    if name in simple:
        return simple[name](value)
    if name == "java.lang.Long":
        return JavaLong(int(value)) if top else int(value)
    if jclass("java.util.Map").class_.isInstance(value):
        return {str(k): from_java_payload(v, classes, top=False) for k, v in value.entrySet()}
    if jclass("java.util.Collection").class_.isInstance(value):
        items = [from_java_payload(item, classes, top=False) for item in value]
        is_list = jclass("java.util.List").class_.isInstance(value)
        return items if is_list or not top else RawPayload(name, items, wrapped=True)
    fields = from_java_payload(
        _mapper().convertValue(value, jclass("java.util.LinkedHashMap").class_), top=False
    )
    for kind in classes:
        if kind.java_class == name:
            return kind.from_json(fields)
    return RawPayload(name, fields) if top else fields


def to_java_instance(instance: ServiceInstance) -> Any:
    """Curator's ``ServiceInstance`` with the fields of ``instance``, built by its constructor."""
    integer = jclass("java.lang.Integer")
    spec = None
    if instance.uri_spec is not None:
        spec = discovery_class("UriSpec")()
        part = discovery_class("UriSpec$Part")
        for p in instance.uri_spec.parts:
            spec.add(part(p.value, p.variable))
    return discovery_class("ServiceInstance")(
        instance.name,
        instance.id,
        instance.address,
        None if instance.port is None else integer(instance.port),
        None if instance.ssl_port is None else integer(instance.ssl_port),
        to_java_payload(instance.payload),
        instance.registration_time_utc,
        discovery_class("ServiceType").valueOf(instance.service_type.value),
        spec,
        instance.enabled,
    )


def from_java_instance(java: Any, payload_classes: Iterable[type[Any]] = ()) -> ServiceInstance:
    """A Python instance with the fields of Curator's ``java`` instance (a null name, id or
    type as :class:`~pycurator.discovery.JsonInstanceSerializer` reads one: empty, DYNAMIC)."""
    spec = java.getUriSpec()
    kind = java.getServiceType()
    return instance_as_read(
        name=_text(java.getName()) or "",
        id=_text(java.getId()) or "",
        address=_text(java.getAddress()),
        port=None if java.getPort() is None else int(java.getPort()),
        ssl_port=None if java.getSslPort() is None else int(java.getSslPort()),
        payload=from_java_payload(java.getPayload(), payload_classes),
        registration_time_utc=int(java.getRegistrationTimeUTC()),
        service_type=ServiceType.DYNAMIC if kind is None else ServiceType(str(kind.name())),
        uri_spec=None
        if spec is None
        else UriSpec.from_parts(
            UriPart(str(p.getValue()), bool(p.isVariable())) for p in spec.getParts()
        ),
        enabled=bool(java.isEnabled()),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class JavaServiceCache:
    """Curator's ``ServiceCache`` of one service, with a listener that counts its changes:
    :meth:`instances`, :meth:`wait_for` a condition on them, and the connection states seen."""

    def __init__(self, discovery: JavaServiceDiscovery, name: str) -> None:
        import jpype

        self._discovery = discovery
        self._changed = threading.Condition()
        self.changes = 0
        #: The connection states the cache's listener was told of, by name, in order.
        self.states: list[str] = []
        self.java = discovery.java.serviceCacheBuilder().name(name).build()
        self._listener = jpype.JProxy(
            f"{CURATOR_DISCOVERY}.details.ServiceCacheListener",
            dict={"cacheChanged": self._on_change, "stateChanged": self._on_state},
        )
        self.java.addListener(self._listener)

    def _on_change(self) -> None:
        with self._changed:
            self.changes += 1
            self._changed.notify_all()

    def _on_state(self, _client: Any, state: Any) -> None:
        with self._changed:
            self.states.append(str(state.name()))
            self._changed.notify_all()

    def start(self) -> JavaServiceCache:
        """Start the cache (it reads the service's instances before it returns)."""
        self.java.start()
        return self

    def instances(self) -> list[ServiceInstance]:
        """The instances the cache holds now."""
        return [self._discovery.from_java(i) for i in self.java.getInstances()]

    def wait_for(
        self, condition: Callable[[list[ServiceInstance]], bool], timeout: float = 10.0
    ) -> bool:
        """Wait until ``condition(instances())`` holds, woken by the cache's changes; False
        once ``timeout`` seconds passed without."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self.instances()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        """Stop the cache and its listener."""
        with contextlib.suppress(Exception):
            self.java.removeListener(self._listener)
        self.java.close()


class JavaServiceDiscovery:
    """Curator's ``ServiceDiscovery`` on a Curator client, driven from Python: what a Java
    service registers, a Python service must find, and the reverse.

    ``payload_class`` is the Java payload class (``java.lang.Object`` by default: any);
    ``compatible`` picks Curator's serializer mode; ``payload_classes`` are the
    :func:`~pycurator.discovery.java_payload` classes the queries' payloads read as. ``java``
    is Curator's object. Closed at the end of the process if still open.
    """

    def __init__(
        self,
        curator: Any,
        base_path: str,
        *,
        payload_class: str = "java.lang.Object",
        compatible: bool = True,
        payload_classes: Iterable[type[Any]] = (),
        watch_instances: bool = False,
    ) -> None:
        self.base_path = base_path
        self.payload_classes = tuple(payload_classes)
        kind = jclass(payload_class).class_
        self.java = (
            discovery_class("ServiceDiscoveryBuilder")
            .builder(kind)
            .client(curator)
            .basePath(base_path)
            .serializer(java_serializer(payload_class, compatible))
            .watchInstances(watch_instances)
            .build()
        )
        self._caches: list[JavaServiceCache] = []

    def from_java(self, java: Any) -> ServiceInstance:
        """A Java instance as a Python one, payloads read with :attr:`payload_classes`."""
        return from_java_instance(java, self.payload_classes)

    def start(self) -> JavaServiceDiscovery:
        """Start Curator's discovery."""
        with _open_lock:
            _open.add(self)
        self.java.start()
        return self

    def register(self, instance: ServiceInstance) -> None:
        """Curator's ``registerService``."""
        self.java.registerService(to_java_instance(instance))

    def update(self, instance: ServiceInstance) -> None:
        """Curator's ``updateService``."""
        self.java.updateService(to_java_instance(instance))

    def unregister(self, instance: ServiceInstance) -> None:
        """Curator's ``unregisterService``."""
        self.java.unregisterService(to_java_instance(instance))

    def query_for_names(self) -> list[str]:
        """Curator's ``queryForNames``: the services under the base path."""
        return sorted(str(name) for name in self.java.queryForNames())

    def query_for_instances(self, name: str) -> list[ServiceInstance]:
        """Curator's ``queryForInstances``: every instance of ``name`` (Java throws on a node
        it cannot read)."""
        return [self.from_java(i) for i in self.java.queryForInstances(name)]

    def query_for_instance(self, name: str, instance_id: str) -> ServiceInstance | None:
        """Curator's ``queryForInstance``: the instance, or None."""
        found = self.java.queryForInstance(name, instance_id)
        return None if found is None else self.from_java(found)

    def service_cache(self, name: str) -> JavaServiceCache:
        """A Java cache of ``name``'s instances (not started), closed with the discovery."""
        cache = JavaServiceCache(self, name)
        self._caches.append(cache)
        return cache

    def close(self) -> None:
        """Close the caches, then Curator's discovery (which unregisters what it registered)."""
        with _open_lock:
            _open.discard(self)
        for cache in reversed(self._caches):
            with contextlib.suppress(Exception):
                cache.close()
        self.java.close()

    def __enter__(self) -> JavaServiceDiscovery:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_all() -> None:
    with _open_lock:
        peers = list(_open)
    for peer in peers:
        with contextlib.suppress(Exception):
            peer.close()


close_on_shutdown(_close_all)
