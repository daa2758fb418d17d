"""The cores of Curator's atomic values, held by both front ends: ``DistributedAtomicValue`` on
bytes, and ``DistributedAtomicLong`` / ``DistributedAtomicInteger`` on a Java ``long`` / ``int``
(8 / 4 bytes, big-endian; a missing or empty node reads 0; the arithmetic wraps as Java's), over
the atomic value's protocol (:mod:`pycurator._recipes.atomic`); and their faces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from kazoo.retry import KazooRetry

from .._protocol.counters import NumberType
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._recipes.atomic import AtomicSteps, AtomicValue, PromotedToLock
from .._recipes.combining import combiner_of

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def check_bytes(value: object, what: str) -> bytes:
    """``value`` if it is bytes; TypeError naming ``what``."""
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{what} must be bytes, not {type(value).__name__}")
    return bytes(value)


class NumberCore:
    """An atomic number of ``number`` (Java's ``long`` or ``int``), whatever waits on it: its
    arguments checked (TypeError or ValueError naming them, before anything is sent), its
    operations as steps, and their results read as Java reads them."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None,
        number: NumberType,
    ) -> None:
        self.steps = AtomicSteps(transport, path, retry_policy, promoted_to_lock)
        self.number = number

    def _value(self, raw: AtomicValue[bytes | None]) -> AtomicValue[int]:
        path, number = self.steps.path, self.number
        return AtomicValue(
            raw.succeeded,
            number.decode_atomic(raw.pre_value, path),
            number.decode_atomic(raw.post_value, path),
            raw.stats,
            raw.unknown,
        )

    def _run(self, steps: Steps[AtomicValue[bytes | None]]) -> Steps[AtomicValue[int]]:
        return self._value((yield from steps))

    def get_steps(self) -> Steps[AtomicValue[int]]:
        return self._run(self.steps.get_steps())

    def add_steps(
        self, delta: object, what: str = "delta", sign: int = 1
    ) -> Steps[AtomicValue[int]]:
        """Add ``sign * delta`` (checked to fit the type), wrapping as Java's arithmetic, with
        the additions made meanwhile through the same client (see
        :mod:`pycurator._recipes.combining`)."""
        amount = sign * self.number.check(delta, what)
        return combiner_of(self.steps, self.number).add_steps(amount)

    def try_set_steps(self, new: object) -> Steps[AtomicValue[int]]:
        data = self.number.encode(self.number.check(new, "new"))
        return self._run(self.steps.update_steps(lambda _: data))

    def compare_and_set_steps(self, expected: object, new: object) -> Steps[AtomicValue[int]]:
        old = self.number.encode(self.number.check(expected, "expected"))
        data = self.number.encode(self.number.check(new, "new"))
        return self._run(self.steps.compare_and_set_steps(old, data))

    def force_set_steps(self, new: object) -> Steps[None]:
        return self.steps.force_set_steps(self.number.encode(self.number.check(new, "new")))

    def initialize_steps(self, value: object) -> Steps[bool]:
        return self.steps.initialize_steps(self.number.encode(self.number.check(value, "value")))


class ValueCore:
    """A ``DistributedAtomicValue`` on bytes, whatever waits on it: its arguments checked, its
    operations as steps."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None,
    ) -> None:
        self.steps = AtomicSteps(transport, path, retry_policy, promoted_to_lock)

    def get_steps(self) -> Steps[AtomicValue[bytes | None]]:
        return self.steps.get_steps()

    def try_set_steps(self, new: object) -> Steps[AtomicValue[bytes | None]]:
        data = check_bytes(new, "new")
        return self.steps.update_steps(lambda _: data)

    def compare_and_set_steps(
        self, expected: object, new: object
    ) -> Steps[AtomicValue[bytes | None]]:
        old, data = check_bytes(expected, "expected"), check_bytes(new, "new")
        return self.steps.compare_and_set_steps(old, data)

    def force_set_steps(self, new: object) -> Steps[None]:
        return self.steps.force_set_steps(check_bytes(new, "new"))

    def initialize_steps(self, value: object) -> Steps[bool]:
        return self.steps.initialize_steps(check_bytes(value, "value"))


class AtomicFace:
    """An atomic value or number over a core's steps."""

    _core: NumberCore | ValueCore

    @property
    def path(self) -> str:
        """The node's path, as given."""
        return self._core.steps.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return cast("KazooClient", self._core.steps.transport.client)

    @property
    def retry_policy(self) -> KazooRetry:
        """The optimistic tries' policy."""
        return self._core.steps.retry_policy

    @property
    def promoted_to_lock(self) -> PromotedToLock | None:
        """The lock taken when the optimistic tries fail, if any."""
        return self._core.steps.promoted_to_lock


def describe(kind: str, face: Any) -> str:
    """An atomic value's repr, as a ``kind`` (its class's name as users write it)."""
    promoted = face.promoted_to_lock
    more = "" if promoted is None else f", promoted_to_lock={promoted.lock_path!r}"
    return f"{kind}({face.path!r}{more})"


__all__ = ["AtomicFace", "NumberCore", "ValueCore", "check_bytes", "describe"]
