"""Every lock recipe of both front ends behind the same operations (``acquire(timeout)``,
``release()``, ``is_held()``, ``check()``, ``on_lost(callback)``, ``fencing_token``), for the
scenarios every lock shares."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient

from pycurator import LockNotOwnedError, LockReleaseError, zkrecipes
from pycurator.aio import zkrecipes as aio_zkrecipes

from .fronts import Front


class LeaseLock:
    """A one-lease semaphore of either front end used as a lock: ``acquire`` takes a lease,
    ``release`` closes it, the rest asks the lease (awaitable where the lease's is)."""

    def __init__(self, semaphore: Any) -> None:
        self.semaphore = semaphore
        self.lease: Any = None
        self._callbacks: list[Callable[[Any, str], Any]] = []

    def acquire(self, timeout: float | None = None) -> Any:
        got = self.semaphore.acquire(timeout)
        if inspect.isawaitable(got):

            async def later() -> bool:
                return self._got(await got)

            return later()
        return self._got(got)

    def _got(self, lease: Any) -> bool:
        if lease is not None:
            self.lease = lease
            for callback in self._callbacks:
                lease.on_lost(callback)
        return lease is not None

    def release(self) -> Any:
        return self.lease.close()

    def is_held(self) -> Any:
        return self.lease.is_held()

    def check(self) -> Any:
        return self.lease.check()

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        self._callbacks.append(callback)

    @property
    def fencing_token(self) -> int:
        return int(self.lease.fencing_token)


@dataclass(frozen=True)
class Kind:
    """One lock recipe: how to make it on a path, the parents its nodes go under, the parent
    its waiters queue in, and what it promises."""

    name: str
    make: Callable[[Front, KazooClient, str], Any]
    parents: Callable[[str], Sequence[str]] = lambda path: [path]
    queue: Callable[[str], str] = lambda path: path
    #: A lock that keeps this one waiting while held (readers share, so a reader waits on a
    #: writer); the recipe itself when None.
    make_blocker: Callable[[Front, KazooClient, str], Any] | None = None
    reentrant: bool = True
    tokens: bool = True
    #: What releasing without holding raises (a multi-lock gathers its members' errors).
    not_owned: type[Exception] = LockNotOwnedError

    def blocker(self, front: Front, client: KazooClient, path: str) -> Any:
        return (self.make_blocker or self.make)(front, client, path)

    def __repr__(self) -> str:
        return self.name


def _rw(front: Front, client: KazooClient, path: str) -> Any:
    return front.make("InterProcessReadWriteLock", client, path)


def _semaphore_parents(path: str) -> list[str]:
    return [f"{path}/locks", f"{path}/leases"]


def _multi_parents(path: str) -> list[str]:
    return [f"{path}/one", f"{path}/two"]


MUTEX = Kind("mutex", lambda front, client, path: front.make("InterProcessMutex", client, path))
READ = Kind(
    "read",
    lambda front, client, path: _rw(front, client, path).read_lock(),
    make_blocker=lambda front, client, path: _rw(front, client, path).write_lock(),
)
WRITE = Kind("write", lambda front, client, path: _rw(front, client, path).write_lock())
LEASE = Kind(
    "lease",
    lambda front, client, path: LeaseLock(front.make("InterProcessSemaphoreV2", client, path, 1)),
    _semaphore_parents,
    lambda path: f"{path}/locks",
    reentrant=False,
)
SEMAPHORE_MUTEX = Kind(
    "semaphore-mutex",
    lambda front, client, path: front.make("InterProcessSemaphoreMutex", client, path),
    _semaphore_parents,
    lambda path: f"{path}/locks",
    reentrant=False,
)
MULTI = Kind(
    "multi-lock",
    lambda front, client, path: front.make("InterProcessMultiLock", client, _multi_parents(path)),
    _multi_parents,
    lambda path: f"{path}/one",
    tokens=False,
    not_owned=LockReleaseError,
)

ZK_WRITE_LOCK = Kind(
    "zookeeper-write-lock",
    lambda front, client, path: (aio_zkrecipes if front.name == "asyncio" else zkrecipes).WriteLock(
        client, path
    ),
)

KINDS = [MUTEX, READ, WRITE, LEASE, SEMAPHORE_MUTEX, MULTI, ZK_WRITE_LOCK]
