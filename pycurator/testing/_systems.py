"""The other Java lock systems on ZooKeeper as test peers, behind one small interface, so that a
test can make them contend with pycurator's recipes.

- :class:`~pycurator.testing._zkrecipes.JavaWriteLock` and
  :class:`~pycurator.testing._zkrecipes.JavaLeaderElection`: ZooKeeper's own recipes (Debian's
  ``zookeeper-recipes-lock`` and ``zookeeper-recipes-election``), in
  :mod:`pycurator.testing._zkrecipes`.
- :class:`JavaReentrantZkLock`, :class:`JavaReentrantZkReadWriteLock`, :class:`JavaZkSemaphore`:
  menagerie.
- :class:`JavaZkLocker`: ZkLocker.

Each peer has its own ZooKeeper session and runs its Java calls on its own thread; ``close()``
frees both. Lock peers have ``acquire(timeout=None) -> bool``, ``release()``, ``is_held()``,
``session_id`` and ``with``. The systems' wire facts and bugs are in the seed-systems folder's
README (:func:`~pycurator.testing._curator.seed_systems_dir`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._curator import MENAGERIE_JAR, ZKLOCKER_JAR
from ._peers import (
    SESSION_TIMEOUT_MS,
    LockPeer,
    ManagedSession,
    Peer,
    Session,
    finished,
    make_on,
    millis,
    quiet_log4j,
    system_class,
)
from ._zkrecipes import JavaLeaderElection, JavaWriteLock

P = TypeVar("P", bound=Peer)
T = TypeVar("T")

#: Extra time a menagerie wait with a timeout gets before it is interrupted: its own timeout
#: starts again at every wake-up (menagerie's ``tryLock(time, unit)``, bug 3).
GRACE = 5.0


class _MenagerieLock(LockPeer):
    """A menagerie lock (``java.util.concurrent.locks.Lock``), called on its session's thread,
    which owns it (menagerie keeps the holder in a ``ThreadLocal``).

    ``acquire()`` is ``lock()``, which ignores interrupts and cannot be cancelled; ``acquire(0)``
    is ``tryLock()``; ``acquire(t)`` is ``tryLock(t, MILLISECONDS)``, interrupted if it outlives
    ``t`` by :data:`GRACE` (its own wait restarts at every wake-up, bug 3).
    """

    java: Any
    #: The peer's holds (re-entries count); the peer's thread may be waiting, so ``hasLock()``
    #: cannot be asked meanwhile.
    _holds = 0

    def acquire(self, timeout: float | None = None) -> bool:
        thread = self.session.thread
        if timeout is None:
            thread.submit(self.java.lock, interruptible=False).result()
            got = True
        elif timeout <= 0:
            got = bool(thread.call(self.java.tryLock))
        else:
            count, unit = millis(timeout)
            waiting = thread.submit(lambda: bool(self.java.tryLock(count, unit)))
            in_time: bool | None = finished(waiting, timeout + GRACE, thread)
            got = bool(in_time)
        self._holds += got
        return got

    def release(self) -> None:
        """``unlock()``: the last one of this thread's holds deletes the node."""
        self.session.thread.call(self.java.unlock)
        self._holds -= 1

    def is_held(self) -> bool:
        """Whether the peer holds the lock as far as it knows (menagerie's ``hasLock()``
        does not notice an expiry either)."""
        return self._holds > 0

    @property
    def lock_path(self) -> str | None:
        """The node of the peer's hold, or None while it holds none: menagerie keeps it in
        the lock's ``ThreadLocal`` of ``LockHolder``s (private), read here on the peer's
        thread. Still the node after an expiry, which menagerie does not notice."""
        java = self.java

        def read() -> str | None:
            base = system_class("org.menagerie.locks.ReentrantZkLock", MENAGERIE_JAR)
            locks = base.class_.getDeclaredField("locks")
            locks.setAccessible(True)
            holder = locks.get(java).get()
            if holder is None:
                return None
            node = holder.getClass().getDeclaredField("lockNode")
            node.setAccessible(True)
            return str(node.get(holder))

        return self.session.thread.call(read)


