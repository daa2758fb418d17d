"""How Curator's ``ServiceProvider`` picks an instance, over a plain list of instances:
its strategies (``RoundRobinStrategy``, ``RandomStrategy``, ``StickyStrategy``), its
``DownInstancePolicy`` and the filters it applies (a user's, the instances noted down, the
disabled ones).
"""

from __future__ import annotations

import itertools
import math
import random as _random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from . import clock
from .discovery import ServiceInstance

#: A predicate over instances (Curator's ``InstanceFilter``): True keeps the instance.
InstanceFilter = Callable[[ServiceInstance], bool]


class ProviderStrategy(Protocol):
    """Picks one instance of a list for a single use, or None from an empty list (Curator's
    ``ProviderStrategy``)."""

    def get_instance(self, instances: Sequence[ServiceInstance]) -> ServiceInstance | None:
        """One of ``instances``, or None when there are none."""
        ...


class RoundRobinStrategy:
    """Each pick takes the next instance of the list, in turn (Curator's default). One
    counter for every caller, safe to share between threads; it never overflows (Curator's
    fails after 2^31 picks)."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def get_instance(self, instances: Sequence[ServiceInstance]) -> ServiceInstance | None:
        """The next instance in turn, or None when there are none."""
        if not instances:
            return None
        return instances[next(self._counter) % len(instances)]


class RandomStrategy:
    """Each pick takes an instance at random; ``rng`` (a :class:`random.Random`) makes the
    picks repeatable."""

    def __init__(self, rng: _random.Random | None = None) -> None:
        self._rng = rng or _random.Random()

    def get_instance(self, instances: Sequence[ServiceInstance]) -> ServiceInstance | None:
        """An instance at random, or None when there are none."""
        if not instances:
            return None
        return instances[self._rng.randrange(len(instances))]


class StickyStrategy:
    """Keeps returning the instance ``master`` picked first, for as long as the list holds
    it; then ``master`` picks again. :attr:`instance_number` counts the picks."""

    def __init__(self, master: ProviderStrategy) -> None:
        self._master = master
        self._ours: ServiceInstance | None = None
        self._number = -1

    @property
    def instance_number(self) -> int:
        """How many instances ``master`` has picked, less one (-1 before the first pick):
        a change says the instance changed. Curator also counts a pick from an empty list."""
        return self._number

    def get_instance(self, instances: Sequence[ServiceInstance]) -> ServiceInstance | None:
        """The instance picked before while the list holds it, else a new pick."""
        ours = self._ours
        if ours is not None and ours not in instances:
            self._ours = ours = None
        if ours is None:
            ours = self._master.get_instance(instances)
            if ours is not None:
                self._ours = ours
                self._number += 1
        return ours


@dataclass(frozen=True)
class DownInstancePolicy:
    """When a provider leaves an instance out (Curator's ``DownInstancePolicy``): after
    ``error_threshold`` errors noted within ``timeout`` seconds of its first."""

    timeout: float = 30.0
    error_threshold: int = 2

    def __post_init__(self) -> None:
        timeout, threshold = self.timeout, self.error_threshold
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
        if not math.isfinite(timeout) or timeout < 0:
            raise ValueError(f"timeout must be a finite number of seconds >= 0, not {timeout!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, int):
            raise TypeError(f"error_threshold must be an int, not {type(threshold).__name__}")
        if threshold < 1:
            raise ValueError(f"error_threshold must be >= 1, not {self.error_threshold}")


@dataclass
class _Errors:
    first: float
    count: int = 0


def _monotonic() -> float:
    return clock.monotonic()


class DownInstances:
    """The instances noted down (Curator's ``DownInstanceManager``), an instance filter.

    :meth:`note_error` counts an error of an instance; from the ``error_threshold``-th on, the
    instance is down, until ``timeout`` after its first error, when it is forgotten (Curator
    forgets it at its next purge, which runs at most every half timeout). Instances are told
    apart as they compare (every field). ``clock`` gives seconds (the library's monotonic clock,
    :mod:`pycurator._protocol.clock`, by default).
    Not thread-safe: a provider calls it under its own lock.
    """

    def __init__(
        self,
        policy: DownInstancePolicy | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._policy = policy or DownInstancePolicy()
        self._clock = clock or _monotonic
        self._errors: dict[ServiceInstance, _Errors] = {}

    @property
    def policy(self) -> DownInstancePolicy:
        """The policy followed."""
        return self._policy

    def note_error(self, instance: ServiceInstance) -> None:
        """Count an error of ``instance`` (Curator's ``ServiceProvider.noteError``)."""
        now = self._forget_old()
        self._errors.setdefault(instance, _Errors(now)).count += 1

    def is_up(self, instance: ServiceInstance) -> bool:
        """Whether ``instance`` is not down."""
        self._forget_old()
        errors = self._errors.get(instance)
        return errors is None or errors.count < self._policy.error_threshold

    __call__ = is_up

    def _forget_old(self) -> float:
        now = self._clock()
        timeout = self._policy.timeout
        for instance in [i for i, e in self._errors.items() if now - e.first >= timeout]:
            del self._errors[instance]
        return now


def is_enabled(instance: ServiceInstance) -> bool:
    """The ``enabled`` filter every Curator provider applies last."""
    return instance.enabled


def available(
    instances: Iterable[ServiceInstance],
    filters: Iterable[InstanceFilter] = (),
    down: DownInstances | None = None,
) -> list[ServiceInstance]:
    """What a provider offers of ``instances``, in order: those every filter keeps, in
    Curator's order (the caller's filters, then ``down``, then :func:`is_enabled`)."""
    checks: list[InstanceFilter] = [*filters, *([down] if down is not None else []), is_enabled]
    return [i for i in instances if all(check(i) for check in checks)]
