"""When a node kept by a ``PersistentTtlNode`` expires, told from its ``touch`` child's stat: a
pure rule over the server's times.

ZooKeeper shows no client a node's TTL (a TTL node's stat reads as a persistent node's), so the
TTL is told by the touching: Curator's ``PersistentTtlNode`` (and pycurator's) sets the child
every ``ttl / 2``, so twice the mean time between touches is the TTL. The pair is reaped once the
child has not been touched for its TTL: it expires a TTL after the last touch. With two touchers
(Java's and Python's on one path) the touches come twice as often and the TTL told is half the
true one: an expiry told early, never late.
"""

from __future__ import annotations

from dataclasses import dataclass

from .wire import TTL_TOUCH_FACTOR


@dataclass(frozen=True)
class TtlExpiry:
    """What the ``touch`` child of a kept TTL node tells: ``touched_ms`` (its last touch, on
    the server's clock), ``touches`` (how many), and ``ttl`` (seconds, as the touching tells it;
    None after one touch, which tells none)."""

    touched_ms: int
    touches: int
    ttl: float | None

    @property
    def expires_ms(self) -> int | None:
        """When the pair expires unless touched again (the server's clock), or None when the
        TTL is not told yet."""
        return None if self.ttl is None else self.touched_ms + round(self.ttl * 1000)


def ttl_expiry(created_ms: int, touched_ms: int, version: int) -> TtlExpiry:
    """What a touch child made at ``created_ms``, last set at ``touched_ms`` (its ``mtime``),
    ``version`` times since, tells of its TTL."""
    ttl = None
    if version > 0 and touched_ms > created_ms:
        ttl = TTL_TOUCH_FACTOR * (touched_ms - created_ms) / version / 1000
    return TtlExpiry(touched_ms, version + 1, ttl)


__all__ = ["TtlExpiry", "ttl_expiry"]
