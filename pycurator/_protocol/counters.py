"""The rules of Curator's shared and atomic values, without I/O: how a number is held in a node
(Java's ``ByteBuffer``, big-endian two's complement), how Java's arithmetic wraps, how Java reads
bytes it did not write, and what a write whose answer was lost did, once it is settled.

- ``SharedCount``: 4 bytes; Java reads the first 4 of a longer node and throws
  ``BufferUnderflowException`` on a shorter one (an empty node included).
- ``DistributedAtomicInteger`` / ``DistributedAtomicLong``: 4 / 8 bytes; a missing or empty node
  reads 0; a shorter one is "Corrupted data", a longer one reads as its first bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import CorruptedDataError


@dataclass(frozen=True)
class NumberType:
    """A Java integer type as Curator's recipes hold it: ``size`` bytes, big-endian, two's
    complement; ``name`` as Java spells the type."""

    name: str
    size: int

    @property
    def min(self) -> int:
        return -(1 << (8 * self.size - 1))

    @property
    def max(self) -> int:
        return (1 << (8 * self.size - 1)) - 1

    def check(self, value: object, what: str) -> int:
        """``value`` if it is an int that fits; TypeError or ValueError naming ``what``."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{what} must be an int, not {value!r}")
        if not self.min <= value <= self.max:
            raise ValueError(
                f"{what} must fit a Java {self.name} ({self.min} to {self.max}), not {value}"
            )
        return value

    def wrap(self, value: int) -> int:
        """``value`` wrapped into the type's range, as Java's arithmetic does."""
        bits = 8 * self.size
        value &= (1 << bits) - 1
        return value - (1 << bits) if value > self.max else value

    def encode(self, value: int) -> bytes:
        """The bytes Java's ``ByteBuffer.put*`` writes for ``value`` (checked to fit)."""
        return value.to_bytes(self.size, "big", signed=True)

    def decode(self, data: bytes, path: str) -> int:
        """What Java's ``ByteBuffer.get*`` reads from ``data``: its first ``size`` bytes;
        :class:`CorruptedDataError` naming ``path`` and the bytes when there are fewer."""
        if len(data) < self.size:
            raise CorruptedDataError(path, bytes(data), f"not a Java {self.name}")
        return int.from_bytes(data[: self.size], "big", signed=True)

    def decode_atomic(self, data: bytes | None, path: str) -> int:
        """What Curator's atomic number reads: 0 for no node or no bytes, else
        :meth:`decode`."""
        return 0 if not data else self.decode(data, path)


#: Java's ``int``: ``SharedCount``, ``DistributedAtomicInteger``.
INT = NumberType("int", 4)
#: Java's ``long``: ``DistributedAtomicLong``.
LONG = NumberType("long", 8)


def next_version(version: int) -> int:
    """The version a node has after one more write, as ZooKeeper counts (wrapping as Java's
    ``int``)."""
    return INT.wrap(version + 1)


@dataclass(frozen=True)
class Tries:
    """How many tries an operation makes and how long it sleeps between them: a kazoo
    ``KazooRetry``'s numbers, as kazoo counts them. ``max_tries`` tries in all (-1: no limit;
    0 is taken as 1, where kazoo's own loop would never stop); before the ``n``-th try after
    the first, ``delay * backoff ** (n - 1)`` seconds (at most ``max_delay``), give or take
    ``max_jitter`` of it; none started once ``deadline`` seconds have passed since the first."""

    max_tries: int = 1
    delay: float = 0.0
    backoff: float = 1.0
    max_jitter: float = 0.0
    max_delay: float = 60.0
    deadline: float | None = None

    def sleep_before(self, retry: int, elapsed: float, jitter: float) -> float | None:
        """Seconds to sleep before retry number ``retry`` (1 for the second try), ``elapsed``
        seconds after the first began, for a ``jitter`` drawn in [-1, 1]; None when no more
        tries are allowed."""
        if self.max_tries >= 0 and retry >= max(self.max_tries, 1):
            return None
        try:
            delay = min(self.delay * self.backoff ** (retry - 1), self.max_delay)
        except OverflowError:
            delay = self.max_delay
        sleep = max(0.0, delay * (1.0 + jitter * self.max_jitter))
        if self.deadline is not None and elapsed + sleep >= self.deadline:
            return None
        return sleep


#: One try, as Curator's ``PromotedToLock`` makes under its lock when given no retry policy.
ONE_TRY = Tries()


class Fate(enum.Enum):
    """What a conditional write whose answer was lost did, as far as can be known."""

    #: It took effect, exactly once.
    APPLIED = "applied"
    #: It did not take effect, and never will: trying again applies it once.
    NOT_APPLIED = "not applied"
    #: It may have taken effect or not, and nothing on the server tells which.
    UNKNOWN = "unknown"


def fate_of(expected_version: int, written: bytes, version: int | None, data: bytes | None) -> Fate:
    """The fate of a conditional write (of ``written``, made to leave the node at
    ``expected_version``: a ``setData`` at one less, or a create at 0) that can no longer take
    effect (sent again, it was refused: the node moved on), from the node as read afterwards
    (``version`` and ``data``; None when it is gone).

    The node at the version the write would have made, holding other bytes, was written by
    someone else: ours did not take. Holding our bytes, it was ours or an identical write (two
    increments of the same value write the same bytes): unknown. Further on, or gone, the write
    of that version is out of sight: unknown.
    """
    if version is None or version != expected_version or data is None:
        return Fate.UNKNOWN
    return Fate.UNKNOWN if bytes(data) == bytes(written) else Fate.NOT_APPLIED


__all__ = [
    "INT",
    "LONG",
    "ONE_TRY",
    "Fate",
    "NumberType",
    "Tries",
    "fate_of",
    "next_version",
]
