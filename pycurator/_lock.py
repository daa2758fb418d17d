"""The re-entrant lock over the engine: per-thread hold counts, context managers, release rules.

Curator's ``InterProcessMutex`` body, shared by the mutex and both sides of the read/write lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar

from ._engine import LockEngine, check_timeout
from ._errors import LockNotOwnedError, LockTimeout

L = TypeVar("L", bound="ReentrantLock")


@dataclass
class _Hold:
    node: str
    count: int = 1


class ReentrantLock:
    """A lock held per thread and per lock object; re-entry only counts, it sends nothing."""

    def __init__(self, engine: LockEngine) -> None:
        self._engine = engine
        self._holds: dict[threading.Thread, _Hold] = {}
        self._holds_lock = engine.client.handler.lock_object()

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self._engine.base_path

    @property
    def client(self) -> object:
        """The kazoo client this lock uses."""
        return self._engine.client

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever; 0: one try) for the lock.

        True when held (again, if this thread already held it), False on timeout; no node is
        left behind on timeout or error.
        """
        timeout = check_timeout(timeout)
        thread = threading.current_thread()
        with self._holds_lock:
            hold = self._holds.get(thread)
            if hold is not None:
                hold.count += 1
                return True
        node = self._engine.acquire(timeout)
        if node is None:
            return False
        with self._holds_lock:
            self._holds[thread] = _Hold(node)
        return True

    def release(self) -> None:
        """Release one hold of the calling thread; the last one deletes our node.

        Raises :class:`LockNotOwnedError` when the calling thread does not hold the lock.
        """
        thread = threading.current_thread()
        with self._holds_lock:
            hold = self._holds.get(thread)
            if hold is None:
                raise LockNotOwnedError(self.path)
            hold.count -= 1
            if hold.count > 0:
                return
            del self._holds[thread]
        self._engine.release(hold.node)

    def is_acquired_in_this_process(self) -> bool:
        """True if any thread holds this lock object."""
        with self._holds_lock:
            return bool(self._holds)

    def is_owned_by_current_thread(self) -> bool:
        """True if the calling thread holds this lock object."""
        with self._holds_lock:
            return threading.current_thread() in self._holds

    @property
    def lock_path(self) -> str | None:
        """The node the calling thread holds, or None."""
        with self._holds_lock:
            hold = self._holds.get(threading.current_thread())
            return hold.node if hold is not None else None

    def participant_nodes(self) -> list[str]:
        """Full paths of every node queued on the lock path, holder first (any language)."""
        return self._engine.participant_nodes()

    def make_revocable(self: L, listener: Callable[[L], None]) -> None:
        """Make the lock revocable; call before :meth:`acquire`.

        Our node is then created empty (as Curator does) and watched; when another client writes
        Curator's revocation message to it, ``listener(self)`` runs on a worker thread. Releasing
        is up to the listener (or the thread it signals).
        """
        self._engine.on_revoke = lambda: listener(self)

    @contextmanager
    def hold(self: L, timeout: float | None = None) -> Iterator[L]:
        """``with lock.hold(timeout=2):`` acquires or raises :class:`LockTimeout`, and releases."""
        if not self.acquire(timeout):
            raise LockTimeout(self.path, timeout if timeout is not None else 0.0)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self: L) -> L:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"
