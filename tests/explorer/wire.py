"""The explorer's in-memory ZooKeeper (:class:`~tests.explorer.server.Server`) on a loopback port,
speaking ZooKeeper's wire protocol in real time, so that unchanged kazoo clients, and every recipe
and front end on them, run on it with no ZooKeeper process.

What it serves is what the recipes and kazoo send: the handshake (a new session, or one resumed
with its password; an unknown or ended one refused as expired), ping, create (the plain form, the
one with a stat, a container), delete, exists, data and children (with or without a stat), set,
check, multi (all or nothing), sync, removeWatches, the ACL read (open to all), auth (accepted)
and close. Each connection's requests are answered in order, its watch events in the same stream.
Watches belong to a connection, as ZooKeeper's do: a connection that closes takes them along. A
session moves to a connection that resumes it (the older connection is closed, as ZooKeeper
does), and ends when closed or when nothing has been heard of it for its timeout.

One thread serves every connection; :meth:`WireServer.drop` closes a session's connection (the
client reconnects in the same session) and :meth:`WireServer.stop` ends it all.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import random
import secrets
import selectors
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ZookeeperError
from kazoo.protocol.states import WatchedEvent

from . import jute
from .jute import INT as _INT
from .jute import LONG as _LONG
from .jute import Reader as _Reader
from .server import Server
from .sim import Call

_HEADER = struct.Struct("!ii")  # a request's xid and type
#: The negotiated session timeout's bounds, in milliseconds (a server with a 2 s tick).
_TIMEOUTS_MS = (4_000, 40_000)
#: Seconds between two looks for sessions nothing has been heard of.
_EXPIRY_CHECK = 0.1


class _Clock:
    """The explorer server's scheduler, on real time: timers run on the serving thread."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._due: list[tuple[float, int, Call]] = []
        self._order = itertools.count()

    @property
    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, function: Callable[[], None]) -> Call:
        call = Call(function, "timer", None)
        heapq.heappush(self._due, (self.now + delay, next(self._order), call))
        return call

    def run_due(self) -> float:
        """Run the timers due by now; seconds until the next one (or a second)."""
        while self._due and self._due[0][0] <= self.now:
            _, _, call = heapq.heappop(self._due)
            if not call.cancelled:
                call.function()
        return min(1.0, self._due[0][0] - self.now) if self._due else 1.0


