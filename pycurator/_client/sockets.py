"""The socket work of pycurator's connection loop (:class:`~pycurator._client.kazoo_internals.
LeanConnection`), which needs nothing of kazoo: ZooKeeper's frame heads, a send and a read that
keep the GIL, a send that waits for room, and the loop's wake-up pair."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import select
import socket
import struct
from collections.abc import Callable
from typing import Any

#: A request's frame head: its length (from the xid on), xid and type.
REQUEST_HEAD = struct.Struct("!iii")
#: A reply's frame length, then its header: xid, zxid and error code.
LENGTH = struct.Struct("!i")
REPLY_HEADER = struct.Struct("!iqi")
#: A watch event's head after the reply header: its type, the client's state, its path's length.
WATCH_HEAD = struct.Struct("!iii")
#: The most one read of the server's socket takes.
READ_BLOCK = 65536


def _libc_call(name: str, pointer: Any) -> Any:
    """The C library's function ``name`` (``(fd, pointer, size, flags) -> ssize_t``), called
    with the GIL held (``PyDLL``), its ``errno`` kept; None where there is none."""
    import ctypes

    try:
        function = getattr(ctypes.PyDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, pointer, ctypes.c_size_t, ctypes.c_int)
    function.restype = ctypes.c_ssize_t
    return function


@functools.cache
def _libc_send() -> tuple[Callable[[int, bytes, int, int], int], Callable[[], int]] | None:
    """The C library's ``send``, called with the GIL held, and how to read its ``errno``; None
    where there is none. Loaded on the first send, not at import."""
    import ctypes

    send = _libc_call("send", ctypes.c_char_p)
    return None if send is None else (send, ctypes.get_errno)


#: A send that never waits, and raises no SIGPIPE on a socket the server closed (where the
#: system has that flag).
_SEND_FLAGS = socket.MSG_DONTWAIT | getattr(socket, "MSG_NOSIGNAL", 0)
#: The errors of a send that wrote nothing for want of room (or was interrupted first).
_NO_ROOM = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR})


def send_now(sock: socket.socket, data: bytes) -> int:
    """Write what ``sock`` has room for of ``data`` at once (0 if none), never waiting; an
    ``OSError`` if the socket fails.

    The GIL is kept across the system call, which never blocks: ``socket.send`` would let go
    of it, and the sending thread, back from a send of a few microseconds, would then wait for
    another thread's turn on it. On a client with a waiting thread and a connection thread per
    request, that hand-off costs more than the send (measured with a client per thread: the
    read/write lock went from 1.08 to 1.18 of Curator's rate without it)."""
    libc = _libc_send()
    if libc is None:
        try:
            return sock.send(data, _SEND_FLAGS)
        except BlockingIOError:
            return 0
    send, get_errno = libc
    sent = send(sock.fileno(), data, len(data), _SEND_FLAGS)
    if sent >= 0:
        return sent
    error = get_errno()
    if error in _NO_ROOM:
        return 0
    raise OSError(error, os.strerror(error))


@functools.cache
def _libc_recv() -> tuple[Callable[[int, Any, int, int], int], Callable[[], int], Any] | None:
    """The C library's ``recv``, called with the GIL held, how to read its ``errno``, and how
    to make the buffer it reads into; None where there is none. Loaded on the first read."""
    import ctypes

    recv = _libc_call("recv", ctypes.c_void_p)
    return None if recv is None else (recv, ctypes.get_errno, ctypes.create_string_buffer)


class Receiver:
    """Reads of the (non-blocking) socket ``sock`` that never wait and keep the GIL, as
    :func:`send_now` writes: the thread that reads what has arrived, woken by a ``poll``, does
    not let another take the GIL in the middle of its turn (``socket.recv`` lets go of it
    around the call). One thread reads at a time: the buffer is the reader's."""

    __slots__ = ("_buffer", "_fd", "_libc", "_sock")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._libc = _libc_recv()
        self._buffer: Any = self._libc[2](READ_BLOCK) if self._libc is not None else None

    def recv(self) -> bytes | None:
        """What has arrived (up to :data:`READ_BLOCK` bytes; empty at the end of the stream),
        or None if nothing has; an ``OSError`` if the socket fails."""
        libc = self._libc
        if libc is None:
            try:
                return self._sock.recv(READ_BLOCK)
            except (BlockingIOError, InterruptedError):
                return None
        received = libc[0](self._fd, self._buffer, READ_BLOCK, socket.MSG_DONTWAIT)
        if received >= 0:
            data: bytes = self._buffer[:received]
            return data
        error = libc[1]()
        if error in _NO_ROOM:
            return None
        raise OSError(error, os.strerror(error))


def send_all(sock: socket.socket, data: bytes, timeout: float) -> None:
    """Send all of ``data`` on ``sock`` without blocking in the send itself (the socket may
    block, for its reader: :func:`send_now`), waiting for room (at most ``timeout`` seconds each
    time the socket is full: ``TimeoutError``); any failure is an ``OSError``."""
    sent = send_now(sock, data)
    if sent < len(data):
        view = memoryview(data)
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        while sent < len(data):
            if not poller.poll(timeout * 1000.0):
                raise TimeoutError("socket time-out during write")
            with contextlib.suppress(BlockingIOError):
                sent += sock.send(view[sent:], _SEND_FLAGS)


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
    to tell that it was written). ``on_wake``, when set, is called after each write, on the
    writer's thread: how a loop that does not read the pair while it serves is told."""

    __slots__ = ("_sock", "on_wake")

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self.on_wake: Callable[[], None] | None = None

    def send(self, data: Any) -> int:
        try:
            sent = self._sock.send(data)
        except BlockingIOError:
            sent = len(data)
        on_wake = self.on_wake
        if on_wake is not None:
            on_wake()
        return sent

    def close(self) -> None:
        self._sock.close()

    def fileno(self) -> int:
        return self._sock.fileno()


__all__ = [
    "LENGTH",
    "READ_BLOCK",
    "REPLY_HEADER",
    "REQUEST_HEAD",
    "WATCH_HEAD",
    "Receiver",
    "Waker",
    "drain",
    "raw_socket",
    "send_all",
    "send_now",
    "wake_pair",
]
