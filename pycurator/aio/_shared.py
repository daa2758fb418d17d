"""The asyncio ``SharedValue`` and ``SharedCount``: the shared value's core
(:mod:`pycurator._cores.shared`), awaited instead of blocked on; listeners are told on the loop
that started it (a coroutine a listener returns runs as a task)."""

from __future__ import annotations

from types import TracebackType
from typing import Generic, TypeVar

from kazoo.client import KazooClient

from .._cores.shared import BytesCodec, Codec, CountCodec, SharedCore, SharedFace
from .._recipes.shared_value import VersionedValue
from ._runner import loop_spawner, run_async, transport_of

V = TypeVar("V")


class _Shared(SharedFace[V], Generic[V]):
    """What the asyncio shared value and count share: their life cycle, awaited."""

    def __init__(self, client: KazooClient, path: str, seed: object, codec: Codec[V], name: str):
        self._core = SharedCore(transport_of(client), path, seed, codec, name)

    async def start(self) -> None:
        """Make the node with the seed if it is missing, read it, and follow it; listeners are
        told on the running loop. RuntimeError when started before."""
        core = self._core
        await run_async(core.transport, core.start_steps(self, loop_spawner()))

    async def close(self) -> None:
        """Stop following the node: no listener is told anything more."""
        await run_async(self._core.transport, self._core.close_steps())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class SharedValue(_Shared[bytes]):
    """The asyncio form of :class:`pycurator.SharedValue`."""

    def __init__(self, client: KazooClient, path: str, seed_value: bytes) -> None:
        super().__init__(client, path, seed_value, BytesCodec(), "seed_value")

    def get_value(self) -> bytes:
        """The value last read (the seed before :meth:`start`)."""
        return self._core.value()

    async def set_value(self, value: bytes) -> None:
        """Write ``value`` whatever the node holds. RuntimeError unless started."""
        await run_async(self._core.transport, self._core.set_steps(value, "value"))

    async def try_set_value(self, previous: VersionedValue[bytes], value: bytes) -> bool:
        """Write ``value`` only if the node still holds ``previous`` (see
        :meth:`pycurator.SharedValue.try_set_value`)."""
        steps = self._core.try_set_steps(previous, value, "value")
        return await run_async(self._core.transport, steps)

    async def __aenter__(self) -> SharedValue:
        await self.start()
        return self

    def __repr__(self) -> str:
        return self._core.describe("aio.SharedValue")


class SharedCount(_Shared[int]):
    """The asyncio form of :class:`pycurator.SharedCount`."""

    def __init__(self, client: KazooClient, path: str, seed_count: int) -> None:
        super().__init__(client, path, seed_count, CountCodec(), "seed_count")

    def get_count(self) -> int:
        """The count last read (the seed before :meth:`start`)."""
        return self._core.value()

    async def set_count(self, count: int) -> None:
        """Write ``count`` whatever the node holds. RuntimeError unless started."""
        await run_async(self._core.transport, self._core.set_steps(count, "count"))

    async def try_set_count(self, previous: VersionedValue[int], count: int) -> bool:
        """Write ``count`` only if the node still holds ``previous`` (see
        :meth:`pycurator.SharedValue.try_set_value`)."""
        steps = self._core.try_set_steps(previous, count, "count")
        return await run_async(self._core.transport, steps)

    async def __aenter__(self) -> SharedCount:
        await self.start()
        return self

    def __repr__(self) -> str:
        return self._core.describe("aio.SharedCount")
