"""The asyncio mutex, read/write lock and multi-lock: the threaded recipes' engine and hold
bookkeeping, awaited instead of blocked on, owned per asyncio task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from kazoo.client import KazooClient, TransactionRequest

from .. import _wire
from .._drivers import ReadDriver, write_driver
from .._engine import (
    Deadline,
    HeldNode,
    LockEngine,
    check_data,
    check_timeout,
    delete_guaranteed_steps,
)
from .._errors import LockLostError, LockReleaseError, LockTimeout
from .._hold import FollowedNode, LossNotice, ReentrantHolds
from .._monitor import ConnectionPolicy, check_policy
from .._multilock import member_locks
from .._mutex import check_client_type, mutex_engine
from .._paths import validate_path
from .._rwlock import _ReadSideDriver
from ._runner import loop_notice, loop_spawner, run_async

log = logging.getLogger("pycurator")

C = TypeVar("C", bound="AsyncLockContext")


def current_task() -> Hashable:
    """The calling asyncio task: the unit an asyncio lock's holds follow."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("pycurator.aio locks are used from an asyncio task")
    return task


class AsyncLockContext:
    """``async with lock:`` (waits as long as it takes) and ``async with lock.hold(timeout):``
    (raises :class:`LockTimeout`) over ``await acquire(timeout) -> bool`` and ``release()``."""

    @property
    def path(self) -> str:
        raise NotImplementedError

    async def acquire(self, timeout: float | None = None) -> bool:
        raise NotImplementedError

    async def release(self) -> None:
        raise NotImplementedError

    @asynccontextmanager
    async def hold(self: C, timeout: float | None = None) -> AsyncIterator[C]:
        """``async with lock.hold(timeout=2):`` acquires or raises :class:`LockTimeout`."""
        if not await self.acquire(timeout):
            raise LockTimeout(self.path, timeout if timeout is not None else 0.0)
        try:
            yield self
        finally:
            await self.release()

    async def __aenter__(self: C) -> C:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()


