"""Who reads the server's socket while pycurator's connection loop serves a session: one
thread at a time, the loop thread or a thread that waits for an answer
(:class:`SessionReader`).

A thread that waits for its answer while nobody reads reads the socket itself, until its
answer has come: the answer then wakes no other thread, where the loop thread's read would wake
it (a wake, and the GIL passed between two CPUs, for every request). Meanwhile the loop thread
is no longer woken by the socket (``epoll``, where the system has it; elsewhere waiters never
read), only by its ping's time. Frames are handled in the order read, whoever reads them, and
never by two threads at once; answers and events that are not the waiter's are handled as the
loop thread would handle them.

A waiter whose read fails, or who is interrupted while it reads (what it read may be half
handled), ends the connection: the loop thread sees the drop, as after any failed read, and
kazoo reconnects.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionDropped

from ..._protocol import clock
from ..sockets import Receiver

#: Whether a thread that waits for an answer may read it: the loop thread's wait can then be
#: told to leave the socket to it (``epoll``'s interest changed from another thread).
WAITERS_READ = hasattr(select, "epoll")
#: The longest a waiter waits for the socket before it looks at its answer again: an answer
#: set by another thread than the reader (one answered through another's) is seen this late
#: at worst.
LOOK_AGAIN = 0.02
#: The loop thread's interest in the socket: woken once, then not again until armed again by
#: the thread that read last, so that a loop thread woken while a waiter reads does not spin.
_ARMED = (select.EPOLLIN | select.EPOLLONESHOT) if WAITERS_READ else 0


class SessionReader:
    """The socket ``sock`` of one served session (non-blocking), read by one thread at a time;
    ``frames`` handles what was read (whole frames; the rest, or None once the server has
    answered the close); ``data``, read before and not yet handled."""

    def __init__(
        self, sock: socket.socket, frames: Callable[[bytes], bytes | None], data: bytes
    ) -> None:
        self._sock = sock
        self._receiver = Receiver(sock)
        self._fd = sock.fileno()
        self._frames = frames
        self._rest = data  # read and not yet handled: part of a frame
        self._reading = threading.Lock()
        self._ended = False  # the session is no longer served
        self.closed = False  # the server answered the close
        #: why a waiter's read ended the connection (the loop thread raises it)
        self.failure: BaseException | None = None
        if WAITERS_READ:
            self._loop_wait: Any = select.epoll()
            self._loop_wait.register(self._fd, _ARMED)
            self._waiter_wait = select.poll()  # one waiter reads at a time
            self._waiter_wait.register(self._fd, select.POLLIN)
        else:
            self._loop_wait = select.poll()
            self._loop_wait.register(self._fd, select.POLLIN)

    def wait(self, seconds: float) -> bool:
        """The loop thread's wait: whether the socket may hold something to read before
        ``seconds`` have passed (while a waiter reads, only the time ends it)."""
        if not WAITERS_READ:
            return bool(self._loop_wait.poll(seconds * 1000.0))
        if self._loop_wait.poll(seconds):
            return True  # and the socket no longer wakes the loop until it is armed again
        if self._reading.acquire(False):  # nobody reads: the socket wakes the loop again
            try:  # (a waiter interrupted as it handed it back may have left it asleep)
                self._loop_wait.modify(self._fd, _ARMED)
            finally:
                self._reading.release()
        return False

    def read(self) -> None:
        """The loop thread's read of what has arrived, unless a waiter reads: it handles what
        arrives meanwhile, and the socket wakes the loop thread again once it is handed back,
        so the loop thread never waits for a waiter's answer (and its pings go on). The
        failure of a waiter's read raised, and a drop as ``ConnectionDropped``."""
        if not self._reading.acquire(False):
            return  # the waiter arms the socket again once it has let go
        try:
            if self.failure is not None:
                raise _raised(self.failure)
            if not self.closed:
                self._read_once()
        finally:
            self._reading.release()
            self._arm()

    def _read_once(self) -> None:
        chunk = self._receiver.recv()
        if chunk is None:  # read by a waiter meanwhile
            return
        if not chunk:
            raise ConnectionDropped("socket connection broken")
        data = self._rest + chunk if self._rest else chunk
        self._rest = b""
        rest = self._frames(data)
        if rest is None:  # nothing more to read: the loop thread wakes to it at once
            self.closed = True
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RD)
        else:
            self._rest = rest

    def read_until(self, answer: Any, timeout: float | None) -> None:
        """A waiter's read: read and handle frames until ``answer`` has come or ``timeout``
        seconds (None: no limit) have passed; nothing when another thread reads. A failed read
        ends the connection; so does an interruption (raised after) while what was read is
        handled, not one while the waiter waits for the socket."""
        if not WAITERS_READ or not hasattr(answer, "link_inline"):
            return  # (kazoo's own results: one may be answered by a worker, through another's)
        if not self._reading.acquire(False):
            return
        try:
            if self._ended or self.failure is not None or self.closed:
                return
            self._loop_wait.modify(self._fd, 0)  # the loop thread sleeps on
            self._read_until(answer, timeout)
        finally:
            self._reading.release()
            self._arm()

    def _arm(self) -> None:
        """Let the socket wake the loop thread once more, by whoever has just read (after it
        let go: a wake that found it reading is not lost, and wakes the loop again)."""
        if WAITERS_READ:
            with contextlib.suppress(ValueError, OSError):  # (ended meanwhile: wait closed)
                self._loop_wait.modify(self._fd, _ARMED)

    def _read_until(self, answer: Any, timeout: float | None) -> None:
        end = None if timeout is None else clock.monotonic() + timeout
        while not answer.ready() and not self.closed:
            left = LOOK_AGAIN if end is None else min(end - clock.monotonic(), LOOK_AGAIN)
            if left <= 0:
                return
            if self._waiter_wait.poll(left * 1000.0):
                try:
                    self._read_once()
                except BaseException as exc:
                    self._fail(exc)
                    if not isinstance(exc, Exception):
                        raise
                    return

    def _fail(self, exc: BaseException) -> None:
        """End the connection for a waiter's failed read: the loop thread wakes to a drop."""
        self.failure = exc
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def end(self) -> None:
        """The session is no longer served: a waiter still reading wakes to a drop, and the
        loop's wait is let go."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with self._reading:
            self._ended = True
            self._loop_wait.close()


def _raised(failure: BaseException) -> Exception:
    if isinstance(failure, Exception):
        return failure
    dropped: Exception = ConnectionDropped(f"interrupted while reading: {failure!r}")
    return dropped


__all__ = ["WAITERS_READ", "SessionReader"]
