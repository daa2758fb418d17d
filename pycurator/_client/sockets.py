"""The socket work of pycurator's connection loop (:class:`~pycurator._client.kazoo_internals.
LeanConnection`), which needs nothing of kazoo: ZooKeeper's frame heads, a send that waits for
room, and the loop's wake-up pair."""

from __future__ import annotations

import contextlib
import select
import socket
import struct
from typing import Any

#: A request's frame head: its length (from the xid on), xid and type.
REQUEST_HEAD = struct.Struct("!iii")
#: A reply's frame length, then its header: xid, zxid and error code.
LENGTH = struct.Struct("!i")
REPLY_HEADER = struct.Struct("!iqi")
#: The most one read of the server's socket takes.
READ_BLOCK = 65536


def send_all(sock: socket.socket, data: bytes, timeout: float) -> None:
    """Send all of ``data`` on the non-blocking ``sock``, waiting for room (at most ``timeout``
    seconds each time the socket is full: ``TimeoutError``); any failure is an ``OSError``."""
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    if sent < len(data):
        view = memoryview(data)
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        while sent < len(data):
            if not poller.poll(timeout * 1000.0):
                raise TimeoutError("socket time-out during write")
            with contextlib.suppress(BlockingIOError):
                sent += sock.send(view[sent:])


def raw_socket(sock: Any) -> tuple[socket.socket, bytes]:
    """The plain socket under a connection's socket, and what was read from it and not yet
    taken (the fast handler's buffered socket keeps some: ``detach_buffer()``)."""
    detach = getattr(sock, "detach_buffer", None)
    if detach is not None:
        return detach()  # type: ignore[no-any-return]
    return sock, b""


def wake_pair() -> tuple[socket.socket, Waker]:
    """The loop's wake-up pair: a non-blocking reading end, and a writing end that never waits."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    return reader, Waker(writer)


def drain(sock: socket.socket) -> None:
    """Empty the wake-up pair's (non-blocking) reading end."""
    with contextlib.suppress(BlockingIOError):
        while sock.recv(4096):
            pass


class Waker:
    """The writing end of the wake-up pair: never waits (a full pair already holds bytes enough
    to wake the loop, which empties it whole on each wake)."""

    __slots__ = ("_sock",)

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock

    def send(self, data: Any) -> int:
        try:
            return self._sock.send(data)
        except BlockingIOError:
            return len(data)

    def close(self) -> None:
        self._sock.close()

    def fileno(self) -> int:
        return self._sock.fileno()


__all__ = [
    "LENGTH",
    "READ_BLOCK",
    "REPLY_HEADER",
    "REQUEST_HEAD",
    "Waker",
    "drain",
    "raw_socket",
    "send_all",
    "wake_pair",
]
