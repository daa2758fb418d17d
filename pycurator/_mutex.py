"""``InterProcessMutex``: Curator's re-entrant, fair mutex."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from ._checks import ConnectionPolicy, check_client_type, check_data
from ._drivers import MUTEX_DRIVER
from ._engine import LockEngine
from ._lock import ReentrantLock
from ._paths import validate_path


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
            mutex_engine(client, path, node_data, acl), connection_policy=connection_policy
        )


def mutex_engine(
    client: KazooClient, path: str, node_data: bytes | None, acl: Sequence[Any] | None
) -> LockEngine:
    """The engine of a mutex on ``path`` (Curator's ``lock-`` nodes, the standard driver),
    after checking every argument: shared by the threaded and the asyncio mutex."""
    validate_path(path)
    check_client_type(client)
    check_data(node_data)
    return LockEngine(client, path, MUTEX_DRIVER, data=node_data, acl=acl)


__all__ = ["InterProcessMutex", "mutex_engine"]
