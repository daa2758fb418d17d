"""``LeaderLatch``: Curator's leader latch, and what its asyncio form shares with it.

A latch is a protected ephemeral-sequential node ``PATH/_c_<uuid>-latch-<seq>`` holding the
participant's id as UTF-8. The first node in queue order leads; every other participant watches
only the node right in front of it. Curator 5.8's rules apply (see :mod:`pycurator._election`,
which both latches run: the threaded one on kazoo's callbacks, with no thread of its own).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from ._calls import DELETE_WAIT
from ._checks import ConnectionPolicy, check_client_type, check_policy, check_timeout
from ._deadline import Deadline
from ._drivers import LATCH_DRIVER
from ._election import Election, Lifecycle
from ._engine import HeldNode, LockEngine
from ._errors import LockLostError
from ._monitor import HoldMonitor
from ._observe import Reporter
from ._participants import (
    CloseMode,
    LeaderLatchListener,
    Participant,
    id_bytes,
    leader_of,
    participants_steps,
)
from ._paths import validate_path
from ._runtime import closed_error, runtime_of, services_of
from ._steps import Task, run, start

#: The longest :meth:`LeaderLatch.close` waits for the election to end (its node's delete
#: waits at most :data:`~pycurator._calls.DELETE_WAIT`, then goes on in the background).
CLOSE_WAIT = DELETE_WAIT + 1.0


def check_close_mode(mode: object) -> CloseMode:
    if not isinstance(mode, CloseMode):
        raise TypeError(f"close_mode must be a CloseMode, not {mode!r}")
    return mode


def check_listener(listener: object) -> None:
    if not callable(getattr(listener, "is_leader", None)) or not callable(
        getattr(listener, "not_leader", None)
    ):
        raise TypeError("listener must have is_leader() and not_leader() methods")


class LatchBase:
    """What the threaded and the asyncio latch share: the checked arguments, the life cycle,
    the election (:attr:`_election` once started) and the listeners' registry."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        id: str,
        close_mode: CloseMode,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        validate_path(path)
        check_client_type(client)
        data = id_bytes(id)
        self._close_mode = check_close_mode(close_mode)
        self._policy = check_policy(connection_policy)
        self._engine = LockEngine(client, path, LATCH_DRIVER, data=data, acl=acl)
        self._report = Reporter("latch", path)
        self._id = id
        self._state = Lifecycle.LATENT
        self._election: Election | None = None
        self._listeners: list[Any] = []
        self._lost_callbacks: list[Callable[[Any, str], Any]] = []

    @property
    def client(self) -> KazooClient:
        """The kazoo client this latch uses."""
        return self._engine.client

    @property
    def path(self) -> str:
        """The latch path, as given."""
        return self._engine.base_path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._id

    @property
    def our_path(self) -> str | None:
        """Our node's full path, or None while there is none."""
        node = self._election.node if self._election is not None else None
        return node.path if node is not None else None

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        election = self._election
        return self._state is Lifecycle.STARTED and election is not None and election.is_leading

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid while we lead: it grows with every new leader of this path.
        Raises :class:`LockLostError` when not leading."""
        election = self._election
        node = election.node if election is not None else None
        if node is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        return node.czxid

    def remove_listener(self, listener: Any) -> None:
        """Stop telling ``listener`` of changes."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _add_listener(self, listener: Any) -> None:
        check_listener(listener)
        self._listeners.append(listener)

    def _begin(self, on_news: Callable[[], None]) -> Election:
        """Move to STARTED (RuntimeError if started before, as Curator); the election."""
        if self._state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self._state = Lifecycle.STARTED
        self._election = Election(
            self._engine,
            self._policy,
            self._elected,
            self._deposed,
            self._troubled,
            on_news,
            reporter=self._report,
        )
        return self._election

    def _finish(self, close_mode: CloseMode | None) -> Election:
        """Move to CLOSED (RuntimeError unless started); SILENT drops the listeners first."""
        mode = check_close_mode(self._close_mode if close_mode is None else close_mode)
        if self._state is not Lifecycle.STARTED or self._election is None:
            raise RuntimeError(f"Already closed or has not been started: {self.path}")
        self._state = Lifecycle.CLOSED
        if mode is CloseMode.SILENT:
            self._listeners.clear()
        self._election.stop("latch closed")
        return self._election

    def _raise_if_stuck(self, ended: bool) -> None:
        """For a waiter: raise the error no retry fixes that ended the election, else raise
        when the client is stopped (or the election ``ended`` with it), else the error that
        keeps the election from succeeding meanwhile."""
        election = self._election
        if election is not None and election.failed is not None:
            raise election.failed
        runtime_of(self.client).check_open()
        if ended:  # the election ends by itself only with its client
            raise closed_error()
        if election is not None and election.error is not None:
            raise election.error

    def _leader_monitor(self) -> HoldMonitor:
        """The monitor of our node while we lead; :class:`LockLostError` otherwise."""
        election = self._election
        monitor = election.leading if election is not None else None
        if monitor is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        return monitor

    def _elected(self, node: HeldNode, monitor: HoldMonitor) -> None:
        raise NotImplementedError

    def _deposed(self, reason: str) -> None:
        raise NotImplementedError

    def _troubled(self, error: Exception | None) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        module = "aio." if type(self).__module__.startswith("pycurator.aio") else ""
        return f"{module}LeaderLatch({self.path!r}, id={self._id!r}, state={self._state.value})"


