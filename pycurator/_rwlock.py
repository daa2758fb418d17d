"""``InterProcessReadWriteLock``: Curator's fair read/write lock, two drivers over one engine."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kazoo.client import KazooClient

from . import _wire
from ._drivers import Decision, ReadDriver, write_driver
from ._engine import LockEngine, check_data
from ._lock import ReentrantLock
from ._monitor import ConnectionPolicy
from ._mutex import check_client_type
from ._paths import validate_path


class _Side(ReentrantLock):
    """One side of the read/write lock: the mutex surface, with participants of its own kind."""

    def __init__(self, engine: LockEngine, *, connection_policy: ConnectionPolicy) -> None:
        super().__init__(engine, connection_policy=connection_policy)

    def participant_nodes(self) -> list[str]:
        """Full paths of this side's nodes (read or write) in queue order, holders first."""
        token = self._engine.driver.token
        return [node for node in super().participant_nodes() if token in _wire.node_name(node)]


class WriteLock(_Side):
    """The write side: held by one thread of one process at a time, with no reader."""


class ReadLock(_Side):
    """The read side: shared by readers while no writer holds the lock or queues ahead."""


class WriteSide(Protocol):
    """What the read side asks of the write side (threaded or asyncio)."""

    @property
    def lock_path(self) -> str | None: ...

    def is_owned_by_current_thread(self) -> bool: ...


@dataclass(frozen=True)
class _ReadSideDriver:
    """Curator's read predicate, plus the holder of the write lock reading at once.

    The write holder's read node takes the write node's sequence and is not sequential
    (CURATOR-621, Curator 5.5), so it sorts beside the write node and a queued writer stays
    behind the downgraded reader.
    """

    write: WriteSide
    rules: ReadDriver = field(default_factory=ReadDriver)
    token: str = _wire.READ_LOCK_NAME
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        write_node = self.write.lock_path
        if write_node is None:
            return None
        return _wire.sort_key(_wire.node_name(write_node), _wire.WRITE_LOCK_NAME)

    def sort(self, children: Sequence[str]) -> list[str]:
        return self.rules.sort(children)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        if self.write.is_owned_by_current_thread():
            return Decision(True)
        return self.rules.decide(children, ours)


class InterProcessReadWriteLock:
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

    def __init__(
        self,
        client: KazooClient,
        path: str,
        node_data: bytes | None = None,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
        lock_data: bytes | None = None,
    ) -> None:
        if lock_data is not None:
            if node_data is not None:
                raise TypeError("give node_data or lock_data (its former name), not both")
            warnings.warn(
                "InterProcessReadWriteLock(lock_data=...) is deprecated: use node_data=",
                DeprecationWarning,
                stacklevel=2,
            )
            node_data = lock_data
        validate_path(path)
        check_client_type(client)
        check_data(node_data, "lock_data" if lock_data is not None else "node_data")
        lock_data = node_data
        self._write = WriteLock(
            LockEngine(client, path, write_driver(), data=lock_data, acl=acl),
            connection_policy=connection_policy,
        )
        self._read = ReadLock(
            LockEngine(client, path, _ReadSideDriver(self._write), data=lock_data, acl=acl),
            connection_policy=connection_policy,
        )

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._write.path

    def read_lock(self) -> ReadLock:
        """The read side (the same object on every call)."""
        return self._read

    def write_lock(self) -> WriteLock:
        """The write side (the same object on every call)."""
        return self._write

    def __repr__(self) -> str:
        return f"InterProcessReadWriteLock({self.path!r})"
