"""The leader latch's core, held by both front ends (``pycurator.LeaderLatch`` and
``pycurator.aio.LeaderLatch``): what a latch is, whichever way its owner waits.

:class:`LatchCore` checks the arguments, keeps the life cycle (Curator's LATENT, STARTED,
CLOSED), the engine and the election (:mod:`pycurator._recipes.election`), the listeners and the
``on_lost`` callbacks, and turns the election's news into what a latch tells: ``lost_event``
cleared or set, listeners and callbacks posted, waiters woken. A front end gives it the few
things that differ (:meth:`LatchCore.begin`: how to post a callback, how to wake its waiters,
its ``lost_event``), runs the election's steps its own way, and waits its own way.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._protocol.checks import ConnectionPolicy, check_policy
from .._protocol.drivers import CURATOR_NAMING, LATCH_DRIVER, Driver, Naming
from .._protocol.errors import LockLostError
from .._protocol.paths import validate_path
from .._protocol.steps import Steps
from .._protocol.transport import Transport, closed_error
from .._protocol.waits import DELETE_WAIT
from .._recipes.election import Election
from .._recipes.hold_monitor import HoldMonitor
from .._recipes.lock_engine import LockEngine
from .._recipes.lock_nodes import LockNode
from .._recipes.participants import Participant, id_bytes, participants_steps
from .._recipes.reports import Reporter

if TYPE_CHECKING:
    from kazoo.client import KazooClient

#: The longest a latch's ``close()`` waits for the election to end (its node's delete waits
#: at most :data:`~pycurator._protocol.waits.DELETE_WAIT`, then goes on in the background).
CLOSE_WAIT = DELETE_WAIT + 1.0


class Lifecycle(enum.Enum):
    """Where a latch or a selector stands: Curator's ``State``."""

    LATENT = "latent"
    STARTED = "started"
    CLOSED = "closed"


class CloseMode(enum.Enum):
    """What :meth:`LeaderLatch.close` tells the listeners: nothing (``SILENT``, Curator's
    default) or ``not_leader()`` when the latch was leading (``NOTIFY_LEADER``)."""

    SILENT = "silent"
    NOTIFY_LEADER = "notify_leader"


class LeaderLatchListener(Protocol):
    """Told of each change of leadership, in order, on a worker thread."""

    def is_leader(self) -> None:
        """We lead now."""

    def not_leader(self) -> None:
        """We no longer lead."""


class Flag(Protocol):
    """An event a latch sets and clears: a handler's event, or an :class:`asyncio.Event`."""

    def set(self) -> None: ...

    def clear(self) -> None: ...


def check_close_mode(mode: object) -> CloseMode:
    """``mode`` if it is a :class:`CloseMode`; TypeError otherwise."""
    if not isinstance(mode, CloseMode):
        raise TypeError(f"close_mode must be a CloseMode, not {mode!r}")
    return mode


def check_listener(listener: object) -> None:
    """TypeError unless ``listener`` has ``is_leader()`` and ``not_leader()``."""
    if not callable(getattr(listener, "is_leader", None)) or not callable(
        getattr(listener, "not_leader", None)
    ):
        raise TypeError("listener must have is_leader() and not_leader() methods")


class _Outlets:
    """Where a started latch's news goes: the front end's ways to post and to wake."""

    def __init__(
        self,
        owner: object,
        post: Callable[..., None],
        changed: Callable[[], None],
        lost_event: Flag,
    ) -> None:
        self.owner = owner
        self.post = post
        self.changed = changed
        self.lost_event = lost_event


