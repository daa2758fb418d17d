"""``ZkLocker``: the lock of the Java library ZkLocker (``com.fankux.zklocker.ZkLocker``),
shared with it on the same parent, with pycurator's conventions.

Java and Python agree on who holds: the same names, data, mode, filter and order
(:mod:`pycurator._protocol.zklocker`). The Python side leaves no node behind a timeout, an error or
a cancellation, finds a create whose answer was lost again by its session's prefix (without
taking another acquire's node), follows its node while it holds (the lost notice on expiry),
and waits for its predecessor with a watch, within its deadline whatever the connection does.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from ._engine.zklocker import zklocker_engine
from ._protocol import wire
from ._protocol.checks import ConnectionPolicy
from ._threads.lock import ReentrantLock

#: Java's parent, always (``ZkLocker.DIR``).
JAVA_PARENT = wire.ZKLOCKER_JAVA_PARENT


class ZkLocker(ReentrantLock):
    """A re-entrant lock named ``key`` (None: ZkLocker's keyless lock) under ``parent``, shared
    with Java's ``ZkLocker.lock(key)`` (whose parent is always ``/parent``).

    Nodes are ``<parent>/dlk-<key>-<sessionId>-<seq10>`` (``dlk-<sessionId>-<seq10>`` without
    a key), EPHEMERAL_SEQUENTIAL, with no data (Java's null) and ``OPEN_ACL_UNSAFE``; missing
    parents are made PERSISTENT. Other children of the parent are left alone. Fair: waiters are
    served in the order their nodes were made, whatever their language.

    Keys overlap in Java (a keyless locker counts every keyed node, key ``a`` counts the nodes
    of key ``a-b``): this lock waits for every node Java with its key waits for, and also for
    the nodes of a key whose Java locker counts this lock's node. One key style per parent
    (every locker keyed, or every locker keyless) is the configuration safe with Java.

    Held per thread and per object, as :class:`~pycurator.InterProcessMutex`: a thread that
    holds it may acquire it again, and must release it as many times. ``key``: a non-empty
    str that does not end with ``-`` and holds no ``/`` (ValueError otherwise).
    """

    def __init__(
        self,
        client: KazooClient,
        parent: str,
        key: str | None = None,
        *,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        engine = zklocker_engine(client, parent, key)
        super().__init__(engine, connection_policy=connection_policy, recipe="zklocker")
        self._key = key

    @property
    def key(self) -> str | None:
        """The lock's key, as given (None: the keyless lock)."""
        return self._key

    def __repr__(self) -> str:
        return f"ZkLocker({self.path!r}, {self.key!r})"


__all__ = ["JAVA_PARENT", "ZkLocker"]
