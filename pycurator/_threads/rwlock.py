"""``InterProcessReadWriteLock``: Curator's fair read/write lock, two drivers over one engine."""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.constructors import ReadWriteConstructor
from .._cores.faces import ReadWriteFace
from .._protocol.checks import ConnectionPolicy
from .._protocol.drivers import Driver, ReadSideDriver
from .._protocol.transport import Transport
from .._recipes.lock_engine import LockEngine
from .lock import ReentrantLock
from .runner import run


class _Side(ReentrantLock):
    """One side of the read/write lock: the mutex surface, with participants of its own kind."""

    def participant_nodes(self) -> list[str]:
        """Full paths of this side's nodes (read or write) in queue order, holders first."""
        return run(self._core.transport, self._core.participant_steps(own_kind_only=True))


class WriteLock(_Side):
    """The write side: held by one thread of one process at a time, with no reader."""

    def __init__(self, engine: LockEngine, *, connection_policy: ConnectionPolicy) -> None:
        super().__init__(engine, connection_policy=connection_policy, recipe="write")


class ReadLock(_Side):
    """The read side: shared by readers while no writer holds the lock or queues ahead (as the
    lock's system orders its queue); the thread holding the write lock may take it."""

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
        #: The driver of an acquire, given the write node its thread holds (None if none).
        self._side = side

    def _acquire_driver(self) -> Driver:
        return self._side(self._write.lock_path)


class InterProcessReadWriteLock(ReadWriteConstructor, ReadWriteFace[ReadLock, WriteLock]):
    """Readers share, writers exclude, across Java Curator and pycurator on one path.

    Fair as Curator's: a reader that arrives after a queued writer waits for it. Each side is
    re-entrant per thread. The thread holding the write lock may take the read lock
    (downgrade), then release the write lock and keep reading; a reader asking for the write
    lock never gets it (a timed acquire returns False, an untimed one waits forever), as in
    Curator. Java Curator 5.4 lacks CURATOR-621: a Java 5.4 writer that downgrades makes a
    sequential read node, behind which a queued writer may slip in; pycurator's downgrade
    does not.

    Nodes are ``PATH/_c_<uuid>-__WRIT__<seq>`` and ``PATH/_c_<uuid>-__READ__<seq>``, siblings,
    holding ``node_data`` (by default the host address, as Curator writes it). ``lock_data``, the
    former name of ``node_data``, still works and warns (DeprecationWarning).

    ``fencing_token`` on either side is the czxid of the holder's node: it grows with every new
    holder of either side, so a writer's token exceeds every earlier holder's. Readers that hold
    together have different tokens, and a resource should compare a writer's token with the
    largest it has seen from anyone, not expect readers' tokens to order one another.
    """

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_sides(
        self, write: LockEngine, read: LockEngine, connection_policy: ConnectionPolicy
    ) -> None:
        self._write = WriteLock(write, connection_policy=connection_policy)
        self._read = ReadLock(read, self._write, connection_policy=connection_policy)

    def __repr__(self) -> str:
        return f"InterProcessReadWriteLock({self.path!r})"


__all__ = ["InterProcessReadWriteLock", "ReadLock", "WriteLock"]
