"""``LeaderSelector``: Curator's leader election that runs the user's function while leading.

On the wire a selector is an ``InterProcessMutex`` on the leader path: a protected
ephemeral-sequential ``_c_<uuid>-lock-<seq>`` node holding the id as UTF-8 (Curator's default
node data, the host address, when the id is empty), queued fairly with Java's selectors and
mutexes on that path. Each turn in the queue (a term) is one run of the election's steps
(:mod:`pycurator._election`), which keep the node until ``lead`` has returned.

Curator's rules for a term, which both the threaded and the asyncio selector follow:

- leadership ends when the node is deleted, the session ends, or (``standard`` connection
  policy) the connection is suspended; ``lead`` is told (its :class:`Leadership` ends) and the
  node is deleted once it returns;
- a selector still queued leaves the queue when the connection enters an error state of its
  policy (``standard``: suspended or lost; ``session``: lost), as Curator's selector interrupts
  a queued attempt; it queues again by itself only with ``auto_requeue``, else
  :meth:`LeaderSelector.requeue` does;
- an error no retry fixes (``NoAuthError``, ``InvalidACLError``...) ends the term: it is logged
  once at ERROR, the node is deleted, and the selector does not queue again by itself, not even
  with ``auto_requeue`` (Curator's selector loses the error and, with ``autoRequeue()``, tries
  again at once, forever); :meth:`LeaderSelector.requeue` tries again.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from ._checks import ConnectionPolicy, check_client_type, check_policy, check_timeout
from ._drivers import MUTEX_DRIVER
from ._election import Election, Lifecycle
from ._engine import HeldNode, LockEngine
from ._errors import LockLostError
from ._handlers import unit_getter
from ._monitor import HoldMonitor
from ._observe import Reporter
from ._participants import Participant, id_bytes, leader_of, participants_steps
from ._paths import validate_path
from ._runtime import CLIENT_STOPPED, services_of
from ._steps import Task, run, start

log = logging.getLogger("pycurator")


class LeadershipBase:
    """What a term of leadership is, threaded or asyncio: our node, the monitor that follows
    it, and why the term ended (:attr:`reason`, empty while it lasts)."""

    def __init__(self, path: str, node: HeldNode, monitor: HoldMonitor) -> None:
        self.path = path
        self.node_path = node.path
        self._node = node
        self._monitor = monitor
        self.reason = ""

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid: it grows with every new leader of this path."""
        return self._node.czxid

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists, so a leader whose node
        has gone (with its session) cannot commit."""
        transaction = self._monitor.client.transaction()
        transaction.check(self.node_path, -1)
        return transaction

    def _lost(self) -> LockLostError:
        return LockLostError(self.path, self.reason or self._monitor.reason or "lost")

    def __repr__(self) -> str:
        module = "aio." if type(self).__module__.startswith("pycurator.aio") else ""
        return f"{module}Leadership({self.node_path!r}, token={self.fencing_token})"


class Leadership(LeadershipBase):
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
        super().__init__(path, node, monitor)
        self.lost_event = event

    def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now (its deletion is
        checked with the server when not yet watched)."""
        return not self.lost_event.is_set() and self._monitor.confirm()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        if not self.is_held():
            raise self._lost()

    def _end(self, reason: str) -> None:
        if not self.lost_event.is_set():
            self.reason = reason
            self.lost_event.set()


class SelectorBase:
    """What the threaded and the asyncio selector share: the checked arguments, the life
    cycle, and how a term's election is made."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        lead: Callable[..., Any],
        id: str,
        auto_requeue: bool,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        validate_path(path)
        check_client_type(client)
        if not callable(lead):
            raise TypeError(f"lead must be callable, not {type(lead).__name__}")
        data = id_bytes(id) or None  # Curator writes its default data for an empty id
        if not isinstance(auto_requeue, bool):
            raise TypeError(f"auto_requeue must be a bool, not {type(auto_requeue).__name__}")
        self._policy: ConnectionPolicy = check_policy(connection_policy)
        self._engine = LockEngine(client, path, MUTEX_DRIVER, data=data, acl=acl)
        self._report = Reporter("selector", path)
        self._lead = lead
        self._id = id
        #: Whether the selector queues again by itself once a term ends.
        self.auto_requeue = auto_requeue
        self._state = Lifecycle.LATENT

    @property
    def client(self) -> KazooClient:
        """The kazoo client this selector uses."""
        return self._engine.client

    @property
    def path(self) -> str:
        """The leader path, as given."""
        return self._engine.base_path

    @property
    def id(self) -> str:
        """This participant's id, written to its node."""
        return self._id

    def _check_started(self, doing: str) -> None:
        if self._state is not Lifecycle.STARTED:
            raise RuntimeError(f"{doing}: {self.path}")

    def _start(self) -> None:
        if self._state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self._state = Lifecycle.STARTED

    def _close(self) -> None:
        self._check_started("Already closed or has not been started")
        self._state = Lifecycle.CLOSED

    def _election(
        self,
        on_elected: Callable[[HeldNode, HoldMonitor], None],
        on_deposed: Callable[[str], None],
    ) -> Election:
        """A term's election: one term, leaving the queue on a connection error."""
        return Election(
            self._engine,
            self._policy,
            on_elected,
            on_deposed,
            reporter=self._report,
            one_term=True,
            queue_ends_on_error=True,
        )

    def __repr__(self) -> str:
        module = "aio." if type(self).__module__.startswith("pycurator.aio") else ""
        return f"{module}LeaderSelector({self.path!r}, id={self._id!r}, state={self._state.value})"


