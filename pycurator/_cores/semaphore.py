"""The cores that both front ends' semaphores, leases and semaphore mutexes compose, over the
semaphore's protocol (:mod:`pycurator._recipes.semaphore`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from .._protocol import wire
from .._protocol.checks import ConnectionPolicy
from .._protocol.deadline import Deadline
from .._protocol.errors import LockLostError, LockNotOwnedError
from .._protocol.steps import (
    Steps,
)
from .._protocol.transport import Transport
from .._protocol.waits import delete_node_steps
from .._recipes.hold import Acquired, Hold, LossNotice
from .._recipes.semaphore import SemaphoreSteps, lease_data_steps

if TYPE_CHECKING:
    from kazoo.client import KazooClient

LeaseT = TypeVar("LeaseT")


class LeaseCore:
    """One lease, whatever waits on it: its node, followed until the lease is returned, and the
    ``notice`` told of a loss (naming ``subject``), and how its node is deleted (``delete``, as
    steps). Each front end's lease is a shell over one."""

    __slots__ = ("closed", "delete", "hold", "notice", "transport")

    def __init__(
        self,
        transport: Transport,
        held: Acquired,
        policy: ConnectionPolicy,
        notice: LossNotice,
        subject: object,
        delete: Callable[[str], Steps[None]] = delete_node_steps,
    ) -> None:
        self.transport = transport
        self.closed = False
        self.delete = delete
        self.notice = notice
        node, report = held
        self.hold = Hold(
            transport,
            node,
            policy,
            lambda state, reason: notice.changed(subject, state, reason),
            report,
        )

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the lease."""
        return cast("KazooClient", self.transport.client)

    @property
    def path(self) -> str:
        """The lease node's full path."""
        return self.hold.path

    @property
    def node_name(self) -> str:
        """The lease node's name."""
        return wire.node_name(self.hold.path)

    @property
    def fencing_token(self) -> int:
        """The lease node's creation zxid."""
        return self.hold.fencing_token

    def data_steps(self) -> Steps[bytes]:
        """The lease node's data (a read that rides through a reconnect, for at most the
        client's session timeout)."""
        return lease_data_steps(self.hold.path, Deadline(self.transport.session_timeout()))

    def check_open(self) -> None:
        """Raise :class:`LockLostError` once the lease was returned."""
        if self.closed:
            raise LockLostError(self.hold.path, "lease returned")

    def close(self) -> str | None:
        """Mark the lease returned and stop following its node; the node to delete, the first
        time only."""
        if self.closed:
            return None
        self.closed = True
        self.hold.close()
        return self.hold.path


class SemaphoreMutexCore(Generic[LeaseT]):
    """A semaphore mutex, whatever waits on it: the ``steps`` of its one-lease semaphore, and
    the lease of the current hold (of either front end's kind), kept under a guard: any thread
    or task may release. Each front end's semaphore mutex is a shell over one."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        node_data: bytes | None,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        self.steps = SemaphoreSteps(
            transport, path, 1, node_data, acl, connection_policy, "semaphore-mutex"
        )
        self._lease: LeaseT | None = None
        self._guard = transport.lock_object()

    @property
    def lease(self) -> LeaseT | None:
        """The lease of the current hold, or None."""
        return self._lease

    def hold(self, lease: LeaseT) -> None:
        """``lease`` is the current hold's."""
        with self._guard:
            self._lease = lease

    def take(self) -> LeaseT:
        """The current hold's lease, which is no longer current (to return it):
        :class:`LockNotOwnedError` if the mutex is not held."""
        with self._guard:
            lease, self._lease = self._lease, None
        if lease is None:
            path = self.steps.path
            raise LockNotOwnedError(path, f"Not acquired: {path}")
        return lease

    def required(self) -> LeaseT:
        """The current hold's lease; :class:`LockLostError` if the mutex is not held."""
        lease = self._lease
        if lease is None:
            raise LockLostError(self.steps.path, "not acquired")
        return lease


__all__ = ["LeaseCore", "SemaphoreMutexCore"]
