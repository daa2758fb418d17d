"""menagerie's locks and semaphore (``org.menagerie``), shared with Java menagerie on the
same base node: ``ReentrantZkLock``, ``ReentrantZkReadWriteLock`` and ``ZkSemaphore``.

Nodes are named, ordered and judged exactly as menagerie does (:mod:`pycurator._menagerie`),
so a Java peer and a Python one agree on who holds. What menagerie gets wrong is not copied:
a timed acquire keeps its deadline and leaves no node, a lost wake-up cannot happen, a waiter
of the semaphore learns of every release that can grant it, a holder hears when its node is
lost, a downgrade's read node is deleted on release, and a create whose answer was lost is
found again. The engine is pycurator's (:mod:`pycurator._engine`); the asyncio forms are in
:mod:`pycurator.aio.menagerie`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from . import _kazoo, _menagerie, _wire
from ._calls import read_sent_steps, watch_sent_steps
from ._checks import ConnectionPolicy, check_client_type, check_policy, check_timeout
from ._deadline import Deadline, DeadlineExpired
from ._drivers import Driver, Naming, NodeVanishedError
from ._engine import NOT_STARTED, HeldNode, LockEngine
from ._handlers import runs_inline
from ._hold import Held
from ._lock import ReentrantLock
from ._observe import Reporter
from ._ops import GetData, ListChildren
from ._paths import validate_path
from ._rwlock import ReadLock as _CuratorReadLock
from ._rwlock import WriteLock
from ._semaphore import Lease
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

#: What menagerie writes to every node: ``ZkPrimitive.emptyNode``.
EMPTY = b""


def engine(
    client: KazooClient, path: str, driver: Driver, naming: Naming, acl: Sequence[Any] | None
) -> LockEngine:
    """The engine of one menagerie recipe on ``path``, after checking the arguments: empty
    node data, menagerie's ``naming``, persistent parents."""
    validate_path(path)
    check_client_type(client)
    return LockEngine(client, path, driver, data=EMPTY, acl=acl, naming=naming)


def lock_engine(client: KazooClient, path: str, acl: Sequence[Any] | None) -> LockEngine:
    """The engine of a ``ReentrantZkLock`` on ``path``."""
    return engine(client, path, _menagerie.LOCK_DRIVER, _menagerie.LOCK_NAMING, acl)


def read_write_engines(
    client: KazooClient, path: str, acl: Sequence[Any] | None
) -> tuple[LockEngine, LockEngine]:
    """The write side's and the read side's engines of a ``ReentrantZkReadWriteLock``."""
    return (
        engine(client, path, _menagerie.WRITE_DRIVER, _menagerie.WRITE_NAMING, acl),
        engine(client, path, _menagerie.ReadSide(), _menagerie.READ_NAMING, acl),
    )


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
        super().__init__(lock_engine(client, path, acl), connection_policy=connection_policy)


class ReadLock(_CuratorReadLock):
    """The read side of a :class:`ReentrantZkReadWriteLock`: shared while no writer with a
    lower sequence exists; the thread holding the write lock downgrades at once."""

    _side: Callable[[str | None], Driver] = _menagerie.ReadSide


class ReentrantZkReadWriteLock:
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
        write, read = read_write_engines(client, path, acl)
        self._write = WriteLock(write, connection_policy=connection_policy)
        self._read = ReadLock(read, self._write, connection_policy=connection_policy)

    @property
    def path(self) -> str:
        """The base node, as given."""
        return self._write.path

    def read_lock(self) -> ReadLock:
        """The read side (the same object on every call)."""
        return self._read

    def write_lock(self) -> WriteLock:
        """The write side (the same object on every call)."""
        return self._write

    def __repr__(self) -> str:
        return f"ReentrantZkReadWriteLock({self.path!r})"


