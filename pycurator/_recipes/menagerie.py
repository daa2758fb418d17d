"""menagerie's engines and its semaphore's protocol as steps, which both front ends compose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from .._protocol import menagerie, wire
from .._protocol.checks import ConnectionPolicy, check_policy, check_timeout
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.drivers import Driver, Naming, NodeVanishedError
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
from .._protocol.waits import read_sent_steps, watch_sent_steps
from .hold import Acquired
from .lock_engine import NOT_STARTED, LockEngine
from .lock_nodes import LockNode
from .reports import Reporter

if TYPE_CHECKING:
    from kazoo.client import KazooClient

#: What menagerie writes to every node: ``ZkPrimitive.emptyNode``.
EMPTY = b""


def engine(
    transport: Transport,
    path: str,
    driver: Driver,
    naming: Naming,
    acl: Sequence[Any] | None,
) -> LockEngine:
    """The engine of one menagerie recipe on ``path``, after checking the arguments: empty
    node data, menagerie's ``naming``, persistent parents."""
    validate_path(path)
    return LockEngine(transport, path, driver, data=EMPTY, acl=acl, naming=naming)


def lock_engine(transport: Transport, path: str, acl: Sequence[Any] | None) -> LockEngine:
    """The engine of a ``ReentrantZkLock`` on ``path``."""
    return engine(transport, path, menagerie.LOCK_DRIVER, menagerie.LOCK_NAMING, acl)


def read_write_engines(
    transport: Transport, path: str, acl: Sequence[Any] | None
) -> tuple[LockEngine, LockEngine]:
    """The write side's and the read side's engines of a ``ReentrantZkReadWriteLock``."""
    return (
        engine(transport, path, menagerie.WRITE_DRIVER, menagerie.WRITE_NAMING, acl),
        engine(transport, path, menagerie.ReadSide(), menagerie.READ_NAMING, acl),
    )


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
        transport: Transport,
        path: str,
        permits: int,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        if isinstance(permits, bool) or not isinstance(permits, int):
            raise TypeError(f"permits must be an int, not {permits!r}")
        if permits < 1:
            raise ValueError(f"permits must be >= 1, not {permits}")
        self.driver = menagerie.PermitDriver(permits)
        self.engine = engine(transport, path, self.driver, menagerie.PERMIT_NAMING, acl)
        self.policy = check_policy(connection_policy)
        self.report = Reporter("semaphore", path)

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the semaphore."""
        return self.engine.client

    @property
    def transport(self) -> Transport:
        """The transport of the semaphore's client."""
        return self.engine.transport

    @property
    def path(self) -> str:
        """The base node, as given."""
        return self.engine.base_path

    @property
    def permits(self) -> int:
        """How many permits there are, as this participant counts them."""
        return self.driver.permits

    def acquire_steps(self, timeout: float | None) -> Steps[Acquired | None]:
        """One permit's node and its hold's report, or None once ``timeout`` passed; no node
        is left on timeout, error or cancellation."""
        deadline = Deadline(check_timeout(timeout))
        return (yield from self.report.wait_steps(self._acquire(deadline)))

    def _acquire(self, deadline: Deadline) -> Steps[LockNode | None]:
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

    def _wait(self, node: LockNode, listed: list[str] | None, deadline: Deadline) -> Steps[bool]:
        requests = deadline.for_requests()
        ours = wire.node_name(node.path)
        wake = yield NewSignal()
        armed: set[str] = set()

        @runs_inline
        def on_event(event: WatchedEvent) -> None:
            armed.discard(event.path)
            wake.set()

        def on_state(state: str) -> None:
            # kazoo drops every watch with the connection: none is set any more (a waiter
            # that thought them set would wait with none, for ever without a timeout)
            armed.clear()
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
                wanted = wire.full_paths(self.path, watches)
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
        deadline = Deadline(self.transport.session_timeout())
        try:
            children: list[str] = yield from read_sent_steps(ListChildren(self.path), deadline)
        except NoNodeError:
            return []
        return self.driver.sort(children)

    def available_steps(self) -> Steps[int]:
        """``permits`` less the ``permit*`` nodes there are, at least 0 (menagerie's
        ``availablePermits``): the same read as :meth:`participant_steps`."""
        nodes = yield from self.participant_steps()
        return max(0, self.permits - len(nodes))


__all__ = ["EMPTY", "PermitSteps", "engine", "lock_engine", "read_write_engines"]