class _Changes:
    """Wakes threads waiting for a latch to change: each change sets the event waiters hold
    and puts a new one in its place, so a waiter wakes once per change and never spins."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self._swap = threading.Lock()  # held for the swap only, never across a switch
        self.event = handler.event_object()

    def changed(self) -> None:
        fresh = self._handler.event_object()
        with self._swap:
            event, self.event = self.event, fresh
        event.set()


class LeaderLatch(LatchBase):
    """A participant in a leader election shared with Java Curator's ``LeaderLatch`` on the
    same path: once started, it leads while its node is first in queue order, until closed.

    Leadership follows the node: it ends when the connection is suspended (``standard``
    connection policy) or lost, or when the node is deleted; then :attr:`lost_event` is set,
    ``not_leader()`` and :meth:`on_lost` callbacks run, and the latch queues again by itself.
    An error no retry fixes (``NoAuthError``, ``InvalidACLError``...) ends the latch's part
    instead: it is logged once, the node is deleted, and :meth:`wait` raises it until the
    latch is closed.
    A latch costs no thread: its election runs on kazoo's callbacks, and its listeners run in
    order on a small pool of workers shared by every recipe of the client's handler.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        id: str = "",  # Curator's name for it
        *,
        close_mode: CloseMode = CloseMode.SILENT,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(client, path, id, close_mode, acl, connection_policy)
        self._notices = services_of(client.handler).serial_queue()
        self._changes = _Changes(client.handler)
        self._task: Task | None = None
        #: Set when leadership ends, cleared when it begins (a handler event).
        self.lost_event = client.handler.event_object()

    def start(self) -> None:
        """Join the election: the node is made and watched in the background.

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        election = self._begin(self._changes.changed)
        self._task = start(self.client, election.steps(), lambda _: self._changes.changed())

    def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: leadership ends, watches are dropped and our node is deleted
        (waiting at most :data:`~pycurator._calls.DELETE_WAIT` seconds for the server, then in
        the background). ``close_mode`` overrides the latch's: ``SILENT`` tells no listener,
        ``NOTIFY_LEADER`` calls ``not_leader()`` when we led.

        Raises RuntimeError when not started or already closed.
        """
        self._finish(close_mode)
        task = self._task
        if task is not None:
            task.cancel()
            task.done.wait(CLOSE_WAIT)
        self._listeners.clear()
        self._changes.changed()

    def __enter__(self) -> LeaderLatch:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state is Lifecycle.STARTED:
            self.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None, or a huge one: forever) for leadership: True
        once leading, False on timeout or when the latch is closed meanwhile.

        Raises RuntimeError when the latch has not been started or is closed; the server's
        error no retry fixes (``NoAuthError``, ``NoChildrenForEphemeralsError``...) once it has
        ended the latch's part in the election (its node deleted: close the latch);
        ``ConnectionClosedError`` once the client is stopped (as a lock's ``acquire`` does);
        and any other error of the server while it keeps the latch from joining the election
        (the latch tries again meanwhile).
        """
        timeout = check_timeout(timeout)
        if self._state is not Lifecycle.STARTED:
            raise RuntimeError(f"the latch is not started, or closed: {self.path}")
        deadline = Deadline(timeout)
        while True:
            change = self._changes.event
            if self.has_leadership():
                return True
            if self._state is not Lifecycle.STARTED:
                return False
            self._raise_if_stuck(self._task is not None and self._task.done.is_set())
            remaining = deadline.remaining()
            if remaining == 0:
                return False
            change.wait(remaining)

    def add_listener(self, listener: LeaderLatchListener) -> None:
        """Call ``listener.is_leader()`` and ``listener.not_leader()`` on each change of
        leadership, in order, on a worker of the client's handler."""
        self._add_listener(listener)

    def on_lost(self, callback: Callable[[LeaderLatch, str], Any]) -> None:
        """Run ``callback(latch, reason)`` on a worker of the client's handler each time
        leadership ends (also on close, whatever the close mode), after the listeners."""
        self._lost_callbacks.append(callback)

    def check(self) -> None:
        """Raise :class:`LockLostError` unless we lead and our node is known to be ours now
        (its deletion is checked with the server when not yet watched)."""
        monitor = self._leader_monitor()
        if not monitor.confirm():
            raise LockLostError(self.path, monitor.reason)

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike).

        Rides through a reconnect: waits for the connection up to the client's session
        timeout, then raises ``ConnectionLoss``.
        """
        return run(self.client, participants_steps(self._engine))

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none (read as
        :meth:`participants` reads)."""
        return leader_of(self.participants())

    # -- news from the election (called by its steps: never block) ----------------------------

    def _elected(self, node: HeldNode, monitor: HoldMonitor) -> None:
        self.lost_event.clear()
        for listener in list(self._listeners):
            self._notices.post(listener.is_leader)
        self._changes.changed()

    def _deposed(self, reason: str) -> None:
        self.lost_event.set()
        for listener in list(self._listeners):
            self._notices.post(listener.not_leader)
        for callback in list(self._lost_callbacks):
            self._notices.post(callback, self, reason)
        self._changes.changed()

    def _troubled(self, error: Exception | None) -> None:
        self._changes.changed()


__all__ = [
    "CLOSE_WAIT",
    "CloseMode",
    "LatchBase",
    "LeaderLatch",
    "LeaderLatchListener",
    "Participant",
]
