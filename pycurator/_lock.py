"""The re-entrant lock over the engine: per-thread hold counts, context managers, release rules.

Curator's ``InterProcessMutex`` body, shared by the mutex and both sides of the read/write lock.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar

from kazoo.client import KazooClient, TransactionRequest

from ._engine import HeldNode, LockEngine, check_timeout
from ._errors import LockLostError, LockNotOwnedError, LockTimeout
from ._handlers import unit_getter
from ._monitor import ConnectionPolicy, HoldMonitor, HoldState, check_policy

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


@dataclass
class _Hold:
    node: HeldNode
    monitor: HoldMonitor
    count: int = 1


class ReentrantLock(LockContext):
    """A lock held per thread and per lock object; re-entry only counts, it sends nothing.

    "Thread" is the client's handler's unit of concurrency (see :mod:`pycurator._handlers`): the
    OS thread under kazoo's threading handler, the greenlet under gevent and eventlet.

    A held lock follows its node: when the node is lost (see :mod:`pycurator._monitor` for what
    ``connection_policy`` counts as lost), :meth:`is_held` turns False, :attr:`lost_event` is set
    and every :meth:`on_lost` callback runs.
    """

    def __init__(self, engine: LockEngine, *, connection_policy: str = "standard") -> None:
        self._engine = engine
        self._holds: dict[Hashable, _Hold] = {}
        self._unit = unit_getter(engine.client.handler)
        self._holds_lock = engine.client.handler.lock_object()
        self._policy: ConnectionPolicy = check_policy(connection_policy)
        self._lost_callbacks: list[Callable[[ReentrantLock, str], None]] = []
        self.lost_event = engine.client.handler.event_object()

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
        thread = self._unit()
        with self._holds_lock:
            hold = self._holds.get(thread)
            if hold is not None:
                hold.count += 1
                return True
        node = self._engine.acquire(timeout)
        if node is None:
            return False
        self.lost_event.clear()
        monitor = HoldMonitor(
            self._engine.client,
            node.path,
            self._policy,
            lambda state, reason: self._hold_changed(state, reason),
            node.session_id,
        )
        with self._holds_lock:
            self._holds[thread] = _Hold(node, monitor)
        return True

    def _hold_changed(self, state: HoldState, reason: str) -> None:
        if state is HoldState.HELD:
            self.lost_event.clear()
            return
        self.lost_event.set()
        for callback in list(self._lost_callbacks):
            self._engine.client.handler.spawn(callback, self, reason)

    def release(self) -> None:
        """Release one hold of the calling thread; the last one deletes our node.

        Never waits for the network longer than :data:`~pycurator._engine.DELETE_WAIT` seconds,
        and not at all while the client is disconnected: a delete the server has not confirmed
        goes on in the background until the node is gone (Curator's guaranteed delete).

        Raises :class:`LockNotOwnedError` when the calling thread does not hold the lock.
        """
        thread = self._unit()
        with self._holds_lock:
            hold = self._holds.get(thread)
            if hold is None:
                raise LockNotOwnedError(self.path)
            hold.count -= 1
            if hold.count > 0:
                return
            del self._holds[thread]
        hold.monitor.close()
        self._engine.release(hold.node.path)

    def is_acquired_in_this_process(self) -> bool:
        """True if any thread holds this lock object."""
        with self._holds_lock:
            return bool(self._holds)

    def is_owned_by_current_thread(self) -> bool:
        """True if the calling thread holds this lock object."""
        with self._holds_lock:
            return self._unit() in self._holds

    @property
    def lock_path(self) -> str | None:
        """The node the calling thread holds, or None."""
        with self._holds_lock:
            hold = self._holds.get(self._unit())
            return hold.node.path if hold is not None else None

    def _current_hold(self) -> _Hold | None:
        with self._holds_lock:
            return self._holds.get(self._unit())

    def is_held(self) -> bool:
        """True if the calling thread holds the lock and its node is known to be ours now.

        Unlike :meth:`is_owned_by_current_thread`, this follows the node: False once the node is
        deleted or the session ends, and (``standard`` policy) while the connection is suspended.
        """
        hold = self._current_hold()
        return hold is not None and hold.monitor.confirm()

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        hold = self._current_hold()
        if hold is None:
            raise LockLostError(self.path, "not acquired by this thread")
        if not hold.monitor.confirm():
            raise LockLostError(self.path, hold.monitor.reason)

    def on_lost(self, callback: Callable[[L, str], None]) -> None:
        """Run ``callback(lock, reason)`` on a worker thread each time a hold stops being held."""
        self._lost_callbacks.append(callback)  # type: ignore[arg-type]

    @property
    def fencing_token(self) -> int:
        """A number that grows with every new holder of this lock path: our node's creation
        zxid. A resource that remembers the largest token it has seen can reject a stale holder.

        Raises :class:`LockLostError` when the calling thread does not hold the lock.
        """
        hold = self._current_hold()
        if hold is None:
            raise LockLostError(self.path, "not acquired by this thread")
        return hold.node.czxid

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our lock node exists.

        ZooKeeper applies all of it or nothing, so a holder that lost the lock (its node gone
        with its session) cannot commit: the check fails and nothing is written.
        """
        hold = self._current_hold()
        if hold is None:
            raise LockLostError(self.path, "not acquired by this thread")
        transaction = self._engine.client.transaction()
        transaction.check(hold.node.path, -1)
        return transaction

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
