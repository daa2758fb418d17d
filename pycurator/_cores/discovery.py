"""The service discovery's core, held by both front ends (``pycurator.discovery`` and
``pycurator.aio.discovery``): what a discovery is, whichever way its owner waits.

:class:`DiscoveryCore` checks the arguments, keeps the life cycle (Curator's LATENT, STARTED,
CLOSED) and the registrations (:class:`~pycurator._recipes.registration.Registrar`), and
composes the queries (:mod:`pycurator._recipes.discovery`), telling each node that is no
instance to the log and to the ``on_malformed`` callbacks. :class:`ProviderCore` is how a
service provider picks an instance, under its lock. :class:`DiscoveryFace` and
:class:`ProviderFace` are their properties, which every front end's shell inherits.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kazoo.exceptions import ConnectionLoss

from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_json import InstanceSerializer, JsonInstanceSerializer
from .._protocol.discovery_strategies import (
    DownInstancePolicy,
    DownInstances,
    InstanceFilter,
    ProviderStrategy,
    RoundRobinStrategy,
    available,
)
from .._protocol.errors import InstanceFormatError
from .._protocol.paths import validate_path
from .._protocol.registration import check_registrable, check_segment, node_path
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._recipes import discovery as queries
from .._recipes.lock_nodes import check_size
from .._recipes.registration import Registrar
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger("pycurator")
_T = TypeVar("_T")

#: Where Spring Cloud Zookeeper and Dubbo 3 register by default, and the command line looks.
DEFAULT_BASE_PATH = "/services"


def check_serializer(serializer: object) -> InstanceSerializer:
    """``serializer`` if it has ``serialize`` and ``deserialize``, Curator's default
    (:class:`JsonInstanceSerializer`, any payload) for None; TypeError otherwise."""
    if serializer is None:
        return JsonInstanceSerializer()
    if not callable(getattr(serializer, "serialize", None)) or not callable(
        getattr(serializer, "deserialize", None)
    ):
        raise TypeError(f"serializer must have serialize() and deserialize(), not {serializer!r}")
    return serializer  # type: ignore[return-value]


def instance_data(
    serializer: InstanceSerializer, base_path: str, instance: ServiceInstance
) -> bytes:
    """The bytes of ``instance`` as its node would hold them, checked first as Curator would
    register it; ValueError when the request that writes them would be more than the server
    takes (sent, it would make the server drop the connection, at every try)."""
    data = serializer.serialize(check_registrable(instance))
    path = node_path(base_path, instance.name, instance.id)
    check_size(data, path, f"the instance {instance.name}/{instance.id}")
    return data


def _adopted(serializer: InstanceSerializer, data: bytes) -> ServiceInstance | None:
    """The instance another wrote to one of our nodes (``watch_instances``), or None when it
    is none: the node is then left as it is."""
    try:
        return serializer.deserialize(data)
    except Exception as exc:
        log.warning("a registered instance's node was changed to no instance: %s", exc)
        return None


def _kept(steps: Steps[None], what: ServiceInstance, seconds: float) -> Steps[None]:
    """``steps``, a deadline that passes told as the connection loss it is: the instance stays
    registered, written once the connection is back."""
    try:
        yield from steps
    except DeadlineExpired:
        raise ConnectionLoss(
            f"{what.name}/{what.id} not written to ZooKeeper within {seconds:g}s: it stays "
            "registered, and is written once the connection is back"
        ) from None


class DiscoveryCore:
    """One discovery under ``base_path``, for a front end to hold and drive: its
    registrations, kept registered through reconnects and expiries, and its queries.

    Everything here returns at once or returns steps for the front end to run; registering,
    updating and unregistering need :meth:`begin` first, queries do not.
    """

    def __init__(
        self,
        transport: Transport,
        base_path: str,
        serializer: InstanceSerializer | None,
        this_instance: ServiceInstance | None,
        watch_instances: bool,
    ) -> None:
        self.transport = transport
        self.base_path = validate_path(base_path)
        self.serializer = check_serializer(serializer)
        if this_instance is not None:
            instance_data(self.serializer, self.base_path, this_instance)  # a bad payload: now
        if not isinstance(watch_instances, bool):
            raise TypeError(f"watch_instances must be a bool, not {watch_instances!r}")
        self.this_instance = this_instance
        self.watch_instances = watch_instances
        adopt = functools.partial(_adopted, self.serializer) if watch_instances else None
        self.registrar = Registrar(transport, self.base_path, adopt)
        self.state = Lifecycle.LATENT
        #: Called with each node a query or a cache could not read, after it is logged.
        self.malformed_callbacks: list[Callable[[InstanceFormatError], Any]] = []
        #: The service caches and providers started and not closed (each leaves on its close;
        #: the discovery's close closes those left).
        self.opened: set[Any] = set()

    def each_opened(self, call: Callable[[Any], _T]) -> list[_T]:
        """``call(opened)`` for each service cache and provider still started, in turn (on a
        copy: each leaves :attr:`opened` as it closes); what each call returned."""
        return [call(opened) for opened in list(self.opened)]

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        client: KazooClient = self.transport.client
        return client

    # -- life ------------------------------------------------------------------------------------

    def begin_steps(self) -> Steps[None]:
        """Start (RuntimeError when started before): follow the connection, and register
        ``this_instance`` if given."""
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: discovery of {self.base_path}")
        self.state = Lifecycle.STARTED
        self.registrar.start()
        if self.this_instance is not None:
            yield from self.register_steps(self.this_instance)

    def close_steps(self) -> Steps[None]:
        """Close: unregister every instance (waiting for the server at most
        :data:`~pycurator._protocol.waits.DELETE_WAIT`, then in the background). Closing
        twice, or an unstarted discovery, does nothing more."""
        was = self.state
        self.state = Lifecycle.CLOSED
        if was is Lifecycle.STARTED:
            yield from self.registrar.close_steps()

    def _check_started(self) -> None:
        if self.state is not Lifecycle.STARTED:
            raise RuntimeError(f"the discovery of {self.base_path} is not started, or closed")

    # -- registrations ---------------------------------------------------------------------------

    def register_steps(self, instance: ServiceInstance) -> Steps[None]:
        """Steps that register ``instance`` (its bytes made first: a bad payload raises before
        anything is sent)."""
        self._check_started()
        data = instance_data(self.serializer, self.base_path, instance)
        seconds = self.transport.session_timeout()
        steps = self.registrar.register_steps(instance, data, Deadline(seconds))
        return _kept(steps, instance, seconds)

    def update_steps(self, instance: ServiceInstance) -> Steps[None]:
        """Steps that write ``instance`` to its node (it must be registered)."""
        self._check_started()
        data = instance_data(self.serializer, self.base_path, instance)
        seconds = self.transport.session_timeout()
        return _kept(
            self.registrar.update_steps(instance, data, Deadline(seconds)), instance, seconds
        )

    def unregister_steps(self, instance: ServiceInstance) -> Steps[None]:
        """Steps that unregister ``instance`` (nothing if it is not registered)."""
        check_registrable(instance)
        return self.registrar.unregister_steps(instance.name, instance.id)

    def registered(self) -> list[ServiceInstance]:
        """The instances registered now, each as last registered or updated."""
        return self.registrar.registered()

    # -- queries ---------------------------------------------------------------------------------

    def _deadline(self) -> Deadline:
        return Deadline(self.transport.session_timeout())

    def names_steps(self) -> Steps[list[str]]:
        """Steps that read the services' names."""
        return queries.names_steps(self.base_path, self._deadline())

    def instances_steps(self, name: str) -> Steps[list[ServiceInstance]]:
        """Steps that read every instance of ``name``, telling the nodes that are none."""
        check_segment("service name", name)
        found = yield from queries.instances_steps(
            self.base_path, name, self.serializer, self._deadline()
        )
        self.report(found.malformed)
        return found.instances

    def instance_steps(self, name: str, instance_id: str) -> Steps[ServiceInstance | None]:
        """Steps that read one instance, or None."""
        check_segment("service name", name)
        check_segment("instance id", instance_id)
        return queries.instance_steps(
            self.base_path, name, instance_id, self.serializer, self._deadline()
        )

    def add_malformed_callback(self, callback: Callable[[InstanceFormatError], Any]) -> None:
        """Call ``callback(error)`` for each node no instance is read from (TypeError unless
        callable)."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {callback!r}")
        self.malformed_callbacks.append(callback)

    def report(
        self,
        malformed: Sequence[InstanceFormatError],
        post: Callable[..., None] | None = None,
    ) -> None:
        """Tell each of ``malformed``: logged, then given to each callback (through
        ``post(callback, error)`` if given, else at once; a callback's error is logged)."""
        for error in malformed:
            log.warning("skipped a node that is no service instance: %s", error)
            for callback in list(self.malformed_callbacks):
                if post is not None:
                    post(callback, error)
                else:
                    _call(callback, error)

    def describe(self, kind: str) -> str:
        """The discovery's repr, as a ``kind`` (its class's name as users write it)."""
        count = len(self.registered())
        return f"{kind}({self.base_path!r}, state={self.state.value}, registered={count})"


def _call(callback: Callable[[InstanceFormatError], Any], error: InstanceFormatError) -> None:
    try:
        callback(error)
    except Exception:
        log.exception("an on_malformed callback failed: %r", callback)


class DiscoveryFace:
    """A discovery over a :class:`DiscoveryCore`."""

    _core: DiscoveryCore

    @property
    def client(self) -> KazooClient:
        """The kazoo client this discovery uses."""
        return self._core.client

    @property
    def base_path(self) -> str:
        """The path under which each service's instances are (Curator's ``basePath``)."""
        return self._core.base_path

    @property
    def serializer(self) -> InstanceSerializer:
        """How an instance is written to its node and read back."""
        return self._core.serializer

    @property
    def this_instance(self) -> ServiceInstance | None:
        """The instance registered at start, if one was given."""
        return self._core.this_instance

    @property
    def watch_instances(self) -> bool:
        """Whether a change another client makes to a registered instance's node is taken as
        that instance's new data (Curator's ``watchInstances``)."""
        return self._core.watch_instances

    @property
    def registered(self) -> list[ServiceInstance]:
        """The instances this discovery keeps registered now, each as last registered or
        updated (no request)."""
        return self._core.registered()


class ProviderCore:
    """How a service provider picks among the instances of its service (Curator's
    ``ServiceProviderImpl``): the caller's filters, then the instances noted down, then the
    disabled ones left out, and ``strategy`` picking one of the rest; safe to share between
    threads."""

    def __init__(
        self,
        transport: Transport,
        name: str,
        strategy: ProviderStrategy | None,
        down_instance_policy: DownInstancePolicy | None,
        filters: Iterable[InstanceFilter],
    ) -> None:
        self.name = check_segment("service name", name)
        strategy = RoundRobinStrategy() if strategy is None else strategy
        if not callable(getattr(strategy, "get_instance", None)):
            raise TypeError(f"strategy must have get_instance(), not {strategy!r}")
        policy = DownInstancePolicy() if down_instance_policy is None else down_instance_policy
        if not isinstance(policy, DownInstancePolicy):
            raise TypeError(f"down_instance_policy must be a DownInstancePolicy, not {policy!r}")
        self.filters = tuple(filters)
        for check in self.filters:
            if not callable(check):
                raise TypeError(f"each filter must be callable, not {check!r}")
        self.strategy = strategy
        self.down = DownInstances(policy)
        self._lock = transport.lock_object()

    def all(self, instances: Iterable[ServiceInstance]) -> list[ServiceInstance]:
        """What the provider offers of ``instances``."""
        with self._lock:
            return available(instances, self.filters, self.down)

    def pick(self, instances: Iterable[ServiceInstance]) -> ServiceInstance | None:
        """The instance for one use, or None when none is offered."""
        with self._lock:
            return self.strategy.get_instance(available(instances, self.filters, self.down))

    def note_error(self, instance: ServiceInstance) -> None:
        """Count an error of ``instance`` (TypeError unless an instance)."""
        if not isinstance(instance, ServiceInstance):
            raise TypeError(f"expected a ServiceInstance, not {type(instance).__name__}")
        with self._lock:
            self.down.note_error(instance)


class ProviderFace:
    """A service provider over a :class:`ProviderCore`."""

    _provider: ProviderCore

    @property
    def name(self) -> str:
        """The service whose instances the provider offers."""
        return self._provider.name

    @property
    def strategy(self) -> ProviderStrategy:
        """How one instance is picked."""
        return self._provider.strategy

    @property
    def down_instance_policy(self) -> DownInstancePolicy:
        """When an instance with errors is left out, and for how long."""
        return self._provider.down.policy

    @property
    def filters(self) -> tuple[InstanceFilter, ...]:
        """The caller's filters, applied first."""
        return self._provider.filters


__all__ = [
    "DEFAULT_BASE_PATH",
    "DiscoveryCore",
    "DiscoveryFace",
    "ProviderCore",
    "ProviderFace",
    "check_serializer",
]
