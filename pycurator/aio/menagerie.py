"""The asyncio forms of menagerie's locks and semaphore (:mod:`pycurator.menagerie`): the same
nodes, rules and protocol, awaited instead of blocked on, held per asyncio task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .._cores.faces import PermitsFace, ZkReadWriteFace
from .._protocol import menagerie
from .._protocol.checks import ConnectionPolicy
from .._recipes.menagerie import PermitSteps, lock_engine, read_write_engines
from ._lock import AsyncReentrantLock
from ._runner import run_async, transport_of
from ._rwlock import ReadLock, WriteLock
from ._semaphore import Lease


class ReentrantZkLock(AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.menagerie.ReentrantZkLock`: the same nodes and
    queue, shared with Java menagerie and threaded pycurator; re-entrant per task."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(
            lock_engine(transport_of(client), path, acl), connection_policy=connection_policy
        )


class ReentrantZkReadWriteLock(ZkReadWriteFace[ReadLock, WriteLock]):
    """The asyncio form of :class:`pycurator.menagerie.ReentrantZkReadWriteLock` (per task:
    the task holding the write lock may take the read lock, and its release deletes the
    downgrade's node)."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        write, read = read_write_engines(transport_of(client), path, acl)
        self._write = WriteLock(write, connection_policy=connection_policy)
        self._read = ReadLock(
            read, self._write, connection_policy=connection_policy, side=menagerie.ReadSide
        )

    def __repr__(self) -> str:
        return f"aio.ReentrantZkReadWriteLock({self.path!r})"


class ZkSemaphore(PermitsFace):
    """The asyncio form of :class:`pycurator.menagerie.ZkSemaphore`: ``await acquire()`` gives
    an asyncio :class:`~pycurator.aio.Lease` (``await lease.close()`` returns it)."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        permits: int,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        self._steps = PermitSteps(transport_of(client), path, permits, acl, connection_policy)

    async def acquire(self, timeout: float | None = None) -> Lease | None:
        """One permit within ``timeout`` seconds (None: wait forever; 0: one try), or None on
        timeout; no node is left behind on timeout, error or cancellation."""
        held = await run_async(self._steps.transport, self._steps.acquire_steps(timeout))
        if held is None:
            return None
        engine = self._steps.engine
        return Lease(self.client, held, self.connection_policy, delete=engine.delete_steps)

    async def return_lease(self, lease: Lease) -> None:
        """Give a permit back (the same as ``await lease.close()``)."""
        await lease.close()

    async def participant_nodes(self) -> list[str]:
        """Names of the permit nodes in menagerie's order, holders first."""
        return await run_async(self._steps.transport, self._steps.participant_steps())

    async def available_permits(self) -> int:
        """``permits`` less the permit nodes there are, at least 0."""
        return await run_async(self._steps.transport, self._steps.available_steps())

    def __repr__(self) -> str:
        return f"aio.ZkSemaphore({self.path!r}, {self.permits})"


__all__ = [
    "ReadLock",
    "ReentrantZkLock",
    "ReentrantZkReadWriteLock",
    "WriteLock",
    "ZkSemaphore",
]
