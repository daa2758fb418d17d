"""pycurator's connection loop under ``KazooClient``: kazoo's ``ConnectionHandler`` whose
steady state is its own (:class:`LeanConnection`); who gets it is
:mod:`~pycurator._client.kazoo_internals.loop_choice`'s to say. Part of
:mod:`pycurator._client.kazoo_internals`, with which it keeps every kazoo private it touches.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionDropped, SessionExpiredError
from kazoo.protocol import connection as _kazoo_connection
from kazoo.protocol.connection import (
    AUTH_XID,
    PING_XID,
    WATCH_XID,
    ConnectionHandler,
    RWServerAvailable,
)
from kazoo.protocol.serialization import (
    Auth,
    Close,
    GetChildren,
    GetChildren2,
    PingInstance,
    ReplyHeader,
    Transaction,
)
from kazoo.protocol.states import KeeperState

from ..._protocol import clock
from ..sockets import LENGTH, REPLY_HEADER, REQUEST_HEAD, drain, raw_socket, send_all, wake_pair
from .events import read_watch_event
from .reading import SessionReader

#: ``ConnectionHandler._read_socket``'s answer once the server answered the close (which ends
#: ``_connect_attempt``'s loop; kazoo 2.9.0 to 2.11.0), and the two test hooks ``_call`` may be
#: handed instead of a request: queued, they end the connection as an expired session or a
#: drop.
CLOSE_RESPONSE = _kazoo_connection.CLOSE_RESPONSE
_SESSION_EXPIRED = _kazoo_connection._SESSION_EXPIRED
_CONNECTION_DROP = _kazoo_connection._CONNECTION_DROP
#: The request types whose answers go through kazoo's ``_read_response`` whole.
_KAZOO_ANSWERS = frozenset({Transaction.type, Close.type})
#: The states in which a session is served.
_LIVE = (KeeperState.CONNECTED, KeeperState.CONNECTED_RO)


class LeanConnection(ConnectionHandler):  # type: ignore[misc]
    """kazoo's ``ConnectionHandler`` with pycurator's steady-state loop.

    Kept from kazoo (inherited, and called where kazoo calls them): ``zk_loop``,
    ``_connect_loop`` and ``_connect_attempt`` (host order, the connection retry policy, the
    states each failure leads to and their log records, stopping), ``_connect`` (the socket,
    the handshake with session id, password and read-only flag, SASL and digest auth),
    ``_read_response`` (answers with errors, ``exists`` on no node, transactions, the
    close, and every answer while debug records are on; :meth:`_answer` handles the others
    as it does, result then watcher), the look for a read-write server while read-only, and the
    client's state machine (``_session_callback``: failing pending and queued requests on a
    drop, listeners, watch resets).

    Replaced: once a session is made (at the end of ``_connect``), a calling thread writes its
    own request (xid, the ``_pending`` entry and the send under one lock, :meth:`call`), and
    reads its answer itself while nobody reads (``read_answer``); else the loop thread reads
    what has arrived, woken by it or by the next ping's time. Requests made while no session
    is served (and kazoo's ``stop()``, which queues the close) go through kazoo's ``_queue``
    and the wake-up pair, whose writer sends them at once if a session is served
    (:meth:`_woken`), else they are sent in order once one is. A watch event is read once
    (:meth:`_read_watch_event`, kazoo's rules), for kazoo's watchers and the watches that stay.
    """

    #: It calls a runtime's connect hooks itself, around the handshake (see
    #: :func:`~pycurator._client.kazoo_internals.follow_connects`).
    serves_connects = True
    #: A watch event read once, by kazoo's rules, for its watchers and the follower.
    _read_watch_event = read_watch_event

    def __init__(self, client: KazooClient, retry_sleeper: Any, logger: Any, sasl: Any) -> None:
        super().__init__(client, retry_sleeper, logger=logger, sasl_options=sasl)
        self._writing = threading.RLock()
        self._held = threading.local()  # a thread's requests held (see hold_sends), or None
        #: the server's socket while the loop serves a session (writers send on it), else None
        self._live: socket.socket | None = None
        #: who reads it meanwhile (the loop thread, or a thread that waits for its answer)
        self._reader: SessionReader | None = None
        #: the process that started the client: a forked child never writes on its socket
        self._pid = os.getpid()
        self._loop_thread = 0
        #: requests the loop thread's own callbacks made, sent once it has read its batch
        self._deferred: list[tuple[Any, Any]] = []
        #: the wake-up pair was written on the loop thread: send the queue after the batch
        self._woke = False
        #: why the served connection ended, when a test hook ended it (see _woken)
        self._ended: Exception | None = None
        self._last_send = 0.0
        self._write_timeout = 10.0
        self._debug = False
        #: told of each watch event read, after kazoo's watchers (see follow_watch_events)
        self.event_follower: Callable[[int, str], None] | None = None
        self._kazoo_call = client._call
        self._retry: Any = None
        self._closed = False
        self._xid: int = 0
        self._socket: Any = None
        self._rw_server: tuple[str, int] | None = None
        self._connection_routine: Any = None

    def start(self) -> None:
        """kazoo's ``start``, with a wake-up pair of the loop's own (whose writer never waits)."""
        if self.connection_closed.is_set():
            self._read_sock, self._write_sock = wake_pair()
            self._write_sock.on_wake = self._woken
            self.connection_closed.clear()
        if self._connection_routine:
            raise RuntimeError("Unable to start, connection routine already active.")
        self._pid = os.getpid()
        self._connection_routine = self.handler.spawn(self.zk_loop)

    def call(self, request: Any, async_object: Any) -> Any:
        """``KazooClient._call``: :meth:`_write_requests` (kazoo's for its test hooks), or held
        while the calling thread holds its sends (:meth:`hold_sends`)."""
        if os.getpid() != self._pid:  # a forked child: the parent's socket is not its own
            return self._kazoo_call(request, async_object)
        if request is _SESSION_EXPIRED or request is _CONNECTION_DROP:
            with self._writing:
                return self._kazoo_call(request, async_object)
        read_by = getattr(async_object, "read_by", None)
        if read_by is not None:  # the thread that waits for the answer may read it
            read_by(self.read_answer)
        held: list[tuple[Any, Any]] | None = getattr(self._held, "requests", None)
        if held is not None:
            held.append((request, async_object))
            return None
        return self._write_requests(((request, async_object),))

    def read_answer(self, answer: Any, timeout: float | None) -> None:
        """Read on the calling thread until ``answer`` has come or ``timeout`` seconds (None: no
        limit) have passed, while a session is served and no other thread reads (see
        :meth:`SessionReader.read_until`); never on the loop thread, nor in a forked child."""
        reader = self._reader
        mine = threading.get_ident() != self._loop_thread and os.getpid() == self._pid
        if reader is not None and mine:
            reader.read_until(answer, timeout)

    def hold_sends(self) -> None:
        """Hold the calling thread's requests until :meth:`send_held` writes them together, in
        one write the server reads at once; it must not wait for the answer of one it holds."""
        if getattr(self._held, "requests", None) is None:  # a forked child's go to kazoo
            self._held.requests = []

    def send_held(self) -> None:
        """Stop holding, and :meth:`_write_requests` what the calling thread held, in order."""
        held: list[tuple[Any, Any]] | None = getattr(self._held, "requests", None)
        self._held.requests = None
        if held:
            self._write_requests(held)

    def _write_requests(self, requests: Sequence[tuple[Any, Any]]) -> Any:
        """Written at once while a session is served (after its batch, by the loop thread), else
        each given to kazoo's call (its state checks, ``_queue``, the wake-up pair)."""
        with self._writing:
            live = self._live
            if live is not None and self.client._state in _LIVE:
                if threading.get_ident() == self._loop_thread:
                    self._deferred.extend(requests)
                else:
                    self._send_requests(live, requests)
                return None
            answer = None
            for request, async_object in requests:
                answer = self._kazoo_call(request, async_object)
            return answer

    def _send_requests(self, sock: socket.socket, requests: Iterable[tuple[Any, Any]]) -> None:
        """Frame ``requests``, enter each in ``_pending`` and send them in one write (under
        ``_writing``)."""
        pending = self.client._pending
        frames = []
        failed = []
        for request, async_object in requests:
            try:
                body = request.serialize()
            except Exception as error:
                failed.append((async_object, error))
                continue
            if request.type == Auth.type:
                xid = AUTH_XID
            else:
                xid = self._xid = self._xid % 2147483647 + 1
            if self._debug:
                self.logger.debug("Sending request(xid=%s): %s", xid, request)
            frames.append(REQUEST_HEAD.pack(len(body) + 8, xid, request.type))
            frames.append(body)
            pending.append((request, async_object, xid))
        if frames:
            self._send(sock, b"".join(frames))
        for answer, problem in failed:  # answered once the others are sent, in order
            if answer is not None:
                answer.set_exception(problem)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        """Send all of ``data`` (under ``_writing``), waiting for room while the socket is full.
        A failure (or no room within the write timeout) shuts the socket down: the loop then
        sees the drop and fails every pending request, these included."""
        try:
            send_all(sock, data, self._write_timeout)
            self._last_send = clock.monotonic()
        except OSError as exc:
            self.logger.warning("Connection dropped while writing: %s", exc)
            self._live = None
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _send_queued(self, sock: socket.socket) -> None:
        """Send what waits in kazoo's ``_queue`` and the loop's own deferred requests, in order
        (under ``_writing``); kazoo's test hooks end the connection as kazoo's loop does."""
        queue = self.client._queue
        batch: list[tuple[Any, Any]] = []
        while queue:
            request, async_object = queue.popleft()
            if request is _SESSION_EXPIRED or request is _CONNECTION_DROP:
                self._send_requests(sock, batch)  # sent before it: failed with the drop
                if request is _SESSION_EXPIRED:
                    raise SessionExpiredError("Session expired: Testing")
                raise ConnectionDropped("Connection dropped: Testing")
            batch.append((request, async_object))
        if self._deferred:
            batch.extend(self._deferred)
            self._deferred.clear()
        if batch:
            self._send_requests(sock, batch)

    def _connect_attempt(self, host: str, hostip: str, port: int, retry: Any) -> Any:
        """kazoo's ``_connect_attempt``, whole (states, logs, the exceptions it handles); the
        session is served from within :meth:`_connect` (the retry policy is kept to be reset
        there, as kazoo resets it once a session is made)."""
        self._retry = retry
        try:
            return super()._connect_attempt(host, hostip, port, retry)
        finally:
            self._retry = None

    def _connect(self, host: str, hostip: str, port: int) -> tuple[float, float]:
        """kazoo's ``_connect`` (socket, handshake, SASL, auth), then the session served by
        :meth:`_serve` until the server answers the close (kazoo's loop then reads the end of
        the connection and closes as it does) or the connection fails (kazoo's
        ``_connect_attempt`` handles the error as it would its own loop's)."""
        follows = getattr(self, "_pycurator_follows", None)  # see follow_connects
        if follows is not None:
            follows[0]()
        read_timeout, connect_timeout = super()._connect(host, hostip, port)
        if follows is not None:
            follows[1](read_timeout * 1.5 / 1000.0)
        if self._retry is not None:
            self._retry.reset()
        self.ping_outstanding.clear()
        with self._socket_error_handling():
            self._serve(read_timeout / 1000.0, connect_timeout / 1000.0)
        self._hand_back_the_close()
        return read_timeout, connect_timeout

    def _hand_back_the_close(self) -> None:
        """The server has answered the close (:meth:`_serve` returned): hand the connection's
        end back to kazoo's ``_connect_attempt``, which ends it as if its own loop had read the
        answer (its log record, the CLOSED state, its socket closed, no reconnect).

        That loop usually finds the client stopped before it waits (``stop()`` sets the flag
        before it queues the close). Otherwise (a ``start()`` after a ``stop()`` whose wait
        timed out) it selects on ``self._socket``, reads a frame with :meth:`_read_socket`
        and breaks on ``CLOSE_RESPONSE``: so the real socket is closed, and ``self._socket``
        becomes the reading end of a new pair whose writing end is closed, readable at once,
        for which :meth:`_read_socket` answers ``CLOSE_RESPONSE`` (``_closed``) unread."""
        self._socket.close()
        self._socket, writer = socket.socketpair()
        writer.close()
        self._closed = True

    def _read_socket(self, read_timeout: float) -> Any:
        """kazoo's read of one frame; after :meth:`_serve` saw the close answered, that answer
        (see :meth:`_hand_back_the_close`)."""
        if self._closed:
            self._closed = False
            return CLOSE_RESPONSE
        return super()._read_socket(read_timeout)

    def _serve(self, read_timeout: float, connect_timeout: float) -> None:
        """Serve the session until the server answers the close (returns) or the connection
        fails (raises). Writers send on the socket from when the requests queued meanwhile are
        sent until just before this returns or raises, so a drop fails every request written.

        The socket is read by one thread at a time (:class:`SessionReader`): this one, woken by
        what arrives or by the next ping's time, or a thread that waits for its answer. What
        wakes it otherwise writes for itself (:meth:`_woken`)."""
        sock, data = raw_socket(self._socket)
        wake = self._read_sock  # written meanwhile (see _woken), and emptied at the end
        sock.setblocking(False)  # read once ready; writers never wait in their send
        jitter = random.randint(1, 40) / 100.0
        half = read_timeout / 2.0 - jitter
        self._write_timeout = connect_timeout
        self._debug = self.logger.isEnabledFor(logging.DEBUG)
        reader = None
        try:
            with self._writing:
                self._loop_thread = threading.get_ident()
                self._last_send = clock.monotonic()
                self._ended = None
                self._woke = False
                self._live = sock
                self._send_queued(sock)
            if data:  # frames read with the handshake's
                left = self._read_frames(data)
                if left is None:
                    return
                data = left
            reader = self._reader = SessionReader(sock, self._read_frames, data)
            while True:
                if self._live is None:
                    raise self._ended or ConnectionDropped("socket connection broken")
                if reader.wait(max(self._last_send + half - clock.monotonic(), jitter)):
                    try:
                        reader.read()
                    except ConnectionDropped:
                        raise self._ended or ConnectionDropped("socket connection broken") from None
                    if reader.closed:
                        return
                elif clock.monotonic() >= self._last_send + half and self.ping_outstanding.is_set():
                    self.ping_outstanding.clear()
                    raise ConnectionDropped("outstanding heartbeat ping not received")
                if self._deferred or self._woke:
                    with self._writing:
                        self._woke = False
                        self._send_queued(sock)
                if clock.monotonic() >= self._last_send + half:
                    self.ping_outstanding.set()
                    with self._writing:
                        self._send(sock, REQUEST_HEAD.pack(8, PING_XID, PingInstance.type))
                    if self._ro_mode:  # kazoo's look for a read-write server, as it pings
                        found = next(self._ro_mode)
                        if found:
                            self._rw_server = found
                            raise RWServerAvailable()
        finally:
            with self._writing:
                self._live = None
                self._loop_thread = 0
                self._reader = None
                # made before the drop: queued first, failed with the queue as kazoo fails it
                self.client._queue.extendleft(reversed(self._deferred))
                self._deferred.clear()
            if reader is not None:
                reader.end()
            drain(wake)

    def _woken(self) -> None:
        """The wake-up pair was written: by kazoo's ``_call`` for a request it queued (while
        no session is served, or a test hook), or by kazoo's ``stop()``, which queued the close.
        Queued requests are sent at once by the writer, as its own would be (by the loop after
        its batch when the writer is the loop thread; when the next session is served if none
        is); a test hook ends the connection as kazoo's loop ends it. A forked child sends
        nothing: the parent's socket is not its own."""
        if os.getpid() != self._pid:
            return
        if threading.get_ident() == self._loop_thread:
            self._woke = True
            return
        with self._writing:
            sock = self._live
            if sock is None:
                return
            try:
                self._send_queued(sock)
            except (SessionExpiredError, ConnectionDropped) as hook:
                self._ended, self._live = hook, None
                with contextlib.suppress(OSError):  # the loop's read ends, and raises it
                    sock.shutdown(socket.SHUT_RDWR)

    def _read_frames(self, data: bytes) -> bytes | None:
        """Handle every whole frame in ``data`` as kazoo's loop does; the rest, or None once
        the server answered the close."""
        client = self.client
        size = len(data)
        at = 0
        while size - at >= 4:
            end = at + 4 + LENGTH.unpack_from(data, at)[0]
            if end > size:
                break
            body = data[at + 4 : end]
            at = end
            xid, zxid, err = REPLY_HEADER.unpack_from(body, 0)
            if xid == WATCH_XID:
                self._read_watch_event(body, 16)
            elif xid == PING_XID:
                self.ping_outstanding.clear()
            elif xid == AUTH_XID:
                _, async_object, _ = client._pending.popleft()
                if err:
                    async_object.set_exception(AuthFailedError())
                    client._session_callback(KeeperState.AUTH_FAILED)
                else:
                    async_object.set(True)
            elif err or self._debug or not self._answer(xid, zxid, body):
                closing = self._read_response(ReplyHeader(xid, zxid, err), body, 16)
                if closing is not None:  # the close answered
                    return None
        return data[at:] if at < size else b""

    def _answer(self, xid: int, zxid: int, body: bytes) -> bool:
        """An answer without error, handled as kazoo's ``_read_response`` handles it (the
        result set to what the request deserializes, then its watcher registered) without its
        debug records (off, else kazoo's runs); False, and nothing done, for what kazoo's
        ``_read_response`` must see: another xid than the pending request's, a request with
        no result or that kazoo reads as false (an empty named tuple), a transaction, the
        close."""
        client = self.client
        request, async_object, sent = client._pending[0]
        if xid != sent or async_object is None or not request or request.type in _KAZOO_ANSWERS:
            return False
        client._pending.popleft()
        if zxid > 0:
            client.last_zxid = zxid
        try:
            response = request.deserialize(body, 16)
        except Exception as exc:
            self.logger.exception("Exception raised during deserialization of request: %s", request)
            async_object.set_exception(exc)
            return True
        async_object.set(response)
        watcher = getattr(request, "watcher", None)
        if watcher and not client._stopped.is_set():
            children = isinstance(request, (GetChildren, GetChildren2))
            (client._child_watchers if children else client._data_watchers)[request.path].add(
                watcher
            )
        return True


__all__ = ["CLOSE_RESPONSE", "LeanConnection"]
