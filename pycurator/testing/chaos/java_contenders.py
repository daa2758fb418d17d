"""The chaos run's Java contenders: Curator's recipes through :mod:`pycurator.testing`'s
adapters, ZooKeeper's WriteLock and menagerie's lock through its peers of those systems, each hold
fenced and recorded as the Python contenders' (:mod:`pycurator.testing.chaos.contenders`)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pycurator.testing import (
    JavaLatch,
    JavaMutex,
    JavaReadWriteLock,
    JavaReentrantZkLock,
    JavaSelector,
    JavaSemaphore,
    JavaZkRecipesWriteLock,
    java_nano_time,
    jclass,
    new_curator,
    session_of,
)

from .contenders import Contender, retry
from .history import (
    LATCH,
    MENAGERIE,
    MUTEX,
    RECIPES,
    RW,
    SELECTOR,
    SEMAPHORE,
    SEMAPHORE_MAX,
    SYSTEM_KINDS,
    ZKWRITE,
    Hold,
    Outcome,
    counter_path,
    log_entry,
    log_path,
)

#: A Java contender's peer of another lock system.
SystemPeer = JavaZkRecipesWriteLock | JavaReentrantZkLock


class JavaContender(Contender):
    """A Java contender: Curator's recipes on its Curator client; for :data:`SYSTEM_KINDS`, a
    peer of ZooKeeper's WriteLock or menagerie's lock (its own session, a fresh one after any
    trouble: see :meth:`system_peer`), fenced through the Curator client."""

    language = "java"
    #: The peer of another lock system, while there is one; how many were made.
    peer: SystemPeer | None = None
    peers_made = 0

    def connect(self) -> None:
        self.curator = new_curator(
            self.hosts,
            session_timeout_ms=int(self.session_s * 1000),
            connection_timeout_ms=int(self.session_s * 1000),
        )
        self.latch: JavaLatch | None = None
        self.rejected = False  # the last fence's outcome, for a peer of another system
        if self.kind == "mutex":
            self.mutex: Any = JavaMutex(self.curator, MUTEX)
        elif self.kind == "lease":
            self.semaphore = JavaSemaphore(self.curator, SEMAPHORE, SEMAPHORE_MAX)
        elif self.kind == "selector":
            self.selector = JavaSelector(
                self.curator, SELECTOR, self.lead, self.who, auto_requeue=True
            )
            self.selector.start()
        elif self.kind != "latch":
            rw = JavaReadWriteLock(self.curator, RW)
            self.mutex = rw.write_lock() if self.kind == "write" else rw.read_lock()
        self.lease: Any = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.latch is not None:
                self.latch.close()
            if self.kind == "selector":
                self.selector.close()
        self.drop_peer()
        with contextlib.suppress(Exception):
            self.curator.close()

    def now(self) -> int:
        return java_nano_time()

    def connected(self) -> bool:
        peer = self.peer
        return bool(self.curator.getZookeeperClient().isConnected()) and (
            peer is None or _connected(peer)
        )

    def clients(self) -> dict[int, str]:
        sessions = {session_of(self.curator)[0]: "Curator client"}
        peer = self.peer
        if peer is not None:
            recipe = RECIPES[ZKWRITE if self.kind == "zk-write" else MENAGERIE]
            sessions[peer.session_id] = f"{recipe} peer #{self.peers_made}"
        return sessions

    def owned(self) -> set[str]:
        if self.kind == "latch":
            node = None if self.latch is None else self.latch.our_path
        elif self.kind == "selector":
            node = self.selector.lock_path
        else:
            node = None
        return set() if node is None else {node}

    def session(self) -> tuple[int, bytes]:
        """The lock's session: the peer's for another system, else the Curator client's."""
        peer = self.peer
        if peer is not None:
            return peer.session_id, peer.session_password
        return session_of(self.curator)

    def system_peer(self) -> SystemPeer:
        """The peer to acquire with: the last one, or a new one (a new session) if it was
        dropped or, for a WriteLock, its session expired (the object is then dead).

        The peer is dropped after a timeout, an error or a rejected fence, and its session
        closed, so that what the Java originals leave behind goes with that session: a
        WriteLock waiter cancelled on timeout still takes the lock later (its bug 3);
        menagerie's lock, once a wait saw an expiry, makes a node and fails at every later
        acquire (bug 2), and a ZooKeeper error in ``tryLock(time)`` leaves its node.
        """
        peer = self.peer
        if isinstance(peer, JavaZkRecipesWriteLock) and not _alive(peer):
            self.drop_peer()
            peer = None
        if peer is None:
            timeout_ms = int(self.session_s * 1000)
            if self.kind == "zk-write":
                peer = JavaZkRecipesWriteLock(self.hosts, ZKWRITE, session_timeout_ms=timeout_ms)
            else:
                peer = JavaReentrantZkLock(self.hosts, MENAGERIE, session_timeout_ms=timeout_ms)
            self.peer = peer
            self.peers_made += 1
        return peer

    def drop_peer(self) -> None:
        """Close the peer, and its session with every node it left."""
        peer, self.peer = self.peer, None
        if peer is not None:
            with contextlib.suppress(Exception):
                peer.close()

    def _acquire_system(self) -> tuple[str, int] | None:
        """The peer's node and its czxid once it holds the lock, or None after a timeout (the
        peer dropped)."""
        self.rejected = False
        peer = self.system_peer()
        try:
            node = peer.lock_path if peer.acquire(timeout=2) else None
        except Exception:
            self.drop_peer()
            raise
        if node is None:
            self.drop_peer()
            return None
        # a WriteLock that found its own node after a lost reply knows it by its bare name
        node = node if node.startswith("/") else f"{ZKWRITE}/{node}"
        stat = None
        with contextlib.suppress(Exception):  # the session ended: the fence will be rejected
            stat = peer.session.zookeeper().exists(node, False)
        return node, int(stat.getCzxid()) if stat is not None else 0

    def _read_through_peer(self, peer: SystemPeer, path: str) -> int | None:
        """``path``'s value as the peer's session sees it, or None once that session is gone
        (and the hold's node with it)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                return int(bytes(peer.session.zookeeper().getData(path, False, None)))
            except Exception:
                if not _alive(peer):
                    return None
                time.sleep(0.05)
        return None

    def _release_system(self) -> None:
        """Release; after a rejected fence (the node gone with its session) drop the peer."""
        peer = self.peer
        if self.rejected or peer is None:
            self.drop_peer()
            return
        try:
            peer.release()
        except Exception:
            self.drop_peer()
            raise

    def acquire(self) -> tuple[str, int] | None:
        if self.kind == "lease":
            self.lease = self.semaphore.acquire(timeout=2)
            if self.lease is None:
                return None
            node = self.lease.path
        elif self.kind == "latch":
            if self.latch is None:
                self.latch = JavaLatch(self.curator, LATCH, self.who)
                self.latch.start()
            if not self.latch.wait(timeout=2):
                return None
            # Curator's latch, reconnected, deletes its node and makes a new one (reset()),
            # perhaps as wait() returns: the node of a term is the one still ours while the
            # latch leads; a hold fenced on the new node would fence a term that has ended
            node = self.latch.our_path
            if node is None or not self.latch.has_leadership() or self.latch.our_path != node:
                return None
        elif self.kind == "selector":
            if self.next_term() is None:
                return None
            node = self.selector.lock_path or f"{SELECTOR}/(gone)"
        elif self.kind in SYSTEM_KINDS:
            return self._acquire_system()
        else:
            if not self.mutex.acquire(timeout=2):
                return None
            # the session ended in between: the fence will be rejected
            node = self.mutex.lock_path or f"{self.mutex.path}/(gone)"
        stat = self.curator.checkExists().forPath(node)
        return node, int(stat.getCzxid()) if stat is not None else 0

    def release(self) -> None:
        if self.kind == "lease":
            self.lease.close()
        elif self.kind == "latch":
            latch, self.latch = self.latch, None  # a term ends by leaving; the next joins anew
            assert latch is not None
            latch.close()
        elif self.kind == "selector":
            self.end_term()
        elif self.kind in SYSTEM_KINDS:
            self._release_system()
        else:
            self.mutex.release()

    def read_counter(self) -> int:
        """The counter, read through the session that took the lock: for a peer of another
        system, its own session, which saw the predecessor's node go and so has applied the
        predecessor's fence (a server applies writes in order); the Curator client's session
        may be on a server that has not yet, and would read an old value."""
        path = counter_path(self.lock)
        peer = self.peer
        value = None if peer is None else self._read_through_peer(peer, path)
        if value is not None:
            return value
        return retry(lambda: int(bytes(self.curator.getData().forPath(path))), Exception)

    def commit(self, hold: Hold, value: int | None) -> Outcome:
        import jpype

        ops = self.curator.transactionOp()
        operations = [ops.check().forPath(hold.node)]
        if value is not None:
            data = jpype.JArray(jpype.JByte)(str(value).encode())
            entry = jpype.JArray(jpype.JByte)(log_entry(hold, value))
            operations.append(ops.setData().forPath(counter_path(self.lock), data))
            operations.append(ops.create().forPath(log_path(self.lock, hold.hold_id), entry))
        try:
            self.curator.transaction().forOperations(jclass("java.util.Arrays").asList(operations))
        except Exception as exc:
            name = type(exc).__name__
            if "NoNode" in name or "NoNode" in str(exc):
                self.rejected = True
                return "rejected"
            return "unknown"
        return "fenced"

    def logged(self, hold: Hold) -> bool:
        path = log_path(self.lock, hold.hold_id)
        return retry(lambda: self.curator.checkExists().forPath(path) is not None, Exception)


def _connected(peer: SystemPeer) -> bool:
    """Whether the peer's ZooKeeper handle is connected."""
    try:
        return bool(peer.session.zookeeper().getState().isConnected())
    except Exception:
        return False


def _alive(peer: SystemPeer) -> bool:
    """Whether the peer's ZooKeeper handle is alive (not closed, its session not expired)."""
    try:
        return bool(peer.session.zookeeper().getState().isAlive())
    except Exception:
        return False
