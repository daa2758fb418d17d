"""Making the levels of a path that are missing, as steps (:mod:`pycurator._protocol.steps`) that
say what they send; one way, Curator's, for every caller: a lock's parents as containers
(Curator's ``creatingParentContainersIfNeeded``), the other Java lock systems' persistent
directories, and a client's namespace (Curator's ``ZKPaths.mkdirs`` of it, as containers).

The deepest missing level is made first: when only it is missing (a container the server
reaped), one request does. A level whose parent is missing too (``NoNodeError``) waits for
its parent to be made, the same way, and is made again. So a level is created only once it is
known to be missing, and no right to create is needed above the first level that exists, as
Curator's ``mkdirs`` checks from the deepest level up. A level made meanwhile by someone else
is fine; any other error of the server is raised unchanged.

Levels are named as the server names them (chroot included): a missing chroot is made as
Curator makes its namespace, as containers with the client's default ACL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from .deadline import Deadline
from .requests import CreateMode, CreateParent, NodeExists
from .steps import Await, Chroot, Send, Steps


def parents_steps(
    path: str,
    acl: Sequence[Any] | None = None,
    deadline: Deadline | None = None,
    mode: CreateMode = CreateMode.CONTAINER,
) -> Steps[None]:
    """Make every missing ancestor of ``path`` (the client's path; not ``path`` itself) in
    ``mode`` with ``acl``: CONTAINER nodes by default, as Curator's
    ``creatingParentContainersIfNeeded``, or PERSISTENT ones, as the Java lock systems other
    than Curator make their lock's directory. A missing chroot is made too, as containers with
    the client's default ACL (not ``acl``)."""
    chroot = yield Chroot()
    parent = (chroot + path).rsplit("/", 1)[0]
    if parent:
        yield from _level_steps(parent, len(chroot), 0, mode, acl, deadline or Deadline(None))


def namespace_steps(below: int, deadline: Deadline | None = None) -> Steps[None]:
    """Make the client's chroot (its namespace) if it is missing, and its missing levels longer
    than ``below`` characters, as Curator makes a namespace: empty CONTAINER nodes with the
    client's default ACL (open to all when it has none). ``exists`` of the chroot first, so an
    existing namespace needs no right to create at all; the ``NoNodeError`` of a level not to
    be made (``below``: a chroot the connect string names) is raised unchanged."""
    deadline = deadline or Deadline(None)
    if (yield Await((yield Send(NodeExists("/"))), deadline)) is not None:
        return
    chroot = yield Chroot()
    yield from _level_steps(chroot, len(chroot), below, CreateMode.CONTAINER, None, deadline)


def _level_steps(
    level: str,
    chroot_length: int,
    below: int,
    mode: CreateMode,
    acl: Sequence[Any] | None,
    deadline: Deadline,
) -> Steps[None]:
    """Make ``level`` (a server path), and first its missing parents (those longer than
    ``below`` characters); a level of the chroot (no longer than ``chroot_length``) as a
    container with the client's default ACL."""
    inside = len(level) > chroot_length
    request = CreateParent(level, mode if inside else CreateMode.CONTAINER, acl if inside else None)
    try:
        yield Await((yield Send(request)), deadline)
    except NodeExistsError:
        return
    except NoNodeError:
        parent = level.rsplit("/", 1)[0]
        if len(parent) <= below or not parent:
            raise
        yield from _level_steps(parent, chroot_length, below, mode, acl, deadline)
        with contextlib.suppress(NodeExistsError):
            yield Await((yield Send(request)), deadline)


__all__ = ["namespace_steps", "parents_steps"]
