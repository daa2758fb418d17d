"""``InterProcessSemaphoreV2`` and ``InterProcessSemaphoreMutex``: Curator's counting semaphore.

Layout, as Curator's: waiters queue on an internal :class:`InterProcessMutex` at ``PATH/locks``;
its holder creates a lease node ``PATH/leases/_c_<uuid>-lease-<seq>`` and holds a lease when
there are at most ``max_leases`` lease nodes (a count, not an order), waiting on a child watch
of ``PATH/leases`` otherwise; it releases the internal mutex once it holds the lease or gives up.

The protocol (:class:`SemaphoreSteps`) does no I/O: its steps say what to send
(:mod:`pycurator._ops` requests), what to listen to and what to owe, and the runner does it, so
``tests/test_semaphore_protocol.py`` runs it on a scripted server. A lease's hold is followed as
a held lock's is (:mod:`pycurator._hold`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from . import _kazoo, _wire
from ._calls import delete_node_steps, read_sent_steps, watch_sent_steps
from ._checks import ConnectionPolicy, check_client_type, check_data, check_policy, check_timeout
from ._deadline import Deadline, DeadlineExpired
from ._drivers import MUTEX_DRIVER, StandardDriver
from ._engine import HeldNode, LockEngine
from ._errors import LockLostError, LockNotOwnedError
from ._handlers import runs_inline
from ._hold import FollowedNode, Held, LossNotice
from ._lock import LockContext
from ._observe import Reporter
from ._ops import GetData, ListChildren
from ._paths import validate_path
from ._steps import (
    CheckOpen,
    ForgetWatch,
    Listen,
    NewSignal,
    SessionId,
    Steps,
    Unlisten,
    WaitSignal,
    run,
)

LostCallback = Callable[[Any, str], None]
LeaseT = TypeVar("LeaseT")


class Lease:
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
        held: Held,
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
        self._core = LeaseCore(
            client,
            held,
            policy,
            LossNotice(client) if notice is None else notice,
            self if subject is None else subject,
            delete,
        )

    @property
    def lost_event(self) -> Any:
        """Set while the lease node is not known to be ours (see the class doc)."""
        return self._core.notice.lost_event

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
        """The lease node's creation zxid (see the class doc)."""
        return self._core.fencing_token

    def data(self) -> bytes:
        """The lease node's data, read from ZooKeeper (riding through a reconnect, as every
        read-only query)."""
        return run(self._core.client, self._core.data_steps())

    def is_held(self) -> bool:
        """True while the lease node is known to be ours (and the lease not returned)."""
        return not self._core.closed and self._core.hold.is_held()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        self._core.check_open()
        self._core.hold.check()

    def on_lost(self, callback: LostCallback) -> None:
        """Run ``callback(lease, reason)`` on a worker thread when the lease stops being held."""
        self._core.notice.add(callback)

    def close(self) -> None:
        """Return the lease: delete its node (retried in the background if the connection is
        down). Returning it twice, or after it was lost, does nothing more."""
        path = self._core.close()
        if path is not None:
            run(self._core.client, self._core.delete(path))

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


class LeaseCore:
    """One lease, whatever waits on it: its node, followed until the lease is returned, and the
    ``notice`` told of a loss (naming ``subject``), and how its node is deleted (``delete``, as
    steps). Each front end's lease is a shell over one."""

    __slots__ = ("client", "closed", "delete", "hold", "notice")

    def __init__(
        self,
        client: KazooClient,
        held: Held,
        policy: ConnectionPolicy,
        notice: LossNotice,
        subject: object,
        delete: Callable[[str], Steps[None]] = delete_node_steps,
    ) -> None:
        self.client = client
        self.closed = False
        self.delete = delete
        self.notice = notice
        node, report = held
        self.hold = FollowedNode(
            client,
            node,
            policy,
            lambda state, reason: notice.changed(subject, state, reason),
            report,
        )

    @property
    def path(self) -> str:
        """The lease node's full path."""
        return self.hold.path

    @property
    def node_name(self) -> str:
        """The lease node's name."""
        return _wire.node_name(self.hold.path)

    @property
    def fencing_token(self) -> int:
        """The lease node's creation zxid."""
        return self.hold.fencing_token

    def data_steps(self) -> Steps[bytes]:
        """The lease node's data (a read that rides through a reconnect, for at most the
        client's session timeout)."""
        return lease_data_steps(self.hold.path, Deadline(_kazoo.session_timeout(self.client)))

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