class TermBase:
    """What both selectors' terms share: the term's election, whether the term is ending, and
    whether :meth:`LeaderSelector.requeue` asked for the next one meanwhile."""

    def __init__(self) -> None:
        self.election: Election | None = None
        self.ending = False  # it will not lead (again): its steps are ending
        self.requeue = False  # queue again once its steps have ended

    def queues_again(self, auto_requeue: bool) -> bool:
        """Once the term's steps have ended: whether the next term is owed (``auto_requeue``,
        or asked for meanwhile), which an error no retry fixes rules out."""
        failed = self.election is not None and self.election.failed is not None
        return (auto_requeue or self.requeue) and not failed

    def requeue_when_over(self, auto_requeue: bool) -> bool:
        """For ``requeue()`` during this term: True when the next term is now owed (it is
        ending, the selector does not requeue by itself, and nobody asked before)."""
        if not self.ending or auto_requeue or self.requeue:
            return False
        self.requeue = True
        return True


class _Term(TermBase):
    """One turn in the queue: its election's steps (on kazoo's callbacks), and the leadership
    it got, while ``lead`` runs on a worker of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.task: Task | None = None
        self.leadership: Leadership | None = None
        self.leading = False  # ``lead`` runs
        self.lead_unit: object = None  # the thread (or greenlet) running ``lead``

    def deposed(self, reason: str) -> None:
        self.ending = True
        if self.leadership is not None:
            self.leadership._end(reason)

    def end(self, reason: str) -> None:
        """End the term: a leader's ``lead`` is told (the node goes once it returns), a queued
        term leaves the queue now."""
        self.ending = True
        if self.leading and self.leadership is not None:
            self.leadership._end(reason)
            return
        if self.election is not None:
            self.election.stop(reason)
        if self.task is not None:
            self.task.cancel()


class LeaderSelector(SelectorBase):
    """A participant in a leader election shared with Java Curator's ``LeaderSelector`` (and
    ``InterProcessMutex``) on the same path: when it leads, ``lead(leadership)`` runs on a worker
    of the client's handler (one for the term: that is the contract); returning from it gives
    leadership up. With ``auto_requeue`` the selector then queues again, else :meth:`requeue`
    does. A selector that waits in the queue costs no thread.

    ``lead`` is told of the end of its term through :class:`Leadership` (cooperatively: a thread
    cannot be interrupted); the node is deleted once ``lead`` returns, as Curator releases its
    mutex once ``takeLeadership`` returns. An exception from ``lead`` is logged and ends the
    term like a return. ``lead`` must be a plain function: a coroutine function is refused
    (use :class:`pycurator.aio.LeaderSelector`). An error no retry fixes (``NoAuthError``...)
    ends the term, logged once; the selector then queues again only when :meth:`requeue` is
    called, whatever ``auto_requeue`` says.
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
        if inspect.iscoroutinefunction(lead) or inspect.iscoroutinefunction(
            getattr(lead, "__call__", None)  # noqa: B004 (an object whose __call__ is async)
        ):
            raise TypeError(
                "lead is a coroutine function, which a thread cannot run: use"
                " pycurator.aio.LeaderSelector"
            )
        super().__init__(client, path, lead, id, auto_requeue, acl, connection_policy)
        self._lock = client.handler.rlock_object()
        self._unit = unit_getter(client.handler)
        self._term: _Term | None = None
        self._requeues = services_of(client.handler).serial_queue()

    @property
    def our_path(self) -> str | None:
        """Our node's full path in the current term, or None."""
        term = self._term
        node = term.election.node if term is not None and term.election is not None else None
        return node.path if node is not None else None

    def start(self) -> None:
        """Queue for leadership. Raises RuntimeError when started before."""
        with self._lock:
            self._start()
            self._queue()

    def requeue(self) -> bool:
        """Queue again: True if queued (or, while the last term's node is being deleted, to be
        queued once it is), False when already queued or leading.

        Raises RuntimeError when not started or closed."""
        with self._lock:
            self._check_started("close() has already been called, or not started")
            return self._queue(asked=True)

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        term = self._term
        leadership = term.leadership if term is not None else None
        return (
            leadership is not None
            and term is not None
            and term.leading
            and (not leadership.lost_event.is_set())
        )

    def interrupt_leadership(self) -> None:
        """End the current term (its :attr:`Leadership.lost_event` is set); ``lead`` should
        return, and the node goes once it does."""
        term = self._term
        if term is not None and term.leadership is not None:
            term.deposed("leadership interrupted")

    def close(self, timeout: float | None = None) -> bool:
        """Leave the election, and wait until the node is gone: a queued node is deleted now;
        a leader's term ends (its :attr:`Leadership.lost_event` is set) and its node is deleted
        once ``lead`` has returned. So ``close()`` then ``client.stop()`` never lets the next
        leader start while ``lead`` still runs.

        Waits up to ``timeout`` seconds (None: as long as ``lead`` takes) and returns True once
        ``lead`` has returned and the node is deleted (or, when the server cannot be reached,
        its delete handed to the background: the node then goes with the session at the
        latest). False when the timeout passed first: ``lead`` still runs, and the node goes
        once it returns. Called from inside ``lead``, it ends the term and returns False at
        once (the node goes once ``lead`` returns).

        Raises RuntimeError when not started or already closed, and TypeError or ValueError
        for a timeout that is not a number >= 0 (a huge or infinite one means no limit).
        """
        timeout = check_timeout(timeout)
        with self._lock:
            self._close()
            term = self._term
            if term is not None:
                term.end("selector closed")
        if term is None or term.task is None:
            return True
        if term.leading and term.lead_unit is self._unit():
            return False
        return bool(term.task.done.wait(timeout))

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike).

        Rides through a reconnect: waits for the connection up to the client's session
        timeout, then raises ``ConnectionLoss``.
        """
        return run(self.client, participants_steps(self._engine))

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(self.participants())

    # -- terms --------------------------------------------------------------------------------

    def _queue(self, asked: bool = False) -> bool:
        """Start a term unless one is under way (under the lock); ``asked`` by
        :meth:`requeue`, one that is ending queues again once it has ended."""
        if self._term is not None:
            return asked and self._term.requeue_when_over(self.auto_requeue)
        if self._state is not Lifecycle.STARTED:
            return False
        term = self._term = _Term()
        term.election = self._election(
            lambda node, monitor: self._elected(term, node, monitor), term.deposed
        )
        term.task = start(self.client, term.election.steps(), lambda task: self._over(term, task))
        return True

    def _elected(self, term: _Term, node: HeldNode, monitor: HoldMonitor) -> None:
        """Our node leads (called by the term's steps: must not block): run ``lead``."""
        with self._lock:
            if self._term is not term or self._state is not Lifecycle.STARTED:
                return  # closed meanwhile: the steps end and delete the node
            term.leadership = Leadership(
                self.path, node, monitor, self.client.handler.event_object()
            )
            term.leading = True
        self.client.handler.spawn(self._run_lead, term, term.leadership)

    def _run_lead(self, term: _Term, leadership: Leadership) -> None:
        term.lead_unit = self._unit()
        try:
            self._lead(leadership)
        except Exception:
            log.exception("lead() of the leader selector on %s failed", self.path)
        finally:
            leadership._end("leadership given up")
            with self._lock:
                term.leading = False
                term.ending = True
                term.end("leadership given up")  # the node goes now

    def _over(self, term: _Term, task: Task) -> None:
        """A term's steps have ended (its node deleted): queue again if asked to."""
        with self._lock:
            if self._term is term:
                self._term = None
        if term.queues_again(self.auto_requeue) and task.value != CLIENT_STOPPED:
            # not on the thread that ended the term, which may be the caller of close()
            self._requeues.post(self._requeue_after)

    def _requeue_after(self) -> None:
        with self._lock:
            self._queue()


__all__ = ["LeaderSelector", "Leadership", "LeadershipBase", "SelectorBase", "TermBase"]
