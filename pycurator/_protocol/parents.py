"""Making a node's missing parents, as steps (:mod:`pycurator._protocol.steps`) that say what
they send: Curator's containers (``creatingParentContainersIfNeeded``), and the persistent
directories of the other Java lock systems; both make a missing chroot as Curator makes its
namespace."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from .deadline import Deadline
from .ops import CreateNode, MakeContainer
from .steps import Await, Chroot, Send, Steps


def container_parents_steps(
    path: str, acl: Sequence[Any] | None = None, deadline: Deadline | None = None
) -> Steps[None]:
    """Create every missing ancestor of ``path`` (not ``path`` itself) as a CONTAINER node
    (:class:`~pycurator._protocol.ops.MakeContainer`), as Curator's
    ``creatingParentContainersIfNeeded``: the deepest parent first, so one request suffices when
    only it is missing; a missing chroot too, with the client's default ACL (not ``acl``); the
    server's error for an ancestor it refuses raised unchanged."""
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


__all__ = ["container_parents_steps", "persistent_parents_steps"]
