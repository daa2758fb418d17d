"""The threaded re-entrant lock: :class:`ReentrantLock`, a shell over the lock core
(:class:`~pycurator._cores.lock.LockCore`: per-thread hold counts, release rules) that the mutex
and both sides of the read/write lock are, and its context managers.

Curator's ``InterProcessMutex`` body. The asyncio lock (:mod:`pycurator.aio._lock`) is a shell over
the same core, so the two front ends differ only in how they wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

from kazoo.client import KazooClient, TransactionRequest

from .._client.concurrency import unit_getter
from .._client.transport import transport_of
from .._cores.faces import LockFace
from .._cores.lock import LockCore
from .._protocol.checks import ConnectionPolicy, check_timeout
from .._protocol.drivers import Driver
from .._protocol.errors import LockLostError, LockTimeout
from .._protocol.transport import Transport
from .._recipes.hold import LossNotice
from .._recipes.lock_engine import LockEngine
from .runner import run

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


class ReentrantLock(LockFace, LockContext):
    """A lock held per thread and per lock object; re-entry only counts, it sends nothing.

    "Thread" is the client's handler's unit of concurrency (see
    :mod:`pycurator._client.concurrency`): the OS thread under kazoo's threading handler, the
    greenlet under gevent and eventlet.

    A held lock follows its node: when the node is lost (see
    :mod:`pycurator._recipes.hold_monitor` for what ``connection_policy`` counts as lost),
    :meth:`is_held` turns False, :attr:`lost_event` is set and every :meth:`on_lost` callback
    runs. Its waits and holds are reported as ``recipe`` (see :mod:`pycurator._recipes.reports`).
    """

    def __init__(
        self,
        engine: LockEngine,
        *,
        connection_policy: ConnectionPolicy = "standard",
        recipe: str = "mutex",
    ) -> None:
        self._core = LockCore(engine, recipe, connection_policy, unit_getter(engine.client.handler))
        self._notice = LossNotice(engine.transport)

    @property
    def lost_event(self) -> Any:
        """Set while a hold of this lock is not ours (lost, or suspended under the ``standard``
        policy), until the next acquire; a handler event (``threading.Event`` under kazoo's
        threading handler)."""
        return self._notice.lost_event

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever; 0: one try) for the lock.

        True when held (again, if this thread already held it), False on timeout; no node is
        left behind on timeout or error. Returns within ``timeout`` plus at most
        :data:`~pycurator._recipes.lock_engine.DELETE_WAIT` seconds, whatever the connection does.
        """
        timeout = check_timeout(timeout)
        core = self._core
        if core.holds.enter():
            return True
        held = run(core.transport, core.acquire_steps(timeout, self._acquire_driver()))
        if held is None:
            return False
        core.follow(held, self._notice, self)
        return True

    def _acquire_driver(self) -> Driver | None:
        """The driver of the calling thread's acquire, if not the engine's."""
        return None

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def _with_engine(self, engine: LockEngine, connection_policy: ConnectionPolicy) -> None:
        ReentrantLock.__init__(self, engine, connection_policy=connection_policy)

    def release(self) -> None:
        """Release one hold of the calling thread; the last one deletes our node.

        Never waits for the network longer than :data:`~pycurator._recipes.lock_engine.DELETE_WAIT`
        seconds, and not at all while the client is disconnected: a delete the server has not
        confirmed goes on in the background until the node is gone (Curator's guaranteed delete).

        Raises :class:`LockNotOwnedError` when the calling thread does not hold the lock.
        """
        hold = self._core.holds.leave()
        if hold is not None:
            run(self._core.transport, self._core.engine.delete_steps(hold.path))

    def is_acquired_in_this_process(self) -> bool:
        """True if any thread holds this lock object."""
        return self._core.holds.any()

    def is_owned_by_current_thread(self) -> bool:
        """True if the calling thread holds this lock object."""
        return self._core.holds.owned()

    @property
    def lock_path(self) -> str | None:
        """The node the calling thread holds, or None."""
        return self._core.lock_path()

    def is_held(self) -> bool:
        """True if the calling thread holds the lock and its node is known to be ours now.

        Unlike :meth:`is_owned_by_current_thread`, this follows the node: False once the node is
        deleted or the session ends, and (``standard`` policy) while the connection is suspended.
        """
        hold = self._core.holds.current()
        return hold is not None and run(self._core.transport, hold.is_held_steps())

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        hold = self._core.holds.required()
        if not run(self._core.transport, hold.is_held_steps()):
            raise LockLostError(self.path, hold.reason)

    def on_lost(self, callback: Callable[[L, str], None]) -> None:
        """Run ``callback(lock, reason)`` on a worker thread each time a hold stops being held."""
        self._notice.add(callback)

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our lock node exists.

        ZooKeeper applies all of it or nothing, so a holder that lost the lock (its node gone
        with its session) cannot commit: the check fails and nothing is written.
        """
        return self._core.holds.required().guarded_transaction()

    def participant_nodes(self) -> list[str]:
        """Full paths of every node queued on the lock path, holder first (any language)."""
        return run(self._core.transport, self._core.participant_steps())

    def make_revocable(self: L, listener: Callable[[L], None]) -> None:
        """Make the lock revocable; call before :meth:`acquire`.

        Our node is then created empty (as Curator does) and watched; when another client writes
        Curator's revocation message to it, ``listener(self)`` runs on a worker thread. Releasing
        is up to the listener (or the thread it signals).
        """
        self._core.make_revocable(lambda: listener(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


__all__ = ["LockContext", "ReentrantLock"]
