"""Java Curator's recipes behind the interface of pycurator's: one adapter per recipe.

A test can treat a Java contender and a Python one alike: ``JavaMutex(curator, path)`` has
``acquire(timeout=None) -> bool``, ``release()``, ``lock_path`` and ``fencing_token`` as
:class:`pycurator.InterProcessMutex` has; :class:`JavaSemaphore` hands out leases with ``path``
and ``close()``; :class:`JavaLatch` and :class:`JavaSelector` follow pycurator's election
recipes. Each adapter keeps Curator's object in ``java`` for the calls only Java has.

Curator keeps a lock's node to itself; an adapter finds it as the first node of the lock, in
queue order, that its client's session owns. Give each Java lock object its own Curator client
when a test needs its node (as a process would have).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._protocol.errors import LockLostError
from .._protocol.wire import (
    LEASE_NAME,
    LOCK_NAME,
    READ_LOCK_NAME,
    SEMAPHORE_LEASE_PARENT,
    WRITE_LOCK_NAME,
)
from .._threads.latch import Participant
from ._curator import CURATOR, java_acquire, jclass, session_of

#: Curator's lock recipes and its leader recipes, as Java packages.
CURATOR_LOCKS = f"{CURATOR}.framework.recipes.locks"
CURATOR_LEADER = f"{CURATOR}.framework.recipes.leader"


def lock_class(simple_name: str) -> Any:
    """A class of Curator's lock recipes by its simple name, e.g. ``InterProcessMutex``."""
    return jclass(f"{CURATOR_LOCKS}.{simple_name}")


def leader_class(simple_name: str) -> Any:
    """A class of Curator's leader recipes by its simple name, e.g. ``LeaderLatch``."""
    return jclass(f"{CURATOR_LEADER}.{simple_name}")


def java_revocation_listener(on_revoke: Callable[[Any], None]) -> Any:
    """A Java ``RevocationListener`` whose ``revocationRequested(lock)`` calls ``on_revoke``."""
    import jpype

    return jpype.JProxy(
        f"{CURATOR_LOCKS}.RevocationListener", dict={"revocationRequested": on_revoke}
    )


def _millis(timeout: float) -> tuple[int, Any]:
    return int(timeout * 1000), jclass("java.util.concurrent.TimeUnit").MILLISECONDS


def own_node(curator: Any, path: str, token: str) -> str | None:
    """The first child of ``path`` named with ``token``, in queue order, that ``curator``'s
    session owns; None when it owns none."""
    session = session_of(curator)[0]
    try:
        names = [str(name) for name in curator.getChildren().forPath(path)]
    except Exception:  # NoNode, or a connection fault: no node we can name
        return None
    for name in sorted((n for n in names if token in n), key=lambda n: n.rsplit(token, 1)[1]):
        stat = curator.checkExists().forPath(f"{path}/{name}")
        if stat is not None and int(stat.getEphemeralOwner()) == session:
            return f"{path}/{name}"
    return None


def czxid(curator: Any, node: str | None, path: str) -> int:
    """The creation zxid of ``node`` (a fencing token); :class:`LockLostError` if it is gone."""
    stat = None if node is None else curator.checkExists().forPath(node)
    if stat is None:
        raise LockLostError(path, "this client's session owns no node of the lock")
    return int(stat.getCzxid())


class _JavaLock:
    """What the lock adapters share: a Curator lock whose node has ``token`` in its name."""

    token = LOCK_NAME

    def __init__(self, curator: Any, path: str, java: Any, node_parent: str | None = None):
        self.curator = curator
        self.path = path
        self.java = java
        self._node_parent = node_parent or path

    def acquire(self, timeout: float | None = None) -> bool:
        """Curator's ``acquire()`` (no timeout) or ``acquire(ms, MILLISECONDS)``."""
        return java_acquire(self.java, timeout)

    def release(self) -> None:
        self.java.release()

    def is_acquired_in_this_process(self) -> bool:
        return bool(self.java.isAcquiredInThisProcess())

    @property
    def lock_path(self) -> str | None:
        """The node this client's session holds or waits with, or None."""
        return own_node(self.curator, self._node_parent, self.token)

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid; :class:`LockLostError` when we have no node."""
        return czxid(self.curator, self.lock_path, self.path)

    def participant_nodes(self) -> list[str]:
        return [str(node) for node in self.java.getParticipantNodes()]

    def __enter__(self) -> _JavaLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"


class JavaMutex(_JavaLock):
    """Curator's re-entrant ``InterProcessMutex`` (held by the thread that acquired it)."""

    def __init__(self, curator: Any, path: str) -> None:
        super().__init__(curator, path, lock_class("InterProcessMutex")(curator, path))


class JavaReadLock(_JavaLock):
    """The read side of a :class:`JavaReadWriteLock`."""

    token = READ_LOCK_NAME


class JavaWriteLock(_JavaLock):
    """The write side of a :class:`JavaReadWriteLock`."""

    token = WRITE_LOCK_NAME


class JavaReadWriteLock:
    """Curator's ``InterProcessReadWriteLock``: a write holder may take the read lock."""

    def __init__(self, curator: Any, path: str) -> None:
        self.path = path
        self.java = lock_class("InterProcessReadWriteLock")(curator, path)
        self._read = JavaReadLock(curator, path, self.java.readLock())
        self._write = JavaWriteLock(curator, path, self.java.writeLock())

    def read_lock(self) -> JavaReadLock:
        return self._read

    def write_lock(self) -> JavaWriteLock:
        return self._write