def lease_data_steps(path: str, deadline: Deadline) -> Steps[bytes]:
    """A lease node's data: a read that rides through a reconnect, ConnectionLoss once
    ``deadline`` passes without an answer."""
    data, _ = yield from read_sent_steps(GetData(path), deadline)
    return bytes(data)


class _Retry(Exception):
    """Our lease node vanished while we waited (the session expired): start again."""


class SemaphoreSteps:
    """The semaphore's protocol, as steps (:mod:`pycurator._steps`): the threaded
    :class:`InterProcessSemaphoreV2` runs them blocking, its asyncio form awaits them. It
    checks the arguments, and holds the internal mutex's engine and the leases' engine; its
    waits and leases are reported as ``recipe`` (a semaphore's, or a semaphore mutex's)."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        max_leases: int,
        node_data: bytes | None,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
        recipe: str = "semaphore",
    ) -> None:
        validate_path(path)
        check_client_type(client)
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise TypeError(f"max_leases must be an int, not {max_leases!r}")
        if max_leases < 1:
            raise ValueError(f"max_leases must be >= 1, not {max_leases}")
        check_data(node_data)
        self.client = client
        self.path = path
        self.max_leases = max_leases
        self.policy = check_policy(connection_policy)
        self.report = Reporter(recipe, path)
        # Curator's internal InterProcessMutex; held only while one lease is being taken
        self._lock = LockEngine(
            client,
            _wire.join_path(path, _wire.SEMAPHORE_LOCK_PARENT),
            MUTEX_DRIVER,
            acl=acl,
        )
        self._leases_path = _wire.join_path(path, _wire.SEMAPHORE_LEASE_PARENT)
        self._leases = LockEngine(
            client,
            self._leases_path,
            StandardDriver(_wire.LEASE_NAME, max_leases),
            data=node_data,
            acl=acl,
        )

    def acquire_steps(self, qty: int, timeout: float | None) -> Steps[list[Held] | None]:
        """``qty`` lease nodes (each with its hold's report) under one deadline, or None on
        timeout; on timeout, error or cancellation every lease taken so far is returned first.
        Each lease is one wait and one hold (see :mod:`pycurator._observe`)."""
        if isinstance(qty, bool) or not isinstance(qty, int):
            raise TypeError(f"qty must be an int, not {qty!r}")
        if qty < 1:
            raise ValueError(f"qty must be >= 1, not {qty}")
        deadline = Deadline(check_timeout(timeout))
        leases: list[Held] = []
        done = False
        try:
            while len(leases) < qty:
                lease = yield from self.report.wait_steps(self._acquire_one(deadline))
                if lease is None:
                    return None
                leases.append(lease)
            done = True
            return leases
        finally:
            if not done:
                for node, report in leases:
                    report.released("returned: the other leases were not taken")
                    yield from delete_node_steps(node.path)

    def _acquire_one(self, deadline: Deadline) -> Steps[HeldNode | None]:
        while True:
            lock = yield from self._lock.acquire_steps(deadline.remaining())
            if lock is None:
                return None
            try:
                return (yield from self._lease_under_lock(deadline))
            except _Retry:
                continue
            finally:
                yield from delete_node_steps(lock.path)

    def _lease_under_lock(self, deadline: Deadline) -> Steps[HeldNode | None]:
        """Under the internal mutex: create our lease node and wait until at most
        ``max_leases`` lease nodes exist (a count, not an order), woken by the leases' child
        watch or a connection change; our node when held, None when the deadline passed
        first. Our node is deleted unless held; :class:`_Retry` if it vanished meanwhile."""
        try:
            node, children = yield from self._leases.create_node_steps(deadline)
        except DeadlineExpired:
            return None
        ours = _wire.node_name(node.path)
        wake = yield NewSignal()
        watched = False
        held = False

        @runs_inline
        def on_change(event: WatchedEvent) -> None:
            wake.set()

        def on_state(state: str) -> None:
            wake.set()  # a stopped client ends the wait; a new session lists again

        yield Listen(on_state)
        try:
            while True:
                yield CheckOpen()
                if children is None:
                    wake.clear()
                    children = yield from self._watch_leases(on_change, deadline.for_requests())
                    watched = True
                if ours not in children:
                    raise _Retry()
                if len(children) <= self.max_leases:
                    if (yield SessionId()) != node.session_id:
                        raise _Retry()  # decided over a listing of a session now ended
                    held = True
                    return node
                children = None
                if not watched:
                    continue  # the pipelined listing set no watch: list again with one
                if deadline.expired() or not (yield WaitSignal(wake, deadline.remaining())):
                    return None
        except DeadlineExpired:
            return None
        finally:
            yield Unlisten(on_state)
            if watched:
                yield ForgetWatch(self._leases_path, on_change, children=True)
            if not held:
                yield from delete_node_steps(node.path)

    def _watch_leases(
        self, watcher: Callable[[WatchedEvent], None], deadline: Deadline
    ) -> Steps[list[str]]:
        try:
            children: list[str] = yield from watch_sent_steps(
                ListChildren(self._leases_path, watch=watcher), deadline
            )
        except NoNodeError:
            return []  # the parent went away with our node: our session expired
        return children

    def participant_steps(self) -> Steps[list[str]]:
        """Names of the lease nodes (holders, and at most one waiter), oldest first: a read
        that rides through a reconnect, for at most the client's session timeout."""
        deadline = Deadline(_kazoo.session_timeout(self.client))
        try:
            children: list[str] = yield from read_sent_steps(
                ListChildren(self._leases_path), deadline
            )
        except NoNodeError:
            return []
        return _wire.sort_children(children, _wire.LEASE_NAME)


class InterProcessSemaphoreV2:
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
        self._steps = SemaphoreSteps(client, path, max_leases, node_data, acl, connection_policy)

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
        """What counts as a lost lease (see :mod:`pycurator._monitor`)."""
        return self._steps.policy

    def acquire(self, timeout: float | None = None) -> Lease | None:
        """One lease within ``timeout`` seconds (None: wait forever), or None on timeout."""
        leases = self.acquire_many(1, timeout)
        return leases[0] if leases is not None else None

    def acquire_many(self, qty: int, timeout: float | None = None) -> list[Lease] | None:
        """``qty`` leases, taken one by one under one deadline for the whole call.

        None on timeout; on timeout or error every lease taken so far is returned first.
        """
        leases = run(self.client, self._steps.acquire_steps(qty, timeout))
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
        return run(self.client, self._steps.participant_steps())

    def __repr__(self) -> str:
        return f"InterProcessSemaphoreV2({self.path!r}, {self.max_leases})"


class SemaphoreMutexCore(Generic[LeaseT]):
    """A semaphore mutex, whatever waits on it: the ``steps`` of its one-lease semaphore, and
    the lease of the current hold (of either front end's kind), kept under a guard: any thread
    or task may release. Each front end's semaphore mutex is a shell over one."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        node_data: bytes | None,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        self.steps = SemaphoreSteps(
            client, path, 1, node_data, acl, connection_policy, "semaphore-mutex"
        )
        self._lease: LeaseT | None = None
        self._guard = client.handler.lock_object()

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


class InterProcessSemaphoreMutex(LockContext):
    """A mutex on a one-lease :class:`InterProcessSemaphoreV2`, shared with Java Curator's
    ``InterProcessSemaphoreMutex``.

    Not re-entrant: a second ``acquire`` by the holder waits for itself (a timed one returns
    False). Any thread may release it. A hold follows its lease node (see :class:`Lease`).
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        self._core: SemaphoreMutexCore[Lease] = SemaphoreMutexCore(
            client, path, node_data, acl, connection_policy
        )
        self._notice = LossNotice(client)
        self._notice.mark(True)  # not held yet

    @property
    def lost_event(self) -> Any:
        """Set while the lock is not held by this object or its hold is not ours (lost, or
        suspended under the ``standard`` policy); clear while held."""
        return self._notice.lost_event

    @property
    def path(self) -> str:
        """The semaphore's path, as given."""
        return self._core.steps.path

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the lock; False on timeout."""
        steps = self._core.steps
        leases = run(steps.client, steps.acquire_steps(1, timeout))
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

    @property
    def lease(self) -> Lease | None:
        """The lease behind the current hold, or None."""
        return self._core.lease

    @property
    def fencing_token(self) -> int:
        """The czxid of the current hold's lease node; :class:`LockLostError` if not held."""
        return self._core.required().fencing_token

    def participant_nodes(self) -> list[str]:
        """Names of the lease nodes: the holder, and at most one waiter about to wait."""
        steps = self._core.steps
        return run(steps.client, steps.participant_steps())

    def __repr__(self) -> str:
        return f"InterProcessSemaphoreMutex({self.path!r})"
