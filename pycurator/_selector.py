"""``LeaderSelector``: Curator's leader election that runs the user's function while leading.

On the wire a selector is an ``InterProcessMutex`` on the leader path: a protected
ephemeral-sequential ``_c_<uuid>-lock-<seq>`` node holding the id as UTF-8 (Curator's default
node data, the host address, when the id is empty), queued fairly with Java's selectors and
mutexes on that path. The node is made and followed by the election candidate the latch uses
(:mod:`pycurator._leader`), one candidate per term, so a waiting selector can be closed at any
moment without a thread blocked in an acquire.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from . import _wire
from ._drivers import StandardDriver
from ._engine import HeldNode, LockEngine
from ._errors import LockLostError
from ._leader import Participant, _Candidate, id_bytes, leader_of, read_participants
from ._monitor import ConnectionPolicy, HoldMonitor, check_policy
from ._mutex import check_client_type
from ._paths import validate_path

log = logging.getLogger("pycurator")


class Leadership:
    """One term of leadership, as ``lead`` receives it; it follows the leader's node as a lock
    hold does.

    :attr:`lost_event` is set when the term ends: leadership lost (node deleted, session
    expired, connection suspended under the ``standard`` policy), interrupted, or the selector
    closed. Python cannot interrupt a thread, so ``lead`` should watch it and return::

        def lead(leadership):
            while not leadership.lost_event.is_set():
                do_some_work()
    """

    def __init__(self, path: str, node: HeldNode, monitor: HoldMonitor, event: Any) -> None:
        self.path = path
        self.node_path = node.path
        self._node = node
        self._monitor = monitor
        self.lost_event = event
        self.reason = ""

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid: it grows with every new leader of this path."""
        return self._node.czxid

    def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now (its deletion is
        checked with the server when not yet watched)."""
        return not self.lost_event.is_set() and self._monitor.confirm()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        if not self.is_held():
            raise LockLostError(self.path, self.reason or self._monitor.reason or "lost")

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists, so a leader whose node
        has gone (with its session) cannot commit."""
        transaction = self._monitor.client.transaction()
        transaction.check(self.node_path, -1)
        return transaction

    def _end(self, reason: str) -> None:
        if not self.lost_event.is_set():
            self.reason = reason
            self.lost_event.set()

    def __repr__(self) -> str:
        return f"Leadership({self.node_path!r}, token={self.fencing_token})"


class _State(enum.Enum):
    LATENT = "latent"
    STARTED = "started"
    CLOSED = "closed"


class _Term:
    """One turn in the queue: a candidate's node, and the leadership it got, if any."""

    def __init__(self) -> None:
        self.candidate: _Candidate | None = None
        self.leadership: Leadership | None = None
        self.leading = False  # ``lead`` is running


