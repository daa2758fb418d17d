"""What a leader selector is whichever front end runs it: its checked arguments, its life cycle,
its engine, its terms and the one rule on whether a term queues again.

:class:`SelectorCore` is held by :class:`pycurator.LeaderSelector` and by
:class:`pycurator.aio.LeaderSelector`, and :class:`LeadershipCore` by either ``Leadership``.
A front end keeps only how it waits: how a term's steps run (kazoo's callbacks, or a task on
the loop), how ``lead`` runs (a worker of the handler, or a task), and its locking. It hands
the core a :class:`TermHandle`, its handle on one term, when the term's steps start.

Whether a term queues again once its steps have ended is decided here, once
(:func:`queues_again`), as Curator's selector decides it: with ``auto_requeue``, or when
``requeue()`` asked during the term's end, after any ending, an error included, except the
selector's close, the client's stop, a cancellation by the runner (an event loop shutting down),
and an error no retry fixes (which Curator's selector retries forever).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from .._protocol.checks import ConnectionPolicy, check_policy
from .._protocol.drivers import MUTEX_DRIVER
from .._protocol.errors import LockLostError
from .._protocol.paths import validate_path
from .._protocol.steps import Steps
from .._protocol.transport import CLIENT_STOPPED, Transport, is_stopped
from .._recipes.election import Election
from .._recipes.hold_monitor import HoldMonitor
from .._recipes.lock_engine import LockEngine
from .._recipes.lock_nodes import LockNode
from .._recipes.participants import Participant, id_bytes, participants_steps
from .._recipes.reports import Reporter
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient, TransactionRequest


class Ending(enum.Enum):
    """How a term's election steps ended, as their runner tells it (:func:`ending_of`)."""

    RETURNED = "returned"  # stopped by the selector, left the queue, or an error no retry fixes
    ERROR = "error"  # an error raised out of them (a failed delete of the term's node, say)
    CANCELLED = "cancelled"  # their runner cancelled them (the selector's close, a loop's end)
    CLIENT_STOPPED = "client stopped"  # the client was stopped


def ending_of(value: object, error: BaseException | None) -> Ending:
    """How steps that returned ``value`` or raised ``error`` ended: an ``Exception`` is an
    error; any other (a runner's cancellation) cancelled them."""
    if error is None:
        return Ending.CLIENT_STOPPED if value == CLIENT_STOPPED else Ending.RETURNED
    return Ending.ERROR if isinstance(error, Exception) else Ending.CANCELLED


def queues_again(
    ending: Ending,
    *,
    started: bool,
    auto_requeue: bool,
    asked: bool,
    failed: bool,
    client_stopped: bool,
) -> bool:
    """Whether a term whose steps ended as ``ending`` is followed by the next one now: with
    ``auto_requeue`` or when ``asked`` (requeue() during the term's end), unless the selector is
    no longer ``started``, the client is stopped (or ``ending`` says so), the runner cancelled
    the steps, or an error no retry fixes ``failed`` the term."""
    if not started or client_stopped or failed:
        return False
    if ending in (Ending.CANCELLED, Ending.CLIENT_STOPPED):
        return False
    return auto_requeue or asked


class LeadershipCore:
    """One term of leadership for either front end: our node, the monitor that follows it,
    the event that the term's end sets (the front end's ``lost_event``), and why it ended."""

    def __init__(self, path: str, node: LockNode, monitor: HoldMonitor, lost_event: Any) -> None:
        self.path = path
        self.node = node
        self.monitor = monitor
        self.lost_event = lost_event
        #: Why the term ended; empty while it lasts.
        self.reason = ""

    @property
    def client(self) -> KazooClient:
        """The kazoo client that made our node."""
        return cast("KazooClient", self.monitor.transport.client)

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid: it grows with every new leader of this path."""
        return self.node.czxid

    @property
    def ended(self) -> bool:
        """Whether the term has ended."""
        return bool(self.lost_event.is_set())

    def end(self, reason: str) -> None:
        """End the term (the first call only): record why and set the event. Called where the
        event may be set (for an asyncio event, on its loop)."""
        if not self.ended:
            self.reason = reason
            self.lost_event.set()

    def confirm_steps(self) -> Steps[bool]:
        """Whether our node is known to be ours now (see :meth:`HoldMonitor.confirm_steps`)."""
        return self.monitor.confirm_steps()

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists."""
        return cast(
            "TransactionRequest", self.monitor.transport.guarded_transaction(self.node.path)
        )

    def lost_error(self) -> LockLostError:
        """The error that says the term is over, and why."""
        return LockLostError(self.path, self.reason or self.monitor.reason or "lost")

    def repr_as(self, name: str) -> str:
        """The ``repr`` of the front end's leadership called ``name``."""
        return f"{name}({self.node.path!r}, token={self.fencing_token})"


