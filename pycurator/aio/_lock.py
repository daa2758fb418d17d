"""The asyncio re-entrant lock: :class:`AsyncReentrantLock`, a shell over the lock core
(:class:`~pycurator._cores.lock.LockCore`) that the mutex and both sides of the read/write lock
are, awaited instead of blocked on, owned per asyncio task; and its context managers.

A hold belongs to the task that *calls* ``acquire()``: the call, not the await, names the
owner. So ``await asyncio.wait_for(lock.acquire(), 5)`` (which, before Python 3.12, awaits the
call in a task of its own), ``async with asyncio.timeout(5): await lock.acquire()``, anyio's
``with fail_after(5): await lock.acquire()`` and a plain ``await`` all leave the awaiting task
the owner, able to release, on every Python version. A hold whose owner task has ended (it
returned or failed without releasing) is nobody's: a WARNING is logged, and any task may
release it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Hashable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar

from kazoo.client import KazooClient, TransactionRequest

from .._cores.faces import LockFace
from .._cores.lock import LockCore
from .._protocol.checks import ConnectionPolicy, check_timeout
from .._protocol.deadline import Deadline
from .._protocol.drivers import Driver
from .._protocol.errors import LockLostError, LockTimeout
from .._protocol.transport import Transport
from .._recipes.hold import Acquired, LossNotice
from .._recipes.lock_engine import LockEngine
from ._runner import loop_notice, loop_spawner, run_async, transport_of

log = logging.getLogger("pycurator")

C = TypeVar("C", bound="AsyncLockContext")
T = TypeVar("T")


def current_task() -> Hashable:
    """The running asyncio task: the unit an asyncio lock's holds follow."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("pycurator.aio locks are used from an asyncio task")
    return task


def calling_task() -> asyncio.Task[Any] | None:
    """The task making this call, or None outside any task (then the task that runs the
    returned coroutine is the owner)."""
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop
        return None


def _finished(unit: Hashable) -> bool:
    return isinstance(unit, asyncio.Future) and unit.done()


class AsyncLockContext:
    """``async with lock:`` (waits as long as it takes) and ``async with lock.hold(timeout):``
    (raises :class:`LockTimeout`) over ``await acquire(timeout) -> bool`` and ``release()``."""

    @property
    def path(self) -> str:
        raise NotImplementedError

    def acquire(self, timeout: float | None = None) -> Coroutine[Any, Any, bool]:
        raise NotImplementedError

    def release(self) -> Coroutine[Any, Any, None]:
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