class LeaderSelector:
    """A participant in a leader election shared with Java Curator's ``LeaderSelector`` (and
    ``InterProcessMutex``) on the same path: when it leads, ``lead(leadership)`` runs on a worker
    of the client's handler; returning from it gives leadership up. With ``auto_requeue`` the
    selector then queues again, else :meth:`requeue` does.

    ``lead`` is told of the end of its term through :class:`Leadership` (cooperatively: a thread
    cannot be interrupted); the node is deleted once ``lead`` returns, as Curator releases its
    mutex once ``takeLeadership`` returns. An exception from ``lead`` is logged and ends the
    term like a return.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        lead: Callable[[Leadership], None],
        id: str = "",  # Curator's name for it
        *,
        auto_requeue: bool = False,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        validate_path(path)
        check_client_type(client)
        if not callable(lead):
            raise TypeError(f"lead must be callable, not {type(lead).__name__}")
        data = id_bytes(id) or None  # Curator writes its default data for an empty id
        if not isinstance(auto_requeue, bool):
            raise TypeError(f"auto_requeue must be a bool, not {type(auto_requeue).__name__}")
        self._policy: ConnectionPolicy = check_policy(connection_policy)
        self._engine = LockEngine(client, path, StandardDriver(_wire.LOCK_NAME), data=data, acl=acl)
        self._lead = lead
        self._id = id
        self.auto_requeue = auto_requeue
        self._lock = client.handler.rlock_object()
        self._state = _State.LATENT
        self._term: _Term | None = None

    @property
    def client(self) -> KazooClient:
        return self._engine.client

    @property
    def path(self) -> str:
        """The leader path, as given."""
        return self._engine.base_path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._id

    @property
    def our_path(self) -> str | None:
        """Our node's full path in the current term, or None."""
        term = self._term
        node = term.candidate.node if term is not None and term.candidate is not None else None
        return node.path if node is not None else None

    def start(self) -> None:
        """Queue for leadership. Raises RuntimeError when started before."""
        with self._lock:
            if self._state is not _State.LATENT:
                raise RuntimeError(f"Cannot be started more than once: {self.path}")
            self._state = _State.STARTED
            self._queue()

    def requeue(self) -> bool:
        """Queue again: True if queued, False when already queued or leading.

        Raises RuntimeError when not started or closed."""
        with self._lock:
            if self._state is not _State.STARTED:
                raise RuntimeError(f"close() has already been called, or not started: {self.path}")
            return self._queue()

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        term = self._term
        leadership = term.leadership if term is not None else None
        return leadership is not None and not leadership.lost_event.is_set()

    def interrupt_leadership(self) -> None:
        """End the current term (its :attr:`Leadership.lost_event` is set); ``lead`` should
        return, and the node goes once it does."""
        term = self._term
        if term is not None and term.leadership is not None:
            term.leadership._end("leadership interrupted")

    def close(self) -> None:
        """Leave the election: a waiting node is deleted now, a leader's once ``lead`` returns
        (its term ends at once). Never waits for ``lead``.

        Raises RuntimeError when not started or already closed."""
        with self._lock:
            if self._state is not _State.STARTED:
                raise RuntimeError(f"Already closed or has not been started: {self.path}")
            self._state = _State.CLOSED
            term = self._term
            if term is None:
                return
            if term.leadership is not None:
                term.leadership._end("selector closed")
            if term.leading:
                return  # the node goes when lead returns
            self._term = None
        if term.candidate is not None:
            term.candidate.close("selector closed")

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike)."""
        return read_participants(self.client, self._engine.participant_nodes())

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(self.participants())

    def __repr__(self) -> str:
        return f"LeaderSelector({self.path!r}, id={self._id!r}, state={self._state.value})"

    # -- terms --------------------------------------------------------------------------------

    def _queue(self) -> bool:
        """Start a term unless one is under way (under the lock)."""
        if self._term is not None or self._state is not _State.STARTED:
            return False
        term = self._term = _Term()
        term.candidate = _Candidate(
            self._engine,
            self._policy,
            lambda node, monitor: self._led(term, node, monitor),
            lambda reason: term.leadership._end(reason) if term.leadership else None,
            one_term=True,
        )
        term.candidate.start()
        return True

    def _led(self, term: _Term, node: HeldNode, monitor: HoldMonitor) -> None:
        """Our node leads (under the candidate's lock: must not block): run ``lead``."""
        with self._lock:
            if self._term is not term or self._state is not _State.STARTED:
                return
            term.leadership = Leadership(
                self.path, node, monitor, self.client.handler.event_object()
            )
            term.leading = True
        self.client.handler.spawn(self._run_lead, term, term.leadership)

    def _run_lead(self, term: _Term, leadership: Leadership) -> None:
        try:
            self._lead(leadership)
        except Exception:
            log.exception("lead() of the leader selector on %s failed", self.path)
        finally:
            leadership._end("leadership given up")
            with self._lock:
                term.leading = False
                if self._term is term:
                    self._term = None
            if term.candidate is not None:
                term.candidate.close("leadership given up")
            with self._lock:
                if self.auto_requeue:
                    self._queue()


__all__ = ["LeaderSelector", "Leadership"]
