"""The re-entrant lock over the engine: per-thread hold counts, context managers, release rules.

Curator's ``InterProcessMutex`` body, shared by the mutex and both sides of the read/write lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

from kazoo.client import KazooClient, TransactionRequest

from ._checks import ConnectionPolicy, check_policy, check_timeout
from ._drivers import Driver
from ._engine import HeldNode, LockEngine
from ._errors import LockLostError, LockTimeout
from ._handlers import unit_getter
from ._hold import FollowedNode, LossNotice, ReentrantHolds
from ._observe import HoldReport, Reporter
from ._steps import run

L = TypeVar("L", bound="ReentrantLock")
C = TypeVar("C", bound="LockContext")


class LockContext:
    """``with lock:`` (waits as long as it takes) and ``with lock.hold(timeout):`` (raises
    :class:`LockTimeout`) over a lock's ``acquire(timeout) -> bool`` and ``release()``."""

    @property
    def path(self) -> str:
        raise NotImplementedError

    def acquire(self, timeout: float | None = None) -> bool:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    @contextmanager
    def hold(self: C, timeout: float | None = None) -> Iterator[C]:
        """``with lock.hold(timeout=2):`` acquires or raises :class:`LockTimeout`, and releases."""
        if not self.acquire(timeout):
            raise LockTimeout(self.path, timeout if timeout is not None else 0.0)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self: C) -> C:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class ReentrantLock(LockContext):
    """A lock held per thread and per lock object; re-entry only counts, it sends nothing.

    "Thread" is the client's handler's unit of concurrency (see :mod:`pycurator._handlers`): the
    OS thread under kazoo's threading handler, the greenlet under gevent and eventlet.

    A held lock follows its node: when the node is lost (see :mod:`pycurator._monitor` for what
    ``connection_policy`` counts as lost), :meth:`is_held` turns False, :attr:`lost_event` is set
    and every :meth:`on_lost` callback runs. Its waits and holds are reported as ``_recipe``
    (see :mod:`pycurator._observe`).
    """

    _recipe = "mutex"

    def __init__(
        self, engine: LockEngine, *, connection_policy: ConnectionPolicy = "standard"
    ) -> None:
        self._engine = engine
        self._report = Reporter(self._recipe, engine.base_path)
        self._policy: ConnectionPolicy = check_policy(connection_policy)
        self._holds = ReentrantHolds(
            engine.client, engine.base_path, unit_getter(engine.client.handler)
        )
        self._notice = LossNotice(engine.client)

    @property
    def lost_event(self) -> Any:
        """Set while a hold of this lock is not ours (lost, or suspended under the ``standard``
        policy), until the next acquire; a handler event (``threading.Event`` under kazoo's
        threading handler)."""
        return self._notice.lost_event

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._engine.base_path

    @property
    def client(self) -> KazooClient:
        """The kazoo client this lock uses."""
        return self._engine.client

    @property
    def connection_policy(self) -> ConnectionPolicy:
        """``standard`` (a suspended connection counts as lost) or ``session`` (only expiry)."""
        return self._policy

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever; 0: one try) for the lock.

        True when held (again, if this thread already held it), False on timeout; no node is
        left behind on timeout or error. Returns within ``timeout`` plus at most
        :data:`~pycurator._engine.DELETE_WAIT` seconds, whatever the connection does.
        """
        timeout = check_timeout(timeout)
        if self._holds.enter():
            return True
        engine = self._engine
        steps = engine.acquire_steps(timeout, self._acquire_driver())
        held = run(engine.client, self._report.wait_steps(steps))
        if held is None:
            return False
        self._held(*held)
        return True

    def _acquire_driver(self) -> Driver | None:
        """The driver of the calling thread's acquire, if not the engine's."""
        return None

    def _held(self, node: HeldNode, report: HoldReport) -> None:
        self._notice.mark(False)
        self._holds.add(
            FollowedNode(
                self._engine.client,
                node,
                self._policy,
                lambda state, reason: self._notice.changed(self, state, reason),
                report,
            )
        )

    def release(self) -> None:
        """Release one hold of the calling thread; the last one deletes our node.

        Never waits for the network longer than :data:`~pycurator._engine.DELETE_WAIT` seconds,
        and not at all while the client is disconnected: a delete the server has not confirmed
        goes on in the background until the node is gone (Curator's guaranteed delete).

        Raises :class:`LockNotOwnedError` when the calling thread does not hold the lock.
        """
        hold = self._holds.leave()
        if hold is not None:
            self._engine.release(hold.path)

    def is_acquired_in_this_process(self) -> bool:
        """True if any thread holds this lock object."""
        return self._holds.any()

    def is_owned_by_current_thread(self) -> bool:
        """True if the calling thread holds this lock object."""
        return self._holds.owned()

    @property
    def lock_path(self) -> str | None:
        """The node the calling thread holds, or None."""
        hold = self._holds.current()
        return hold.path if hold is not None else None

    def is_held(self) -> bool:
        """True if the calling thread holds the lock and its node is known to be ours now.

        Unlike :meth:`is_owned_by_current_thread`, this follows the node: False once the node is
        deleted or the session ends, and (``standard`` policy) while the connection is suspended.
        """
        hold = self._holds.current()
        return hold is not None and hold.is_held()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        hold = self._holds.required()
        if not hold.is_held():
            raise LockLostError(self.path, hold.reason)

    def on_lost(self, callback: Callable[[L, str], None]) -> None:
        """Run ``callback(lock, reason)`` on a worker thread each time a hold stops being held."""
        self._notice.add(callback)

    @property
    def fencing_token(self) -> int:
        """A number that grows with every new holder of this lock path: our node's creation
        zxid. A resource that remembers the largest token it has seen can reject a stale holder.

        Raises :class:`LockLostError` when the calling thread does not hold the lock.
        """
        return self._holds.required().fencing_token

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our lock node exists.

        ZooKeeper applies all of it or nothing, so a holder that lost the lock (its node gone
        with its session) cannot commit: the check fails and nothing is written.
        """
        return self._holds.required().guarded_transaction()

    def participant_nodes(self) -> list[str]:
        """Full paths of every node queued on the lock path, holder first (any language)."""
        return self._engine.participant_nodes()

    def make_revocable(self: L, listener: Callable[[L], None]) -> None:
        """Make the lock revocable; call before :meth:`acquire`.

        Our node is then created empty (as Curator does) and watched; when another client writes
        Curator's revocation message to it, ``listener(self)`` runs on a worker thread. Releasing
        is up to the listener (or the thread it signals).
        """
        self._engine = self._engine.revocable(lambda: listener(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"
