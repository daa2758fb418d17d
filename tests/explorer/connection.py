"""A kazoo client's connection to the explorer's :class:`~tests.explorer.server.Server`, on the
:class:`~tests.explorer.sim.Hub`: what kazoo's connection thread does, with the network
simulated.

:func:`sim_client` makes an unchanged ``KazooClient`` on a :class:`~tests.explorer.sim.SimHandler`
and gives it a :class:`Link` for its connection (``KazooClient._connection``: the explorer's one
touch of kazoo's insides, as pycurator's own connection loop takes the same place). Everything
above it is kazoo's and pycurator's own code: kazoo's ``_call`` queues each request and writes the
wake-up byte, its ``_read_response`` and ``_read_watch_event`` read the answers and events (as
bytes, :mod:`tests.explorer.jute`), its ``_session_callback`` moves the client's state (failing the
requests in flight on a drop, telling the listeners, resetting the watches); pycurator's runtime
hooks the connect (``_connect``, through which a session given up on is refused) as it does on a
real client.

The link runs in a unit of its own (the connection thread): it sends the queued requests in
order, each reaching the server half a latency later, in order, after those sent before it; it
reads each answer and event in order once due. A break (a fault: the link ``drop``\\ s, or stays
``cut`` past the session timeout) fails the requests in flight (applied at the server or not) and
is heard by the client when the link's unit next runs; the server forgets the connection's
watches then, and expires the session once a session timeout has passed without the client
back in it. ``stall`` holds the answers back; ``lose_next`` drops the connection right after the
next request is applied. kazoo's ``stop()`` sends the close (or, while disconnected, just ends
the loop, the session left to expire).

Watchers of a path are told in the order they were set (kazoo keeps them in sets, whose order
follows memory addresses): the link keeps kazoo's registries ordered, so that a seed replays.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionDropped, SessionExpiredError, ZookeeperError
from kazoo.protocol.connection import (
    AUTH_XID,
    CLOSE_RESPONSE,
    WATCH_XID,
    ConnectionHandler,
)
from kazoo.protocol.serialization import Auth, ReplyHeader
from kazoo.protocol.states import KeeperState, WatchedEvent

from . import jute
from .handler import SimHandler
from .server import LATENCY, Server
from .sim import Call, Hub, Unit

#: Seconds before a connection lost with an answer, or refused, is tried again.
RETRY_AFTER = 0.2


class OrderedSet:
    """A set that keeps the order its members came in (kazoo's watcher registries' values)."""

    __slots__ = ("_members",)

    def __init__(self, members: Iterable[Any] = ()) -> None:
        self._members: dict[Any, None] = dict.fromkeys(members)

    def add(self, member: Any) -> None:
        self._members[member] = None

    def discard(self, member: Any) -> None:
        self._members.pop(member, None)

    def update(self, members: Iterable[Any]) -> None:
        self._members.update(dict.fromkeys(members))

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._members))

    def __len__(self) -> int:
        return len(self._members)

    def __bool__(self) -> bool:
        return bool(self._members)

    def __contains__(self, member: object) -> bool:
        return member in self._members


class _Session:
    """Whom the server tells of a session's watch events: the link, if it serves it then."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.sid = 0

    def event(self, event: WatchedEvent) -> None:
        self.link.event(self.sid, event)


class _Wake:
    """The writing end of kazoo's wake-up pair: ``KazooClient._call`` writes a byte for each
    request it queues, ``stop()`` one for the close."""

    def __init__(self, link: Link) -> None:
        self._link = link

    def send(self, data: bytes) -> int:
        self._link.wake()
        return len(data)

    def close(self) -> None:
        pass


