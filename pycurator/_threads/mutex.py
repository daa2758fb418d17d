"""``InterProcessMutex``: Curator's re-entrant, fair mutex."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._protocol.checks import ConnectionPolicy
from .._recipes.lock_engine import mutex_engine
from .lock import ReentrantLock


class InterProcessMutex(ReentrantLock):
    """A re-entrant mutex shared with Java Curator's ``InterProcessMutex`` on the same path.

    Fair: waiters are served in the order their nodes were created, whatever their language.
    Nodes are ``PATH/_c_<uuid>-lock-<seq>``, ephemeral sequential, holding ``node_data`` (by
    default the host address, as Curator writes it); missing parents are made as containers.
    """

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