class JavaReentrantZkLock(_MenagerieLock):
    """menagerie's ``org.menagerie.locks.ReentrantZkLock`` on ``path``: nodes
    ``<path>/lock-<seq10>``; re-entrant on the peer's thread. Its session comes from
    ``DefaultZkSessionManager(connect, timeout)``, which opens a new session after an expiry."""

    def __init__(
        self, connect: str, path: str, *, session_timeout_ms: int = SESSION_TIMEOUT_MS
    ) -> None:
        self.connect = connect
        self.path = path
        lock = system_class("org.menagerie.locks.ReentrantZkLock", MENAGERIE_JAR)
        quiet_log4j()
        session = ManagedSession(connect, f"JavaReentrantZkLock {path}", session_timeout_ms)
        self.session = session
        self.java = make_on(session, lambda: lock(path, session.manager))
        self._register()

    def __repr__(self) -> str:
        return f"JavaReentrantZkLock({self.path!r})"


class _ReadWriteSide(_MenagerieLock):
    """One side of a :class:`JavaReentrantZkReadWriteLock`: its session and thread are the
    read/write lock's, and ``close()`` closes the read/write lock."""

    def __init__(self, owner: JavaReentrantZkReadWriteLock, java: Any, side: str) -> None:
        self.owner = owner
        self.session = owner.session
        self.java = java
        self.side = side

    def close(self) -> None:
        self.owner.close()

    def __repr__(self) -> str:
        return f"{self.owner!r}.{self.side}_lock()"


class JavaReentrantZkReadWriteLock(Peer):
    """menagerie's ``org.menagerie.locks.ReentrantZkReadWriteLock`` on ``path``: nodes
    ``<path>/readLock-<seq10>`` and ``<path>/writeLock-<seq10>``. Both sides run on this
    peer's one thread, so a write holder taking the read lock is menagerie's downgrade."""

    def __init__(
        self, connect: str, path: str, *, session_timeout_ms: int = SESSION_TIMEOUT_MS
    ) -> None:
        self.connect = connect
        self.path = path
        lock = system_class("org.menagerie.locks.ReentrantZkReadWriteLock", MENAGERIE_JAR)
        quiet_log4j()
        session = ManagedSession(
            connect, f"JavaReentrantZkReadWriteLock {path}", session_timeout_ms
        )
        self.session = session

        def make() -> tuple[Any, Any, Any]:
            java = lock(path, session.manager)
            return java, java.readLock(), java.writeLock()

        self.java, read, write = make_on(self.session, make)
        self._read = _ReadWriteSide(self, read, "read")
        self._write = _ReadWriteSide(self, write, "write")
        self._register()

    def read_lock(self) -> LockPeer:
        return self._read

    def write_lock(self) -> LockPeer:
        return self._write

    def __repr__(self) -> str:
        return f"JavaReentrantZkReadWriteLock({self.path!r})"


class JavaZkSemaphore(Peer):
    """menagerie's ``org.menagerie.latches.ZkSemaphore`` with ``permits`` on ``path``: one
    ``<path>/permit-<seq10>`` node per permit. ``acquire()`` takes one permit (``acquire()``;
    ``tryAcquire()`` for 0; ``tryAcquire(t, MILLISECONDS)``); ``release()`` deletes the lowest
    permit node under ``path``, whoever made it (its bug 4)."""

    def __init__(
        self,
        connect: str,
        path: str,
        permits: int,
        *,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
    ) -> None:
        self.connect = connect
        self.path = path
        self.permits = permits
        semaphore = system_class("org.menagerie.latches.ZkSemaphore", MENAGERIE_JAR)
        quiet_log4j()
        session = ManagedSession(connect, f"JavaZkSemaphore {path}", session_timeout_ms)
        self.session = session
        self.java = make_on(session, lambda: semaphore(permits, path, session.manager))
        self._register()

    def acquire(self, timeout: float | None = None) -> bool:
        """Take one permit: True once taken, False after ``timeout`` seconds."""
        thread = self.session.thread
        if timeout is None:
            thread.submit(self.java.acquire).result()
            return True
        if timeout <= 0:
            return bool(thread.call(self.java.tryAcquire))
        count, unit = millis(timeout)
        waiting = thread.submit(lambda: bool(self.java.tryAcquire(count, unit)))
        in_time: bool | None = finished(waiting, timeout + GRACE, thread)
        return bool(in_time)

    def release(self) -> None:
        self.session.thread.call(self.java.release)

    def __repr__(self) -> str:
        return f"JavaZkSemaphore({self.path!r}, {self.permits})"


