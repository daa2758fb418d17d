"""Who holds and who waits on a lock path, and when a node a ``PersistentTtlNode`` keeps
expires, read from the tree, blocking (their steps:
:func:`pycurator._recipes.inspection.inspect_lock_steps`,
:func:`pycurator._recipes.ttl_inspection.ttl_node_steps`)."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._protocol.deadline import Deadline
from .._protocol.ttl import TtlExpiry
from .._recipes.inspection import LockView, inspect_lock_steps
from .._recipes.ttl_inspection import ttl_node_steps
from .runner import run


def inspect_lock(
    client: KazooClient, path: str, permits: int | None = None, layout: str | None = None
) -> LockView:
    """The holders and waiters on ``path``, whatever recipe made them (see
    :func:`~pycurator._recipes.inspection.inspect_lock_steps`), blocking the calling thread."""
    return run(transport_of(client), inspect_lock_steps(path, permits, layout))


def inspect_ttl_node(client: KazooClient, path: str) -> TtlExpiry | None:
    """When the node at ``path`` expires, as its ``touch`` child tells (None for a node no
    ``PersistentTtlNode`` keeps; see :func:`~pycurator._recipes.ttl_inspection.ttl_node_steps`),
    blocking the calling thread (at most the client's session timeout, riding through a
    reconnect)."""
    transport = transport_of(client)
    return run(transport, ttl_node_steps(path, Deadline(transport.session_timeout())))


__all__ = ["inspect_lock", "inspect_ttl_node"]
