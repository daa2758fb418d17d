"""The asyncio ``ZkLocker``: the threaded one's engine and rules (:mod:`pycurator.zklocker`),
awaited instead of blocked on, owned per asyncio task."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._protocol import wire
from .._protocol.checks import ConnectionPolicy
from .._recipes.zklocker import zklocker_engine
from ._lock import AsyncReentrantLock
from ._runner import transport_of

#: Java's parent, always (``ZkLocker.DIR``).
JAVA_PARENT = wire.ZKLOCKER_JAVA_PARENT


class ZkLocker(AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.zklocker.ZkLocker`: the same nodes, queue and
    rules, shared with Java's ZkLocker and threaded pycurator; re-entrant per task."""

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
        return f"aio.ZkLocker({self.path!r}, {self.key!r})"


__all__ = ["JAVA_PARENT", "ZkLocker"]