class TermHandle(Protocol):
    """A front end's handle on one term: what stops its steps at once, and ``lead``."""

    def cancel_steps(self) -> None:
        """Cancel the term's steps (their clean-up still runs and deletes the node)."""

    def interrupt_lead(self) -> None:
        """Interrupt ``lead``, where it can be (a task; a thread is only told)."""


R = TypeVar("R", bound=TermHandle)


class Term(Generic[R]):
    """One turn in the queue: its election, the leadership it got, whether ``lead`` runs,
    whether the term is ending, and whether the next one was asked for meanwhile."""

    def __init__(self, make_election: Callable[[Term[R]], Election]) -> None:
        self.run: R | None = None  # set by the front end once the steps run
        self.leadership: LeadershipCore | None = None
        self.leading = False  # ``lead`` runs
        self.ending = False  # it will not lead (again): its steps are ending
        self.requeue = False  # queue again once its steps have ended
        self.election = make_election(self)

    def deposed(self, reason: str) -> None:
        """Leadership ended (the election's ``on_deposed``, or an interruption): ``lead`` is
        told, and interrupted where it can be."""
        self.ending = True
        if self.leadership is not None:
            self.leadership.end(reason)
        if self.run is not None and self.leading:
            self.run.interrupt_lead()

    def end(self, reason: str) -> None:
        """End the term: a leader's ``lead`` is told (the node goes once it has ended), a queued
        term leaves the queue now."""
        self.ending = True
        if self.leading:
            self.deposed(reason)
            return
        self.election.stop(reason)
        if self.run is not None:
            self.run.cancel_steps()

    def requeue_when_over(self, auto_requeue: bool) -> bool:
        """For ``requeue()`` during this term: True when the next term is now owed (it is
        ending, the selector does not requeue by itself, and nobody asked before)."""
        if not self.ending or auto_requeue or self.requeue:
            return False
        self.requeue = True
        return True


