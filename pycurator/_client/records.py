"""The jute records of the requests kazoo cannot send itself, which pycurator sends through
kazoo's connection: kazoo serialises any request object with ``type``, ``serialize()`` and
``deserialize()``, and these follow ZooKeeper's jute records. A request kazoo lacks has its
record here, and its sending in :data:`pycurator._client.sending.SENDERS`."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kazoo.protocol.serialization import (
    Exists,
    GetChildren,
    GetData,
    read_string,
    write_buffer,
    write_string,
)
from kazoo.protocol.states import ZnodeStat

from .._protocol.requests import CreateMode, WatcherType

#: ``ZooDefs.OpCode.createContainer``.
OP_CREATE_CONTAINER = 19
#: ``ZooDefs.OpCode.removeWatches``.
OP_REMOVE_WATCHES = 18
#: ``ZooDefs.OpCode.createTTL``.
OP_CREATE_TTL = 21
#: ``ZooDefs.OpCode.addWatch``.
OP_ADD_WATCH = 106

_int = struct.Struct("!i")
_long = struct.Struct("!q")
_stat = struct.Struct("!qqqqiiiqiiq")


@dataclass(frozen=True)
class CreateContainer:
    """``createContainer``: a CONTAINER node, which the server deletes once it had children and is
    empty again. The reply carries the created path and its stat (``Create2Response``)."""

    path: str
    data: bytes
    acl: Sequence[Any]
    flags: int = CreateMode.CONTAINER

    type: ClassVar[int] = OP_CREATE_CONTAINER

    def serialize(self) -> bytearray:
        return _create_body(self.path, self.data, self.acl, self.flags)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> tuple[str, ZnodeStat]:
        return _created(data, offset)


def _create_body(path: str, data: bytes | None, acl: Sequence[Any], flags: int) -> bytearray:
    """A create request's path, data, ACL and flags, as jute writes them."""
    b = bytearray()
    b.extend(write_string(path))
    b.extend(write_buffer(data))
    b.extend(_int.pack(len(acl)))
    for entry in acl:
        b.extend(_int.pack(entry.perms) + write_string(entry.id.scheme) + write_string(entry.id.id))
    b.extend(_int.pack(flags))
    return b


def _created(data: bytes, offset: int) -> tuple[str, ZnodeStat]:
    """A ``Create2Response``: the path as the server named it, and the node's stat."""
    path, offset = read_string(data, offset)
    return path, ZnodeStat._make(_stat.unpack_from(data, offset))


@dataclass(frozen=True)
class CreateTTL:
    """``createTTL``: a node in a TTL mode (``flags``), which the server deletes once it has
    no children and was not changed for ``ttl_ms`` milliseconds. The reply is a
    ``Create2Response``, as a container's."""

    path: str
    data: bytes | None
    acl: Sequence[Any]
    flags: int
    ttl_ms: int

    type: ClassVar[int] = OP_CREATE_TTL

    def serialize(self) -> bytearray:
        body = _create_body(self.path, self.data, self.acl, self.flags)
        body.extend(_long.pack(self.ttl_ms))
        return body

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> tuple[str, ZnodeStat]:
        return _created(data, offset)


@dataclass(frozen=True)
class AddWatch:
    """``addWatch``: a watch that stays on ``path`` in ``mode`` (an ``AddWatchMode``).
    ``on_set()`` runs on the connection thread as the server's answer (an ``ErrorResponse``
    of 0) is read, before any event the watch brings: the watch's callbacks are registered
    there, as kazoo registers a one-shot watcher once its request is answered."""

    path: str
    mode: int
    on_set: Callable[[], None]

    type: ClassVar[int] = OP_ADD_WATCH

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + _int.pack(self.mode))

    def deserialize(self, data: bytes, offset: int) -> None:
        self.on_set()


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


@dataclass(frozen=True)
class RemoveWatches:
    """``removeWatches`` for the watches of ``watcher_type`` this session holds on ``path``."""

    path: str
    watcher_type: int = WatcherType.DATA

    type: ClassVar[int] = OP_REMOVE_WATCHES

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + _int.pack(self.watcher_type))

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> None:
        return None


class _KeptHere:
    """A one-shot watch request whose watch the client keeps alone: sent to the server without
    its watch flag, its ``watcher`` still registered by kazoo as the answer is read. For a path
    a watch that stays covers already: the server sends the path's events anyway, and one
    before 3.9 would end the watch that stays with the one-shot's (ZOOKEEPER-4466)."""

    __slots__ = ()
    path: str

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + b"\0")


class KeptData(_KeptHere, GetData):  # type: ignore[misc]
    """``getData`` whose watch the client keeps alone (see :class:`_KeptHere`)."""

    __slots__ = ()


class KeptExists(_KeptHere, Exists):  # type: ignore[misc]
    """``exists`` whose watch the client keeps alone (see :class:`_KeptHere`)."""

    __slots__ = ()


class KeptChildren(_KeptHere, GetChildren):  # type: ignore[misc]
    """``getChildren`` whose watch the client keeps alone (see :class:`_KeptHere`)."""

    __slots__ = ()


__all__ = [
    "OP_ADD_WATCH",
    "OP_CREATE_CONTAINER",
    "OP_CREATE_TTL",
    "OP_REMOVE_WATCHES",
    "AddWatch",
    "CreateContainer",
    "CreateTTL",
    "KeptChildren",
    "KeptData",
    "KeptExists",
    "ReducedChildren",
    "RemoveWatches",
]
