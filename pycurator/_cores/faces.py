"""What every front end's shell shows of its recipe's core and reads there alone: the properties
written once, which the shells of each front end inherit, so they cannot drift apart.

A face holds no state and no behaviour: its properties read the core a shell composes (its
``_core``, ``_steps`` or ``_locks``); the shell sets that and says how it waits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from .._protocol.checks import ConnectionPolicy
from .._recipes.menagerie import PermitSteps
from .._recipes.semaphore import SemaphoreSteps
from .latch import LatchCore
from .lock import LockCore
from .multilock import members_path
from .selector import LeadershipCore, SelectorCore, TermHandle
from .semaphore import LeaseCore, SemaphoreMutexCore

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class Fenced(Protocol):
    """A lease of either front end, as a semaphore mutex's face reads it."""

    @property
    def fencing_token(self) -> int: ...


class Pathed(Protocol):
    """A side of either front end's read/write lock, as its face reads it."""

    @property
    def path(self) -> str: ...


M = TypeVar("M")
L = TypeVar("L", bound=Fenced)
R = TypeVar("R")
W = TypeVar("W", bound=Pathed)
T = TypeVar("T", bound=TermHandle)


class LockFace:
    """A lock over a :class:`~pycurator._cores.lock.LockCore`."""

    _core: LockCore

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._core.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client this lock uses."""
        return self._core.client

    @property
    def connection_policy(self) -> ConnectionPolicy:
        """``standard`` (a suspended connection counts as lost) or ``session`` (only expiry)."""
        return self._core.policy

    @property
    def fencing_token(self) -> int:
        """A number that grows with every new holder of this lock path: our node's creation
        zxid. A resource that remembers the largest token it has seen can reject a stale holder.

        Raises :class:`LockLostError` when the caller does not hold the lock.
        """
        return self._core.holds.required().fencing_token


class MultiLockFace(Generic[M]):
    """A multi-lock over its members."""

    _locks: list[M]

    @property
    def path(self) -> str:
        """The member locks, for messages: their paths where they have one."""
        return members_path(self._locks)

    @property
    def locks(self) -> list[M]:
        """The member locks, in acquisition order."""
        return list(self._locks)


class LeaseFace:
    """A lease over a :class:`~pycurator._cores.semaphore.LeaseCore`."""

    _core: LeaseCore

    @property
    def path(self) -> str:
        """The lease node's full path."""
        return self._core.path

    @property
    def node_name(self) -> str:
        """The lease node's name, as Curator's ``Lease.getNodeName()``."""
        return self._core.node_name

    @property
    def fencing_token(self) -> int:
        """The lease node's creation zxid (see :class:`pycurator.Lease` for what it orders)."""
        return self._core.fencing_token


class SemaphoreFace:
    """A semaphore over its :class:`~pycurator._cores.semaphore.SemaphoreSteps`."""

    _steps: SemaphoreSteps

    @property
    def client(self) -> KazooClient:
        """The kazoo client this semaphore uses."""
        return self._steps.client

    @property
    def path(self) -> str:
        """The semaphore's path, as given."""
        return self._steps.path

    @property
    def max_leases(self) -> int:
        """How many leases there are (as this participant counts them)."""
        return self._steps.max_leases

    @property
    def connection_policy(self) -> ConnectionPolicy:
        """What counts as a lost lease (see :mod:`pycurator._recipes.hold_monitor`)."""
        return self._steps.policy


class SemaphoreMutexFace(Generic[L]):
    """A semaphore mutex over a :class:`~pycurator._cores.semaphore.SemaphoreMutexCore`."""

    _core: SemaphoreMutexCore[L]

    @property
    def path(self) -> str:
        """The semaphore's path, as given."""
        return self._core.steps.path

    @property
    def lease(self) -> L | None:
        """The lease behind the current hold, or None."""
        return self._core.lease

    @property
    def fencing_token(self) -> int:
        """The czxid of the current hold's lease node; :class:`LockLostError` if not held."""
        return self._core.required().fencing_token