class _Session:
    """A session's link to the connection that serves it now (None between two)."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.password = secrets.token_bytes(16)
        self.connection: _Connection | None = None
        self.heard = time.monotonic()

    def event(self, event: WatchedEvent) -> None:
        """A watch of this session fired: tell its connection (none: the watch went with the
        last one)."""
        if self.connection is not None:
            self.connection.reply(jute.NOTIFICATION_XID, 0, jute.notification(event))


class _Connection:
    def __init__(self, owner: WireServer, sock: socket.socket) -> None:
        self.owner = owner
        self.sock = sock
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.sid = 0  # none until the handshake
        self.closing = False

    def reply(self, xid: int, error: int, body: bytes = b"") -> None:
        self.send(jute.reply(xid, self.owner.server.zxid, error, body))

    def send(self, frame: bytes) -> None:
        self.outbox += frame
        self.owner.want_write(self)


class WireServer:
    """The in-memory server on ``127.0.0.1``: :attr:`hosts` for a kazoo client, until
    :meth:`stop`. ``seed`` orders the children each listing gives (as ZooKeeper, in no order);
    ``persistent_watches=False`` plays a server before ZooKeeper 3.6, without ``addWatch``."""

    def __init__(self, seed: int = 0, *, persistent_watches: bool = True) -> None:
        self._clock = _Clock(seed)
        self.server = Server(self._clock)
        self.server.persistent_watches = persistent_watches
        self.server.start_reaper()
        self._sessions: dict[int, _Session] = {}
        self._selector = selectors.DefaultSelector()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._calls: list[Callable[[], None]] = []
        self._calls_lock = threading.Lock()
        self._stopped = False
        #: what went wrong on the serving thread (a request it could not read), for a test to see
        self.failures: list[str] = []
        self._clock.call_later(_EXPIRY_CHECK, self._expire_silent)
        self._thread = threading.Thread(target=self._serve, name="wire-server", daemon=True)
        self._thread.start()

    @property
    def hosts(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def call(self, function: Callable[[], Any]) -> Any:
        """Run ``function`` on the serving thread (where the tree may be touched); its result."""
        done = threading.Event()
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((function(), None))
            except BaseException as exc:
                outcome.append((None, exc))
            done.set()

        with self._calls_lock:
            self._calls.append(run)
        self._wake_w.send(b"x")
        if not done.wait(10.0):
            raise TimeoutError("the wire server did not answer within 10s")
        value, error = outcome[0]
        if error is not None:
            raise error
        return value

    def drop(self, session_id: int) -> None:
        """Close the connection that serves ``session_id`` (its session lives on)."""

        def close() -> None:
            session = self._sessions.get(session_id)
            if session is not None and session.connection is not None:
                self._close(session.connection)

        self.call(close)

    def stop(self) -> None:
        """Close every connection and the port, and end the serving thread."""
        if self._stopped:
            return
        self._stopped = True
        self._wake_w.send(b"x")
        self._thread.join(10.0)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        self._wake_w.close()

    # -- the serving thread ------------------------------------------------------------------------

    def want_write(self, connection: _Connection) -> None:
        if not connection.closing:
            events = selectors.EVENT_READ | selectors.EVENT_WRITE
            self._selector.modify(connection.sock, events, connection)

    def _serve(self) -> None:
        while not self._stopped:
            timeout = self._clock.run_due()
            for key, events in self._selector.select(timeout):
                if key.fileobj is self._listener:
                    self._accept()
                elif key.fileobj is self._wake_r:
                    self._run_calls()
                else:
                    connection: _Connection = key.data
                    if events & selectors.EVENT_READ:
                        self._read(connection)
                    if events & selectors.EVENT_WRITE and not connection.closing:
                        self._write(connection)

    def _run_calls(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self._wake_r.recv(4096)
        with self._calls_lock:
            calls, self._calls = self._calls, []
        for call in calls:
            call()

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._selector.register(sock, selectors.EVENT_READ, _Connection(self, sock))

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(connection)
            return
        connection.inbox += data
        while len(connection.inbox) >= 4 and not connection.closing:
            (length,) = _INT.unpack_from(connection.inbox)
            if len(connection.inbox) < 4 + length:
                break
            frame = bytes(connection.inbox[4 : 4 + length])
            del connection.inbox[: 4 + length]
            if connection.sid:
                self._sessions[connection.sid].heard = time.monotonic()
                self._request(connection, _Reader(frame))
            else:
                self._handshake(connection, _Reader(frame))

    def _write(self, connection: _Connection) -> None:
        try:
            sent = connection.sock.send(connection.outbox)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)
            return
        del connection.outbox[:sent]
        if not connection.outbox:
            self._selector.modify(connection.sock, selectors.EVENT_READ, connection)

    def _close(self, connection: _Connection) -> None:
        if connection.closing:
            return
        connection.closing = True
        session = self._sessions.get(connection.sid)
        if session is not None and session.connection is connection:
            session.connection = None
            self.server.forget_watches(connection.sid)  # watches go with their connection
        self._selector.unregister(connection.sock)
        connection.sock.close()

    def _end(self, sid: int, how: str) -> None:
        """End session ``sid`` (``how``: ``"expired"`` or ``"closed"``) and its connection."""
        session = self._sessions.pop(sid, None)
        self.server.end_session(sid, how)
        if session is not None and session.connection is not None:
            self._close(session.connection)

    def _expire_silent(self) -> None:
        now = time.monotonic()
        for sid, session in list(self._sessions.items()):
            if now - session.heard > session.timeout_ms / 1000:
                self._end(sid, "expired")
        self._clock.call_later(_EXPIRY_CHECK, self._expire_silent)

    def _handshake(self, connection: _Connection, request: _Reader) -> None:
        request.i32()  # protocol version
        request.i64()  # the last zxid the client saw
        asked_ms, sid, password = request.i32(), request.i64(), request.buffer()
        session = self._sessions.get(sid) if sid else None
        if sid and (session is None or session.password != password):
            answer = _INT.pack(0) + _INT.pack(0) + _LONG.pack(0) + jute.pack_buffer(bytes(16))
            answer += b"\0"
            connection.outbox += _INT.pack(len(answer)) + answer  # expired: a timeout of 0
            self._flush_and_close(connection)
            return
        if session is None:
            low, high = _TIMEOUTS_MS
            session = _Session(min(max(asked_ms, low), high))
            sid = self.server.open_session(session)
            self._sessions[sid] = session
        elif session.connection is not None:
            self._close(session.connection)  # the session moved to this connection
        session.connection, session.heard = connection, time.monotonic()
        connection.sid = sid
        answer = _INT.pack(0) + _INT.pack(session.timeout_ms) + _LONG.pack(sid)
        answer += jute.pack_buffer(session.password) + b"\0"
        connection.send(_INT.pack(len(answer)) + answer)

    def _flush_and_close(self, connection: _Connection) -> None:
        try:
            connection.sock.setblocking(True)
            connection.sock.settimeout(1.0)
            connection.sock.sendall(connection.outbox)
        except OSError:
            pass
        self._close(connection)

    def _request(self, connection: _Connection, request: _Reader) -> None:
        xid, kind = _HEADER.unpack_from(request.data)
        request.at = _HEADER.size
        sid = connection.sid
        if kind == jute.CLOSE:
            connection.reply(xid, 0)
            self._flush_and_close(connection)
            self._end(sid, "closed")
            return
        try:
            body = jute.answer(self.server, sid, kind, request)
        except ZookeeperError as exc:
            connection.reply(xid, exc.code)
        except Exception:  # a request it cannot read: said, and the connection closed
            self.failures.append(traceback.format_exc())
            self._close(connection)
        else:
            connection.reply(xid, 0, body)
