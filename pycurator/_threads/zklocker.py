"""The threaded ``ZkLocker``, public as :mod:`pycurator.zklocker`."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._protocol import wire
from .._protocol.checks import ConnectionPolicy
from .._recipes.zklocker import zklocker_engine
from .lock import ReentrantLock

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
        engine = zklocker_engine(transport_of(client), parent, key)
        super().__init__(engine, connection_policy=connection_policy, recipe="zklocker")
        self._key = key

    @property
    def key(self) -> str | None:
        """The lock's key, as given (None: the keyless lock)."""
        return self._key

    def __repr__(self) -> str:
        return f"ZkLocker({self.path!r}, {self.key!r})"


__all__ = ["JAVA_PARENT", "ZkLocker"]
