"""The semaphore's protocol, Curator's ``InterProcessSemaphoreV2``, as steps: take the internal
mutex, make a lease node, count the leases, wait for one to go; and a lease node's data.
The cores of a lease and of the semaphore mutex (:mod:`pycurator._cores.semaphore`) compose it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from .._protocol import wire
from .._protocol.checks import ConnectionPolicy, check_data, check_policy, check_timeout
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.drivers import MUTEX_DRIVER, StandardDriver
from .._protocol.paths import validate_path
from .._protocol.requests import GetData, ListChildren
from .._protocol.steps import (
    CheckOpen,
    ForgetWatch,
    Listen,
    NewSignal,
    SessionId,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.transport import Transport, runs_inline
from .._protocol.waits import delete_node_steps, read_sent_steps, watch_sent_steps
from .hold import Acquired
from .lock_engine import LockEngine
from .lock_nodes import LockNode
from .reports import Reporter

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def lease_data_steps(path: str, deadline: Deadline) -> Steps[bytes]:
    """A lease node's data: a read that rides through a reconnect, ConnectionLoss once
    ``deadline`` passes without an answer."""
    data, _ = yield from read_sent_steps(GetData(path), deadline)
    return bytes(data)


class _Retry(Exception):
    """Our lease node vanished while we waited (the session expired): start again."""


class SemaphoreSteps:
    """The semaphore's protocol, as steps (:mod:`pycurator._protocol.steps`): the threaded
    :class:`InterProcessSemaphoreV2` runs them blocking, its asyncio form awaits them. It
    checks the arguments, and holds the internal mutex's engine and the leases' engine; its
    waits and leases are reported as ``recipe`` (a semaphore's, or a semaphore mutex's)."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        max_leases: int,
        node_data: bytes | None,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
        recipe: str = "semaphore",
    ) -> None:
        validate_path(path)
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise TypeError(f"max_leases must be an int, not {max_leases!r}")
        if max_leases < 1:
            raise ValueError(f"max_leases must be >= 1, not {max_leases}")
        check_data(node_data)
        self.transport = transport
        self.path = path
        self.max_leases = max_leases
        self.policy = check_policy(connection_policy)
        self.report = Reporter(recipe, path)
        # Curator's internal InterProcessMutex; held only while one lease is being taken
        self._lock = LockEngine(
            transport,
            wire.join_path(path, wire.SEMAPHORE_LOCK_PARENT),
            MUTEX_DRIVER,
            acl=acl,
        )
        self._leases_path = wire.join_path(path, wire.SEMAPHORE_LEASE_PARENT)
        self._leases = LockEngine(
            transport,
            self._leases_path,
            StandardDriver(wire.LEASE_NAME, max_leases),
            data=node_data,
            acl=acl,
        )

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the semaphore (for its recipes' ``client`` property)."""
        return self._lock.client

    def acquire_steps(self, qty: int, timeout: float | None) -> Steps[list[Acquired] | None]:
        """``qty`` lease nodes (each with its hold's report) under one deadline, or None on
        timeout; on timeout, error or cancellation every lease taken so far is returned first.
        Each lease is one wait and one hold (see :mod:`pycurator._recipes.reports`)."""
        if isinstance(qty, bool) or not isinstance(qty, int):
            raise TypeError(f"qty must be an int, not {qty!r}")
        if qty < 1:
            raise ValueError(f"qty must be >= 1, not {qty}")
        deadline = Deadline(check_timeout(timeout))
        leases: list[Acquired] = []
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

    def _acquire_one(self, deadline: Deadline) -> Steps[LockNode | None]:
        while True:
            lock = yield from self._lock.acquire_steps(deadline.remaining())
            if lock is None:
                return None
            lease: LockNode | None = None
            try:
                lease = yield from self._lease_under_lock(deadline, lock)
            except _Retry:
                continue
            finally:
                try:
                    yield from delete_node_steps(lock.path)
                except BaseException:
                    # interrupted as the mutex is released: the lease taken is nobody's
                    if lease is not None:
                        yield from delete_node_steps(lease.path)
                    raise
            if lease is not None and (yield SessionId()) != lease.session_id:
                # the session ended while the mutex was released: the lease went with it
                yield from delete_node_steps(lease.path)
                continue
            return lease

    def _lease_under_lock(self, deadline: Deadline, lock: LockNode) -> Steps[LockNode | None]:
        """Under the internal mutex (``lock``, our node of it): create our lease node and wait
        until at most ``max_leases`` lease nodes exist (a count, not an order), woken by the
        leases' child watch or a connection change; our node when held, None when the deadline
        passed first. Our node is deleted unless held; :class:`_Retry` if it vanished meanwhile,
        or was made in a session that no longer holds the mutex."""
        try:
            node, children = yield from self._leases.create_node_steps(deadline)
        except DeadlineExpired:
            return None
        ours = wire.node_name(node.path)
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
            if node.session_id != lock.session_id:
                # the session that held the mutex ended as the lease was made: another acquire
                # of ours may hold the mutex now, and two leases made under it wait for each other
                raise _Retry()
            while True:
                yield CheckOpen()
                if children is None:
                    wake.clear()
                    children = yield from self._watch_leases(on_change, deadline.for_requests())
                    watched = True
                if ours not in children:
                    raise _Retry()
                if _made_after(children, ours):
                    # no lease is made after ours while we hold the mutex: ours is gone (its node
                    # deleted), and two leases made under it would wait for each other
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
        deadline = Deadline(self.transport.session_timeout())
        try:
            children: list[str] = yield from read_sent_steps(
                ListChildren(self._leases_path), deadline
            )
        except NoNodeError:
            return []
        return wire.sort_children(children, wire.LEASE_NAME)


def _made_after(children: list[str], ours: str) -> bool:
    """Whether a lease node among ``children`` was made after ours (sorts after it)."""
    key = wire.sort_key(ours, wire.LEASE_NAME)
    return any(
        wire.LEASE_NAME in child and wire.sort_key(child, wire.LEASE_NAME) > key
        for child in children
    )


__all__ = ["SemaphoreSteps", "lease_data_steps"]
