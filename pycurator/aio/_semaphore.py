"""The asyncio semaphore, its leases and the semaphore mutex, over the threaded semaphore's
steps (the same nodes and queue as Curator's ``InterProcessSemaphoreV2``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .. import _wire
from .._calls import delete_guaranteed_steps
from .._checks import ConnectionPolicy
from .._errors import LockLostError, LockNotOwnedError
from .._hold import FollowedNode, Held, LossNotice
from .._semaphore import SemaphoreBase, SemaphoreSteps, lease_data_steps
from ._lock import AsyncLockContext
from ._runner import loop_notice, run_async


class Lease:
    """One lease of an :class:`InterProcessSemaphoreV2`: ``await lease.close()`` returns it.

    Not tied to a task. It follows its node: ``await is_held()``, ``await check()``,
    :attr:`lost_event` (an :class:`asyncio.Event`) and :meth:`on_lost` callbacks (on the loop).
    """

    def __init__(
        self,
        client: KazooClient,
        held: Held,
        policy: ConnectionPolicy,
        notice: LossNotice | None = None,
        subject: object = None,
    ) -> None:
        """``held``: the lease node and its hold's report (from the semaphore's acquire);
        ``notice`` and ``subject``: whom to tell of a loss, and what to name (by default a
        notice of the lease's own, naming the lease); made on the running loop."""
        self._client = client
        self._closed = False
        self._notice = loop_notice(client, asyncio.Event()) if notice is None else notice
        named = self if subject is None else subject
        notice_ = self._notice
        node, report = held
        self._hold = FollowedNode(
            client,
            node,
            policy,
            lambda state, reason: notice_.changed(named, state, reason),
            report,
        )

    @property
    def lost_event(self) -> asyncio.Event:
        """Set while the lease node is not known to be ours (see the class doc)."""
        event: asyncio.Event = self._notice.lost_event.event
        return event

    @property
    def path(self) -> str:
        """The lease node's full path."""
        return self._hold.path

    @property
    def node_name(self) -> str:
        """The lease node's name, as Curator's ``Lease.getNodeName()``."""
        return _wire.node_name(self._hold.path)

    @property
    def fencing_token(self) -> int:
        """The lease node's creation zxid."""
        return self._hold.fencing_token

    async def data(self) -> bytes:
        """The lease node's data, read from ZooKeeper (riding through a reconnect)."""
        return await run_async(self._client, lease_data_steps(self._client, self._hold.path))

    async def is_held(self) -> bool:
        """True while the lease node is known to be ours (and the lease not returned)."""
        if self._closed:
            return False
        return await run_async(self._client, self._hold.is_held_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        if self._closed:
            raise LockLostError(self._hold.path, "lease returned")
        await run_async(self._client, self._hold.check_steps())

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lease, reason)`` on the loop when the lease stops being held."""
        self._notice.add(callback)

    async def close(self) -> None:
        """Return the lease (its node is deleted, in the background if need be); once only."""
        if self._closed:
            return
        self._closed = True
        self._hold.close()
        await run_async(self._client, delete_guaranteed_steps(self._client, self._hold.path))

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
        return f"aio.Lease({self._hold.path!r})"


class InterProcessSemaphoreV2(SemaphoreBase):
    """The asyncio form of :class:`pycurator.InterProcessSemaphoreV2`."""

    async def acquire(self, timeout: float | None = None) -> Lease | None:
        """One lease within ``timeout`` seconds (None: wait forever), or None on timeout."""
        leases = await self.acquire_many(1, timeout)
        return leases[0] if leases is not None else None

    async def acquire_many(self, qty: int, timeout: float | None = None) -> list[Lease] | None:
        """``qty`` leases under one deadline; None on timeout. On timeout, error or
        cancellation every lease taken so far is returned first."""
        leases = await run_async(self.client, self._steps.acquire_steps(qty, timeout))
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
        return await run_async(self.client, self._steps.participant_steps())

    def __repr__(self) -> str:
        return f"aio.InterProcessSemaphoreV2({self.path!r}, {self.max_leases})"


class InterProcessSemaphoreMutex(AsyncLockContext):
    """The asyncio form of :class:`pycurator.InterProcessSemaphoreMutex`: not re-entrant, and
    any task may release it."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        self._steps = SemaphoreSteps(
            client, path, 1, node_data, acl, connection_policy, "semaphore-mutex"
        )
        self._lease: Lease | None = None
        #: Set while the lock is not held by this object or its hold is not ours; clear
        #: while held (an :class:`asyncio.Event`).
        self.lost_event = asyncio.Event()
        self.lost_event.set()  # not held yet
        self._notice: LossNotice | None = None
        self._callbacks: list[Callable[[Any, str], Any]] = []

    @property
    def path(self) -> str:
        """The semaphore's path, as given."""
        return self._steps.path

    def on_lost(self, callback: Callable[[Any, str], Any]) -> None:
        """Run ``callback(lock, reason)`` on the loop when a hold stops being held."""
        self._callbacks.append(callback)
        if self._notice is not None:
            self._notice.add(callback)

    @property
    def lease(self) -> Lease | None:
        """The lease behind the current hold, or None."""
        return self._lease

    async def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the lock; False on timeout."""
        steps = self._steps
        leases = await run_async(steps.client, steps.acquire_steps(1, timeout))
        if leases is None:
            return False
        if self._notice is None:
            self._notice = loop_notice(steps.client, self.lost_event)
            for callback in self._callbacks:
                self._notice.add(callback)
        self.lost_event.clear()
        self._lease = Lease(steps.client, leases[0], steps.policy, self._notice, subject=self)
        return True

    async def release(self) -> None:
        """Release the lock, from any task; :class:`LockNotOwnedError` if it is not held."""
        lease, self._lease = self._lease, None
        if lease is None:
            raise LockNotOwnedError(self.path, f"Not acquired: {self.path}")
        await lease.close()
        self.lost_event.set()

    def is_acquired_in_this_process(self) -> bool:
        """True while this object holds the lock (by local bookkeeping)."""
        return self._lease is not None

    async def is_held(self) -> bool:
        """True while the lock is held and its lease node is known to be ours."""
        lease = self._lease
        return lease is not None and await lease.is_held()

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        lease = self._lease
        if lease is None:
            raise LockLostError(self.path, "not acquired")
        await lease.check()

    @property
    def fencing_token(self) -> int:
        """The czxid of the current hold's lease node; :class:`LockLostError` if not held."""
        lease = self._lease
        if lease is None:
            raise LockLostError(self.path, "not acquired")
        return lease.fencing_token

    async def participant_nodes(self) -> list[str]:
        """Names of the lease nodes: the holder, and at most one waiter about to wait."""
        return await run_async(self._steps.client, self._steps.participant_steps())

    def __repr__(self) -> str:
        return f"aio.InterProcessSemaphoreMutex({self.path!r})"
