"""An in-memory ZooKeeper with the semantics the recipes rely on, and the clients that talk to it.

:class:`Server`: a tree of nodes with data; persistent, ephemeral (owned by a session) and
container nodes (reaped once empty, having had children); sequential names from the parent's
``cversion``; one-shot watches (data and exists on a path, children of a path); sessions that live
through a dropped connection and end on expiry or close (their ephemerals deleted, the watches of
others fired).

:class:`Client`: one kazoo client, as the protocols' runners see it (a
:class:`~pycurator._protocol.steps.Transport`, and the
:class:`~pycurator._engine.hold_check.HoldSender` a hold check's callbacks use). As kazoo:
requests are answered in order, the watch events in the same stream; a request made while
disconnected waits for the connection; a dropped connection fails the requests in flight with
ConnectionLoss (applied or not), tells SUSPENDED, and fires and forgets every watch of the client
(``EventType.NONE``), the session living on; an expiry is told as LOST at the reconnect (the
requests made while disconnected failing with SessionExpiredError), then CONNECTED in a new
session; a stopped client closes its session (those requests failing with ConnectionLoss).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

from pycurator._client.runtime import STOPPED_MESSAGE
from pycurator._protocol.ops import (
    CreateNode,
    DeleteNode,
    GetData,
    ListChildren,
    MakeContainer,
    NodeExists,
    Request,
)
from pycurator._protocol.steps import Steps

from .scheduler import Scheduler, Timer

Watcher = Callable[[WatchedEvent], None]

#: Seconds a request takes to be answered (up and down), at the least.
LATENCY = 0.001
#: Seconds between two passes of the server's container reaper.
REAP_EVERY = 0.5


@dataclasses.dataclass
class Node:
    data: bytes
    owner: int  # the session of an ephemeral node; 0 for any other
    container: bool
    czxid: int
    mzxid: int
    version: int = 0
    cversion: int = 0
    children: set[str] = dataclasses.field(default_factory=set)
    had_children: bool = False

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            self.czxid,
            self.mzxid,
            0,
            0,
            self.version,
            self.cversion,
            0,
            self.owner,
            len(self.data),
            len(self.children),
            self.mzxid,
        )


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


class Session:
    def __init__(self, sid: int, client: Client) -> None:
        self.sid = sid
        self.client = client
        self.alive = True
        self.ephemerals: set[str] = set()


class Server:
    """The ensemble, as one server (see module doc). :attr:`gone` says, for each node path
    deleted, how: ``("deleted", session)`` or ``("expired", session)`` or ``("reaped", 0)``."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.zxid = 1
        self.nodes: dict[str, Node] = {"/": Node(b"", 0, False, 0, 0)}
        self.sessions: dict[int, Session] = {}
        self._next_session = 0x1000
        self.data_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(set)
        self.child_watches: collections.defaultdict[str, set[int]] = collections.defaultdict(set)
        self.gone: dict[str, tuple[str, int, float]] = {}
        self._reaper: Timer | None = None

    def start_reaper(self) -> None:
        def reap() -> None:
            for path, node in list(self.nodes.items()):
                empty = node.container and not node.children and node.had_children
                if empty and path in self.nodes:
                    self._delete(path, ("reaped", 0))
            self._reaper = self.scheduler.call_later(REAP_EVERY, reap)

        self._reaper = self.scheduler.call_later(REAP_EVERY, reap)

    def stop_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()

    # -- sessions --------------------------------------------------------------------------------

    def open_session(self, client: Client) -> int:
        self._next_session += 1
        sid = self._next_session
        self.sessions[sid] = Session(sid, client)
        return sid

    def end_session(self, sid: int, how: str) -> None:
        """The session ends (``how``: ``"expired"`` or ``"closed"``): its ephemerals go."""
        session = self.sessions.get(sid)
        if session is None or not session.alive:
            return
        session.alive = False
        for path in sorted(session.ephemerals, reverse=True):
            if path in self.nodes:
                self._delete(path, (how, sid))
        self.forget_watches(sid)

    def forget_watches(self, sid: int) -> None:
        for table in (self.data_watches, self.child_watches):
            for sessions in table.values():
                sessions.discard(sid)

    def alive(self, sid: int | None) -> bool:
        session = self.sessions.get(sid) if sid is not None else None
        return session is not None and session.alive

    # -- the tree --------------------------------------------------------------------------------

    def _trigger(self, table: dict[str, set[int]], path: str, type: str) -> None:
        sessions = table.pop(path, set()) if path in table else set()
        for sid in sorted(sessions):
            session = self.sessions.get(sid)
            if session is not None and session.alive:
                session.client.event(WatchedEvent(type, KazooState.CONNECTED, path))

    def _delete(self, path: str, how: tuple[str, int]) -> None:
        node = self.nodes.pop(path)
        self.zxid += 1
        parent = self.nodes.get(_parent(path))
        if parent is not None:
            parent.children.discard(_name(path))
            parent.cversion += 1
        if node.owner and node.owner in self.sessions:
            self.sessions[node.owner].ephemerals.discard(path)
        self.gone[path] = (how[0], how[1], self.scheduler.now)
        self._trigger(self.data_watches, path, EventType.DELETED)
        self._trigger(self.child_watches, path, EventType.DELETED)
        self._trigger(self.child_watches, _parent(path), EventType.CHILD)

    def _create(
        self, path: str, data: bytes, sid: int, ephemeral: bool, sequence: bool, container: bool
    ) -> tuple[str, ZnodeStat]:
        parent = self.nodes.get(_parent(path))
        if parent is None:
            raise NoNodeError()
        if parent.owner:
            raise NoNodeError()  # NoChildrenForEphemerals, as the protocols read it
        if sequence:
            path = f"{path}{parent.cversion:010d}"
        if path in self.nodes:
            raise NodeExistsError()
        self.zxid += 1
        node = Node(data, sid if ephemeral else 0, container, self.zxid, self.zxid)
        self.nodes[path] = node
        parent.children.add(_name(path))
        parent.had_children = True
        parent.cversion += 1
        if ephemeral:
            self.sessions[sid].ephemerals.add(path)
        self.gone.pop(path, None)
        self._trigger(self.data_watches, path, EventType.CREATED)
        self._trigger(self.child_watches, _parent(path), EventType.CHILD)
        return path, node.stat()

    def delete_by_another(self, path: str) -> None:
        """Another client (an operator, say) deletes ``path``."""
        if path in self.nodes and not self.nodes[path].children:
            self._delete(path, ("deleted by another", 0))

    def set_data(self, path: str, data: bytes) -> None:
        """Another client writes ``data`` to ``path`` (if it is there)."""
        node = self.nodes.get(path)
        if node is None:
            return
        self.zxid += 1
        node.data, node.mzxid, node.version = data, self.zxid, node.version + 1
        self._trigger(self.data_watches, path, EventType.CHANGED)

    def apply(self, sid: int, request: Request) -> Any:
        """Apply ``request`` of session ``sid``; its answer (a server's error raised)."""
        if not self.alive(sid):
            raise SessionExpiredError()
        if isinstance(request, CreateNode):
            return self._create(
                request.path,
                request.data or b"",
                sid,
                request.ephemeral,
                request.sequence,
                False,
            )
        if isinstance(request, MakeContainer):
            return self._create(request.server_path, b"", sid, False, False, True)
        if isinstance(request, DeleteNode):
            node = self.nodes.get(request.path)
            if node is None:
                raise NoNodeError()
            if node.children:
                raise NotEmptyError()
            self._delete(request.path, ("deleted", sid))
            return True
        if isinstance(request, ListChildren):
            node = self.nodes.get(request.path)
            if node is None:
                raise NoNodeError()
            if request.watch is not None:
                self.child_watches[request.path].add(sid)
            children = sorted(node.children)
            self.scheduler.rng.shuffle(children)  # ZooKeeper's order is no order
            return children
        if isinstance(request, NodeExists):
            if request.watch is not None:
                self.data_watches[request.path].add(sid)
            node = self.nodes.get(request.path)
            return None if node is None else node.stat()
        if isinstance(request, GetData):
            node = self.nodes.get(request.path)
            if node is None:
                raise NoNodeError()
            if request.watch is not None:
                self.data_watches[request.path].add(sid)
            return node.data, node.stat()
        raise AssertionError(f"not a request the model knows: {request!r}")

    def ephemerals_of(self, sid: int) -> set[str]:
        session = self.sessions.get(sid)
        return set(session.ephemerals) if session is not None and session.alive else set()