class AsyncLossNotice:
    """An asyncio recipe's notice of lost holds: :attr:`event`, an :class:`asyncio.Event` made
    with the recipe (maybe before any loop runs), and the ``on_lost`` callbacks, bound to the
    running loop by :meth:`bound` at the first hold."""

    def __init__(self, transport: Transport, *, lost: bool = False) -> None:
        self.event = asyncio.Event()
        if lost:
            self.event.set()
        self._transport = transport
        self._notice: LossNotice | None = None
        self._callbacks: list[Callable[[Any, str], Any]] = []

    def add(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(subject, reason)`` on the loop each time a hold stops being held."""
        self._callbacks.append(callback)
        if self._notice is not None:
            self._notice.add(callback)

    def bound(self) -> LossNotice:
        """The notice on the running loop (made at the first call, with the callbacks so far)."""
        if self._notice is None:
            self._notice = loop_notice(self._transport, self.event)
            for callback in self._callbacks:
                self._notice.add(callback)
        return self._notice


class AsyncReentrantLock(LockFace, AsyncLockContext):
    """A lock held per asyncio task and per lock object; re-entry only counts.

    A hold belongs to the task that calls :meth:`acquire` (see the module's doc: the idioms
    ``asyncio.wait_for``, ``asyncio.timeout`` and anyio's ``fail_after`` keep the caller the
    owner). A task cancelled while it waits in :meth:`acquire` leaves no node and no watch
    behind, and the cancellation propagates. A held lock follows its node as the threaded lock
    does (both are shells over one :class:`~pycurator._cores.lock.LockCore`): ``await is_held()``,
    ``await check()``, :attr:`lost_event` (an :class:`asyncio.Event`) and :meth:`on_lost`
    callbacks (run on the loop). Its waits and holds are reported as ``recipe``.
    """

    def __init__(
        self,
        engine: LockEngine,
        *,
        connection_policy: ConnectionPolicy = "standard",
        recipe: str = "mutex",
    ) -> None:
        self._core = LockCore(
            engine, recipe, connection_policy, current_task, "task", finished=_finished
        )
        self._acquiring: dict[Hashable, asyncio.Future[None]] = {}
        self._notice = AsyncLossNotice(engine.transport)
        self.lost_event = self._notice.event

    def acquire(self, timeout: float | None = None) -> Coroutine[Any, Any, bool]:
        """Wait up to ``timeout`` seconds (None, or a huge one: forever; 0: one try) for the
        lock, for the calling task: ``await lock.acquire(...)``.

        True when held (again, if this task already held it), False on timeout; no node and
        no watch are left behind on timeout, error or cancellation. A bad timeout raises here,
        at the call.
        """
        return self._acquire(calling_task(), check_timeout(timeout))

    async def _acquire(self, owner: Hashable | None, timeout: float | None) -> bool:
        owner = owner or current_task()
        core = self._core
        deadline = Deadline(timeout)
        while not core.holds.enter(owner):
            earlier = self._acquiring.get(owner)
            if earlier is None:
                break
            # the owner's other acquire is on its way (asyncio.gather, say): re-enter after it
            await asyncio.wait({earlier}, timeout=deadline.remaining())
            if not earlier.done():
                return False
        else:
            return True
        done = self._acquiring[owner] = asyncio.get_running_loop().create_future()
        try:
            steps = core.acquire_steps(deadline.remaining(), self._acquire_driver(owner))
            held = await run_async(core.transport, steps)
            if held is None:
                return False
            self._held(held, owner)
            return True
        finally:
            del self._acquiring[owner]
            done.set_result(None)

    def _acquire_driver(self, owner: Hashable) -> Driver | None:
        """The driver of ``owner``'s acquire, if not the engine's."""
        return None

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_engine(self, engine: LockEngine, connection_policy: ConnectionPolicy) -> None:
        AsyncReentrantLock.__init__(self, engine, connection_policy=connection_policy)

    def _held(self, held: Acquired, owner: Hashable) -> None:
        self._core.follow(held, self._notice.bound(), self, owner)
        if isinstance(owner, asyncio.Task):
            owner.add_done_callback(self._owner_ended)

    def _owner_ended(self, task: asyncio.Task[Any]) -> None:
        hold = self._core.holds.current(task)
        if hold is not None:
            log.warning(
                "task %s ended holding %s: any task may release it now",
                task.get_name(),
                hold.path,
                extra={"path": self.path, "node": hold.path},
            )

    def release(self) -> Coroutine[Any, Any, None]:
        """Release one hold of the calling task: ``await lock.release()``; the last one
        deletes our node (waiting at most :data:`~pycurator._protocol.waits.DELETE_WAIT`, then in
        the background).

        Raises :class:`LockNotOwnedError` when the calling task does not hold the lock (a hold
        whose owner task has ended may be released by any task).
        """
        return self._release(calling_task())

    async def _release(self, owner: Hashable | None) -> None:
        owner = owner or current_task()
        hold = self._core.holds.leave(owner)
        if hold is None:
            return
        if isinstance(owner, asyncio.Task):
            owner.remove_done_callback(self._owner_ended)
        await run_async(self._core.transport, self._core.engine.delete_steps(hold.path))

    def is_acquired_in_this_process(self) -> bool:
        """True if any task holds this lock object."""
        return self._core.holds.any()

    def is_owned_by_current_task(self) -> bool:
        """True if the calling task holds this lock object."""
        task = calling_task()
        return task is not None and self._core.holds.owned(task)

    is_owned_by_current_thread = is_owned_by_current_task

    @property
    def lock_path(self) -> str | None:
        """The node the calling task holds, or None."""
        return self._core.lock_path()

    async def is_held(self) -> bool:
        """True if the calling task holds the lock and its node is known to be ours now."""
        hold = self._core.holds.current()
        if hold is None:
            return False
        return await run_async(self._core.transport, hold.is_held_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` (naming the lock's path, as the threaded lock's does)
        unless :meth:`is_held`."""
        hold = self._core.holds.required()
        if not await run_async(self._core.transport, hold.is_held_steps()):
            raise LockLostError(self.path, hold.reason)

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lock, reason)`` on the loop each time a hold stops being held (an
        awaitable it returns runs as a task)."""
        self._notice.add(callback)

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our lock node exists (commit it with
        ``await aio.commit(transaction)``)."""
        return self._core.holds.required().guarded_transaction()

    async def participant_nodes(self) -> list[str]:
        """Full paths of every node queued on the lock path, holder first (any language);
        rides through a reconnect, as every read-only query."""
        return await run_async(self._core.transport, self._core.participant_steps())

    def make_revocable(self, listener: Callable[[Any], Any]) -> None:
        """Make the lock revocable; call before :meth:`acquire`, from the loop.
        ``listener(self)`` runs on the loop when another client asks for the lock (an awaitable
        it returns runs as a task); releasing is up to it."""
        spawn = loop_spawner()
        self._core.make_revocable(lambda: spawn(listener, self))

    def __repr__(self) -> str:
        return f"aio.{type(self).__name__}({self.path!r})"


__all__ = [
    "AsyncLockContext",
    "AsyncLossNotice",
    "AsyncReentrantLock",
    "calling_task",
    "current_task",
]