class JavaSemaphoreMutex(_JavaLock):
    """Curator's ``InterProcessSemaphoreMutex``: not re-entrant, released from any thread."""

    token = LEASE_NAME

    def __init__(self, curator: Any, path: str) -> None:
        java = lock_class("InterProcessSemaphoreMutex")(curator, path)
        super().__init__(curator, path, java, f"{path}/{SEMAPHORE_LEASE_PARENT}")

    def participant_nodes(self) -> list[str]:
        raise NotImplementedError("Curator's InterProcessSemaphoreMutex lists no participants")


class JavaMultiLock(_JavaLock):
    """Curator's ``InterProcessMultiLock`` over one mutex per path (each with Curator's own
    full timeout); ``lock_path`` is the first path's node."""

    def __init__(self, curator: Any, paths: Sequence[str]) -> None:
        java = lock_class("InterProcessMultiLock")(
            curator, jclass("java.util.Arrays").asList(paths)
        )
        super().__init__(curator, paths[0], java)
        self.paths = list(paths)

    def participant_nodes(self) -> list[str]:
        raise NotImplementedError("Curator's InterProcessMultiLock lists no participants")


class JavaLease:
    """A lease of a :class:`JavaSemaphore`: ``close()`` returns it."""

    def __init__(self, semaphore: JavaSemaphore, java: Any) -> None:
        self.semaphore = semaphore
        self.java = java
        self.node_name = str(java.getNodeName())
        self.path = f"{semaphore.path}/{SEMAPHORE_LEASE_PARENT}/{self.node_name}"

    @property
    def fencing_token(self) -> int:
        return czxid(self.semaphore.curator, self.path, self.path)

    def close(self) -> None:
        self.semaphore.java.returnLease(self.java)

    def __enter__(self) -> JavaLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JavaLease({self.path!r})"


class JavaSemaphore:
    """Curator's ``InterProcessSemaphoreV2``: ``acquire`` gives a lease or None on timeout."""

    def __init__(self, curator: Any, path: str, max_leases: int) -> None:
        self.curator = curator
        self.path = path
        self.java = lock_class("InterProcessSemaphoreV2")(curator, path, max_leases)

    def acquire(self, timeout: float | None = None) -> JavaLease | None:
        if timeout is None:
            return JavaLease(self, self.java.acquire())
        lease = self.java.acquire(*_millis(timeout))
        return None if lease is None else JavaLease(self, lease)

    def acquire_many(self, qty: int, timeout: float | None = None) -> list[JavaLease] | None:
        leases = (
            self.java.acquire(qty) if timeout is None else self.java.acquire(qty, *_millis(timeout))
        )
        return None if leases is None else [JavaLease(self, lease) for lease in leases]

    def return_lease(self, lease: JavaLease) -> None:
        lease.close()

    def participant_nodes(self) -> list[str]:
        return [str(node) for node in self.java.getParticipantNodes()]

    def __repr__(self) -> str:
        return f"JavaSemaphore({self.path!r})"


def _participants(java: Any) -> list[Participant]:
    return [Participant(str(p.getId()), bool(p.isLeader())) for p in java.getParticipants()]


class JavaLatch:
    """Curator's ``LeaderLatch`` with :class:`pycurator.LeaderLatch`'s calls."""

    def __init__(self, curator: Any, path: str, id: str = "") -> None:  # Curator's name for it
        self.curator = curator
        self.path = path
        self.id = id
        self.java = leader_class("LeaderLatch")(curator, path, id)

    def start(self) -> None:
        self.java.start()

    def close(self) -> None:
        self.java.close()

    def has_leadership(self) -> bool:
        return bool(self.java.hasLeadership())

    def wait(self, timeout: float | None = None) -> bool:
        """Wait to lead: True once leading, False after ``timeout`` seconds."""
        if timeout is None:
            self.java.await_()
            return True
        return bool(self.java.await_(*_millis(timeout)))

    @property
    def our_path(self) -> str | None:
        path = self.java.getOurPath()
        return None if path is None else str(path)

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid while we lead; :class:`LockLostError` otherwise."""
        if not self.has_leadership():
            raise LockLostError(self.path, "not leading")
        return czxid(self.curator, self.our_path, self.path)

    def participants(self) -> list[Participant]:
        return _participants(self.java)

    def __repr__(self) -> str:
        return f"JavaLatch({self.path!r}, id={self.id!r})"


class JavaSelector:
    """Curator's ``LeaderSelector``: while it leads, ``lead(curator)`` runs on Curator's thread
    (as ``takeLeadership``); returning gives leadership up. With ``auto_requeue`` it queues
    again."""

    def __init__(
        self,
        curator: Any,
        path: str,
        lead: Callable[[Any], None],
        id: str = "",  # Curator's name for it
        *,
        auto_requeue: bool = False,
    ) -> None:
        import jpype

        self.curator = curator
        self.path = path
        listener = jpype.JProxy(
            f"{CURATOR_LEADER}.LeaderSelectorListener",
            dict={"takeLeadership": lead, "stateChanged": lambda client, state: None},
        )
        self.java = leader_class("LeaderSelector")(curator, path, listener)
        if id:
            self.java.setId(id)
        if auto_requeue:
            self.java.autoRequeue()

    def start(self) -> None:
        self.java.start()

    def requeue(self) -> bool:
        return bool(self.java.requeue())

    def close(self) -> None:
        self.java.close()

    def has_leadership(self) -> bool:
        return bool(self.java.hasLeadership())

    @property
    def lock_path(self) -> str | None:
        """The node this client's session queues or leads with, or None."""
        return own_node(self.curator, self.path, LOCK_NAME)

    def participants(self) -> list[Participant]:
        return _participants(self.java)

    def __repr__(self) -> str:
        return f"JavaSelector({self.path!r})"
