"""Leader election: Curator's ``LeaderLatch``, and what it shares with ``LeaderSelector``.

A latch is a protected ephemeral-sequential node ``PATH/_c_<uuid>-latch-<seq>`` holding the
participant's id as UTF-8. The first node in queue order leads; every other participant watches
only the node right in front of it. Curator 5.8's rules apply: the first node leads only when
the client's current session made it (CURATOR-696), and after a reconnect the children are
listed again, our node replaced by a new one if it is gone (CURATOR-644/645/724).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, NoNodeError
from kazoo.protocol.states import KazooState, WatchedEvent

from . import _wire
from ._deadline import Deadline, DeadlineExpired
from ._drivers import StandardDriver
from ._engine import (
    RETRYABLE,
    HeldNode,
    LockEngine,
    check_timeout,
    delete_guaranteed,
    delete_guaranteed_later,
    forget_watch,
    retrying,
    watch,
)
from ._errors import LockLostError
from ._monitor import ConnectionPolicy, HoldMonitor, HoldState, check_policy
from ._mutex import check_client_type
from ._participants import (
    CloseMode,
    LeaderLatchListener,
    Participant,
    id_bytes,
    leader_of,
    read_participants,
)
from ._paths import validate_path
from .handlers import runs_inline

log = logging.getLogger("pycurator")

#: The longest one step of a latch's background work (create, list, watch) waits for the server
#: before it starts over; close() never waits for it.
STEP_WAIT = 10.0
#: Seconds between tries of a step that failed with an error no reconnect fixes (NoAuth...).
ERROR_RETRY_DELAY = 1.0


class _State(enum.Enum):
    LATENT = "latent"
    STARTED = "started"
    CLOSED = "closed"


class _Notifier:
    """Runs callbacks one at a time, in the order given, on one worker of the client's handler
    (spawned while there is work), so a slow listener never holds up the election."""

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._lock = client.handler.lock_object()
        self._queue: list[Callable[[], None]] = []
        self._running = False

    def post(self, call: Callable[[], None]) -> None:
        with self._lock:
            self._queue.append(call)
            if self._running:
                return
            self._running = True
        self._client.handler.spawn(self._drain)

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._running = False
                    return
                call = self._queue.pop(0)
            try:
                call()
            except Exception:
                log.exception("leader election listener failed")


class _Candidate:
    """One participant's node in an election, from its creation to its deletion: the engine
    part shared by the latch and the selector.

    A worker of the client's handler makes the node, lists the children, and either leads (our
    node is first and this session's) or watches the node right in front of ours. ``on_lead``
    hears of leadership (our node, and the monitor that follows it) and ``on_unlead`` of its
    end (with the reason); both run under the candidate's lock, so they must not block. A node
    found gone is replaced. With ``one_term``, a candidate that has led and lost leads no more:
    its owner closes it.
    """

    def __init__(
        self,
        engine: LockEngine,
        policy: ConnectionPolicy,
        on_lead: Callable[[HeldNode, HoldMonitor], None],
        on_unlead: Callable[[str], None],
        *,
        one_term: bool = False,
        on_error: Callable[[Exception | None], None] | None = None,
    ) -> None:
        self.engine = engine
        self.client = engine.client
        self._policy = policy
        self._on_lead = on_lead
        self._on_unlead = on_unlead
        self._one_term = one_term
        self._on_error = on_error
        #: The error that keeps the last step from succeeding (NoAuth, an ephemeral parent...);
        #: None once a step succeeds.
        self.error: Exception | None = None
        self._termed = False  # led once (one_term: and no more)
        handler = self.client.handler
        self.lock = handler.rlock_object()
        self.started = False
        self.closed = False
        self.node: HeldNode | None = None
        self.leading: HoldMonitor | None = None  # follows our node while we lead
        self._watched: str | None = None  # the predecessor we watch
        self._watch_spent = False  # its watch has fired (kazoo has dropped it)
        self._wake = handler.event_object()

    def start(self) -> None:
        self.started = True
        self.client.add_listener(self._on_connection)
        self.client.handler.spawn(self._run)
        self._wake.set()

    def close(self, reason: str) -> None:
        """Stop leading (``on_unlead(reason)``), stop the worker, drop the watch and delete our
        node (in the background when the connection is down)."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            node, self.node = self.node, None
            self.set_leadership(None, reason)
        self.client.remove_listener(self._on_connection)
        self._wake.set()
        self._unwatch()
        if node is not None:
            delete_guaranteed(self.client, node.path)

    def set_leadership(self, node: HeldNode | None, reason: str) -> None:
        """Lead on ``node``, or (None) stop leading for ``reason``."""
        with self.lock:
            was = self.leading
            if node is not None:
                if was is not None or self.closed or (self._one_term and self._termed):
                    return
                monitor = HoldMonitor(
                    self.client, node.path, self._policy, self._hold_changed, node.session_id
                )
                if not monitor.held:  # the connection went meanwhile: decide again later
                    monitor.close()
                    self._wake.set()
                    return
                self.leading = monitor
                self._termed = True
                self._on_lead(node, monitor)
                return
            if was is None:
                return
            self.leading = None
            was.close()
            self._on_unlead(reason)

    def _hold_changed(self, state: HoldState, reason: str) -> None:
        if self.leading is None:
            return  # heard while the monitor is being made, or after it was closed
        if state is not HoldState.HELD:
            self.set_leadership(None, reason)
        self._wake.set()  # list again: a deleted node is replaced, a reconnect re-checked

    def _on_connection(self, state: str) -> bool:
        if state == KazooState.LOST:
            self.set_leadership(None, "session expired")
        elif state == KazooState.SUSPENDED:
            if self._policy == "standard":
                self.set_leadership(None, "connection suspended")
        else:
            self._wake.set()
        return False

    @runs_inline
    def _on_watch(self, event: WatchedEvent) -> None:
        self._watch_spent = True
        self._wake.set()

    def _run(self) -> None:
        """The worker: each wake-up (start, a watch, a reconnect, a loss) makes one step; it
        ends once the candidate is closed."""
        client = self.client
        while True:
            self._wake.wait()
            self._wake.clear()
            if self.closed:
                return
            if not client.connected or (self._one_term and self._termed):
                continue  # the next CONNECTED wakes us; a spent term waits to be closed
            try:
                self._step(Deadline(STEP_WAIT))
                if self.error is not None:
                    self._report(None)
            except ConnectionClosedError:
                return  # the client was stopped: nothing more can be done
            except (*RETRYABLE, DeadlineExpired, NoNodeError):
                # NoNode: a parent container was reaped while we made our node; make it again
                self._wake.set()
                client.handler.sleep_func(0.1)
            except Exception as exc:
                log.exception("leader election on %s failed; trying again", self.engine.base_path)
                self._report(exc)
                self._wake.set()
                client.handler.sleep_func(ERROR_RETRY_DELAY)

    def _report(self, error: Exception | None) -> None:
        self.error = error
        if self._on_error is not None:
            self._on_error(error)

    def _step(self, deadline: Deadline) -> None:
        """Create our node if there is none, list the children, and lead or watch."""
        client, engine = self.client, self.engine
        children: list[str] | None = None
        node = self.node
        if node is None:
            node, children = engine.create_node(deadline)
            with self.lock:
                if self.closed:
                    delete_guaranteed_later(client, node.path)
                    return
                self.node = node
        if children is None:
            try:
                children = retrying(
                    client, lambda: client.get_children_async(engine.base_path), deadline
                )
            except NoNodeError:
                children = []  # the path is gone, our node with it (CURATOR-724)
        ordered = engine.driver.sort(children)
        ours = _wire.node_name(node.path)
        if ours not in ordered or not engine.is_current_session(node):
            self._reset(node, "election node gone")
            return
        decision = engine.driver.decide(ordered, ours)
        if decision.holds:
            self._unwatch()
            self.set_leadership(node, "")
            return
        self.set_leadership(None, "another participant leads")
        assert decision.watch is not None
        watched = _wire.join_path(engine.base_path, decision.watch)
        if watched != self._watched:
            self._unwatch()
            self._watched = watched
        self._watch_spent = False
        try:
            watch(client, watched, self._on_watch, deadline)
        except NoNodeError:
            self._wake.set()  # gone before we could watch it: list again
        if self.closed:
            self._unwatch()  # closed while the watch was being set: close() saw none

    def _reset(self, node: HeldNode, reason: str) -> None:
        """Our node is gone or not this session's: stop leading, delete it, make a new one."""
        with self.lock:
            self.set_leadership(None, reason)
            if self.node is node:
                self.node = None
        self._unwatch()
        delete_guaranteed_later(self.client, node.path)
        self._wake.set()

    def _unwatch(self) -> None:
        watched, self._watched = self._watched, None
        if watched is not None and not self._watch_spent:
            forget_watch(self.client, watched, self._on_watch)


