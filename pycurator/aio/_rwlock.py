"""The asyncio ``InterProcessReadWriteLock``: two sides over one engine, owned per task."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from kazoo.client import KazooClient

from .._cores.constructors import ReadWriteConstructor
from .._cores.faces import ReadWriteFace
from .._cores.lock import LockCore
from .._protocol.checks import ConnectionPolicy
from .._protocol.drivers import Driver, ReadSideDriver
from .._protocol.transport import Transport
from .._recipes.lock_engine import LockEngine
from ._lock import AsyncReentrantLock
from ._runner import run_async, transport_of


class _Side(AsyncReentrantLock):
    """One side of the read/write lock: the mutex surface, with participants of its own kind."""

    _core: LockCore  # the lock's core, as every asyncio lock keeps it

    async def participant_nodes(self) -> list[str]:
        """Full paths of this side's nodes (read or write) in queue order, holders first."""
        core = self._core
        return await run_async(core.transport, core.participant_steps(own_kind_only=True))


class WriteLock(_Side):
    """The write side: held by one task of one process at a time, with no reader."""

    def __init__(self, engine: LockEngine, *, connection_policy: ConnectionPolicy) -> None:
        super().__init__(engine, connection_policy=connection_policy, recipe="write")


class ReadLock(_Side):
    """The read side: shared by readers while no writer holds the lock or queues ahead (as the
    lock's system orders its queue); the task holding the write lock may take it."""

    def __init__(
        self,
        engine: LockEngine,
        write: WriteLock,
        *,
        connection_policy: ConnectionPolicy,
        side: Callable[[str | None], Driver] = ReadSideDriver,
    ) -> None:
        super().__init__(engine, connection_policy=connection_policy, recipe="read")
        self._write = write
        #: The driver of an acquire, given the write node its task holds (None if none).
        self._side = side

    def _acquire_driver(self, owner: Hashable) -> Driver:
        return self._side(self._write._core.lock_path(owner))


class InterProcessReadWriteLock(ReadWriteConstructor, ReadWriteFace[ReadLock, WriteLock]):
    """The asyncio form of :class:`pycurator.InterProcessReadWriteLock` (per task: the task
    holding the write lock may take the read lock). ``lock_data``, the former name of
    ``node_data``, still works and warns (DeprecationWarning)."""

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_sides(
        self, write: LockEngine, read: LockEngine, connection_policy: ConnectionPolicy
    ) -> None:
        self._write = WriteLock(write, connection_policy=connection_policy)
        self._read = ReadLock(read, self._write, connection_policy=connection_policy)

    def __repr__(self) -> str:
        return f"aio.InterProcessReadWriteLock({self.path!r})"


__all__ = ["InterProcessReadWriteLock", "ReadLock", "WriteLock"]