class LatchCore:
    """One participant of a leader latch, for a front end to hold and drive.

    The arguments are checked as Curator checks them (TypeError or ValueError). :meth:`begin`
    makes the election and :meth:`finish` stops it; the front end runs the election's steps,
    waits for changes, and calls :meth:`closed` once the steps have ended (or it gave up
    waiting for them). Everything here returns at once: nothing blocks, nothing awaits.
    ``driver`` and ``naming``: how the nodes are named and ordered (Curator's latch by
    default; ZooKeeper's ``LeaderElectionSupport`` for :mod:`pycurator.zkrecipes`).
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        id: str,
        close_mode: CloseMode,
        acl: Sequence[Any] | None,
        connection_policy: ConnectionPolicy,
        *,
        driver: Driver = LATCH_DRIVER,
        naming: Naming = CURATOR_NAMING,
    ) -> None:
        validate_path(path)
        data = id_bytes(id)
        self.close_mode = check_close_mode(close_mode)
        self.policy = check_policy(connection_policy)
        self.engine = LockEngine(transport, path, driver, data=data, acl=acl, naming=naming)
        self.id = id
        #: Where the latch stands; only :meth:`begin` and :meth:`finish` move it.
        self.state = Lifecycle.LATENT
        #: The election, once started.
        self.election: Election | None = None
        #: Told ``is_leader()`` / ``not_leader()``, in order of addition.
        self.listeners: list[Any] = []
        #: Called ``(owner, reason)`` when leadership ends.
        self.lost_callbacks: list[Callable[[Any, str], Any]] = []
        self._report = Reporter("latch", path)
        self._outlets: _Outlets | None = None

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self.engine.client

    @property
    def transport(self) -> Transport:
        """The transport of the latch's client: what its steps run on."""
        return self.engine.transport

    @property
    def path(self) -> str:
        """The latch path, as given."""
        return self.engine.base_path

    @property
    def our_path(self) -> str | None:
        """Our node's full path, or None while there is none."""
        node = self.election.node if self.election is not None else None
        return node.path if node is not None else None

    @property
    def started(self) -> bool:
        """Whether started and not closed."""
        return self.state is Lifecycle.STARTED

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        election = self.election
        return self.state is Lifecycle.STARTED and election is not None and election.is_leading

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid while we lead; :class:`LockLostError` otherwise."""
        election = self.election
        node = election.node if election is not None else None
        if node is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        return node.czxid

    def add_listener(self, listener: Any) -> None:
        """Tell ``listener`` of changes (TypeError unless it has both methods)."""
        check_listener(listener)
        self.listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        """Stop telling ``listener`` of changes (nothing if it was not told)."""
        if listener in self.listeners:
            self.listeners.remove(listener)

    def add_lost_callback(self, callback: Callable[[Any, str], Any]) -> None:
        """Call ``callback(owner, reason)`` each time leadership ends, after the listeners."""
        self.lost_callbacks.append(callback)

    def begin(
        self,
        owner: object,
        post: Callable[..., None],
        changed: Callable[[], None],
        lost_event: Flag,
    ) -> Election:
        """Move to STARTED (RuntimeError if started before, as Curator); the election, whose
        steps the front end runs.

        The election's news is told through ``post(callback, *args)`` (run the listeners' and
        the lost callbacks' calls later, in order, never on the election's path), ``changed()``
        (wake whoever waits; called from any thread) and ``lost_event`` (set when leadership
        ends, cleared when it begins; set and cleared where the steps run). ``owner`` is what
        the lost callbacks are given.
        """
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self.state = Lifecycle.STARTED
        self._outlets = _Outlets(owner, post, changed, lost_event)
        self.election = Election(
            self.engine,
            self.policy,
            self._elected,
            self._deposed,
            self._troubled,
            changed,
            reporter=self._report,
        )
        return self.election

    def finish(self, close_mode: CloseMode | None) -> None:
        """Move to CLOSED (RuntimeError unless started) and tell the election why it stops;
        ``SILENT`` (``close_mode``, or the latch's when None) drops the listeners first. The
        front end then cancels the election's steps, which ends them at once (their clean-up
        deletes our node): they are not woken first, which would resume them on another
        thread for nothing."""
        mode = check_close_mode(self.close_mode if close_mode is None else close_mode)
        if self.state is not Lifecycle.STARTED or self.election is None:
            raise RuntimeError(f"Already closed or has not been started: {self.path}")
        self.state = Lifecycle.CLOSED
        if mode is CloseMode.SILENT:
            self.listeners.clear()
        self.election.stop("latch closed", wake=False)

    def closed(self) -> None:
        """After :meth:`finish`, once the steps have ended (or the front end stopped waiting
        for them): no listener hears more, and waiters wake."""
        self.listeners.clear()
        outlets = self._outlets
        if self.election is None or self.election.ended:
            self._outlets = None  # nothing more to tell: the owner, in a cycle with us, is let go
        if outlets is not None:
            outlets.changed()

    def check_waitable(self) -> None:
        """RuntimeError unless started and not closed."""
        if not self.started:
            raise RuntimeError(f"the latch is not started, or closed: {self.path}")

    def outcome(self, ended: bool) -> bool | None:
        """For a waiter, after each change: True once leading, False once closed, None to wait
        on. Raises the error no retry fixes that ended the election; ConnectionClosedError
        when the client is stopped (or the steps ``ended`` with it); else the error that keeps
        the election from succeeding meanwhile."""
        if self.has_leadership():
            return True
        if self.state is not Lifecycle.STARTED:
            return False
        election = self.election
        if election is not None and election.failed is not None:
            raise election.failed
        self.transport.check_open()
        if ended:  # the election ends by itself only with its client
            raise closed_error()
        if election is not None and election.error is not None:
            raise election.error
        return None

    def check_steps(self) -> Steps[None]:
        """Steps that raise :class:`LockLostError` unless our node is known to be ours now;
        raises it at once when we do not lead."""
        election = self.election
        monitor = election.leading if election is not None else None
        if monitor is None or not self.has_leadership():
            raise LockLostError(self.path, "not the leader")
        return self._confirm_steps(monitor)

    def _confirm_steps(self, monitor: HoldMonitor) -> Steps[None]:
        if not (yield from monitor.confirm_steps()):
            raise LockLostError(self.path, monitor.reason)

    def participants_steps(self) -> Steps[list[Participant]]:
        """Steps that read every participant in queue order, the leader first."""
        return participants_steps(self.engine)

    def describe(self, kind: str) -> str:
        """The latch's repr, as a ``kind`` (its class's name as users write it)."""
        return f"{kind}({self.path!r}, id={self.id!r}, state={self.state.value})"

    # -- news from the election (called by its steps: never block) ----------------------------

    def _elected(self, node: LockNode, monitor: HoldMonitor) -> None:
        outlets = self._outlets
        assert outlets is not None  # from begin() until the election has ended
        outlets.lost_event.clear()
        for listener in list(self.listeners):
            outlets.post(listener.is_leader)
        outlets.changed()

    def _deposed(self, reason: str) -> None:
        outlets = self._outlets
        assert outlets is not None
        outlets.lost_event.set()
        for listener in list(self.listeners):
            outlets.post(listener.not_leader)
        for callback in list(self.lost_callbacks):
            outlets.post(callback, outlets.owner, reason)
        outlets.changed()

    def _troubled(self, error: Exception | None) -> None:
        assert self._outlets is not None
        self._outlets.changed()


__all__ = [
    "CLOSE_WAIT",
    "CloseMode",
    "Flag",
    "LatchCore",
    "LeaderLatchListener",
    "Lifecycle",
    "check_close_mode",
    "check_listener",
]