class LeaderLatch:
    """A participant in a leader election shared with Java Curator's ``LeaderLatch`` on the
    same path: once started, it leads while its node is first in queue order, until closed.

    Leadership follows the node: it ends when the connection is suspended (``standard``
    connection policy) or lost, or when the node is deleted; then :attr:`lost_event` is set,
    ``not_leader()`` and :meth:`on_lost` callbacks run, and the latch queues again by itself.
    Background work runs on a worker of the client's handler; :meth:`close` never waits for the
    server longer than a lock release does.
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
        validate_path(path)
        check_client_type(client)
        data = id_bytes(id)
        if not isinstance(close_mode, CloseMode):
            raise TypeError(f"close_mode must be a CloseMode, not {close_mode!r}")
        engine = LockEngine(client, path, StandardDriver(_wire.LATCH_NAME), data=data, acl=acl)
        self._candidate = _Candidate(
            engine,
            check_policy(connection_policy),
            self._led,
            self._unled,
            on_error=self._failed,
        )
        self._id = id
        self._close_mode = close_mode
        handler = client.handler
        self._lock = self._candidate.lock
        self._state = _State.LATENT
        self._listeners: list[LeaderLatchListener] = []
        self._lost_callbacks: list[Callable[[LeaderLatch, str], None]] = []
        self._notifier = _Notifier(client)
        self._leader_or_closed = handler.event_object()
        self.lost_event = handler.event_object()

    # -- properties ---------------------------------------------------------------------------

    @property
    def client(self) -> KazooClient:
        return self._candidate.client

    @property
    def path(self) -> str:
        """The latch path, as given."""
        return self._candidate.engine.base_path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._id

    @property
    def our_path(self) -> str | None:
        """Our node's full path, or None while there is none."""
        node = self._candidate.node
        return node.path if node is not None else None

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        return self._state is _State.STARTED and self._candidate.leading is not None

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid while we lead: it grows with every new leader of this path.
        Raises :class:`LockLostError` when not leading."""
        node = self._candidate.node
        if node is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        return node.czxid

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Join the election: the node is made and watched in the background.

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        with self._lock:
            if self._state is not _State.LATENT:
                raise RuntimeError(f"Cannot be started more than once: {self.path}")
            self._state = _State.STARTED
        self._candidate.start()

    def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: our node is deleted (in the background once the connection is
        back, if it is down) and watches are dropped. ``close_mode`` overrides the latch's.

        Raises RuntimeError when not started or already closed.
        """
        mode = self._close_mode if close_mode is None else close_mode
        if not isinstance(mode, CloseMode):
            raise TypeError(f"close_mode must be a CloseMode, not {close_mode!r}")
        with self._lock:
            if self._state is not _State.STARTED:
                raise RuntimeError(f"Already closed or has not been started: {self.path}")
            self._state = _State.CLOSED
            if mode is CloseMode.SILENT:
                self._listeners.clear()
        self._candidate.close("latch closed")
        with self._lock:
            self._listeners.clear()
        self._leader_or_closed.set()

    def __enter__(self) -> LeaderLatch:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state is _State.STARTED:
            self.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for leadership: True once leading,
        False on timeout or when the latch is closed meanwhile.

        Raises RuntimeError when the latch has not been started or is closed, and the server's
        error (``NoAuthError``, ``NoChildrenForEphemeralsError``...) while that error keeps the
        latch from joining the election (it tries again meanwhile).
        """
        timeout = check_timeout(timeout)
        if self._state is not _State.STARTED:
            raise RuntimeError(f"the latch is not started, or closed: {self.path}")
        deadline = Deadline(timeout)
        while not self.has_leadership():
            if self._state is not _State.STARTED:
                return False
            error = self._candidate.error
            if error is not None:
                raise error
            remaining = deadline.remaining()
            if remaining == 0:
                return False
            self._leader_or_closed.wait(remaining)
        return True

    # -- listeners and notices ----------------------------------------------------------------

    def add_listener(self, listener: LeaderLatchListener) -> None:
        """Call ``listener.is_leader()`` and ``listener.not_leader()`` on each change of
        leadership, in order, on a worker thread."""
        if not callable(getattr(listener, "is_leader", None)) or not callable(
            getattr(listener, "not_leader", None)
        ):
            raise TypeError("listener must have is_leader() and not_leader() methods")
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: LeaderLatchListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def on_lost(self, callback: Callable[[LeaderLatch, str], None]) -> None:
        """Run ``callback(latch, reason)`` on a worker thread each time leadership ends (also
        on close, whatever the close mode)."""
        self._lost_callbacks.append(callback)

    def check(self) -> None:
        """Raise :class:`LockLostError` unless we lead and our node is known to be ours now
        (its deletion is checked with the server when not yet watched)."""
        leading = self._candidate.leading
        if leading is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        if not leading.confirm():
            raise LockLostError(self.path, leading.reason)

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike)."""
        return read_participants(self.client, self._candidate.engine.participant_nodes())

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(self.participants())

    def __repr__(self) -> str:
        return f"LeaderLatch({self.path!r}, id={self._id!r}, state={self._state.value})"

    # -- leadership (under the candidate's lock) ----------------------------------------------

    def _led(self, node: HeldNode, monitor: HoldMonitor) -> None:
        self.lost_event.clear()
        self._leader_or_closed.set()
        for listener in list(self._listeners):
            self._notifier.post(listener.is_leader)

    def _failed(self, error: Exception | None) -> None:
        with self._lock:
            if error is not None:
                self._leader_or_closed.set()  # waiters raise it
            elif self._state is _State.STARTED and self._candidate.leading is None:
                self._leader_or_closed.clear()

    def _unled(self, reason: str) -> None:
        if self._state is _State.STARTED:
            self._leader_or_closed.clear()
        self.lost_event.set()
        for listener in list(self._listeners):
            self._notifier.post(listener.not_leader)
        for callback in list(self._lost_callbacks):
            self._notifier.post(lambda callback=callback: callback(self, reason))  # type: ignore[misc]


__all__ = [
    "STEP_WAIT",
    "CloseMode",
    "LeaderLatch",
    "LeaderLatchListener",
    "Participant",
    "id_bytes",
    "leader_of",
    "read_participants",
]
