"""Sending the requests kazoo cannot send itself, and making container parents.

The jute records of those requests (``createContainer``, ``removeWatches``, a listing reduced
as it is read) live with the transport (:mod:`pycurator._client.transport`) and are named here too.
:func:`container_parents_steps` makes a node's parents as steps that say what they send (for
the lock engine); the other helpers send through a client themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.serialization import Exists
from kazoo.security import OPEN_ACL_UNSAFE

from .._protocol.deadline import Deadline
from .._protocol.ops import CreateNode, MakeContainer
from .._protocol.steps import Await, Chroot, Send, Steps
from . import kazoo_internals
from .runners import run
from .transport import (
    CAN_REMOVE_WATCHES,
    CONTAINER_FLAG,
    OP_CREATE_CONTAINER,
    OP_REMOVE_WATCHES,
    WATCHER_TYPE_CHILDREN,
    WATCHER_TYPE_DATA,
    CreateContainer,
    ReducedChildren,
    RemoveWatches,
    create_node_async,
    prefixed,
    reduced_children_async,
    remove_watches,
)


def send_steps(client: KazooClient, request: Any, deadline: Deadline | None = None) -> Steps[Any]:
    """Send one request and wait for its reply (no longer than ``deadline``, if given: then
    :class:`DeadlineExpired`); kazoo's errors are raised as kazoo raises them."""
    result = client.handler.async_result()
    kazoo_internals.call(client, request, result)
    return (yield Await(result, deadline or Deadline(None)))


def send(client: KazooClient, request: Any, deadline: Deadline | None = None) -> Any:
    """:func:`send_steps`, blocking."""
    return run(client, send_steps(client, request, deadline))


def create_container(
    client: KazooClient,
    path: str,
    acl: Sequence[Any] | None = None,
    deadline: Deadline | None = None,
) -> bool:
    """Create ``path`` as an empty CONTAINER node; False if it exists already."""
    return run(client, _create_container_at(client, prefixed(client, path), acl, deadline))


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
    """:func:`ensure_container_parents_steps`, blocking."""
    run(client, ensure_container_parents_steps(client, path, acl, deadline))


def ensure_container_parents_steps(
    client: KazooClient,
    path: str,
    acl: Sequence[Any] | None = None,
    deadline: Deadline | None = None,
) -> Steps[None]:
    """Create every missing ancestor of ``path`` (not ``path`` itself) as a CONTAINER node.

    As Curator's ``creatingParentContainersIfNeeded``. The deepest parent is tried first, so one
    request suffices when only it is missing. A missing chroot is made too, as Curator makes its
    namespace: CONTAINER nodes with the client's default ACL (not ``acl``). The server's error
    for an ancestor it refuses is raised unchanged.
    """
    chroot = client.chroot or ""
    yield from _ensure_parents_at(client, chroot + path, len(chroot), acl, deadline)


def _ensure_parents_at(
    client: KazooClient,
    server_path: str,
    chroot_length: int,
    acl: Sequence[Any] | None,
    deadline: Deadline | None,
) -> Steps[None]:
    parent = server_path.rsplit("/", 1)[0]
    if not parent:
        return
    parent_acl = acl if len(parent) > chroot_length else None
    try:
        yield from _create_container_at(client, parent, parent_acl, deadline)
    except NoNodeError:
        yield from _ensure_parents_at(client, parent, chroot_length, acl, deadline)
        yield from _create_container_at(client, parent, parent_acl, deadline)


def container_parents_steps(
    path: str, acl: Sequence[Any] | None = None, deadline: Deadline | None = None
) -> Steps[None]:
    """:func:`ensure_container_parents_steps` as requests
    (:class:`~pycurator._protocol.ops.MakeContainer`) sent by the runner: the same containers, the
    same ACLs, the same errors."""
    chroot = yield Chroot()
    yield from _parents_sent(chroot + path, len(chroot), acl, deadline or Deadline(None))


def _parents_sent(
    server_path: str, chroot_length: int, acl: Sequence[Any] | None, deadline: Deadline
) -> Steps[None]:
    parent = server_path.rsplit("/", 1)[0]
    if not parent:
        return
    parent_acl = acl if len(parent) > chroot_length else None
    try:
        yield from _container_sent(parent, parent_acl, deadline)
    except NoNodeError:
        yield from _parents_sent(parent, chroot_length, acl, deadline)
        yield from _container_sent(parent, parent_acl, deadline)


def _container_sent(server_path: str, acl: Sequence[Any] | None, deadline: Deadline) -> Steps[bool]:
    """Make the container ``server_path``; False if it exists already."""
    try:
        yield Await((yield Send(MakeContainer(server_path, acl))), deadline)
    except NodeExistsError:
        return False
    return True


def persistent_parents_steps(
    path: str, acl: Sequence[Any] | None = None, deadline: Deadline | None = None
) -> Steps[None]:
    """Make the missing ancestors of ``path`` (the client's path) as empty PERSISTENT nodes
    with ``acl``, as the Java lock systems other than Curator make their lock's directory
    (they make only its last level; missing levels above it are made too, and a missing
    chroot as containers, as :func:`container_parents_steps` makes it). A level made
    meanwhile by someone else is fine; any other error of the server is raised unchanged."""
    parent = path.rsplit("/", 1)[0]
    deadline = deadline or Deadline(None)
    if not parent:  # only the chroot can be missing: made as Curator makes its namespace
        chroot = yield Chroot()
        if chroot:
            yield from _parents_sent(chroot + path, len(chroot), acl, deadline)
        return
    try:
        yield from _persistent_sent(parent, acl, deadline)
    except NoNodeError:
        yield from persistent_parents_steps(parent, acl, deadline)
        yield from _persistent_sent(parent, acl, deadline)


def _persistent_sent(path: str, acl: Sequence[Any] | None, deadline: Deadline) -> Steps[None]:
    with contextlib.suppress(NodeExistsError):
        yield Await((yield Send(CreateNode(path, b"", acl))), deadline)


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
    "CAN_REMOVE_WATCHES",
    "CONTAINER_FLAG",
    "OP_CREATE_CONTAINER",
    "OP_REMOVE_WATCHES",
    "WATCHER_TYPE_CHILDREN",
    "WATCHER_TYPE_DATA",
    "CreateContainer",
    "ReducedChildren",
    "RemoveWatches",
    "container_parents_steps",
    "create_container",
    "create_node_async",
    "ensure_container_parents",
    "ensure_container_parents_steps",
    "make_containers_steps",
    "persistent_parents_steps",
    "prefixed",
    "reduced_children_async",
    "remove_watches",
    "send",
    "send_steps",
]