class LatchFace:
    """A leader latch over a :class:`~pycurator._cores.latch.LatchCore`."""

    _core: LatchCore

    @property
    def client(self) -> KazooClient:
        """The kazoo client this latch uses."""
        return self._core.client

    @property
    def path(self) -> str:
        """The latch path, as given."""
        return self._core.path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._core.id

    @property
    def our_path(self) -> str | None:
        """Our node's full path, or None while there is none."""
        return self._core.our_path

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid while we lead: it grows with every new leader of this path.
        Raises :class:`LockLostError` when not leading."""
        return self._core.fencing_token

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        return self._core.has_leadership()


class ElectionFace:
    """ZooKeeper's ``LeaderElection`` over a :class:`~pycurator._cores.latch.LatchCore`."""

    _core: LatchCore

    @property
    def client(self) -> KazooClient:
        """The kazoo client this participant uses."""
        return self._core.client

    @property
    def root(self) -> str:
        """The election's root, as given."""
        return self._core.path

    @property
    def host_name(self) -> str:
        """This participant's host name, written to its offer."""
        return self._core.id

    @property
    def our_path(self) -> str | None:
        """Our offer's full path, or None while there is none."""
        return self._core.our_path

    @property
    def fencing_token(self) -> int:
        """Our offer's creation zxid while we lead (it grows with every new leader); raises
        :class:`~pycurator.LockLostError` when not leading."""
        return self._core.fencing_token


class PermitsFace:
    """menagerie's ``ZkSemaphore`` over its :class:`~pycurator._recipes.menagerie.PermitSteps`."""

    _steps: PermitSteps

    @property
    def client(self) -> KazooClient:
        """The kazoo client this semaphore uses."""
        return self._steps.client

    @property
    def path(self) -> str:
        """The base node, as given."""
        return self._steps.path

    @property
    def permits(self) -> int:
        """How many permits there are (as this participant counts them)."""
        return self._steps.permits

    @property
    def connection_policy(self) -> ConnectionPolicy:
        """What counts as a lost lease (see :mod:`pycurator._recipes.hold_monitor`)."""
        return self._steps.policy


class SelectorFace(Generic[T]):
    """A leader selector over a :class:`~pycurator._cores.selector.SelectorCore` (``T``: its
    front end's handle on a term)."""

    _core: SelectorCore[T]

    @property
    def client(self) -> KazooClient:
        """The kazoo client this selector uses."""
        return self._core.client

    @property
    def path(self) -> str:
        """The leader path, as given."""
        return self._core.path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._core.id

    @property
    def auto_requeue(self) -> bool:
        """Whether the selector queues again by itself once a term ends."""
        return self._core.auto_requeue

    @auto_requeue.setter
    def auto_requeue(self, value: bool) -> None:
        self._core.auto_requeue = value

    @property
    def our_path(self) -> str | None:
        """Our node's full path in the current term, or None."""
        return self._core.our_path


class LeadershipFace:
    """A selector's term of leadership over a :class:`~pycurator._cores.selector.LeadershipCore`."""

    _core: LeadershipCore

    @property
    def path(self) -> str:
        """The leader path."""
        return self._core.path

    @property
    def node_path(self) -> str:
        """Our node's full path."""
        return self._core.node.path

    @property
    def reason(self) -> str:
        """Why the term ended; empty while it lasts."""
        return self._core.reason

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid: it grows with every new leader of this path."""
        return self._core.fencing_token


class ReadWriteFace(Generic[R, W]):
    """A read/write lock over its two sides (Curator's: :attr:`path` is the lock path)."""

    _read: R
    _write: W

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._write.path

    def read_lock(self) -> R:
        """The read side (the same object on every call)."""
        return self._read

    def write_lock(self) -> W:
        """The write side (the same object on every call)."""
        return self._write


class ZkReadWriteFace(ReadWriteFace[R, W]):
    """menagerie's read/write lock over its two sides: :attr:`path` is its base node."""

    @property
    def path(self) -> str:
        """The base node, as given."""
        return self._write.path


__all__ = [
    "ElectionFace",
    "Fenced",
    "LatchFace",
    "LeadershipFace",
    "LeaseFace",
    "LockFace",
    "MultiLockFace",
    "Pathed",
    "PermitsFace",
    "ReadWriteFace",
    "SelectorFace",
    "SemaphoreFace",
    "SemaphoreMutexFace",
    "ZkReadWriteFace",
]
