"""The asyncio atomic values: the cores of :mod:`pycurator._cores.atomic`, awaited instead of
blocked on (the same nodes, tries and promoted lock as Curator's, and no update applied
twice)."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from .._cores.atomic import AtomicFace, NumberCore, ValueCore, describe
from .._protocol.counters import INT, LONG, NumberType
from .._recipes.atomic import AtomicValue, PromotedToLock
from ._runner import run_async, transport_of


class _Number(AtomicFace):
    """What the asyncio atomic numbers share: every operation, awaited."""

    _core: NumberCore
    _number: NumberType = LONG

    def __init__(
        self,
        client: KazooClient,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None = None,
    ) -> None:
        self._core = NumberCore(
            transport_of(client), path, retry_policy, promoted_to_lock, self._number
        )

    async def get(self) -> AtomicValue[int]:
        """The current value (0 when there is no node), as a succeeded ``AtomicValue``."""
        return await run_async(self._core.steps.transport, self._core.get_steps())

    async def increment(self) -> AtomicValue[int]:
        """Add 1; always check ``succeeded`` (and ``unknown``)."""
        return await run_async(self._core.steps.transport, self._core.add_steps(1))

    async def decrement(self) -> AtomicValue[int]:
        """Subtract 1; always check ``succeeded`` (and ``unknown``)."""
        return await run_async(self._core.steps.transport, self._core.add_steps(-1))

    async def add(self, delta: int) -> AtomicValue[int]:
        """Add ``delta``, wrapping as Java's arithmetic; always check ``succeeded``."""
        return await run_async(self._core.steps.transport, self._core.add_steps(delta))

    async def subtract(self, delta: int) -> AtomicValue[int]:
        """Subtract ``delta``, wrapping as Java's arithmetic; always check ``succeeded``."""
        steps = self._core.add_steps(delta, sign=-1)
        return await run_async(self._core.steps.transport, steps)

    async def compare_and_set(self, expected: int, new: int) -> AtomicValue[int]:
        """Set ``new`` if the value is ``expected``, once (no retry, no lock)."""
        steps = self._core.compare_and_set_steps(expected, new)
        return await run_async(self._core.steps.transport, steps)

    async def try_set(self, new: int) -> AtomicValue[int]:
        """Set ``new`` over whatever value is read, tried as the policies allow."""
        return await run_async(self._core.steps.transport, self._core.try_set_steps(new))

    async def force_set(self, new: int) -> None:
        """Set ``new`` with no atomicity at all (the node made if missing)."""
        await run_async(self._core.steps.transport, self._core.force_set_steps(new))

    async def initialize(self, value: int) -> bool:
        """Make the node holding ``value``: False when it exists already."""
        return await run_async(self._core.steps.transport, self._core.initialize_steps(value))


class DistributedAtomicLong(_Number):
    """The asyncio form of :class:`pycurator.DistributedAtomicLong`."""

    _number = LONG

    def __repr__(self) -> str:
        return describe("aio.DistributedAtomicLong", self)


class DistributedAtomicInteger(_Number):
    """The asyncio form of :class:`pycurator.DistributedAtomicInteger`."""

    _number = INT

    def __repr__(self) -> str:
        return describe("aio.DistributedAtomicInteger", self)


class DistributedAtomicValue(AtomicFace):
    """The asyncio form of :class:`pycurator.DistributedAtomicValue`."""

    _core: ValueCore

    def __init__(
        self,
        client: KazooClient,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None = None,
    ) -> None:
        self._core = ValueCore(transport_of(client), path, retry_policy, promoted_to_lock)

    async def get(self) -> AtomicValue[bytes | None]:
        """The current bytes (None when there is no node), as a succeeded ``AtomicValue``."""
        return await run_async(self._core.steps.transport, self._core.get_steps())

    async def compare_and_set(self, expected: bytes, new: bytes) -> AtomicValue[bytes | None]:
        """Set ``new`` if the node holds ``expected``, once (no retry, no lock)."""
        steps = self._core.compare_and_set_steps(expected, new)
        return await run_async(self._core.steps.transport, steps)

    async def try_set(self, new: bytes) -> AtomicValue[bytes | None]:
        """Set ``new`` over whatever is read, tried as the policies allow."""
        return await run_async(self._core.steps.transport, self._core.try_set_steps(new))

    async def force_set(self, new: bytes) -> None:
        """Set ``new`` with no atomicity at all (the node made if missing)."""
        await run_async(self._core.steps.transport, self._core.force_set_steps(new))

    async def initialize(self, value: bytes) -> bool:
        """Make the node holding ``value``: False when it exists already."""
        return await run_async(self._core.steps.transport, self._core.initialize_steps(value))

    def __repr__(self) -> str:
        return describe("aio.DistributedAtomicValue", self)
