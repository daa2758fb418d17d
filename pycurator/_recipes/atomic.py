"""Curator's ``DistributedAtomicValue`` as steps: the node read with its version, a new value
made from it, written at that version (or created, when missing), tried again under a retry
policy, then, with :class:`PromotedToLock`, under an ``InterProcessMutex`` that Java and Python
take alike. Every write is settled before anything else is tried
(:mod:`pycurator._recipes.versioned`): an update is never applied twice, and one whose fate
cannot be known ends the operation, marked :attr:`AtomicValue.unknown`.

The numbers (``DistributedAtomicLong``, ``DistributedAtomicInteger``) are this protocol on
their bytes (:mod:`pycurator._cores.atomic`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kazoo.retry import KazooRetry

from .._protocol import clock
from .._protocol.checks import check_timeout
from .._protocol.counters import ONE_TRY, Fate, Tries
from .._protocol.deadline import Deadline
from .._protocol.errors import UnknownOutcomeError
from .._protocol.paths import validate_path
from .._protocol.steps import NewSignal, Steps, WaitSignal
from .._protocol.transport import Transport
from .._protocol.waits import delete_node_steps
from .lock_engine import mutex_engine
from .versioned import (
    Read,
    conditional_write_steps,
    read_node_steps,
    settled,
    unconditional_write_steps,
)

V = TypeVar("V")


def tries_of(policy: object, what: str = "retry_policy") -> Tries:
    """The tries a kazoo ``KazooRetry`` allows (see :class:`~pycurator._protocol.counters.Tries`);
    TypeError naming ``what`` for anything else."""
    if not isinstance(policy, KazooRetry):
        raise TypeError(f"{what} must be a kazoo KazooRetry, not {policy!r}")
    return Tries(
        max_tries=policy.max_tries,
        delay=policy.delay,
        backoff=policy.backoff,
        max_jitter=policy.max_jitter,
        max_delay=policy.max_delay,
        deadline=policy.deadline,
    )


@dataclass(frozen=True)
class PromotedToLock:
    """Curator's ``PromotedToLock``: when the optimistic tries fail, take the
    ``InterProcessMutex`` at ``lock_path`` (Java's and Python's contend for it), waiting at most
    ``timeout`` seconds (None: for ever), and try again under it as ``retry_policy`` allows (a
    kazoo ``KazooRetry``; None: once, Curator's default)."""

    lock_path: str
    timeout: float | None = None
    retry_policy: KazooRetry | None = None

    def __post_init__(self) -> None:
        validate_path(self.lock_path)
        object.__setattr__(self, "timeout", check_timeout(self.timeout))
        if self.retry_policy is not None:
            tries_of(self.retry_policy, "PromotedToLock's retry_policy")


@dataclass(frozen=True)
class AtomicStats:
    """Curator's ``AtomicStats``: the tries an operation made, optimistic and under the
    promoted lock, and the seconds each phase took."""

    optimistic_tries: int = 0
    promoted_lock_tries: int = 0
    optimistic_time: float = 0.0
    promoted_time: float = 0.0


@dataclass(frozen=True)
class AtomicValue(Generic[V]):
    """Curator's ``AtomicValue``: whether the operation ``succeeded``, the value before
    (``pre_value``, as last read) and after (``post_value``, the value written), and its
    ``stats``. Always check ``succeeded``: an operation may fail (its tries ran out, the lock
    was not had in time).

    ``unknown`` is pycurator's: True when the answer to a write was lost and whether it took
    effect cannot be known (the node holds what we wrote, which another client may have
    written too): ``succeeded`` is False, ``post_value`` the value written, and the operation
    was not tried again. Count such an update as maybe applied (read the value to decide what
    to do); retrying it blindly may apply it twice."""

    succeeded: bool
    pre_value: V
    post_value: V
    stats: AtomicStats = field(default_factory=AtomicStats)
    unknown: bool = False


class _Run:
    """An operation under way: what it read and wrote, and its tries."""

    __slots__ = (
        "optimistic",
        "optimistic_time",
        "post",
        "pre",
        "promoted",
        "promoted_time",
        "written",
    )

    def __init__(self) -> None:
        self.pre: bytes | None = None
        self.post: bytes | None = None
        self.written: Read | None = None
        self.optimistic = self.promoted = 0
        self.optimistic_time = self.promoted_time = 0.0

    def value(self, fate: Fate | None) -> AtomicValue[bytes | None]:
        stats = AtomicStats(
            self.optimistic, self.promoted, self.optimistic_time, self.promoted_time
        )
        post = self.post if fate is not None else None
        return AtomicValue(fate is Fate.APPLIED, self.pre, post, stats, fate is Fate.UNKNOWN)


class AtomicSteps:
    """One ``DistributedAtomicValue`` on ``path``, as steps: its checks (TypeError or ValueError
    naming the argument, before anything is sent), its tries and its promoted lock."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        retry_policy: KazooRetry,
        promoted_to_lock: PromotedToLock | None = None,
    ) -> None:
        validate_path(path)
        self.tries = tries_of(retry_policy)
        if promoted_to_lock is not None and not isinstance(promoted_to_lock, PromotedToLock):
            raise TypeError(f"promoted_to_lock must be a PromotedToLock, not {promoted_to_lock!r}")
        self.transport = transport
        self.path = path
        self.retry_policy = retry_policy
        self.promoted_to_lock = promoted_to_lock
        self._lock = None
        self.promoted_tries = ONE_TRY
        if promoted_to_lock is not None:
            self._lock = mutex_engine(transport, promoted_to_lock.lock_path, None, None)
            if promoted_to_lock.retry_policy is not None:
                self.promoted_tries = tries_of(promoted_to_lock.retry_policy)

    def _patience(self) -> float:
        return self.transport.session_timeout()

    def get_steps(self) -> Steps[AtomicValue[bytes | None]]:
        """The node's bytes (None when there is no node), as a succeeded value."""
        data, _ = yield from read_node_steps(self.path, Deadline(self._patience()))
        return AtomicValue(True, data, data)

    def update_steps(
        self, make: Callable[[bytes | None], bytes]
    ) -> Steps[AtomicValue[bytes | None]]:
        """Write ``make(bytes read)`` at the version read, tried as the retry policy allows,
        then under the promoted lock (if any) as its policy allows; ``make`` may raise (bytes
        it cannot read), which ends the operation."""
        value, _ = yield from self.update_from_steps(make, None)
        return value

    def update_from_steps(
        self, make: Callable[[bytes | None], bytes], known: Read | None
    ) -> Steps[tuple[AtomicValue[bytes | None], Read | None]]:
        """:meth:`update_steps`, from ``known``: the node's bytes and version as a write of
        ours just left them; the first write is made at that version with no read first, and
        refused (the node moved on since), it counts for nothing: the tries begin as usual.
        Also what the node holds once written (None unless it was)."""
        run = _Run()
        began = clock.monotonic()
        fate = None
        if known is not None and known[1] is not None:
            fate = yield from self._write_from_steps(make, run, known)
            run.optimistic += fate is not None  # a try, unless refused
        if fate is None:
            fate = yield from self._tries_steps(make, run, self.tries, promoted=False)
        run.optimistic_time = clock.monotonic() - began
        if fate is None and self._lock is not None and self.promoted_to_lock is not None:
            began = clock.monotonic()
            lock = yield from self._lock.acquire_steps(self.promoted_to_lock.timeout)
            if lock is not None:
                try:
                    fate = yield from self._tries_steps(
                        make, run, self.promoted_tries, promoted=True
                    )
                finally:
                    yield from delete_node_steps(lock.path)
            run.promoted_time = clock.monotonic() - began
        return run.value(fate), run.written if fate is Fate.APPLIED else None

    def _tries_steps(
        self, make: Callable[[bytes | None], bytes], run: _Run, tries: Tries, promoted: bool
    ) -> Steps[Fate | None]:
        began = clock.monotonic()
        retry = 0
        while True:
            if promoted:
                run.promoted += 1
            else:
                run.optimistic += 1
            data, version = yield from read_node_steps(self.path, Deadline(self._patience()))
            fate = yield from self._write_from_steps(make, run, (data, version))
            if fate is not None:
                return fate
            retry += 1
            sleep = tries.sleep_before(retry, clock.monotonic() - began, random.uniform(-1, 1))
            if sleep is None:
                return None
            if sleep > 0:
                yield WaitSignal((yield NewSignal()), sleep)

    def _write_from_steps(
        self, make: Callable[[bytes | None], bytes], run: _Run, read: Read
    ) -> Steps[Fate | None]:
        """Curator's ``tryOnce`` from what was read: make, write at the version read (or
        create); its fate (None: refused)."""
        data, version = read
        run.pre = data
        run.post = new = make(data)
        fate, stat = yield from conditional_write_steps(
            self.path, new, version, None, self._patience()
        )
        if fate is Fate.APPLIED:
            run.written = (new, stat.version)
        return fate

    def _write_steps(self, new: bytes, version: int | None) -> Steps[Fate | None]:
        fate, _ = yield from conditional_write_steps(
            self.path, new, version, None, self._patience()
        )
        return fate

    def compare_and_set_steps(
        self, expected: bytes, new: bytes
    ) -> Steps[AtomicValue[bytes | None]]:
        """Write ``new`` if the node holds ``expected`` (byte for byte, as Java compares),
        once, with no retry: a missing node fails."""
        run = _Run()
        data, version = yield from read_node_steps(self.path, Deadline(self._patience()))
        run.pre = data
        if version is None or data != expected:
            return run.value(None)
        run.post = new
        fate, _ = yield from conditional_write_steps(
            self.path, new, version, None, self._patience()
        )
        return run.value(fate)

    def force_set_steps(self, new: bytes) -> Steps[None]:
        """Set the node to ``new`` whatever it holds, creating it if missing."""
        yield from unconditional_write_steps(self.path, new, None, True, self._patience())

    def initialize_steps(self, value: bytes) -> Steps[bool]:
        """Create the node holding ``value``: False when it exists already;
        :class:`UnknownOutcomeError` when the create's answer was lost and the node holds
        ``value`` (ours, or another's)."""
        written = yield from conditional_write_steps(self.path, value, None, None, self._patience())
        return settled(written, lambda: UnknownOutcomeError(self.path, "initialize"))


__all__ = [
    "AtomicStats",
    "AtomicSteps",
    "AtomicValue",
    "PromotedToLock",
    "tries_of",
]
