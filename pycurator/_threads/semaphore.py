"""``InterProcessSemaphoreV2`` and ``InterProcessSemaphoreMutex``: Curator's counting semaphore.

Layout, as Curator's: waiters queue on an internal :class:`InterProcessMutex` at ``PATH/locks``;
its holder creates a lease node ``PATH/leases/_c_<uuid>-lease-<seq>`` and holds a lease when
there are at most ``max_leases`` lease nodes (a count, not an order), waiting on a child watch
of ``PATH/leases`` otherwise; it releases the internal mutex once it holds the lease or gives up.

The protocol (:class:`SemaphoreSteps`) does no I/O: its steps say what to send
(:mod:`pycurator._protocol.requests` requests), what to listen to and what to owe, and the runner
does it, so ``tests/test_semaphore_protocol.py`` runs it on a scripted server. A lease's hold is
followed as a held lock's is (:mod:`pycurator._recipes.hold`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.constructors import SemaphoreMutexConstructor
from .._cores.faces import LeaseFace, SemaphoreFace, SemaphoreMutexFace
from .._cores.semaphore import LeaseCore, SemaphoreMutexCore
from .._protocol.checks import ConnectionPolicy
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._protocol.waits import delete_node_steps
from .._recipes.hold import Acquired, LossNotice
from .._recipes.semaphore import SemaphoreSteps
from .lock import LockContext
from .runner import run

LostCallback = Callable[[Any, str], None]


class Lease(LeaseFace):
    """One lease of an :class:`InterProcessSemaphoreV2`: return it with :meth:`close`.

    Not tied to a thread. It follows its node like a held lock does: :meth:`is_held`,
    :meth:`check`, :attr:`lost_event` and :meth:`on_lost` tell when the node is gone (session
    expired, node deleted) or, under the ``standard`` policy, while the connection is suspended.
    ``fencing_token`` is the lease node's czxid: it grows with every new lease of this
    semaphore, so a resource can reject a lease older than one it has seen; leases held together
    have different tokens, and the token does not say which of them came first to the resource.
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
        (by default Curator's guaranteed delete)."""
        transport = transport_of(client)
        self._core = LeaseCore(
            transport,
            held,
            policy,
            LossNotice(transport) if notice is None else notice,
            self if subject is None else subject,
            delete,
        )

    @property
    def lost_event(self) -> Any:
        """Set while the lease node is not known to be ours (see the class doc)."""
        return self._core.notice.lost_event

    def data(self) -> bytes:
        """The lease node's data, read from ZooKeeper (riding through a reconnect, as every
        read-only query)."""
        return run(self._core.transport, self._core.data_steps())

    def is_held(self) -> bool:
        """True while the lease node is known to be ours (and the lease not returned)."""
        return not self._core.closed and run(self._core.transport, self._core.hold.is_held_steps())

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        self._core.check_open()
        run(self._core.transport, self._core.hold.check_steps())

    def on_lost(self, callback: LostCallback) -> None:
        """Run ``callback(lease, reason)`` on a worker thread when the lease stops being held."""
        self._core.notice.add(callback)

    def close(self) -> None:
        """Return the lease: delete its node (retried in the background if the connection is
        down). Returning it twice, or after it was lost, does nothing more."""
        path = self._core.close()
        if path is not None:
            run(self._core.transport, self._core.delete(path))

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Lease({self._core.path!r})"


class InterProcessSemaphoreV2(SemaphoreFace):
    """A pool of ``max_leases`` leases shared with Java Curator's ``InterProcessSemaphoreV2``.

    Waiters are served in arrival order through the internal mutex. Nothing checks that every
    participant uses the same ``max_leases`` (Curator does not either). Lease nodes hold
    ``node_data`` (by default the host address, as Curator writes it).
    """

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

    def acquire(self, timeout: float | None = None) -> Lease | None:
        """One lease within ``timeout`` seconds (None: wait forever), or None on timeout."""
        leases = self.acquire_many(1, timeout)
        return leases[0] if leases is not None else None

    def acquire_many(self, qty: int, timeout: float | None = None) -> list[Lease] | None:
        """``qty`` leases, taken one by one under one deadline for the whole call.

        None on timeout; on timeout or error every lease taken so far is returned first.
        """
        leases = run(self._steps.transport, self._steps.acquire_steps(qty, timeout))
        if leases is None:
            return None
        return [Lease(self.client, held, self.connection_policy) for held in leases]

    def return_lease(self, lease: Lease) -> None:
        """Give a lease back (the same as ``lease.close()``)."""
        lease.close()

    def return_all(self, leases: Iterable[Lease]) -> None:
        """Give every lease back."""
        for lease in leases:
            lease.close()

    def participant_nodes(self) -> list[str]:
        """Names of the lease nodes (holders, and at most one waiter), oldest first; rides
        through a reconnect, as every read-only query."""
        return run(self._steps.transport, self._steps.participant_steps())

    def __repr__(self) -> str:
        return f"InterProcessSemaphoreV2({self.path!r}, {self.max_leases})"


class InterProcessSemaphoreMutex(SemaphoreMutexConstructor, SemaphoreMutexFace[Lease], LockContext):
    """A mutex on a one-lease :class:`InterProcessSemaphoreV2`, shared with Java Curator's
    ``InterProcessSemaphoreMutex``.

    Not re-entrant: a second ``acquire`` by the holder waits for itself (a timed one returns
    False). Any thread may release it. A hold follows its lease node (see :class:`Lease`).
    """

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_core(self, core: SemaphoreMutexCore[Lease]) -> None:
        self._core = core
        self._notice = LossNotice(core.steps.transport)
        self._notice.mark(True)  # not held yet

    @property
    def lost_event(self) -> Any:
        """Set while the lock is not held by this object or its hold is not ours (lost, or
        suspended under the ``standard`` policy); clear while held."""
        return self._notice.lost_event

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the lock; False on timeout."""
        steps = self._core.steps
        leases = run(steps.transport, steps.acquire_steps(1, timeout))
        if leases is None:
            return False
        self._notice.mark(False)
        self._core.hold(Lease(steps.client, leases[0], steps.policy, self._notice, subject=self))
        return True

    def release(self) -> None:
        """Release the lock, from any thread; :class:`LockNotOwnedError` if it is not held."""
        self._core.take().close()
        self._notice.mark(True)

    def is_acquired_in_this_process(self) -> bool:
        """True while this object holds the lock (by local bookkeeping)."""
        return self._core.lease is not None

    def is_held(self) -> bool:
        """True while the lock is held and its lease node is known to be ours."""
        lease = self._core.lease
        return lease is not None and lease.is_held()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        self._core.required().check()

    def on_lost(self, callback: LostCallback) -> None:
        """Run ``callback(lock, reason)`` on a worker thread when a hold stops being held."""
        self._notice.add(callback)

    def participant_nodes(self) -> list[str]:
        """Names of the lease nodes: the holder, and at most one waiter about to wait."""
        steps = self._core.steps
        return run(steps.transport, steps.participant_steps())

    def __repr__(self) -> str:
        return f"InterProcessSemaphoreMutex({self.path!r})"
