"""The threaded forms of menagerie's locks and semaphore, public as :mod:`pycurator.menagerie`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.faces import PermitsFace, ZkReadWriteFace
from .._protocol import menagerie
from .._protocol.checks import ConnectionPolicy
from .._recipes.menagerie import PermitSteps, lock_engine, read_write_engines
from .lock import ReentrantLock
from .runner import run
from .rwlock import ReadLock, WriteLock
from .semaphore import Lease


class ReentrantZkLock(ReentrantLock):
    """A re-entrant, fair lock shared with menagerie's ``ReentrantZkLock`` on the same base.

    Held per thread and per lock object, as menagerie's ``ThreadLocal``. Nodes are
    ``PATH/lock-<seq>``, ephemeral sequential and empty; the base node (and any missing
    ancestor) is made persistent at the first acquire. Every child whose name starts with
    ``lock`` and ends in a Java ``int`` after its last ``-`` takes part (menagerie's
    ``ReentrantZkLock2`` nodes too); a child that ties with ours counts as ahead of it.
    """

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
    """Readers share, writers exclude, with menagerie's ``ReentrantZkReadWriteLock`` on the
    same base.

    Nodes are ``PATH/readLock-<seq>`` and ``PATH/writeLock-<seq>``, siblings, ephemeral
    sequential and empty. A reader waits for the nearest writer with a lower sequence; a
    writer for the nearest reader or writer with a lower sequence. Each side is re-entrant
    per thread. The thread holding the write lock may take the read lock (downgrade): its
    read node is ``PATH/readLock--<its write node's sequence>``, ephemeral, not sequential, as
    menagerie names it, and releasing the read lock deletes it (menagerie's own release
    leaves it until its session ends). A reader asking for the write lock waits for itself.
    """

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
        return f"ReentrantZkReadWriteLock({self.path!r})"


class ZkSemaphore(PermitsFace):
    """``permits`` permits shared with menagerie's ``ZkSemaphore`` on the same base node.

    Each permit is a node ``PATH/permit-<seq>``, ephemeral sequential and empty, and holds
    when fewer than ``permits`` ``permit*`` nodes sort before it. A permit is a :class:`Lease`
    (as :class:`~pycurator.InterProcessSemaphoreV2`'s): not tied to a thread, returned with
    ``lease.close()``, followed while held (``is_held``, ``check``, ``lost_event``,
    ``on_lost``, ``fencing_token``). Nothing checks that every participant counts the same
    ``permits`` (menagerie does not either). A Java ``release()`` deletes the lowest permit
    nodes, whoever holds them: a Python lease so deleted is lost, and its ``on_lost`` runs.
    """

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

    def acquire(self, timeout: float | None = None) -> Lease | None:
        """One permit within ``timeout`` seconds (None: wait forever; 0: one try), or None on
        timeout; no node is left behind on timeout or error."""
        held = run(self._steps.transport, self._steps.acquire_steps(timeout))
        if held is None:
            return None
        engine = self._steps.engine
        return Lease(self.client, held, self.connection_policy, delete=engine.delete_steps)

    def return_lease(self, lease: Lease) -> None:
        """Give a permit back (the same as ``lease.close()``)."""
        lease.close()

    def participant_nodes(self) -> list[str]:
        """Names of the permit nodes in menagerie's order, holders first; rides through a
        reconnect, as every read-only query."""
        return run(self._steps.transport, self._steps.participant_steps())

    def available_permits(self) -> int:
        """``permits`` less the permit nodes there are, at least 0 (menagerie's
        ``availablePermits``)."""
        return run(self._steps.transport, self._steps.available_steps())

    def __repr__(self) -> str:
        return f"ZkSemaphore({self.path!r}, {self.permits})"


__all__ = ["ReadLock", "ReentrantZkLock", "ReentrantZkReadWriteLock", "WriteLock", "ZkSemaphore"]
