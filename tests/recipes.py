"""Every recipe behind one small lock interface, for tests that run a scenario on each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    Lease,
)


class LeaseLock:
    """A one-lease semaphore used as a lock: ``acquire`` takes a lease, ``release`` returns it."""

    def __init__(self, client: KazooClient, path: str, **kwargs: Any) -> None:
        self.semaphore = InterProcessSemaphoreV2(client, path, 1, **kwargs)
        self.lease: Lease | None = None

    def acquire(self, timeout: float | None = None) -> bool:
        self.lease = self.semaphore.acquire(timeout)
        return self.lease is not None

    def release(self) -> None:
        assert self.lease is not None
        self.lease.close()
        self.lease = None


@dataclass(frozen=True)
class Recipe:
    """How to make one recipe's lock on a path, and the paths its nodes go under."""

    name: str
    make: Callable[[KazooClient, str], Any]
    node_parents: Callable[[str], Sequence[str]] = lambda path: [path]
    #: A lock that keeps this one waiting while held (readers share, so a reader waits on a
    #: writer); the recipe itself when None.
    make_blocker: Callable[[KazooClient, str], Any] | None = None

    def blocker(self, client: KazooClient, path: str) -> Any:
        return (self.make_blocker or self.make)(client, path)

    def __repr__(self) -> str:
        return self.name


def _multi(client: KazooClient, path: str) -> InterProcessMultiLock:
    return InterProcessMultiLock(client, [f"{path}/one", f"{path}/two"])


RECIPES = [
    Recipe("mutex", lambda client, path: InterProcessMutex(client, path)),
    Recipe(
        "read",
        lambda client, path: InterProcessReadWriteLock(client, path).read_lock(),
        make_blocker=lambda client, path: InterProcessReadWriteLock(client, path).write_lock(),
    ),
    Recipe("write", lambda client, path: InterProcessReadWriteLock(client, path).write_lock()),
    Recipe("lease", LeaseLock, lambda path: [f"{path}/locks", f"{path}/leases"]),
    Recipe(
        "semaphore-mutex",
        InterProcessSemaphoreMutex,
        lambda path: [f"{path}/locks", f"{path}/leases"],
    ),
    Recipe("multi-lock", _multi, lambda path: [f"{path}/one", f"{path}/two"]),
]
