"""ZooKeeper's requests answered on the explorer's :class:`~tests.explorer.server.Server`, as bytes
(jute, ZooKeeper's record format): what the server behind a loopback port
(:mod:`tests.explorer.wire`) and the simulated connection of a kazoo client
(:mod:`tests.explorer.connection`) both answer with, so that kazoo reads the same bytes from
either.

Served: create (the plain form, the one with a stat, a container), delete, exists, data and
children (with or without a stat), set, check, multi (all or nothing), sync, addWatch,
removeWatches, the
ACL read (open to all), ping and auth (accepted); the close is the caller's (it ends a session).
"""

from __future__ import annotations

import struct

from kazoo.exceptions import (
    ConnectionLoss,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
    UnimplementedError,
    ZookeeperError,
)
from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from .server import Server

INT = struct.Struct("!i")
LONG = struct.Struct("!q")
#: A reply's header: its xid, the server's zxid and the error code.
REPLY = struct.Struct("!iqi")
_MULTI = struct.Struct("!i?i")  # a multi's part: type, done, error
_STAT = struct.Struct("!qqqqiiiqiiq")
_EVENTS = {EventType.CREATED: 1, EventType.DELETED: 2, EventType.CHANGED: 3, EventType.CHILD: 4}
_SYNC_CONNECTED = 3
#: The xid of a watch event's notification.
NOTIFICATION_XID = -1
#: The type of the close request.
CLOSE = -11
#: (perms, scheme, id) of the one ACL every node has.
_OPEN_ACL = (31, "world", "anyone")


class Reader:
    """Reads jute's records from one request, front to back."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def i32(self) -> int:
        (value,) = INT.unpack_from(self.data, self.at)
        self.at += 4
        return int(value)

    def i64(self) -> int:
        (value,) = LONG.unpack_from(self.data, self.at)
        self.at += 8
        return int(value)

    def flag(self) -> bool:
        self.at += 1
        return self.data[self.at - 1] != 0

    def buffer(self) -> bytes:
        length = self.i32()
        if length < 0:
            return b""
        self.at += length
        return self.data[self.at - length : self.at]

    def string(self) -> str:
        return self.buffer().decode()

    def acl(self) -> None:
        for _ in range(self.i32()):
            self.i32()
            self.string()
            self.string()


def pack_string(value: str) -> bytes:
    raw = value.encode()
    return INT.pack(len(raw)) + raw


def pack_buffer(value: bytes) -> bytes:
    return INT.pack(len(value)) + value


def pack_stat(stat: ZnodeStat) -> bytes:
    return _STAT.pack(*stat)


def pack_strings(values: list[str]) -> bytes:
    return INT.pack(len(values)) + b"".join(pack_string(value) for value in values)


def answer(server: Server, sid: int, kind: int, request: Reader) -> bytes:
    """The body of the answer to a request of type ``kind`` of session ``sid`` (read from
    ``request``, past its header); the server's error raised (a ``ZookeeperError``, whose
    ``code`` the reply carries)."""
    if kind in (11, 100):  # ping, auth
        return b""
    if not server.alive(sid):  # closed or expired: nothing more is applied for it
        raise SessionExpiredError()
    if kind == 101:  # setWatches: kazoo sends none, and watches went with the connection
        return b""
    if kind == 14:
        return _multi(server, sid, request)
    path = request.string()
    if kind in (1, 15, 19):  # create, create with its stat, a container
        data = request.buffer()
        request.acl()
        flags = request.i32()
        made, stat = server.create(sid, path, data, 4 if kind == 19 else flags)
        return pack_string(made) + (pack_stat(stat) if kind != 1 else b"")
    if kind == 2:
        server.delete(sid, path, request.i32())
        return b""
    if kind == 3:
        stat = server.exists(sid, path, request.flag())
        if stat is None:
            raise NoNodeError()
        return pack_stat(stat)
    if kind == 4:
        data, stat = server.get(sid, path, request.flag())
        return pack_buffer(data) + pack_stat(stat)
    if kind == 5:
        data = request.buffer()
        return pack_stat(server.write(path, data, request.i32()))
    if kind == 6:  # the ACL: open to all
        perms, scheme, ident = _OPEN_ACL
        acl = INT.pack(1) + INT.pack(perms) + pack_string(scheme) + pack_string(ident)
        return acl + pack_stat(server.check(path, -1).stat())
    if kind in (8, 12):
        children, stat = server.children(sid, path, request.flag())
        return pack_strings(children) + (pack_stat(stat) if kind == 12 else b"")
    if kind == 9:
        return pack_string(path)
    if kind == 13:
        server.check(path, request.i32())
        return b""
    if kind == 18:  # removeWatches: 1 children, 2 data, 3 any, 4 staying, 5 staying recursive
        which = request.i32()
        server.remove_watches(
            sid, path, which in (2, 3), which in (1, 3), which in (3, 4), which in (3, 5)
        )
        return b""
    if kind == 106 and server.persistent_watches:  # addWatch: 0 staying, 1 staying recursive
        server.add_watch(sid, path, request.i32() == 1)
        return b""
    raise UnimplementedError()


def _multi(server: Server, sid: int, request: Reader) -> bytes:
    parts: list[tuple[int, bytes]] = []
    while True:
        kind, done, _ = _MULTI.unpack_from(request.data, request.at)
        request.at += _MULTI.size
        if done:
            break
        start = request.at
        _skip(kind, request)
        parts.append((kind, request.data[start : request.at]))
    answers: list[bytes] = []  # those of the parts applied so far

    def apply() -> list[bytes]:
        for kind, body in parts:
            answers.append(answer(server, sid, kind, Reader(body)))
        return answers

    try:
        server.transaction(apply)
    except ZookeeperError as exc:
        done = len(answers)  # the parts before the one that failed: rolled back
        after = len(parts) - done - 1
        codes = [RolledBackError.code] * done + [exc.code] + [RuntimeInconsistency.code] * after
        out = b"".join(_MULTI.pack(-1, False, code) + INT.pack(code) for code in codes)
        return out + _MULTI.pack(-1, True, -1)
    out = b"".join(
        _MULTI.pack(kind, False, 0) + body for (kind, _), body in zip(parts, answers, strict=True)
    )
    return out + _MULTI.pack(-1, True, -1)


def _skip(kind: int, request: Reader) -> None:
    """Read past one part of a multi (create, delete, set or check)."""
    request.string()
    if kind in (1, 15, 19):
        request.buffer()
        request.acl()
        request.i32()
    elif kind == 5:
        request.buffer()
        request.i32()
    elif kind in (2, 13):
        request.i32()
    else:
        raise ConnectionLoss(f"a multi's part of type {kind} is not served")


def reply(xid: int, zxid: int, error: int, body: bytes = b"") -> bytes:
    """A reply's frame, its length first."""
    frame = REPLY.pack(xid, zxid, error) + body
    return INT.pack(len(frame)) + frame


def notification(event: WatchedEvent) -> bytes:
    """The body of a watch event's notification (after its reply header)."""
    assert event.path is not None
    return INT.pack(_EVENTS[event.type]) + INT.pack(_SYNC_CONNECTED) + pack_string(event.path)