class SelectorCore(Generic[R]):
    """A leader selector without its front end: the checked arguments, the life cycle, the
    engine, the current term and its bookkeeping. Not thread-safe: the threaded front end
    calls it under its lock, the asyncio one on its loop."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        lead: Callable[..., Any],
        id: str,
        auto_requeue: bool,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
    ) -> None:
        validate_path(path)
        if not callable(lead):
            raise TypeError(f"lead must be callable, not {type(lead).__name__}")
        data = id_bytes(id) or None  # Curator writes its default data for an empty id
        if not isinstance(auto_requeue, bool):
            raise TypeError(f"auto_requeue must be a bool, not {type(auto_requeue).__name__}")
        self.policy: ConnectionPolicy = check_policy(connection_policy)
        self.engine = LockEngine(transport, path, MUTEX_DRIVER, data=data, acl=acl)
        self.reporter = Reporter("selector", path)
        #: The user's function, called with each term's leadership.
        self.lead = lead
        self.id = id
        #: Whether the selector queues again by itself once a term ends.
        self.auto_requeue = auto_requeue
        self.state = Lifecycle.LATENT
        #: The term under way, if any.
        self.term: Term[R] | None = None
        #: True while :meth:`queue` begins a term: a term that ends meanwhile (its first steps
        #: failed at once) is queued again from elsewhere, not from within, so none recurses.
        self.queuing = False

    @property
    def client(self) -> KazooClient:
        """The kazoo client the selector uses."""
        return self.engine.client

    @property
    def transport(self) -> Transport:
        """The transport of the selector's client: what its steps run on."""
        return self.engine.transport

    @property
    def path(self) -> str:
        """The leader path, as given."""
        return self.engine.base_path

    @property
    def our_path(self) -> str | None:
        """Our node's full path in the current term, or None."""
        term = self.term
        node = term.election.node if term is not None else None
        return node.path if node is not None else None

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        term = self.term
        leadership = term.leadership if term is not None else None
        return term is not None and term.leading and leadership is not None and not leadership.ended

    def check_started(self, doing: str) -> None:
        """Raise RuntimeError (``doing``: the message) unless started and not closed."""
        if self.state is not Lifecycle.STARTED:
            raise RuntimeError(f"{doing}: {self.path}")

    def start(self) -> None:
        """Enter the started state; RuntimeError when started before."""
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self.state = Lifecycle.STARTED

    def close(self) -> Term[R] | None:
        """Enter the closed state and end the current term, if any (returned); RuntimeError
        when not started or closed before."""
        self.check_started("Already closed or has not been started")
        self.state = Lifecycle.CLOSED
        term = self.term
        if term is not None:
            term.end("selector closed")
        return term

    def interrupt(self) -> None:
        """End the current term's leadership, if it leads."""
        term = self.term
        if term is not None and term.leading:
            term.deposed("leadership interrupted")

    def queue(
        self,
        begin: Callable[[Term[R]], R],
        elected: Callable[[Term[R], LockNode, HoldMonitor], None],
        asked: bool = False,
    ) -> bool:
        """Start a term unless one is under way or the selector is not started: make its
        election (``elected(term, node, monitor)`` hears of leadership) and ``begin(term)``
        runs its steps. ``asked`` by requeue(): one that is ending queues again once it has
        ended. Whether a term was started or owed."""
        term = self.term
        if term is not None:
            return asked and term.requeue_when_over(self.auto_requeue)
        if self.state is not Lifecycle.STARTED:
            return False
        term = self.term = Term(lambda made: self._election(made, elected))
        self.queuing = True
        try:
            term.run = begin(term)
        finally:
            self.queuing = False
        return True

    def _election(
        self, term: Term[R], elected: Callable[[Term[R], LockNode, HoldMonitor], None]
    ) -> Election:
        """A term's election: one term, leaving the queue on a connection error."""
        return Election(
            self.engine,
            self.policy,
            lambda node, monitor: elected(term, node, monitor),
            term.deposed,
            reporter=self.reporter,
            one_term=True,
            queue_ends_on_error=True,
        )

    def elected(self, term: Term[R], leadership: LeadershipCore) -> bool:
        """``term`` leads with ``leadership``: whether ``lead`` is to run (not when the term is
        no longer current or the selector closed: the steps then end and delete the node)."""
        if self.term is not term or self.state is not Lifecycle.STARTED:
            return False
        term.leadership = leadership
        term.leading = True
        return True

    def lead_ended(self, term: Term[R], *, here: bool = False) -> None:
        """``lead`` has ended (returned, raised or was cancelled): the term is over, and its
        steps end and delete the node (``here``: on the calling thread, see
        :meth:`~pycurator._recipes.election.Election.stop`)."""
        if term.leadership is not None:
            term.leadership.end("leadership given up")
        term.leading = False
        term.ending = True
        term.election.stop("leadership given up", here=here)

    def over(self, term: Term[R], ending: Ending) -> bool:
        """``term``'s steps have ended as ``ending`` (its node deleted): whether the next term
        is to start now (see :func:`queues_again`)."""
        if self.term is term:
            self.term = None
        return queues_again(
            ending,
            started=self.state is Lifecycle.STARTED,
            auto_requeue=self.auto_requeue,
            asked=term.requeue,
            failed=term.election.failed is not None,
            client_stopped=is_stopped(self.transport),
        )

    def participants_steps(self) -> Steps[list[Participant]]:
        """The participants in queue order, the leader first, as steps."""
        return participants_steps(self.engine)

    def repr_as(self, name: str) -> str:
        """The ``repr`` of the front end's selector called ``name``."""
        return f"{name}({self.path!r}, id={self.id!r}, state={self.state.value})"


__all__ = [
    "Ending",
    "LeadershipCore",
    "SelectorCore",
    "Term",
    "TermHandle",
    "ending_of",
    "queues_again",
]