class PermitSteps:
    """The semaphore's protocol, as steps: the threaded :class:`ZkSemaphore` runs them
    blocking, its asyncio form awaits them. Checks the arguments; holds the permits' engine.

    A waiter lists the children, and when fewer than ``permits`` ``permit*`` nodes sort before
    its own it holds; otherwise it watches the ``permits`` nodes nearest ahead of its own
    (a grant needs one of them gone) and lists again on any of their events or a connection
    change.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        permits: int,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        if isinstance(permits, bool) or not isinstance(permits, int):
            raise TypeError(f"permits must be an int, not {permits!r}")
        if permits < 1:
            raise ValueError(f"permits must be >= 1, not {permits}")
        self.driver = _menagerie.PermitDriver(permits)
        self.engine = engine(client, path, self.driver, _menagerie.PERMIT_NAMING, acl)
        self.policy = check_policy(connection_policy)
        self.report = Reporter("semaphore", path)

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the semaphore."""
        return self.engine.client

    @property
    def path(self) -> str:
        """The base node, as given."""
        return self.engine.base_path

    @property
    def permits(self) -> int:
        """How many permits there are, as this participant counts them."""
        return self.driver.permits

    def acquire_steps(self, timeout: float | None) -> Steps[Held | None]:
        """One permit's node and its hold's report, or None once ``timeout`` passed; no node
        is left on timeout, error or cancellation."""
        deadline = Deadline(check_timeout(timeout))
        return (yield from self.report.wait_steps(self._acquire(deadline)))

    def _acquire(self, deadline: Deadline) -> Steps[HeldNode | None]:
        yield CheckOpen(NOT_STARTED)
        while True:
            try:
                node, children = yield from self.engine.create_node_steps(deadline)
            except DeadlineExpired:
                return None
            held = False
            try:
                held = yield from self._wait(node, children, deadline)
            except NodeVanishedError:
                continue  # our session ended while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    yield from self.engine.delete_steps(node.path)
            return node if held else None

    def _wait(self, node: HeldNode, listed: list[str] | None, deadline: Deadline) -> Steps[bool]:
        requests = deadline.for_requests()
        ours = _wire.node_name(node.path)
        wake = yield NewSignal()
        armed: set[str] = set()

        @runs_inline
        def on_event(event: WatchedEvent) -> None:
            armed.discard(event.path)
            wake.set()

        def on_state(state: str) -> None:
            wake.set()  # our node may be gone with the session: list again

        yield Listen(on_state)
        try:
            children = listed
            while True:
                yield CheckOpen()
                if children is None:
                    wake.clear()  # what happens from the listing on wakes the next wait
                    children = yield from self.engine.children_steps(requests)
                watches = self.driver.watches(self.driver.sort(children), ours)
                children = None
                if not watches:
                    if (yield SessionId()) != node.session_id:
                        raise NodeVanishedError(ours)  # decided over an ended session's nodes
                    return True
                if deadline.expired():
                    return False
                wanted = _wire.full_paths(self.path, watches)
                for path in sorted(armed - set(wanted)):
                    armed.discard(path)
                    yield ForgetWatch(path, on_event)
                if not (yield from self._watch(wanted, armed, on_event, requests)):
                    continue  # one is gone already: list again
                if not (yield WaitSignal(wake, deadline.remaining())):
                    return False
        finally:
            yield Unlisten(on_state)
            for path in sorted(armed):
                yield ForgetWatch(path, on_event)

    def _watch(
        self,
        paths: list[str],
        armed: set[str],
        watcher: Callable[[WatchedEvent], None],
        deadline: Deadline,
    ) -> Steps[bool]:
        """Watch each of ``paths`` not watched yet (``armed``), nearest first: True when every
        one is watched; False as soon as one is gone (then list again)."""
        for path in reversed(paths):
            if path in armed:
                continue  # its watch is still set: an event of it wakes us
            try:
                yield from watch_sent_steps(GetData(path, watch=watcher), deadline)
            except NoNodeError:
                return False
            armed.add(path)
        return True

    def participant_steps(self) -> Steps[list[str]]:
        """Names of the ``permit*`` nodes in menagerie's order, holders first: a read that
        rides through a reconnect, for at most the client's session timeout."""
        deadline = Deadline(_kazoo.session_timeout(self.client))
        try:
            children: list[str] = yield from read_sent_steps(ListChildren(self.path), deadline)
        except NoNodeError:
            return []
        return self.driver.sort(children)


class ZkSemaphore:
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
        self._steps = PermitSteps(client, path, permits, acl, connection_policy)

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
        """What counts as a lost lease (see :mod:`pycurator._monitor`)."""
        return self._steps.policy

    def acquire(self, timeout: float | None = None) -> Lease | None:
        """One permit within ``timeout`` seconds (None: wait forever; 0: one try), or None on
        timeout; no node is left behind on timeout or error."""
        held = run(self.client, self._steps.acquire_steps(timeout))
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
        return run(self.client, self._steps.participant_steps())

    def available_permits(self) -> int:
        """``permits`` less the permit nodes there are, at least 0 (menagerie's
        ``availablePermits``)."""
        return max(0, self.permits - len(self.participant_nodes()))

    def __repr__(self) -> str:
        return f"ZkSemaphore({self.path!r}, {self.permits})"


__all__ = [
    "ReadLock",
    "ReentrantZkLock",
    "ReentrantZkReadWriteLock",
    "WriteLock",
    "ZkSemaphore",
]
