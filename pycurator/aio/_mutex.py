"""The asyncio ``InterProcessMutex``: Curator's re-entrant, fair mutex, owned per task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .._protocol.checks import ConnectionPolicy
from .._recipes.lock_engine import mutex_engine
from ._lock import AsyncReentrantLock
from ._runner import transport_of


class InterProcessMutex(AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.InterProcessMutex`: the same nodes, queue and
    rules, shared with Java Curator and threaded pycurator; re-entrant per task."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(
            mutex_engine(transport_of(client), path, node_data, acl),
            connection_policy=connection_policy,
        )


__all__ = ["InterProcessMutex"]
