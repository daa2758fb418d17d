"""Sending requests kazoo cannot send itself through a client, blocking or as steps bound to it:
a container, a node's container parents, the namespace's levels (for ``connect()``).

The jute records of those requests (``createContainer``, ``removeWatches``, a listing reduced
as it is read) are the transport's (:mod:`pycurator._client.transport`); making a node's parents
as steps that say what they send, for any runner, is the protocol's
(:mod:`pycurator._protocol.parents`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.protocol.serialization import Exists
from kazoo.security import OPEN_ACL_UNSAFE

from .._protocol.deadline import Deadline
from .._protocol.parents import container_parents_steps
from .._protocol.steps import Await, Steps
from .runners import run, transport_of
from .transport import CreateContainer, prefixed, sent


def send_steps(client: KazooClient, request: Any, deadline: Deadline | None = None) -> Steps[Any]:
    """Send one request and wait for its reply (no longer than ``deadline``, if given: then
    :class:`DeadlineExpired`); kazoo's errors are raised as kazoo raises them."""
    return (yield Await(sent(client, request), deadline or Deadline(None)))


def send(client: KazooClient, request: Any, deadline: Deadline | None = None) -> Any:
    """:func:`send_steps`, blocking."""
    return run(transport_of(client), send_steps(client, request, deadline))


def create_container(
    client: KazooClient,
    path: str,
    acl: Sequence[Any] | None = None,
    deadline: Deadline | None = None,
) -> bool:
    """Create ``path`` as an empty CONTAINER node; False if it exists already."""
    return run(
        transport_of(client), _create_container_at(client, prefixed(client, path), acl, deadline)
    )


def _create_container_at(
    client: KazooClient, server_path: str, acl: Sequence[Any] | None, deadline: Deadline | None
) -> Steps[bool]:
    """:func:`create_container` for a path as the server names it (chroot included)."""
    try:
        yield from send_steps(
            client,
            CreateContainer(server_path, b"", list(acl or client.default_acl or OPEN_ACL_UNSAFE)),
            deadline,
        )
    except NodeExistsError:
        return False
    return True


def ensure_container_parents(
    client: KazooClient,
    path: str,
    acl: Sequence[Any] | None = None,
    deadline: Deadline | None = None,
) -> None:
    """Create every missing ancestor of ``path`` (not ``path`` itself) as a CONTAINER node,
    blocking (:func:`~pycurator._protocol.parents.container_parents_steps`).

    As Curator's ``creatingParentContainersIfNeeded``. The deepest parent is tried first, so one
    request suffices when only it is missing. A missing chroot is made too, as Curator makes its
    namespace: CONTAINER nodes with the client's default ACL (not ``acl``). The server's error
    for an ancestor it refuses is raised unchanged.
    """
    run(transport_of(client), container_parents_steps(path, acl, deadline))


def make_containers_steps(
    client: KazooClient, server_path: str, below: int, deadline: Deadline | None = None
) -> Steps[None]:
    """Make ``server_path`` (as the server names it, chroot included) and its missing ancestors
    longer than ``below`` characters, as Curator makes its namespace (``ZKPaths.mkdirs`` with
    containers): ``exists`` from the node up to the first level that exists, so no right to
    create above it is needed, then each missing level from there down as an empty CONTAINER
    node with the client's default ACL (open to all when it has none). A level made meanwhile
    by someone else is fine; any other error of the server is raised unchanged."""
    levels = [server_path[:i] for i, c in enumerate(server_path) if c == "/" and i > below]
    levels.append(server_path)
    missing = 0
    for level in reversed(levels):
        if (yield from send_steps(client, Exists(level, None), deadline)) is not None:
            break
        missing += 1
    for level in levels[len(levels) - missing :]:
        yield from _create_container_at(client, level, None, deadline)


__all__ = [
    "create_container",
    "ensure_container_parents",
    "make_containers_steps",
    "send",
    "send_steps",
]
