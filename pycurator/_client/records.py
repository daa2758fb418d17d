"""The jute records of the requests kazoo cannot send itself, which pycurator sends through
kazoo's connection: kazoo serialises any request object with ``type``, ``serialize()`` and
``deserialize()``, and these follow ZooKeeper's jute records. A request kazoo lacks has its
record here, and its sending in :data:`pycurator._client.sending.SENDERS`."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kazoo.protocol.serialization import GetChildren, read_string, write_buffer, write_string
from kazoo.protocol.states import ZnodeStat

from .._protocol.requests import CreateMode, WatcherType

#: ``ZooDefs.OpCode.createContainer``.
OP_CREATE_CONTAINER = 19
#: ``ZooDefs.OpCode.removeWatches``.
OP_REMOVE_WATCHES = 18

_int = struct.Struct("!i")
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


__all__ = [
    "OP_CREATE_CONTAINER",
    "OP_REMOVE_WATCHES",
    "CreateContainer",
    "ReducedChildren",
    "RemoveWatches",
]
