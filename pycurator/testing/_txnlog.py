"""How each node was created, read from a local server's transaction log: what no client can
see.

ZooKeeper tells clients ``ephemeralOwner`` 0 for container and TTL nodes alike (its
``DataNode.copyStat`` hides every owner that is not a session), so a kazoo stat cannot tell a
``PERSISTENT`` node from a ``CONTAINER`` or a ``PERSISTENT_WITH_TTL`` one. The server's own log
can: each create is written there as ``CreateTxn`` (with its ephemeral flag),
``CreateContainerTxn`` or ``CreateTTLTxn`` (with its TTL), in jute's binary encoding.
:func:`creations` reads them, with no JVM.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

#: ZooKeeper's txn types (``ZooDefs.OpCode``) that create a node, and ``multi``.
CREATE, MULTI, CREATE2, CREATE_CONTAINER, CREATE_TTL = 1, 14, 15, 19, 21
#: A log file starts with ``ZKLG``, a version and a database id (``FileHeader``).
LOG_MAGIC = b"ZKLG"
_HEADER = struct.Struct(">4siq")
#: After each entry's bytes, jute writes the end-of-record byte ``B``.
END_OF_RECORD = 0x42


class Creation(NamedTuple):
    """One node as the server created it: ``mode`` is ``PERSISTENT``, ``EPHEMERAL``,
    ``CONTAINER`` or ``PERSISTENT_WITH_TTL`` (a sequential node shows as its mode without
    ``_SEQUENTIAL``: the log keeps only the name the sequence made), ``ttl`` in seconds for a TTL
    node (else None), ``zxid`` the transaction's."""

    path: str
    mode: str
    ttl: float | None
    zxid: int


def creations(data_dir: str | os.PathLike[str]) -> list[Creation]:
    """Every node creation in the transaction logs under a server's ``data_dir``
    (:attr:`ZooKeeperServer.data_dir <pycurator.testing.ZooKeeperServer>`), oldest first, those
    inside a ``multi`` included. A server hands a client its answer only once the transaction is
    written, so a create that succeeded is here."""
    logs = sorted(Path(data_dir, "version-2").glob("log.*"), key=lambda p: int(p.suffix[1:], 16))
    return [creation for log in logs for creation in _read_log(log.read_bytes())]


def created_modes(data_dir: str | os.PathLike[str], under: str = "/") -> dict[str, Creation]:
    """The latest creation of each node at or below ``under``, by path (:func:`creations`)."""
    prefix = under.rstrip("/") + "/"
    return {c.path: c for c in creations(data_dir) if c.path == under or c.path.startswith(prefix)}


def _read_log(raw: bytes) -> Iterator[Creation]:
    if len(raw) < _HEADER.size or raw[:4] != LOG_MAGIC:
        return
    reader = _Reader(raw, _HEADER.size)
    while reader.left() >= 12:
        reader.i64()  # the entry's CRC
        length = reader.i32()
        if length <= 0 or reader.left() < length + 1:  # the log's zero padding, or a torn tail
            return
        entry = _Reader(reader.take(length), 0)
        if reader.u8() != END_OF_RECORD:
            return
        entry.i64()  # session
        entry.i32()  # cxid
        zxid = entry.i64()
        entry.i64()  # time
        yield from _creations_in(entry, entry.i32(), zxid)


def _creations_in(entry: _Reader, kind: int, zxid: int) -> Iterator[Creation]:
    if kind == MULTI:
        for _ in range(entry.i32()):
            inner = entry.i32()
            data = entry.buffer()
            if data:
                yield from _creations_in(_Reader(data, 0), inner, zxid)
        return
    if kind not in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL):
        return
    path = entry.string()
    entry.buffer()  # data
    for _ in range(max(entry.i32(), 0)):  # ACLs: perms, scheme, id
        entry.i32()
        entry.string()
        entry.string()
    if kind == CREATE_CONTAINER:
        yield Creation(path, "CONTAINER", None, zxid)
    elif kind == CREATE_TTL:
        entry.i32()  # parent's cversion
        yield Creation(path, "PERSISTENT_WITH_TTL", entry.i64() / 1000, zxid)
    else:
        yield Creation(path, "EPHEMERAL" if entry.u8() else "PERSISTENT", None, zxid)


class _Reader:
    """jute's binary encoding, big-endian: what a log entry is made of."""

    def __init__(self, raw: bytes, at: int) -> None:
        self.raw = raw
        self.at = at

    def left(self) -> int:
        return len(self.raw) - self.at

    def take(self, size: int) -> bytes:
        if size > self.left():
            raise ValueError(f"a transaction log entry ends {size - self.left()} bytes early")
        chunk = self.raw[self.at : self.at + size]
        self.at += size
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def i32(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def i64(self) -> int:
        value: int = struct.unpack(">q", self.take(8))[0]
        return value

    def buffer(self) -> bytes | None:
        size = self.i32()
        return None if size < 0 else self.take(size)

    def string(self) -> str:
        return (self.buffer() or b"").decode("utf-8")