class Answer:
    """A pending answer with the interface of kazoo's async result."""

    __slots__ = ("_error", "_links", "_ready", "_value", "reduce", "request")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.reduce: Callable[[Any], Any] | None = getattr(request, "reduce", None)
        self._ready = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._links: list[Callable[[Any], None]] = []

    @property
    def value(self) -> Any:
        return self._value if self._ready and self._error is None else None

    def ready(self) -> bool:
        return self._ready

    def successful(self) -> bool:
        return self._ready and self._error is None

    def get_nowait(self) -> Any:
        assert self._ready, "read before it was answered"
        if self._error is not None:
            raise self._error
        return self._value

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        if self._ready:
            callback(self)
        else:
            self._links.append(callback)

    def unlink(self, callback: Callable[[Any], None]) -> None:
        if callback in self._links:
            self._links.remove(callback)

    def land(self, value: Any, error: BaseException | None) -> None:
        if self._ready:
            return
        if error is None and self.reduce is not None:
            value = self.reduce(value)
        self._value, self._error, self._ready = value, error, True
        links, self._links = self._links, []
        for callback in links:
            callback(self)


class _Queue:
    """A serial queue: each call in order, on the scheduler, soon."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        self._scheduler.call_later(0.0, lambda: function(*args))


class Client:
    """One kazoo client on the :class:`Server` (see module doc). ``name``: for the reports."""

    def __init__(self, name: str, server: Server, kazoo_client: Any) -> None:
        self.name = name
        self.server = server
        self.scheduler = server.scheduler
        self.kazoo = kazoo_client  # never started: the protocols take its handler's lock
        self.stopped = False
        self.is_connected = False
        self.connected_since = 0.0
        self.session: int | None = None  # the session the client is in, connected or not
        self.sessions: list[int] = []  # every session it has had
        self.session_tick = 0  # the scheduler's tick of the last change of session
        self.listeners: list[Callable[[str], object]] = []
        self.data_watchers: collections.defaultdict[str, list[Watcher]] = collections.defaultdict(
            list
        )
        self.child_watchers: collections.defaultdict[str, list[Watcher]] = collections.defaultdict(
            list
        )
        self.claimed: dict[str, object] = {}
        self.owed: set[str] = set()
        self._queued: list[tuple[Request, Answer]] = []  # sent while disconnected
        self._inflight: list[Answer] = []  # sent on this connection, not answered yet
        self._epoch = 0  # one per connection
        self._last_due = 0.0
        self._arrival = 0.0
        self._stall_until = 0.0
        self.cut_until = 0.0  # no connection before then (the session expires meanwhile)
        self.lose_next = False  # the next answer is lost: the connection drops instead
        #: set by the faults: a hook to tell (an interleaving the model cannot see otherwise)
        self.session_hook: Callable[[Client], int | None] | None = None

    # -- the connection --------------------------------------------------------------------------

    def connect(self) -> None:
        """Connect: in the same session if it lives, else LOST (if it had one) and a new one."""
        if self.stopped or self.is_connected or self.scheduler.now < self.cut_until:
            return
        if self.session is not None and not self.server.alive(self.session):
            self.session = None
            self.session_tick = self.scheduler.ticks
            self._tell(KazooState.LOST)
            self._fail_queued(SessionExpiredError())
            self._reset_watchers()
            if self.stopped or self.is_connected:
                return
        if self.session is None:
            self.session = self.server.open_session(self)
            self.session_tick = self.scheduler.ticks
            self.sessions.append(self.session)
        self.is_connected = True
        self.connected_since = self.scheduler.now
        self._epoch += 1
        self._last_due = self.scheduler.now
        self._tell(KazooState.CONNECTED)
        queued, self._queued = self._queued, []
        for request, answer in queued:
            self._transmit(request, answer)
        for path in sorted(self.owed):
            self._send_owed(path)

    def drop(self) -> None:
        """The connection drops; the session lives on (until the server expires it)."""
        if not self.is_connected:
            return
        self.is_connected = False
        self._epoch += 1
        inflight, self._inflight = self._inflight, []
        self.server.forget_watches(self.session or 0)  # kazoo sets none again (it forgets them)
        for answer in inflight:
            answer.land(None, ConnectionLoss())
        self._tell(KazooState.SUSPENDED)
        self._reset_watchers()

    def stop(self) -> None:
        """The client is stopped: its session is closed, told as LOST."""
        if self.stopped:
            return
        was_connected = self.is_connected
        self.stopped = True
        self.is_connected = False
        self._epoch += 1
        if self.session is not None:
            self.server.end_session(self.session, "closed" if was_connected else "expired")
        self.session = None
        self.session_tick = self.scheduler.ticks
        inflight, self._inflight = self._inflight, []
        for answer in inflight:
            answer.land(None, ConnectionLoss())
        self._fail_queued(ConnectionLoss())  # kazoo's _notify_pending(CLOSED)
        self.owed.clear()
        self._tell(KazooState.LOST)
        self._reset_watchers()

    def stall(self, seconds: float) -> None:
        """The answers (and events) of the next ``seconds`` come late, in order."""
        self._stall_until = max(self._stall_until, self.scheduler.now + seconds)

    def _fail_queued(self, error: BaseException) -> None:
        """The requests made while disconnected fail (kazoo's ``_notify_pending``)."""
        queued, self._queued = self._queued, []
        for _, answer in queued:
            answer.land(None, error)

    def _tell(self, state: str) -> None:
        for listener in list(self.listeners):
            listener(state)

    def _reset_watchers(self) -> None:
        watchers = [w for ws in self.child_watchers.values() for w in ws]
        watchers += [w for ws in self.data_watchers.values() for w in ws]
        self.child_watchers.clear()
        self.data_watchers.clear()
        state = KazooState.CONNECTED if self.is_connected else KazooState.SUSPENDED
        event = WatchedEvent(EventType.NONE, state, None)
        for watcher in watchers:
            self.scheduler.call_later(0.0, functools.partial(watcher, event))

    # -- the stream, in order --------------------------------------------------------------------

    def _due(self) -> float:
        due = max(self.scheduler.now + LATENCY, self._last_due, self._stall_until)
        self._last_due = due
        return due

    def _transmit(self, request: Request, answer: Answer) -> None:
        epoch = self._epoch
        self._inflight.append(answer)

        def arrive() -> None:
            if epoch != self._epoch:
                return  # the connection dropped first: not applied
            try:
                value, error = self.server.apply(self.session or 0, request), None
            except Exception as exc:
                value, error = None, exc
            if self.lose_next:
                self.lose_next = False
                self.drop()  # applied, and its answer lost with the connection
                self.scheduler.call_later(self.reconnect_delay, self.connect)
                return
            self.scheduler.call_at(self._due(), lambda: deliver(value, error))

        def deliver(value: Any, error: BaseException | None) -> None:
            if epoch != self._epoch:
                return
            self._inflight.remove(answer)
            if isinstance(request, (GetData, ListChildren, NodeExists)) and error is None:
                self._register(request)
            answer.land(value, error)

        self.scheduler.call_at(self._last_arrival(), arrive)

    def _last_arrival(self) -> float:
        """When a request sent now reaches the server: after those sent before it."""
        self._arrival = max(self.scheduler.now + LATENCY / 2, self._arrival)
        return self._arrival

    def _register(self, request: GetData | ListChildren | NodeExists) -> None:
        """A watch request answered: its watcher is kept (kazoo registers it as it reads the
        answer, and only then)."""
        if request.watch is None:
            return
        table = self.child_watchers if isinstance(request, ListChildren) else self.data_watchers
        if request.watch not in table[request.path]:
            table[request.path].append(request.watch)

    #: seconds a connection lost with an answer takes to come back
    reconnect_delay = 0.2

    def event(self, event: WatchedEvent) -> None:
        """The server fires a watch of our session: told after the answers before it."""
        if not self.is_connected:
            return
        epoch = self._epoch

        def deliver() -> None:
            if epoch != self._epoch:
                return
            path = event.path
            assert path is not None
            watchers: list[Watcher] = []
            if event.type in (EventType.CREATED, EventType.CHANGED, EventType.DELETED):
                watchers += self.data_watchers.pop(path, [])
            if event.type in (EventType.CHILD, EventType.DELETED):
                watchers += self.child_watchers.pop(path, [])
            for watcher in watchers:
                watcher(event)

        self.scheduler.call_at(self._due(), deliver)

    # -- the transport ---------------------------------------------------------------------------

    def send(self, request: Request) -> Answer:
        answer = Answer(request)
        if self.stopped:
            answer.land(None, ConnectionClosedError("Connection has been closed"))
        elif not self.is_connected:
            self._queued.append((request, answer))
        else:
            self._transmit(request, answer)
        return answer

    def listen(self, listener: Callable[[str], object]) -> None:
        self.listeners.append(listener)

    def unlisten(self, listener: Callable[[str], object]) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    def check_open(self, message: str | None = None) -> None:
        if self.stopped:
            raise ConnectionClosedError(message or STOPPED_MESSAGE)

    def connected(self) -> bool:
        return self.is_connected

    def session_id(self) -> int | None:
        if self.session_hook is not None:
            return self.session_hook(self)
        return self.session

    def chroot(self) -> str:
        return ""

    def claims(self) -> dict[str, object]:
        return self.claimed

    def owe_delete(self, path: str, sent: Any = None) -> None:
        """Curator's guaranteed delete: sent again at each connection until done or gone."""
        if self.stopped:
            return
        self.owed.add(path)
        if sent is not None:
            sent.rawlink(lambda answer: self._owed_answer(path, answer))
        elif self.is_connected:
            self._send_owed(path)

    def _send_owed(self, path: str) -> None:
        self.send(DeleteNode(path)).rawlink(lambda answer: self._owed_answer(path, answer))

    def _owed_answer(self, path: str, answer: Any) -> None:
        try:
            answer.get_nowait()
        except (NoNodeError, SessionExpiredError, ConnectionClosedError, NotEmptyError):
            pass
        except Exception:
            if self.is_connected and path in self.owed:
                self._send_owed(path)
            return  # else sent again at the next connection
        self.owed.discard(path)

    def forget_watch(self, path: str, watcher: Watcher, children: bool = False) -> None:
        table = self.child_watchers if children else self.data_watchers
        watchers = table.get(path, [])
        if watcher in watchers:
            watchers.remove(watcher)
        if not watchers and self.is_connected:
            # as the transport: no other watcher of the client there, so the server is asked
            # to drop the session's watch, a request in turn after those sent before it
            table.pop(path, None)
            server_table = self.server.child_watches if children else self.server.data_watches
            sid, epoch = self.session or 0, self._epoch

            def arrive() -> None:
                if epoch == self._epoch:
                    server_table[path].discard(sid)

            self.scheduler.call_at(self._last_arrival(), arrive)

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        return self.scheduler.call_later(delay, function)

    def serial_queue(self) -> _Queue:
        return _Queue(self.scheduler)

    def start(self, steps: Steps[Any]) -> None:
        self.scheduler.spawn(f"{self.name}:background", self, steps)

    # -- the hold check's sender -----------------------------------------------------------------

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        self.scheduler.call_later(delay, lambda: function(argument))

    def post_request(self, function: Callable[[], None]) -> None:
        self.scheduler.call_later(0.0, function)
