"""``SharedValue`` and ``SharedCount``: Curator's shared value and count, for threads.

One PERSISTENT node, made with the seed when missing (container parents), read with a watch:
every client on the path sees its changes, whoever makes them. A count is a Java ``int`` in 4
big-endian bytes, as Curator's ``SharedCount`` writes it. What a shared value is lives in
:mod:`pycurator._cores.shared`, which the asyncio forms hold too; listeners are told in order on
a worker of the client's handler.
"""

from __future__ import annotations

from types import TracebackType
from typing import Generic, TypeVar

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.shared import BytesCodec, Codec, CountCodec, SharedCore, SharedFace
from .._recipes.shared_value import VersionedValue
from .runner import run

V = TypeVar("V")


class _Shared(SharedFace[V], Generic[V]):
    """What the threaded shared value and count share: their life cycle, blocking."""

    def __init__(self, client: KazooClient, path: str, seed: object, codec: Codec[V], name: str):
        self._core = SharedCore(transport_of(client), path, seed, codec, name)

    def start(self) -> None:
        """Make the node with the seed if it is missing, read it, and follow it. RuntimeError
        when started before (Curator: "Cannot be started more than once")."""
        core = self._core
        run(core.transport, core.start_steps(self, core.transport.serial_queue().post))

    def close(self) -> None:
        """Stop following the node: no listener is told anything more."""
        run(self._core.transport, self._core.close_steps())

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SharedValue(_Shared[bytes]):
    """A value shared with Java Curator's ``SharedValue`` on the same path: raw bytes.

    ``get_value()`` is the value last read (no request): every change, made by anyone, is read
    again in the background (quick successive ones may come as one), and so is the node after
    a reconnect. ``set_value`` writes whatever the node holds; ``try_set_value`` only over the
    value it was given, read by ``get_versioned_value()``.
    """

    def __init__(self, client: KazooClient, path: str, seed_value: bytes) -> None:
        super().__init__(client, path, seed_value, BytesCodec(), "seed_value")

    def get_value(self) -> bytes:
        """The value last read (the seed before :meth:`start`)."""
        return self._core.value()

    def set_value(self, value: bytes) -> None:
        """Write ``value`` whatever the node holds. RuntimeError unless started."""
        run(self._core.transport, self._core.set_steps(value, "value"))

    def try_set_value(self, previous: VersionedValue[bytes], value: bytes) -> bool:
        """Write ``value`` only if the node still holds ``previous`` (as
        :meth:`get_versioned_value` gave it): False, and the value read again, when it has
        changed since. :class:`~pycurator.IllegalTrySetVersionError` for a version of -1 (an
        overflowed one, as Curator 5.7+); :class:`~pycurator.UnknownOutcomeError` when the
        write's answer was lost and whether it took cannot be known."""
        return run(self._core.transport, self._core.try_set_steps(previous, value, "value"))

    def __enter__(self) -> SharedValue:
        self.start()
        return self

    def __repr__(self) -> str:
        return self._core.describe("SharedValue")


class SharedCount(_Shared[int]):
    """A count shared with Java Curator's ``SharedCount`` on the same path: a Java ``int``
    (4 bytes, big-endian, two's complement).

    As :class:`SharedValue`, on numbers: a count outside a Java ``int`` is refused
    (ValueError), and a node of fewer than 4 bytes is
    :class:`~pycurator.CorruptedDataError`, naming the node and its bytes.
    """

    def __init__(self, client: KazooClient, path: str, seed_count: int) -> None:
        super().__init__(client, path, seed_count, CountCodec(), "seed_count")

    def get_count(self) -> int:
        """The count last read (the seed before :meth:`start`)."""
        return self._core.value()

    def set_count(self, count: int) -> None:
        """Write ``count`` whatever the node holds. RuntimeError unless started."""
        run(self._core.transport, self._core.set_steps(count, "count"))

    def try_set_count(self, previous: VersionedValue[int], count: int) -> bool:
        """Write ``count`` only if the node still holds ``previous`` (see
        :meth:`SharedValue.try_set_value`)."""
        return run(self._core.transport, self._core.try_set_steps(previous, count, "count"))

    def __enter__(self) -> SharedCount:
        self.start()
        return self

    def __repr__(self) -> str:
        return self._core.describe("SharedCount")


__all__ = ["SharedCount", "SharedValue", "VersionedValue"]
