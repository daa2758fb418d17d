"""The asyncio ``InterProcessMultiLock``: several locks as one, all or nothing; its rules
(:mod:`pycurator._cores.multilock`) are asks of its members, which this shell awaits."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Hashable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from kazoo.client import KazooClient

from .._client.transport import is_client
from .._cores.faces import MultiLockFace
from .._cores.multilock import (
    Asks,
    acquire_steps,
    add_on_lost,
    check_steps,
    in_this_process,
    is_held_steps,
    member_locks,
    release_steps,
)
from .._protocol.checks import check_timeout
from ._lock import AsyncLockContext, AsyncReentrantLock, calling_task, current_task
from ._mutex import InterProcessMutex

T = TypeVar("T")


@runtime_checkable
class AsyncLock(Protocol):
    """What an asyncio multi-lock needs of a member."""

    def acquire(self, timeout: float | None = None) -> Coroutine[Any, Any, bool]: ...

    def release(self) -> Coroutine[Any, Any, None]: ...

    def is_acquired_in_this_process(self) -> bool: ...


async def _drive(asks: Asks[T], owner: Hashable | None) -> T:
    """Run a multi-lock's ``asks``, awaiting each member's answer; pycurator's task-owned
    locks are asked for ``owner``, the task that called the multi-lock."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = asks.send(answer) if error is None else asks.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        member = step.member
        try:
            if isinstance(member, AsyncReentrantLock) and step.op in ("acquire", "release"):
                call = getattr(member, f"_{step.op}")(owner, *step.args)
            else:
                call = getattr(member, step.op)(*step.args)
            answer, error = await call, None
        except BaseException as exc:
            answer, error = None, exc


class InterProcessMultiLock(MultiLockFace[AsyncLock], AsyncLockContext):
    """The asyncio form of :class:`pycurator.InterProcessMultiLock`: all the locks or none,
    taken in order under one deadline, released in reverse order (every failure reported).
    Its members' holds belong to the task that calls :meth:`acquire`, as a lock's do."""

    def __init__(
        self, client_or_locks: KazooClient | Sequence[AsyncLock], paths: Sequence[str] | None = None
    ) -> None:
        self._locks: list[AsyncLock] = member_locks(
            client_or_locks, paths, InterProcessMutex, AsyncLock, "not an asyncio lock", is_client
        )

    def acquire(self, timeout: float | None = None) -> Coroutine[Any, Any, bool]:
        """Take every lock in order within ``timeout`` seconds (None: wait forever), for the
        calling task: True when all are held; False on timeout, with every lock taken so far
        released. An error from a member is raised after the same release."""
        return self._acquire(calling_task(), check_timeout(timeout))

    async def _acquire(self, owner: Hashable | None, timeout: float | None) -> bool:
        return await _drive(acquire_steps(self._locks, timeout), owner or current_task())

    def release(self) -> Coroutine[Any, Any, None]:
        """Release every lock in reverse order; :class:`LockReleaseError` with every failure."""
        return self._release(calling_task())

    async def _release(self, owner: Hashable | None) -> None:
        await _drive(release_steps(self._locks), owner or current_task())

    def is_acquired_in_this_process(self) -> bool:
        """True only when every member lock is held in this process."""
        return in_this_process(self._locks)

    async def is_held(self) -> bool:
        """True when every member is held now (:func:`~pycurator._cores.multilock.followed` says
        how each is asked, as for the threaded multi-lock)."""
        return await _drive(is_held_steps(self._locks), None)

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless every member is still held."""
        await _drive(check_steps(self._locks), None)

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(member, reason)`` on the loop when any member that reports losses
        loses its hold."""
        add_on_lost(self._locks, callback)

    def __repr__(self) -> str:
        return f"aio.InterProcessMultiLock({self._locks!r})"


__all__ = ["AsyncLock", "InterProcessMultiLock"]