class Link(ConnectionHandler):  # type: ignore[misc]
    """The connection of client number ``index`` (see the module doc)."""

    def __init__(self, hub: Hub, server: Server, client: KazooClient, index: int) -> None:
        current = client._connection
        super().__init__(client, current.retry_sleeper, logger=current.logger)
        self.hub = hub
        self.server = server
        self.index = index
        self.name = f"c{index}"
        self._write_sock = _Wake(self)
        self.connection_closed.clear()
        self.epoch = 0  # one per connection: what was sent on an earlier one is dropped
        self.live = False  # the link is up (the network's view; the client hears of a break later)
        self.broken = False  # the link broke, and the client has not heard of it yet
        self.sid = 0  # the server's session the link serves
        self.sessions: list[int] = []  # every session the client had
        #: the simulated time of the client's last CONNECTED, and of its suspension (the state
        #: change it heard last), None when it is in the other state
        self.connected_since: float | None = None
        self.suspended_since: float | None = None
        self.stopped_at: float | None = None
        self.cut_until = 0.0  # no connection before then
        self.stall_until = 0.0  # answers and events held back until then
        self.lose_next = False  # the next request applied drops the connection with its answer
        self._next_attempt = 0.0
        self._expiry: Call | None = None  # the server's expiry of a session with nobody connected
        self._inbox: collections.deque[tuple[float, int, Any]] = collections.deque()
        self._last_due = 0.0
        self._arrival = 0.0
        self._woken = False
        self._unit: Unit | None = None
        self._waiting = False
        self._xid = 0
        self._order()

    # -- the client's side -----------------------------------------------------------------------

    @property
    def session_timeout(self) -> float:
        """The session timeout the server grants (the one the client asks for), in seconds."""
        return float(self.client._session_timeout) / 1000.0

    def open(self) -> None:
        """Start the client (kazoo's ``start_async``, with this link for its loop)."""
        client = self.client
        client._stopped.clear()
        client._writer_stopped.clear()
        self.handler.start()
        self.connection_stopped.clear()
        client._session_callback(KeeperState.CONNECTING)  # from CLOSED: no listener hears it
        self._unit = self.hub.spawn(self._serve, f"{self.name}:connection", self.index)

    def stop(self, timeout: float | None = None) -> bool:
        """kazoo's ``ConnectionHandler.stop``: wait for the loop to end."""
        self.connection_stopped.wait(timeout)
        return bool(self.connection_stopped.is_set())

    def wake(self) -> None:
        """Requests were queued (or the close): the loop sends them."""
        self._woken = True
        self._rouse()

    def _rouse(self) -> None:
        if self._waiting and self._unit is not None:
            self.hub.wake(self._unit)

    # -- faults ----------------------------------------------------------------------------------

    def drop(self, back_after: float) -> None:
        """The link breaks (or an attempt to connect fails), and comes back ``back_after``
        seconds later (same session, if the server still has it)."""
        self._break()
        self._next_attempt = max(self._next_attempt, self.hub.now + back_after)

    def cut(self, seconds: float) -> None:
        """The link breaks and stays down ``seconds`` (past a session timeout, the server
        expires the session meanwhile)."""
        self._break()
        self.cut_until = max(self.cut_until, self.hub.now + seconds)
        self._next_attempt = self.cut_until

    def stall(self, seconds: float) -> None:
        """The answers and events of the next ``seconds`` come late, in order."""
        self.stall_until = max(self.stall_until, self.hub.now + seconds)

    def heal(self) -> None:
        """Every fault ends: the link may come back now (answers held back still come when
        they were due)."""
        self.cut_until = 0.0
        self.lose_next = False
        self._next_attempt = min(self._next_attempt, self.hub.now)
        self._rouse()

    def _break(self) -> None:
        if not self.live:
            return
        self.live = False
        self.broken = True
        self.epoch += 1
        self._inbox.clear()
        self.server.forget_watches(self.sid)  # a session's watches go with its connection
        sid = self.sid
        self._expiry = self.hub.call_later(
            self.session_timeout,
            lambda: self._expire(sid),
            f"{self.name}:server-expiry",
            self.index,
        )
        self._rouse()

    def _expire(self, sid: int) -> None:
        """The server has heard nothing of session ``sid`` for its timeout."""
        if not (self.live and self.sid == sid):
            self.server.end_session(sid, "expired")

    # -- the network -----------------------------------------------------------------------------

    def event(self, sid: int, event: WatchedEvent) -> None:
        """The server fires a watch of session ``sid``: told after the answers sent before it,
        if the link serves that session now."""
        if self.live and self.sid == sid:
            body = jute.REPLY.pack(WATCH_XID, self.server.zxid, 0) + jute.notification(event)
            self._deliver(("event", body))

    def _deliver(self, item: Any) -> None:
        due = max(self.hub.now + LATENCY / 2, self._last_due, self.stall_until)
        self._last_due = due
        self._inbox.append((due, self.epoch, item))
        self._rouse()

    def _send(self, request: Any, xid: int) -> None:
        """``request`` leaves for the server: it arrives half a latency later, after those sent
        before it, and is applied then (unless the link broke meanwhile)."""
        epoch = self.epoch
        self._arrival = max(self.hub.now + LATENCY / 2, self._arrival)
        data = bytes(request.serialize()) if request.type != jute.CLOSE else b""

        def arrive() -> None:
            if epoch != self.epoch:
                return  # the link broke before it arrived: not applied
            server = self.server
            if request.type == jute.CLOSE:
                server.end_session(self.sid, "closed")
                error, body = 0, b""
            else:
                try:
                    error, body = 0, jute.answer(server, self.sid, request.type, jute.Reader(data))
                except ZookeeperError as exc:
                    error, body = exc.code, b""
            if self.lose_next:
                self.lose_next = False
                self.drop(RETRY_AFTER)  # applied, and its answer lost with the connection
                return
            header = jute.REPLY.pack(xid, server.zxid, error)
            self._deliver(("reply", ReplyHeader(xid, server.zxid, error), header + body))

        self.hub.call_at(self._arrival, arrive, f"{self.name}:arrives", self.index)

    # -- the connection's unit (kazoo's connection thread) ---------------------------------------

    def _serve(self) -> None:
        client = self.client
        hub = self.hub
        while True:
            if self.broken:
                self.broken = False
                self._heard_break()
            elif client._stopped.is_set() and not self.live:
                self._end()
                return
            elif self.live and self._woken:
                self._woken = False
                if self._send_queued():
                    return
            elif self.live and self._inbox and self._inbox[0][0] <= hub.now:
                _, epoch, item = self._inbox.popleft()
                if epoch == self.epoch and self._read(item):
                    return
            elif not self.live and hub.now >= max(self._next_attempt, self.cut_until):
                self._attempt()
            else:
                self._park()
                continue
            if self._work_now():
                hub.yield_now()  # each piece of work is a turn of its own

    def _work_now(self) -> bool:
        now = self.hub.now
        return (
            self.broken
            or (self.client._stopped.is_set() and not self.live)
            or (self.live and self._woken)
            or (self.live and bool(self._inbox) and self._inbox[0][0] <= now)
        )

    def _park(self) -> None:
        """Wait for the next piece of work: an answer due, a request queued, a break, the next
        attempt to connect."""
        until: float | None = None
        if self.live and self._inbox:
            until = self._inbox[0][0]
        elif not self.live and not self.client._stopped.is_set():
            until = max(self._next_attempt, self.cut_until)
        self._waiting = True
        try:
            self.hub.block(until)
        finally:
            self._waiting = False

    def _send_queued(self) -> bool:
        """Send what kazoo queued, in order; True once the close is sent and answered."""
        client = self.client
        while client._queue and self.live:
            request, async_object = client._queue.popleft()
            if request.type == Auth.type:
                xid = AUTH_XID
            else:
                self._xid = self._xid % 2147483647 + 1
                xid = self._xid
            client._pending.append((request, async_object, xid))
            self._send(request, xid)
            if request.type == jute.CLOSE:
                break  # what was queued after it fails once the close is answered
        return False

    def _read(self, item: tuple[Any, ...]) -> bool:
        """Read one answer or event as kazoo's loop reads it; True once the close is answered."""
        if item[0] == "event":
            self._read_watch_event(item[1], 16)
            return False
        _, header, buffer = item
        if self._read_response(header, buffer, 16) == CLOSE_RESPONSE:
            self.live = False
            self.epoch += 1
            self._end()
            return True
        return False

    def _attempt(self) -> None:
        """One attempt to connect, as kazoo's ``_connect_attempt`` makes it."""
        client = self.client
        if client._stopped.is_set():
            return
        if client._state != KeeperState.CONNECTING:
            self._state(KeeperState.CONNECTING)
        try:
            self._connect("127.0.0.1", "127.0.0.1", 2181)  # pycurator's hook wraps it
        except SessionExpiredError:
            self._close_socket()
            self._state(KeeperState.EXPIRED_SESSION)
            self._next_attempt = self.hub.now + LATENCY
        except ConnectionDropped:
            self._close_socket()
            self._next_attempt = max(self.hub.now + RETRY_AFTER, self.cut_until)
        else:
            self._woken = True  # send what was queued while disconnected

    def _connect(self, host: str, hostip: str, port: int) -> tuple[float, float]:
        """kazoo's ``_connect``: the handshake, the session resumed (or refused as expired, or
        a new one), CONNECTED told. Returns the read and connect timeouts in milliseconds."""
        client = self.client
        server = self.server
        self.hub.block(self.hub.now + LATENCY)  # the handshake's round trip
        if self.hub.now < max(self.cut_until, self._next_attempt) or client._stopped.is_set():
            raise ConnectionDropped("the server cannot be reached")
        sid = client._session_id
        if sid and not server.alive(sid):
            raise SessionExpiredError("Session has expired")
        if not sid:
            listener = _Session(self)
            sid = listener.sid = server.open_session(listener)
            self.sessions.append(sid)
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self.sid = sid
        self.epoch += 1
        self.live = True
        self._last_due = self._arrival = self.hub.now
        client._session_id = sid
        client._session_passwd = b"\0" * 16
        client._protocol_version = 0
        self._state(KeeperState.CONNECTED)
        timeout = float(client._session_timeout)
        return timeout * 2.0 / 3.0, timeout

    def _close_socket(self) -> None:
        """The socket of an attempt that failed after its handshake is closed."""
        if self.live:
            self._break()
            self.broken = False

    def _heard_break(self) -> None:
        """The client hears that its connection broke (kazoo's loop, on a dropped socket)."""
        if self.client._state != KeeperState.CONNECTING:
            self._state(KeeperState.CONNECTING)

    def _end(self) -> None:
        """The loop ends (the client stopped): kazoo's ``zk_loop`` finally."""
        self.stopped_at = self.hub.now
        self._state(KeeperState.CLOSED)
        self.connection_stopped.set()

    def _state(self, state: str) -> None:
        """kazoo's ``_session_callback``, and what the world reads of it."""
        before = self.client._state
        self.client._session_callback(state)
        self._order()
        after = self.client._state
        if after == before:
            return
        now = self.hub.now
        if after in (KeeperState.CONNECTED, KeeperState.CONNECTED_RO):
            self.connected_since, self.suspended_since = now, None
        elif before in (KeeperState.CONNECTED, KeeperState.CONNECTED_RO):
            self.connected_since, self.suspended_since = None, now

    def _order(self) -> None:
        """Keep kazoo's watcher registries in the order watchers were set (see the module
        doc); kazoo makes new ones at each reset."""
        client = self.client
        for name in ("_data_watchers", "_child_watchers"):
            registry = getattr(client, name)
            if registry.default_factory is not OrderedSet:
                ordered: collections.defaultdict[str, OrderedSet] = collections.defaultdict(
                    OrderedSet
                )
                for path, watchers in registry.items():
                    ordered[path] = OrderedSet(watchers)
                setattr(client, name, ordered)


def sim_client(hub: Hub, server: Server, index: int, session_timeout: float) -> Link:
    """A new kazoo client on the hub and the server, not started (:meth:`Link.open`)."""
    handler = SimHandler(hub, index, f"c{index}")
    client = KazooClient(
        hosts="127.0.0.1:2181", timeout=session_timeout, handler=handler, randomize_hosts=False
    )
    link = Link(hub, server, client, index)
    client._connection = link
    return link
