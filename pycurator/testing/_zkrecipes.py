"""ZooKeeper's own recipes as test peers (Debian's ``zookeeper-recipes-lock`` and
``zookeeper-recipes-election``): :class:`JavaWriteLock` and :class:`JavaLeaderElection`, beside
the other Java lock systems of :mod:`pycurator.testing._systems`, behind the same interface."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from ._curator import jclass
from ._peers import SESSION_TIMEOUT_MS, LockPeer, Peer, Session, make_on, proxy, system_class

RECIPES_LOCK_JAR = "zookeeper-recipes-lock.jar"
RECIPES_ELECTION_JAR = "zookeeper-recipes-election.jar"


class JavaWriteLock(LockPeer):
    """ZooKeeper's ``org.apache.zookeeper.recipes.lock.WriteLock`` on ``dir``: nodes
    ``<dir>/x-<sessionId>-<seq10>``. WriteLock creates only the last element of ``dir``.

    Its ``lock()`` does not block: ``acquire`` calls it, and when it returns false waits for
    the ``LockListener``'s ``lockAcquired`` up to ``timeout``; on timeout it calls ``unlock()``.
    WriteLock's watcher stays registered and may still take the lock later (its bug 3): a
    cancelled peer can come to hold the lock on its own, until ``release()`` or ``close()``.
    Ownership belongs to the object, and ``is_held()`` is its ``isOwner()``.
    """

    def __init__(
        self, connect: str, dir: str, *, session_timeout_ms: int = SESSION_TIMEOUT_MS
    ) -> None:
        self.connect = connect
        self.dir = dir
        self._changed = threading.Condition()
        self._acquired = 0
        self._closed = False
        write_lock = system_class("org.apache.zookeeper.recipes.lock.WriteLock", RECIPES_LOCK_JAR)
        self.session = Session(connect, f"JavaWriteLock {dir}", session_timeout_ms)
        listener = proxy(
            "org.apache.zookeeper.recipes.lock.LockListener",
            {"lockAcquired": self._on_acquired, "lockReleased": lambda: None},
        )
        self.java = make_on(
            self.session, lambda: write_lock(self.session.zookeeper(), dir, None, listener)
        )
        self._register()

    def _on_acquired(self) -> None:
        with self._changed:
            self._acquired += 1
            self._changed.notify_all()

    def acquire(self, timeout: float | None = None) -> bool:
        with self._changed:
            seen = self._acquired
        if self.session.thread.call(lambda: bool(self.java.lock())):
            return True
        end = None if timeout is None else time.monotonic() + timeout
        while not self._closed:
            told = self._told_after(seen, None if end is None else end - time.monotonic())
            if told is None:
                self.release()
                return False
            seen = told
            if self.is_held():
                return True
        return False

    def _told_after(self, seen: int, timeout: float | None) -> int | None:
        """The count of ``lockAcquired`` calls once it passes ``seen`` (or the peer closes),
        None after ``timeout`` seconds."""
        with self._changed:
            if self._changed.wait_for(
                lambda: self._acquired > seen or self._closed,
                None if timeout is None else max(0.0, timeout),
            ):
                return self._acquired
            return None

    def release(self) -> None:
        """``unlock()``: deletes the node (held or queued)."""
        self.session.thread.call(self.java.unlock)

    def is_held(self) -> bool:
        return bool(self.java.isOwner())  # not bound to a thread, and never waits

    @property
    def lock_path(self) -> str | None:
        """WriteLock's ``getId()``: its node (a bare name after its bug 1), or None."""
        node = self.session.thread.call(self.java.getId)
        return None if node is None else str(node)

    def _close_java(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self.java.close()

    def __repr__(self) -> str:
        return f"JavaWriteLock({self.dir!r})"


#: LeaderElectionSupport's events after which its peer leads, and after which it does not.
_ELECTED = "ELECTED_COMPLETE"
_NOT_LEADING = frozenset({"READY_START", "READY_COMPLETE", "FAILED", "STOP_START", "STOP_COMPLETE"})


class JavaLeaderElection(Peer):
    """ZooKeeper's ``org.apache.zookeeper.recipes.leader.LeaderElectionSupport`` under
    ``root``: offers ``<root>/n_<seq10>`` with ``host_name`` as data. ``root`` (and its
    ancestors) are created here when missing, since the recipe needs it to exist.

    ``start()`` makes the offer; the recipe's events (``events``, by name) tell whether it
    leads: ``has_leadership()`` after ``ELECTED_COMPLETE``, not after ``READY_*``, ``FAILED``
    or ``STOP_*``. ``leader()`` is the lowest offer's host name. No expiry handling (the recipe
    has none).
    """

    def __init__(
        self,
        connect: str,
        root: str,
        host_name: str,
        *,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
    ) -> None:
        self.connect = connect
        self.root = root
        self.host_name = host_name
        self.events: list[str] = []
        self._changed = threading.Condition()
        self._leading = False
        support = system_class(
            "org.apache.zookeeper.recipes.leader.LeaderElectionSupport", RECIPES_ELECTION_JAR
        )
        self.session = Session(connect, f"JavaLeaderElection {root}", session_timeout_ms)
        listener = proxy(
            "org.apache.zookeeper.recipes.leader.LeaderElectionAware",
            {"onElectionEvent": self._on_event},
        )

        def make() -> Any:
            zookeeper = self.session.zookeeper()
            _ensure_path(zookeeper, root)
            java = support()
            java.setZooKeeper(zookeeper)
            java.setRootNodeName(root)
            java.setHostName(host_name)
            java.addListener(listener)
            return java

        self.java = make_on(self.session, make)
        self._register()

    def _on_event(self, event: Any) -> None:
        name = str(event.name())
        with self._changed:
            self.events.append(name)
            if name == _ELECTED:
                self._leading = True
            elif name in _NOT_LEADING:
                self._leading = False
            self._changed.notify_all()

    def start(self) -> None:
        """Make the offer and determine the election (its failures show as ``FAILED``)."""
        self.session.thread.call(self.java.start)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait to lead: True once leading, False after ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._leading, timeout)

    def has_leadership(self) -> bool:
        with self._changed:
            return self._leading

    def leader(self) -> str | None:
        """The host name of the lowest offer under the root, or None when there is none."""
        name = self.session.thread.call(self.java.getLeaderHostName)
        return None if name is None else str(name)

    def _close_java(self) -> None:
        self.java.stop()

    def __repr__(self) -> str:
        return f"JavaLeaderElection({self.root!r}, {self.host_name!r})"


def _ensure_path(zookeeper: Any, path: str) -> None:
    """Create ``path`` and its ancestors, persistent and empty, where missing."""
    exists = jclass("org.apache.zookeeper.KeeperException$NodeExistsException")
    acl = jclass("org.apache.zookeeper.ZooDefs$Ids").OPEN_ACL_UNSAFE
    persistent = jclass("org.apache.zookeeper.CreateMode").PERSISTENT
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts) + 1):
        node = "/" + "/".join(parts[:depth])
        if zookeeper.exists(node, False) is None:
            with contextlib.suppress(exists):
                zookeeper.create(node, None, acl, persistent)


__all__ = ["RECIPES_ELECTION_JAR", "RECIPES_LOCK_JAR", "JavaLeaderElection", "JavaWriteLock"]
