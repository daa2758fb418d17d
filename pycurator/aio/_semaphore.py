"""The asyncio semaphore, its leases and the semaphore mutex: shells over the threaded
semaphore's steps and cores (the same nodes and queue as Curator's ``InterProcessSemaphoreV2``),
awaited instead of blocked on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .._cores.constructors import SemaphoreMutexConstructor
from .._cores.faces import LeaseFace, SemaphoreFace, SemaphoreMutexFace
from .._cores.semaphore import LeaseCore, SemaphoreMutexCore
from .._protocol.checks import ConnectionPolicy
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._protocol.waits import delete_node_steps
from .._recipes.hold import Acquired, LossNotice
from .._recipes.semaphore import SemaphoreSteps
from ._lock import AsyncLockContext, AsyncLossNotice
from ._runner import loop_notice, run_async, transport_of


class Lease(LeaseFace):
    """One lease of an :class:`InterProcessSemaphoreV2`: ``await lease.close()`` returns it.

    Not tied to a task. It follows its node: ``await is_held()``, ``await check()``,
    :attr:`lost_event` (an :class:`asyncio.Event`) and :meth:`on_lost` callbacks (on the loop).
    """

    def __init__(
        self,
        client: KazooClient,
        held: Acquired,
        policy: ConnectionPolicy,
        notice: LossNotice | None = None,
        subject: object = None,
        *,
        delete: Callable[[str], Steps[None]] = delete_node_steps,
    ) -> None:
        """``held``: the lease node and its hold's report (from the semaphore's acquire);
        ``notice`` and ``subject``: whom to tell of a loss, and what to name (by default a
        notice of the lease's own, naming the lease); ``delete``: how the node is deleted
        (by default Curator's guaranteed delete); made on the running loop."""
        transport = transport_of(client)
        self._core = LeaseCore(
            transport,
            held,
            policy,
            loop_notice(transport, asyncio.Event()) if notice is None else notice,
            self if subject is None else subject,
            delete,
        )

    @property
    def lost_event(self) -> asyncio.Event:
        """Set while the lease node is not known to be ours (see the class doc)."""
        event: asyncio.Event = self._core.notice.lost_event.event
        return event

    async def data(self) -> bytes:
        """The lease node's data, read from ZooKeeper (riding through a reconnect)."""
        return await run_async(self._core.transport, self._core.data_steps())

    async def is_held(self) -> bool:
        """True while the lease node is known to be ours (and the lease not returned)."""
        if self._core.closed:
            return False
        return await run_async(self._core.transport, self._core.hold.is_held_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        self._core.check_open()
        await run_async(self._core.transport, self._core.hold.check_steps())

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lease, reason)`` on the loop when the lease stops being held."""
        self._core.notice.add(callback)

    async def close(self) -> None:
        """Return the lease (its node is deleted, in the background if need be); once only."""
        path = self._core.close()
        if path is not None:
            await run_async(self._core.transport, self._core.delete(path))

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"aio.Lease({self._core.path!r})"


class InterProcessSemaphoreV2(SemaphoreFace):
    """The asyncio form of :class:`pycurator.InterProcessSemaphoreV2`."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        max_leases: int,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        self._steps = SemaphoreSteps(
            transport_of(client), path, max_leases, node_data, acl, connection_policy
        )

    async def acquire(self, timeout: float | None = None) -> Lease | None:
        """One lease within ``timeout`` seconds (None: wait forever), or None on timeout."""
        leases = await self.acquire_many(1, timeout)
        return leases[0] if leases is not None else None

    async def acquire_many(self, qty: int, timeout: float | None = None) -> list[Lease] | None:
        """``qty`` leases under one deadline; None on timeout. On timeout, error or
        cancellation every lease taken so far is returned first."""
        leases = await run_async(self._steps.transport, self._steps.acquire_steps(qty, timeout))
        if leases is None:
            return None
        return [Lease(self.client, held, self.connection_policy) for held in leases]

    async def return_lease(self, lease: Lease) -> None:
        """Give a lease back (the same as ``await lease.close()``)."""
        await lease.close()

    async def return_all(self, leases: Iterable[Lease]) -> None:
        """Give every lease back."""
        for lease in leases:
            await lease.close()

    async def participant_nodes(self) -> list[str]:
        """Names of the lease nodes (holders, and at most one waiter), oldest first."""
        return await run_async(self._steps.transport, self._steps.participant_steps())

    def __repr__(self) -> str:
        return f"aio.InterProcessSemaphoreV2({self.path!r}, {self.max_leases})"


class InterProcessSemaphoreMutex(
    SemaphoreMutexConstructor, SemaphoreMutexFace[Lease], AsyncLockContext
):
    """The asyncio form of :class:`pycurator.InterProcessSemaphoreMutex`: not re-entrant, and
    any task may release it."""

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_core(self, core: SemaphoreMutexCore[Lease]) -> None:
        self._core = core
        self._notice = AsyncLossNotice(core.steps.transport, lost=True)  # not held yet
        #: Set while the lock is not held by this object or its hold is not ours; clear
        #: while held (an :class:`asyncio.Event`).
        self.lost_event = self._notice.event

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lock, reason)`` on the loop when a hold stops being held."""
        self._notice.add(callback)

    async def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the lock; False on timeout."""
        steps = self._core.steps
        leases = await run_async(steps.transport, steps.acquire_steps(1, timeout))
        if leases is None:
            return False
        notice = self._notice.bound()
        notice.mark(False)
        self._core.hold(Lease(steps.client, leases[0], steps.policy, notice, subject=self))
        return True

    async def release(self) -> None:
        """Release the lock, from any task; :class:`LockNotOwnedError` if it is not held."""
        await self._core.take().close()
        self.lost_event.set()

    def is_acquired_in_this_process(self) -> bool:
        """True while this object holds the lock (by local bookkeeping)."""
        return self._core.lease is not None

    async def is_held(self) -> bool:
        """True while the lock is held and its lease node is known to be ours."""
        lease = self._core.lease
        return lease is not None and await lease.is_held()

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        await self._core.required().check()

    async def participant_nodes(self) -> list[str]:
        """Names of the lease nodes: the holder, and at most one waiter about to wait."""
        steps = self._core.steps
        return await run_async(steps.transport, steps.participant_steps())

    def __repr__(self) -> str:
        return f"aio.InterProcessSemaphoreMutex({self.path!r})"
