"""The cores of ``SharedValue`` and ``SharedCount``, held by both front ends: the life cycle
(Curator's LATENT, STARTED, CLOSED), the listeners and how they are told, and what a value is
(bytes, or a Java ``int`` in 4 bytes), over the shared value's protocol
(:mod:`pycurator._recipes.shared_value`); and their faces."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from .._protocol.counters import INT
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._recipes.shared_value import SharedValueSteps, VersionedValue
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient

V = TypeVar("V")

log = logging.getLogger("pycurator")


class Codec(Generic[V]):
    """What a shared value holds: a ``V``, to the node's bytes and back."""

    #: What its listeners' method is called (Curator's ``valueHasChanged`` / ``countHasChanged``).
    changed = ""

    def check(self, value: object, what: str) -> V:
        """``value`` if it is a ``V`` that fits; TypeError or ValueError naming ``what``."""
        raise NotImplementedError

    def to_bytes(self, value: V) -> bytes:
        raise NotImplementedError

    def from_bytes(self, data: bytes, path: str) -> V:
        raise NotImplementedError


class BytesCodec(Codec[bytes]):
    """A ``SharedValue``'s value: the node's bytes, as they are."""

    changed = "value_has_changed"

    def check(self, value: object, what: str) -> bytes:
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"{what} must be bytes, not {type(value).__name__}")
        return bytes(value)

    def to_bytes(self, value: bytes) -> bytes:
        return value

    def from_bytes(self, data: bytes, path: str) -> bytes:
        return data


class CountCodec(Codec[int]):
    """A ``SharedCount``'s value: a Java ``int`` in 4 big-endian bytes; a shorter node is
    :class:`~pycurator.CorruptedDataError` (Java's ``BufferUnderflowException``)."""

    changed = "count_has_changed"

    def check(self, value: object, what: str) -> int:
        return INT.check(value, what)

    def to_bytes(self, value: int) -> bytes:
        return INT.encode(value)

    def from_bytes(self, data: bytes, path: str) -> int:
        return INT.decode(data, path)


def check_listener(listener: object, method: str) -> None:
    """TypeError unless ``listener`` has ``method`` or is callable."""
    if not callable(getattr(listener, method, None)) and not callable(listener):
        raise TypeError(f"listener must have a {method}() method, or be callable")


class SharedCore(Generic[V]):
    """A shared value (``codec``: bytes, or a count), whatever waits on it: its protocol's
    steps, life cycle and listeners. A front end gives :meth:`start_steps` its way to post a
    listener's call (in order, never on kazoo's threads' path) and runs the steps its way."""

    def __init__(
        self, transport: Transport, path: str, seed: object, codec: Codec[V], seed_name: str
    ) -> None:
        self.codec = codec
        seed_value = codec.to_bytes(codec.check(seed, seed_name))
        self.steps = SharedValueSteps(transport, path, seed_value)
        self.state = Lifecycle.LATENT
        self.listeners: list[Any] = []

    @property
    def path(self) -> str:
        """The node's path, as given."""
        return self.steps.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return cast("KazooClient", self.steps.transport.client)

    @property
    def transport(self) -> Transport:
        """The transport of the client: what the steps run on."""
        return self.steps.transport

    def value(self) -> V:
        """The current value (the seed before the first read)."""
        return self.codec.from_bytes(self.steps.current.value, self.path)

    def versioned(self) -> VersionedValue[V]:
        """The current value with the version and zxid it was read at."""
        current = self.steps.current
        return VersionedValue(current.version, self.value(), current.zxid)

    def add_listener(self, listener: Any) -> None:
        check_listener(listener, self.codec.changed)
        self.listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    def start_steps(self, owner: object, post: Callable[..., None]) -> Steps[None]:
        """Move to STARTED (RuntimeError if started before, as Curator) and start: the
        listeners' calls go through ``post(callback, *args)``, about ``owner``."""
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self.state = Lifecycle.STARTED
        self.steps.on_change = lambda value: self._changed(owner, post, value)
        self.steps.on_state = lambda state: self._state(post, state)
        return self.steps.start_steps()

    def close_steps(self) -> Steps[None]:
        """Move to CLOSED: no more reads, and no listener told anything more."""
        self.state = Lifecycle.CLOSED
        self.listeners.clear()
        return self.steps.close_steps()

    def set_steps(self, value: object, what: str) -> Steps[None]:
        """Steps that write ``value`` (named ``what``, checked first) whatever the node holds."""
        return self.steps.set_steps(self.codec.to_bytes(self.codec.check(value, what)))

    def try_set_steps(self, previous: object, value: object, what: str) -> Steps[bool]:
        """Steps that write ``value`` (named ``what``, checked first) over ``previous`` (a
        :class:`VersionedValue` of ours: TypeError for anything else)."""
        if not isinstance(previous, VersionedValue):
            raise TypeError(f"previous must be a VersionedValue, not {previous!r}")
        codec = self.codec
        old = codec.to_bytes(codec.check(previous.value, "previous.value"))
        new = codec.to_bytes(codec.check(value, what))
        return self.steps.try_set_steps(VersionedValue(previous.version, old, previous.zxid), new)

    def _changed(
        self, owner: object, post: Callable[..., None], current: VersionedValue[bytes]
    ) -> None:
        try:
            value = self.codec.from_bytes(current.value, self.path)
        except ValueError:
            log.exception("SharedValue %s: not told", self.path)
            return
        for listener in list(self.listeners):
            post(getattr(listener, self.codec.changed, listener), owner, value)

    def _state(self, post: Callable[..., None], state: str) -> None:
        client = self.steps.transport.client
        for listener in list(self.listeners):
            told = getattr(listener, "state_changed", None)
            if callable(told):
                post(told, client, state)

    def describe(self, kind: str) -> str:
        return f"{kind}({self.path!r}, state={self.state.value})"


class SharedFace(Generic[V]):
    """A shared value or count over a :class:`SharedCore`."""

    _core: SharedCore[V]

    @property
    def path(self) -> str:
        """The node's path, as given."""
        return self._core.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self._core.client

    def get_versioned_value(self) -> VersionedValue[V]:
        """The current value with the node's version and zxid it was read at (no request),
        for ``try_set_*``."""
        return self._core.versioned()

    def add_listener(self, listener: Any) -> None:
        """Tell ``listener`` of each change, made by anyone (quick successive ones may come as
        one): ``value_has_changed(shared, value)`` (``count_has_changed`` for a count), or
        ``listener(shared, value)`` for a callable; and ``state_changed(client, state)``, if it
        has one, of each change of the connection."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: Any) -> None:
        """Stop telling ``listener``."""
        self._core.remove_listener(listener)


__all__ = ["BytesCodec", "Codec", "CountCodec", "SharedCore", "SharedFace", "check_listener"]
