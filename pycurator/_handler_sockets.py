"""The sockets of :class:`pycurator.handlers.FastThreadingHandler`: the server's socket read in
blocks (:class:`BufferedSocket`), and the writing end of kazoo's wake-up pair, which never waits
(:class:`WakeWriter`). Nothing of the core imports them."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from typing import Any

#: The most one read takes from a socket kazoo reads in pieces.
READ_BLOCK = 65536


class BufferedSocket:
    """A socket kazoo reads in small pieces (a reply's length, then its body; a byte per queued
    request from its wake-up pair), read here in blocks of up to :data:`READ_BLOCK` bytes.

    ``pending()`` (which kazoo asks before it would ``select`` for a read) is what is buffered,
    or 1 when the handler's ``select`` saw the socket readable and nothing was read since; the
    handler's ``select`` reports such a socket readable without a system call. ``send`` sends
    at once and waits (as kazoo's ``select`` would have) only when the kernel cannot take the
    data. Everything else is the socket's own.
    """

    __slots__ = ("_owing", "_sock", "buffer", "fd", "offset", "owed", "readable", "write_wait")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        #: what was read and not yet taken, from ``offset`` on
        self.buffer = b""
        self.offset = 0
        #: the descriptor, kept while the socket is open (-1 once closed through this object)
        self.fd = sock.fileno()
        #: the last ``select`` saw data (or a hang-up) that nobody has read yet
        self.readable = False
        #: the timeout of the last ``select`` that reported this socket writable without asking
        self.write_wait: float | None = None
        #: wake-up bytes the writing end of the pair could not send, read as if sent
        self.owed = 0
        self._owing = threading.Lock()

    def fileno(self) -> int:
        return self._sock.fileno()

    def detach_buffer(self) -> tuple[socket.socket, bytes]:
        """The socket itself and what was read from it and not yet taken, which is no longer
        kept here: a connection loop reading the socket on its own goes on from there."""
        rest = self.buffer[self.offset :]
        self.buffer, self.offset, self.readable = b"", 0, False
        return self._sock, rest

    def close(self) -> None:
        self.fd = -1
        self._sock.close()

    def pending(self) -> int:
        """Bytes a ``recv`` returns without waiting (at least 1 if it would not wait)."""
        return len(self.buffer) - self.offset or self.owed or int(self.readable)

    def owe(self, count: int) -> None:
        """Count ``count`` zero bytes the writing end of a pair could not send."""
        with self._owing:
            self.owed += count

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes, from the buffer if it has any (or the bytes owed), else from
        one read of the socket (whose rest is kept); ``b""`` at the end of the stream."""
        if self.owed:
            with self._owing:
                taken = min(size, self.owed)
                self.owed -= taken
            if taken:
                return b"\0" * taken
        available = len(self.buffer) - self.offset
        if available:
            start = self.offset
            end = start + min(size, available)
            if end == len(self.buffer):
                chunk = self.buffer[start:] if start else self.buffer
                self.buffer, self.offset = b"", 0
            else:
                chunk = self.buffer[start:end]
                self.offset = end
            return chunk
        self.readable = False
        data = self._sock.recv(max(size, READ_BLOCK))
        if len(data) <= size:
            return data
        self.buffer, self.offset = data, size
        return data[:size]

    def send(self, data: Any) -> int:
        """Send what the kernel takes of ``data``; when it takes nothing, wait until it can, at
        most the last ``select``'s timeout (``TimeoutError`` then)."""
        try:
            return self._sock.send(data)
        except BlockingIOError:
            pass
        poller = select.poll()
        poller.register(self._sock.fileno(), select.POLLOUT)
        wait_ms = None if self.write_wait is None else self.write_wait * 1000.0
        if not poller.poll(wait_ms):
            raise TimeoutError("socket time-out during write")
        return self._sock.send(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class WakeWriter:
    """The writing end of kazoo's wake-up pair (a byte per queued request), which never waits.

    The pair's kernel buffer holds a few hundred one-byte writes; when it is full (hundreds of
    requests queued at once), a byte is counted on the reading end instead (see
    :meth:`BufferedSocket.owe`), so no thread waits to queue a request: not the connection
    thread (whose inline callbacks may queue one, and which alone empties the pair), nor
    kazoo's ``stop()``. Everything else is the socket's own.
    """

    __slots__ = ("_reader", "_sock")

    def __init__(self, sock: socket.socket, reader: BufferedSocket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._reader = reader

    def send(self, data: Any) -> int:
        try:
            return self._sock.send(data)
        except BlockingIOError:
            pass
        self._reader.owe(len(data))
        # one more byte, if there is room now: the reader, asleep once it emptied the pair,
        # wakes for it and then sees what is owed (kazoo reads a byte too many as a no-op);
        # if there is no room, the reader has bytes to wake for anyway
        with contextlib.suppress(BlockingIOError):
            self._sock.send(b"\0")
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


__all__ = ["READ_BLOCK", "BufferedSocket", "WakeWriter"]
