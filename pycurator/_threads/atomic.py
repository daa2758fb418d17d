"""``DistributedAtomicLong``, ``DistributedAtomicInteger`` and ``DistributedAtomicValue``:
Curator's atomic values, for threads.

Each operation reads the node with its version and writes at that version, tried again as its
``retry_policy`` (a kazoo ``KazooRetry``) allows, then, with a :class:`PromotedToLock`, under an
``InterProcessMutex`` that Java and Python take alike. Unlike Curator, no update is ever applied
twice: a write whose answer was lost is settled before anything else is tried, and one whose
fate cannot be known ends the operation with ``AtomicValue.unknown`` set (see
:mod:`pycurator._recipes.versioned`). What each value is lives in :mod:`pycurator._cores.atomic`,
which the asyncio forms hold too.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from .._client.transport import transport_of
from .._cores.atomic import AtomicFace, NumberCore, ValueCore, describe
from .._protocol.counters import INT, LONG, NumberType
from .._recipes.atomic import AtomicStats, AtomicValue, PromotedToLock
from .runner import run


class _Number(AtomicFace):
    """What the threaded atomic numbers share: every operation, blocking."""

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

    def get(self) -> AtomicValue[int]:
        """The current value (0 when there is no node), as a succeeded ``AtomicValue``."""
        return run(self._core.steps.transport, self._core.get_steps())

    def increment(self) -> AtomicValue[int]:
        """Add 1; always check ``succeeded`` (and ``unknown``)."""
        return run(self._core.steps.transport, self._core.add_steps(1))

    def decrement(self) -> AtomicValue[int]:
        """Subtract 1; always check ``succeeded`` (and ``unknown``)."""
        return run(self._core.steps.transport, self._core.add_steps(-1))

    def add(self, delta: int) -> AtomicValue[int]:
        """Add ``delta``, wrapping as Java's arithmetic; always check ``succeeded``."""
        return run(self._core.steps.transport, self._core.add_steps(delta))

    def subtract(self, delta: int) -> AtomicValue[int]:
        """Subtract ``delta``, wrapping as Java's arithmetic; always check ``succeeded``."""
        return run(self._core.steps.transport, self._core.add_steps(delta, sign=-1))

    def compare_and_set(self, expected: int, new: int) -> AtomicValue[int]:
        """Set ``new`` if the value is ``expected``, once (no retry, no lock)."""
        return run(self._core.steps.transport, self._core.compare_and_set_steps(expected, new))

    def try_set(self, new: int) -> AtomicValue[int]:
        """Set ``new`` over whatever value is read, tried as the policies allow."""
        return run(self._core.steps.transport, self._core.try_set_steps(new))

    def force_set(self, new: int) -> None:
        """Set ``new`` with no atomicity at all (the node made if missing)."""
        run(self._core.steps.transport, self._core.force_set_steps(new))

    def initialize(self, value: int) -> bool:
        """Make the node holding ``value``: False when it exists already."""
        return run(self._core.steps.transport, self._core.initialize_steps(value))


class DistributedAtomicLong(_Number):
    """A Java ``long`` shared with Curator's ``DistributedAtomicLong`` on the same path: 8
    bytes, big-endian; a missing or empty node reads 0; the arithmetic wraps as Java's.
    An operation may fail (``succeeded`` False): its tries ran out, or the lock was not had in
    time; or end ``unknown`` (see :class:`AtomicValue`)."""

    _number = LONG

    def __repr__(self) -> str:
        return describe("DistributedAtomicLong", self)


class DistributedAtomicInteger(_Number):
    """A Java ``int`` shared with Curator's ``DistributedAtomicInteger``: 4 bytes, as
    :class:`DistributedAtomicLong` otherwise."""

    _number = INT

    def __repr__(self) -> str:
        return describe("DistributedAtomicInteger", self)


class DistributedAtomicValue(AtomicFace):
    """Raw bytes shared with Curator's ``DistributedAtomicValue``: its smaller set of
    operations (values are None where there is no node)."""

    _core: ValueCore

    def __init__(
        self,
        client: KazooClient,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None = None,
    ) -> None:
        self._core = ValueCore(transport_of(client), path, retry_policy, promoted_to_lock)

    def get(self) -> AtomicValue[bytes | None]:
        """The current bytes (None when there is no node), as a succeeded ``AtomicValue``."""
        return run(self._core.steps.transport, self._core.get_steps())

    def compare_and_set(self, expected: bytes, new: bytes) -> AtomicValue[bytes | None]:
        """Set ``new`` if the node holds ``expected``, once (no retry, no lock)."""
        return run(self._core.steps.transport, self._core.compare_and_set_steps(expected, new))

    def try_set(self, new: bytes) -> AtomicValue[bytes | None]:
        """Set ``new`` over whatever is read, tried as the policies allow."""
        return run(self._core.steps.transport, self._core.try_set_steps(new))

    def force_set(self, new: bytes) -> None:
        """Set ``new`` with no atomicity at all (the node made if missing)."""
        run(self._core.steps.transport, self._core.force_set_steps(new))

    def initialize(self, value: bytes) -> bool:
        """Make the node holding ``value``: False when it exists already."""
        return run(self._core.steps.transport, self._core.initialize_steps(value))

    def __repr__(self) -> str:
        return describe("DistributedAtomicValue", self)


__all__ = [
    "AtomicStats",
    "AtomicValue",
    "DistributedAtomicInteger",
    "DistributedAtomicLong",
    "DistributedAtomicValue",
    "PromotedToLock",
]
