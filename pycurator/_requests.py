"""ZooKeeper requests that kazoo cannot send itself, sent through kazoo's connection.

kazoo serialises any request object with ``type``, ``serialize()`` and ``deserialize()``; these
follow ZooKeeper's jute records.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.protocol.serialization import (
    Create2,
    Exists,
    GetChildren,
    read_string,
    write_buffer,
    write_string,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from . import _kazoo
from ._deadline import Deadline
from ._steps import Await, Steps, run

#: ZooKeeper's ``CreateMode.CONTAINER`` flag.
CONTAINER_FLAG = 4
#: ``ZooDefs.OpCode.createContainer``.
OP_CREATE_CONTAINER = 19
#: ``ZooDefs.OpCode.removeWatches``.
OP_REMOVE_WATCHES = 18
#: ``Watcher.WatcherType.Data`` as sent in a removeWatches request.
WATCHER_TYPE_DATA = 2
#: ``Watcher.WatcherType.Children``.
WATCHER_TYPE_CHILDREN = 1

_int = struct.Struct("!i")
_stat = struct.Struct("!qqqqiiiqiiq")


def prefixed(client: KazooClient, path: str) -> str:
    chroot: str = client.chroot or ""
    return chroot + path if path != "/" or not chroot else chroot


@dataclass(frozen=True)
class CreateContainer:
    """``createContainer``: a CONTAINER node, which the server deletes once it had children and is
    empty again. The reply carries the created path and its stat (``Create2Response``)."""

    path: str
    data: bytes
    acl: Sequence[Any]
    flags: int = CONTAINER_FLAG

    type: ClassVar[int] = OP_CREATE_CONTAINER

    def serialize(self) -> bytearray:
        b = bytearray()
        b.extend(write_string(self.path))
        b.extend(write_buffer(self.data))
        b.extend(_int.pack(len(self.acl)))
        for acl in self.acl:
            b.extend(_int.pack(acl.perms) + write_string(acl.id.scheme) + write_string(acl.id.id))
        b.extend(_int.pack(self.flags))
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> tuple[str, ZnodeStat]:
        path, offset = read_string(data, offset)
        return path, ZnodeStat._make(_stat.unpack_from(data, offset))


@dataclass(frozen=True)
class ReducedChildren:
    """``getChildren`` without a watch, whose answer is reduced as the connection thread reads
    it: the listing goes to ``reduce`` there, and only what that returns is kept for the
    reader. A listing nobody has read yet then costs nothing while its reader waits its turn
    (thousands of tasks queueing at once on one event loop would otherwise hold thousands of
    listings of thousands of names each, until the loop came to them). ``reduce`` must not
    raise: kazoo logs an error raised there."""

    path: str
    reduce: Callable[[list[str]], Any]

    type: ClassVar[int] = GetChildren.type

    def serialize(self) -> bytearray:
        return bytearray(GetChildren(self.path, None).serialize())

    def deserialize(self, data: bytes, offset: int) -> Any:
        return self.reduce(GetChildren.deserialize(data, offset))


def reduced_children_async(
    client: KazooClient, path: str, reduce: Callable[[list[str]], Any]
) -> Any:
    """An async result answered with ``reduce(children of path)``, the reduction made by the
    connection thread as the reply is read (:class:`ReducedChildren`); errors are kazoo's
    (NoNodeError when ``path`` is gone)."""
    result = client.handler.async_result()
    _kazoo.call(client, ReducedChildren(prefixed(client, path), reduce), result)
    return result


@dataclass(frozen=True)
class RemoveWatches:
    """``removeWatches`` for the data watches this session holds on ``path``."""

    path: str
    watcher_type: int = WATCHER_TYPE_DATA

    type: ClassVar[int] = OP_REMOVE_WATCHES

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + _int.pack(self.watcher_type))

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> None:
        return None


def create_node_async(
    client: KazooClient,
    path: str,
    data: bytes,
    acl: Sequence[Any] | None,
    *,
    ephemeral: bool,
    sequence: bool,
) -> Any:
    """kazoo's ``create_async(path, data, acl, ephemeral, sequence, include_data=True)`` without
    its completion step: the answer, ``(server path, stat)``, is set on the returned async
    result by the connection thread itself, where kazoo's would go through its completion
    worker first (a thread hand-off per create). The path is the server's, chroot included
    (``client.unchroot`` gives the client's); errors are kazoo's (NoNodeError when a parent is
    missing: no parent is made). No ``acl`` (or an empty one) is the client's default ACL, or
    open to all when it has none, as kazoo's ``create`` does."""
    flags = (1 if ephemeral else 0) | (2 if sequence else 0)
    result = client.handler.async_result()
    _kazoo.call(
        client,
        Create2(
            prefixed(client, path), data, list(acl or client.default_acl or OPEN_ACL_UNSAFE), flags
        ),
        result,
    )
    return result


def send_steps(client: KazooClient, request: Any, deadline: Deadline | None = None) -> Steps[Any]:
    """Send one request and wait for its reply (no longer than ``deadline``, if given: then
    :class:`DeadlineExpired`); kazoo's errors are raised as kazoo raises them."""
    result = client.handler.async_result()
    _kazoo.call(client, request, result)
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


#: Whether this kazoo can read the server's answer to a removeWatches for a watch that is gone
#: (``NoWatcherError``, kazoo 2.11.0 on): an older kazoo (below the package's floor, installed
#: anyway) ends its connection loop on it, so there the request is not sent.
CAN_REMOVE_WATCHES = _kazoo.reads_error(_kazoo.NO_WATCHER)


def remove_watches(client: KazooClient, path: str, watcher_type: int = WATCHER_TYPE_DATA) -> bool:
    """Ask the server to drop this session's data (or child) watches on ``path``, without
    waiting for the answer: a missing watch or a lost connection is fine (the watch dies with
    the session). Whether the request was queued: on a kazoo older than 2.11 it is never sent
    (see :data:`CAN_REMOVE_WATCHES`), and the server keeps the watch until it fires or the
    session ends."""
    if not CAN_REMOVE_WATCHES:
        return False
    with contextlib.suppress(KazooException):
        _kazoo.call(
            client,
            RemoveWatches(prefixed(client, path), watcher_type),
            client.handler.async_result(),
        )
        return True
    return False


__all__ = [
    "CAN_REMOVE_WATCHES",
    "CreateContainer",
    "ReducedChildren",
    "RemoveWatches",
    "create_container",
    "ensure_container_parents",
    "ensure_container_parents_steps",
    "make_containers_steps",
    "prefixed",
    "reduced_children_async",
    "remove_watches",
    "send",
    "send_steps",
]
