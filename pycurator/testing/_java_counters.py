"""Java peers of Curator's shared values and atomic values: ``SharedValue``, ``SharedCount``,
``DistributedAtomicLong``, ``DistributedAtomicInteger`` and ``DistributedAtomicValue``, behind
the calls of pycurator's own (Curator's methods in snake_case, durations in seconds).

A retry policy is a kazoo ``KazooRetry`` (as pycurator's recipes take), turned into Curator's
nearest (``RetryNTimes``, or ``BoundedExponentialBackoffRetry`` when it backs off), or a Java
``RetryPolicy`` as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from ._curator import CURATOR, jclass
from ._java_calls import (
    CURATOR_RECIPES,
    JavaRecipePeer,
    Told,
    java_bytes,
    millis,
    proxy,
    python_bytes,
    recipe_class,
)

V = TypeVar("V")

#: Java's ``int`` and ``long`` bounds: SharedCount and DistributedAtomicInteger hold the first.
INT_RANGE = range(-(2**31), 2**31)
LONG_RANGE = range(-(2**63), 2**63)
#: The retry policy a peer uses when given none: 10 tries, 10 ms apart.
DEFAULT_TRIES, DEFAULT_SLEEP = 10, 0.01


def java_retry_policy(policy: object | None) -> Any:
    """Curator's ``RetryPolicy`` for ``policy``: a kazoo ``KazooRetry`` (its ``max_tries``, -1
    for ever; ``delay``; ``backoff``; ``max_delay``), a Java ``RetryPolicy`` as it is, or None
    for ``RetryNTimes(10, 10 ms)``."""
    from kazoo.retry import KazooRetry

    retry = f"{CURATOR}.retry"
    if policy is None:
        return jclass(f"{retry}.RetryNTimes")(DEFAULT_TRIES, int(DEFAULT_SLEEP * 1000))
    if not isinstance(policy, KazooRetry):
        if not jclass(f"{CURATOR}.RetryPolicy").class_.isInstance(policy):
            raise TypeError(f"not a KazooRetry or a Java RetryPolicy: {policy!r}")
        return policy
    tries = 2**31 - 1 if policy.max_tries < 0 else policy.max_tries
    delay_ms = int(policy.delay * 1000)
    if policy.backoff <= 1:
        return jclass(f"{retry}.RetryNTimes")(tries, delay_ms)
    bounded = jclass(f"{retry}.BoundedExponentialBackoffRetry")
    return bounded(max(delay_ms, 1), max(int(policy.max_delay * 1000), 1), min(tries, 29))


def _checked(value: int, bounds: range, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in bounds:
        raise ValueError(f"{what} must be an int in [{bounds.start}, {bounds.stop - 1}]: {value!r}")
    return value


@dataclass(frozen=True)
class JavaVersionedValue(Generic[V]):
    """A value with the node version it was read at; ``java`` is Curator's ``VersionedValue``,
    what ``try_set_*`` hands back to Java."""

    version: int
    value: V
    java: Any = field(repr=False, compare=False)


class _JavaShared(JavaRecipePeer):
    """Curator's ``SharedValue`` (or ``SharedCount``) with its listener recorded: ``told``
    holds every value it was told, in order, ``states`` every connection state."""

    java_class = "shared.SharedValue"
    listener_interface = "shared.SharedValueListener"
    changed_method = "valueHasChanged"

    def __init__(self, curator: Any, path: str, seed: Any) -> None:
        super().__init__(curator)
        self.path = path
        self.told = Told()
        self.states = Told()
        self.java = recipe_class(self.java_class)(curator, path, seed)
        self._listener = proxy(
            f"{CURATOR_RECIPES}.{self.listener_interface}",
            {
                self.changed_method: lambda _reader, value: self.told.add(self._from_java(value)),
                "stateChanged": lambda _client, state: self.states.add(str(state.name())),
            },
        )
        self._listenable().addListener(self._listener)

    def _listenable(self) -> Any:
        return self.java.getListenable()

    def _from_java(self, value: Any) -> Any:
        return python_bytes(value)

    def start(self) -> None:
        """Create the node with the seed if it is missing, and read it."""
        self._call("start()", self.java.start)

    def _versioned(self) -> JavaVersionedValue[Any]:
        java = self.java.getVersionedValue()
        return JavaVersionedValue(int(java.getVersion()), self._from_java(java.getValue()), java)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


class JavaSharedValue(_JavaShared):
    """Curator's ``SharedValue`` on ``path`` (bytes); ``told`` records each value its
    ``SharedValueListener`` is told (quick successive changes may come as one)."""

    def __init__(self, curator: Any, path: str, seed_value: bytes) -> None:
        super().__init__(curator, path, java_bytes(seed_value))

    def get_value(self) -> bytes:
        return python_bytes(self.java.getValue()) or b""

    def get_versioned_value(self) -> JavaVersionedValue[bytes]:
        return self._versioned()

    def set_value(self, value: bytes) -> None:
        self._call("set_value()", lambda: self.java.setValue(java_bytes(value)))

    def try_set_value(self, previous: JavaVersionedValue[bytes], value: bytes) -> bool:
        """Curator's ``trySetValue(previous, new)``: ``previous`` as
        :meth:`get_versioned_value` gave it."""
        return bool(
            self._call(
                "try_set_value()", lambda: self.java.trySetValue(previous.java, java_bytes(value))
            )
        )


class JavaSharedCount(_JavaShared):
    """Curator's ``SharedCount`` on ``path``: a 4-byte big-endian int; ``told`` records each
    count its ``SharedCountListener`` is told."""

    java_class = "shared.SharedCount"
    listener_interface = "shared.SharedCountListener"
    changed_method = "countHasChanged"

    def __init__(self, curator: Any, path: str, seed_count: int) -> None:
        super().__init__(curator, path, _checked(seed_count, INT_RANGE, "seed_count"))

    def _listenable(self) -> Any:
        return self.java  # SharedCount is its own Listenable

    def _from_java(self, value: Any) -> Any:
        return int(value)

    def get_count(self) -> int:
        return int(self.java.getCount())

    def get_versioned_value(self) -> JavaVersionedValue[int]:
        return self._versioned()

    def set_count(self, count: int) -> None:
        count = _checked(count, INT_RANGE, "count")
        self._call("set_count()", lambda: self.java.setCount(count))

    def try_set_count(self, previous: JavaVersionedValue[int], count: int) -> bool:
        """Curator's ``trySetCount(previous, new)``: ``previous`` as :meth:`get_versioned_value`
        gave it."""
        count = _checked(count, INT_RANGE, "count")
        return bool(
            self._call("try_set_count()", lambda: self.java.trySetCount(previous.java, count))
        )


@dataclass(frozen=True)
class JavaPromotedToLock:
    """Curator's ``PromotedToLock``: when the optimistic tries fail, take the
    ``InterProcessMutex`` at ``lock_path`` (waiting at most ``timeout`` seconds; None: for
    ever) and try under it with ``retry_policy`` (None: once, Curator's default)."""

    lock_path: str
    timeout: float | None = None
    retry_policy: object | None = None

    def to_java(self) -> Any:
        builder = recipe_class("atomic.PromotedToLock").builder().lockPath(self.lock_path)
        if self.timeout is not None:
            builder = builder.timeout(*millis(self.timeout))
        if self.retry_policy is not None:
            builder = builder.retryPolicy(java_retry_policy(self.retry_policy))
        return builder.build()


class JavaAtomicStats(NamedTuple):
    """Curator's ``AtomicStats``: tries made, and the time they took, in seconds."""

    optimistic_tries: int
    promoted_lock_tries: int
    optimistic_time: float
    promoted_time: float


@dataclass(frozen=True)
class JavaAtomicValue(Generic[V]):
    """Curator's ``AtomicValue``: whether the operation took, the value before and after."""

    succeeded: bool
    pre_value: V
    post_value: V
    stats: JavaAtomicStats


class _JavaAtomic(JavaRecipePeer, Generic[V]):
    """What the three atomic peers share: Curator's object on ``path``, made with
    ``retry_policy`` and, when given, ``promoted_to_lock``."""

    java_class = "atomic.DistributedAtomicValue"

    def __init__(
        self,
        curator: Any,
        path: str,
        retry_policy: object | None = None,
        promoted_to_lock: JavaPromotedToLock | None = None,
    ) -> None:
        super().__init__(curator)
        self.path = path
        self.promoted_to_lock = promoted_to_lock
        retry = java_retry_policy(retry_policy)
        atomic = recipe_class(self.java_class)
        if promoted_to_lock is None:
            self.java = atomic(curator, path, retry)
        else:
            self.java = atomic(curator, path, retry, promoted_to_lock.to_java())

    def _to_java(self, value: V) -> Any:
        raise NotImplementedError

    def _from_java(self, value: Any) -> V:
        raise NotImplementedError

    def _result(self, what: str, call: Any) -> JavaAtomicValue[V]:
        java = self._call(what, call)
        stats = java.getStats()
        return JavaAtomicValue(
            bool(java.succeeded()),
            self._from_java(java.preValue()),
            self._from_java(java.postValue()),
            JavaAtomicStats(
                int(stats.getOptimisticTries()),
                int(stats.getPromotedLockTries()),
                int(stats.getOptimisticTimeMs()) / 1000,
                int(stats.getPromotedTimeMs()) / 1000,
            ),
        )

    def get(self) -> JavaAtomicValue[V]:
        return self._result("get()", self.java.get)

    def compare_and_set(self, expected: V, new: V) -> JavaAtomicValue[V]:
        old, value = self._to_java(expected), self._to_java(new)
        return self._result("compare_and_set()", lambda: self.java.compareAndSet(old, value))

    def try_set(self, new: V) -> JavaAtomicValue[V]:
        value = self._to_java(new)
        return self._result("try_set()", lambda: self.java.trySet(value))

    def force_set(self, new: V) -> None:
        value = self._to_java(new)
        self._call("force_set()", lambda: self.java.forceSet(value))

    def initialize(self, value: V) -> bool:
        """Create the node with ``value``: False when it exists already."""
        java = self._to_java(value)
        return bool(self._call("initialize()", lambda: self.java.initialize(java)))

    def _close_java(self) -> None:
        """Curator's atomic values hold nothing to close."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


class JavaDistributedAtomicValue(_JavaAtomic[bytes | None]):
    """Curator's ``DistributedAtomicValue`` on raw bytes (None: no node)."""

    def _to_java(self, value: bytes | None) -> Any:
        return None if value is None else java_bytes(value)

    def _from_java(self, value: Any) -> bytes | None:
        return python_bytes(value)


class _JavaAtomicNumber(_JavaAtomic[int]):
    """``DistributedAtomicLong`` and ``DistributedAtomicInteger``: the arithmetic too."""

    bounds = LONG_RANGE
    java_number = "java.lang.Long"

    def _to_java(self, value: int) -> Any:
        return jclass(self.java_number)(_checked(value, self.bounds, "value"))

    def _from_java(self, value: Any) -> int:
        return 0 if value is None else int(value)

    def increment(self) -> JavaAtomicValue[int]:
        return self._result("increment()", self.java.increment)

    def decrement(self) -> JavaAtomicValue[int]:
        return self._result("decrement()", self.java.decrement)

    def add(self, delta: int) -> JavaAtomicValue[int]:
        java = self._to_java(delta)
        return self._result("add()", lambda: self.java.add(java))

    def subtract(self, delta: int) -> JavaAtomicValue[int]:
        java = self._to_java(delta)
        return self._result("subtract()", lambda: self.java.subtract(java))


class JavaDistributedAtomicLong(_JavaAtomicNumber):
    """Curator's ``DistributedAtomicLong``: an 8-byte big-endian long (an empty or missing node
    reads 0; arithmetic wraps as Java's)."""

    java_class = "atomic.DistributedAtomicLong"


class JavaDistributedAtomicInteger(_JavaAtomicNumber):
    """Curator's ``DistributedAtomicInteger``: a 4-byte big-endian int."""

    java_class = "atomic.DistributedAtomicInteger"
    bounds = INT_RANGE
    java_number = "java.lang.Integer"