class JavaZkLocker(LockPeer):
    """ZkLocker's ``com.fankux.zklocker.ZkLocker`` on the peer's own raw session: nodes
    ``/parent/dlk-<key>-<sessionId>-<seq10>`` (``/parent/dlk-<sessionId>-<seq10>`` without a
    key); its parent is always ``/parent``.

    ``acquire()`` is ``lock(key)``; ``acquire(t)`` runs it and, after ``t`` seconds, interrupts
    it until it gives up (it retries 10 times) and calls ``unlock()``; ``acquire(0)`` is
    ``tryLock(key)``, whose failure leaves its node queued (its bug 1) until ``release()``.
    Never expire the session of a peer that is waiting: ZkLocker then reconnects to the
    hard-coded ``127.0.0.1:2181`` and waits for it forever (its bug 5).
    """

    def __init__(
        self, connect: str, key: str | None = None, *, session_timeout_ms: int = SESSION_TIMEOUT_MS
    ) -> None:
        self.connect = connect
        self.key = key
        self._held = False
        locker = system_class("com.fankux.zklocker.ZkLocker", ZKLOCKER_JAR)
        self.session = Session(connect, f"JavaZkLocker {key}", session_timeout_ms)
        self.java = make_on(self.session, lambda: locker(self.session.zookeeper(), None))
        self._register()

    def _lock(self) -> bool:
        if self.key is None:
            self.java.lock()
        else:
            self.java.lock(self.key)
        return True

    def acquire(self, timeout: float | None = None) -> bool:
        thread = self.session.thread
        if timeout is None:
            self._held = thread.submit(self._lock).result()
        elif timeout <= 0:
            key = self.key
            self._held = bool(
                thread.call(lambda: self.java.tryLock(*(() if key is None else (key,))))
            )
        else:
            held: bool | None = finished(thread.submit(self._lock), timeout, thread)
            self._held = bool(held)
            if not self._held:
                thread.call(self.java.unlock)
        return self._held

    def release(self) -> None:
        """``unlock()``: deletes this object's node, held or left by a failed ``tryLock``."""
        self.session.thread.call(self.java.unlock)
        self._held = False

    def is_held(self) -> bool:
        return self._held

    def __repr__(self) -> str:
        return f"JavaZkLocker(key={self.key!r})"


class JavaSystems:
    """The ``java_systems`` fixture: makes peers on one server (``connect``) and closes every
    one of them at :meth:`close`. Call it with a peer class and that class's arguments after
    ``connect`` (``java_systems(JavaWriteLock, path)``), or use the methods by system."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.peers: list[Peer] = []

    def __call__(self, peer_class: Callable[..., P], *args: Any, **kwargs: Any) -> P:
        peer = peer_class(self.connect, *args, **kwargs)
        self.peers.append(peer)
        return peer

    def write_lock(self, dir: str) -> JavaWriteLock:
        return self(JavaWriteLock, dir)

    def leader_election(self, root: str, host_name: str) -> JavaLeaderElection:
        return self(JavaLeaderElection, root, host_name)

    def reentrant_lock(self, path: str) -> JavaReentrantZkLock:
        return self(JavaReentrantZkLock, path)

    def read_write_lock(self, path: str) -> JavaReentrantZkReadWriteLock:
        return self(JavaReentrantZkReadWriteLock, path)

    def semaphore(self, path: str, permits: int) -> JavaZkSemaphore:
        return self(JavaZkSemaphore, path, permits)

    def zk_locker(self, key: str | None = None) -> JavaZkLocker:
        return self(JavaZkLocker, key)

    def close(self) -> None:
        """Close every peer made here, the last first; the first error is raised at the end."""
        errors: list[BaseException] = []
        for peer in reversed(self.peers):
            try:
                peer.close()
            except Exception as exc:
                errors.append(exc)
        self.peers.clear()
        if errors:
            raise errors[0]