class AsyncReentrantLock(AsyncLockContext):
    """A lock held per asyncio task and per lock object; re-entry only counts.

    A task cancelled while it waits in :meth:`acquire` leaves no node and no watch behind, and
    the cancellation propagates. A held lock follows its node as the threaded lock does:
    ``await is_held()``, ``await check()``, :attr:`lost_event` (an :class:`asyncio.Event`) and
    :meth:`on_lost` callbacks (run on the loop).
    """

    def __init__(
        self, engine: LockEngine, *, connection_policy: ConnectionPolicy = "standard"
    ) -> None:
        self._engine = engine
        self._policy: ConnectionPolicy = check_policy(connection_policy)
        self._holds = ReentrantHolds(engine.client, engine.base_path, current_task, "task")
        self.lost_event = asyncio.Event()
        self._notice: LossNotice | None = None
        self._callbacks: list[Callable[[Any, str], Any]] = []

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._engine.base_path

    @property
    def client(self) -> KazooClient:
        return self._engine.client

    @property
    def connection_policy(self) -> ConnectionPolicy:
        return self._policy

    async def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever; 0: one try) for the lock.

        True when held (again, if this task already held it), False on timeout; no node and
        no watch are left behind on timeout, error or cancellation.
        """
        timeout = check_timeout(timeout)
        if self._holds.enter():
            return True
        node = await run_async(self._engine.client, self._engine.acquire_steps(timeout))
        if node is None:
            return False
        self._held(node)
        return True

    def _held(self, node: HeldNode) -> None:
        if self._notice is None:
            self._notice = loop_notice(self._engine.client, self.lost_event)
            for callback in self._callbacks:
                self._notice.add(callback)
        notice = self._notice
        self.lost_event.clear()
        self._holds.add(
            FollowedNode(
                self._engine.client,
                node,
                self._policy,
                lambda state, reason: notice.changed(self, state, reason),
            )
        )

    async def release(self) -> None:
        """Release one hold of the calling task; the last one deletes our node (waiting at
        most :data:`~pycurator._engine.DELETE_WAIT`, then in the background).

        Raises :class:`LockNotOwnedError` when the calling task does not hold the lock.
        """
        hold = self._holds.leave()
        if hold is not None:
            client = self._engine.client
            await run_async(client, delete_guaranteed_steps(client, hold.path))

    def is_acquired_in_this_process(self) -> bool:
        """True if any task holds this lock object."""
        return self._holds.any()

    def is_owned_by_current_task(self) -> bool:
        """True if the calling task holds this lock object."""
        return self._holds.owned()

    is_owned_by_current_thread = is_owned_by_current_task

    @property
    def lock_path(self) -> str | None:
        """The node the calling task holds, or None."""
        hold = self._holds.current()
        return hold.path if hold is not None else None

    async def is_held(self) -> bool:
        """True if the calling task holds the lock and its node is known to be ours now."""
        hold = self._holds.current()
        if hold is None:
            return False
        return await run_async(self._engine.client, hold.is_held_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        hold = self._holds.required()
        await run_async(self._engine.client, hold.check_steps())

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lock, reason)`` on the loop each time a hold stops being held (an
        awaitable it returns runs as a task)."""
        self._callbacks.append(callback)
        if self._notice is not None:
            self._notice.add(callback)

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid (see the threaded lock's ``fencing_token``)."""
        return self._holds.required().fencing_token

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our lock node exists (commit it with
        ``await aio.commit(transaction)``)."""
        return self._holds.required().guarded_transaction()

    async def participant_nodes(self) -> list[str]:
        """Full paths of every node queued on the lock path, holder first (any language)."""
        children = await run_async(self._engine.client, self._engine.sorted_children_steps())
        return _wire.full_paths(self._engine.base_path, children)

    def make_revocable(self, listener: Callable[[Any], Any]) -> None:
        """Make the lock revocable; call before :meth:`acquire`, from the loop.
        ``listener(self)`` runs on the loop when another client asks for the lock (an awaitable
        it returns runs as a task); releasing is up to it."""
        spawn = loop_spawner()
        self._engine = self._engine.revocable(lambda: spawn(listener, self))

    def __repr__(self) -> str:
        return f"aio.{type(self).__name__}({self.path!r})"


class InterProcessMutex(AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.InterProcessMutex`: the same nodes, queue and
    rules, shared with Java Curator and threaded pycurator; re-entrant per task."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(
            mutex_engine(client, path, node_data, acl), connection_policy=connection_policy
        )


class _Side(AsyncReentrantLock):
    async def participant_nodes(self) -> list[str]:
        """Full paths of this side's nodes (read or write) in queue order, holders first."""
        token = self._engine.driver.token
        nodes = await super().participant_nodes()
        return [node for node in nodes if token in _wire.node_name(node)]


class WriteLock(_Side):
    """The write side: held by one task of one process at a time, with no reader."""


class ReadLock(_Side):
    """The read side: shared by readers while no writer holds the lock or queues ahead."""


class InterProcessReadWriteLock:
    """The asyncio form of :class:`pycurator.InterProcessReadWriteLock` (per task: the task
    holding the write lock may take the read lock)."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        node_data: bytes | None = None,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        validate_path(path)
        check_client_type(client)
        check_data(node_data)
        self._write = WriteLock(
            LockEngine(client, path, write_driver(), data=node_data, acl=acl),
            connection_policy=connection_policy,
        )
        read_driver = _ReadSideDriver(self._write, ReadDriver())
        self._read = ReadLock(
            LockEngine(client, path, read_driver, data=node_data, acl=acl),
            connection_policy=connection_policy,
        )

    @property
    def path(self) -> str:
        return self._write.path

    def read_lock(self) -> ReadLock:
        """The read side (the same object on every call)."""
        return self._read

    def write_lock(self) -> WriteLock:
        """The write side (the same object on every call)."""
        return self._write

    def __repr__(self) -> str:
        return f"aio.InterProcessReadWriteLock({self.path!r})"


@runtime_checkable
class AsyncLock(Protocol):
    """What an asyncio multi-lock needs of a member."""

    async def acquire(self, timeout: float | None = None) -> bool: ...

    async def release(self) -> None: ...

    def is_acquired_in_this_process(self) -> bool: ...


class InterProcessMultiLock(AsyncLockContext):
    """The asyncio form of :class:`pycurator.InterProcessMultiLock`: all the locks or none,
    taken in order under one deadline, released in reverse order (every failure reported)."""

    def __init__(
        self, client_or_locks: KazooClient | Sequence[AsyncLock], paths: Sequence[str] | None = None
    ) -> None:
        self._locks: list[AsyncLock] = member_locks(
            client_or_locks, paths, InterProcessMutex, AsyncLock, "not an asyncio lock"
        )

    @property
    def path(self) -> str:
        return ", ".join(getattr(lock, "path", repr(lock)) for lock in self._locks)

    @property
    def locks(self) -> list[AsyncLock]:
        return list(self._locks)

    async def acquire(self, timeout: float | None = None) -> bool:
        """Take every lock in order within ``timeout`` seconds; False (none held) on timeout."""
        deadline = Deadline(check_timeout(timeout))
        taken: list[AsyncLock] = []
        try:
            for lock in self._locks:
                if not await lock.acquire(deadline.remaining()):
                    break
                taken.append(lock)
            else:
                return True
        except BaseException:
            await self._release_all(taken, quietly=True)
            raise
        await self._release_all(taken, quietly=False)
        return False

    async def release(self) -> None:
        """Release every lock in reverse order; :class:`LockReleaseError` with every failure."""
        await self._release_all(self._locks, quietly=False)

    async def _release_all(self, locks: Sequence[AsyncLock], *, quietly: bool) -> None:
        failures: list[Exception] = []
        for lock in reversed(locks):
            try:
                await lock.release()
            except Exception as exc:
                failures.append(exc)
        if not failures:
            return
        if quietly:
            for failure in failures:
                log.warning("multi-lock rollback could not release a lock: %r", failure)
            return
        raise LockReleaseError(f"could not release {len(failures)} of {len(locks)} locks", failures)

    def is_acquired_in_this_process(self) -> bool:
        return all(lock.is_acquired_in_this_process() for lock in self._locks)

    async def is_held(self) -> bool:
        """True when every member is held now."""
        for lock in self._locks:
            is_held = getattr(lock, "is_held", None)
            held = await is_held() if is_held is not None else lock.is_acquired_in_this_process()
            if not held:
                return False
        return True

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless every member is still held."""
        for lock in self._locks:
            check = getattr(lock, "check", None)
            if check is not None:
                await check()
            elif not lock.is_acquired_in_this_process():
                raise LockLostError(repr(lock), "not acquired")

    def __repr__(self) -> str:
        return f"aio.InterProcessMultiLock({self._locks!r})"
