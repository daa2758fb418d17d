"""The clients of the explorer's in-memory ZooKeeper (:class:`~tests.explorer.server.Server`).

:class:`Client`: one kazoo client, as the protocols' runners and callbacks see it (a
:class:`~pycurator._protocol.transport.Transport`). As kazoo:
requests are answered in order, the watch events in the same stream; a request made while
disconnected waits for the connection; a dropped connection fails the requests in flight with
ConnectionLoss (applied or not), tells SUSPENDED, and fires and forgets every watch of the client
(``EventType.NONE``), the session living on; an expiry is told as LOST at the reconnect (the
requests made while disconnected failing with SessionExpiredError), then CONNECTED in a new
session; a stopped client closes its session (those requests failing with ConnectionLoss).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from pycurator._client.transport import transport_of
from pycurator._protocol.requests import DeleteNode, GetData, ListChildren, NodeExists, Request
from pycurator._protocol.steps import Steps
from pycurator._protocol.transport import STOPPED_MESSAGE

from .scheduler import Scheduler, Timer
from .server import LATENCY, Server, Watcher


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
        #: The kazoo client's transport, which the protocols take (for its handler's lock: the
        #: client is never started)
        self.transport = transport_of(kazoo_client)
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
        self.removals = 0  # watch removals asked of the server (WatchRemovals)
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

    def watch_removals(self) -> int:
        return self.removals

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
            self.removals += 1
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

    # -- time and order, for a hold check's callbacks -------------------------------------------

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        self.scheduler.call_later(delay, lambda: function(argument))

    def post_request(self, function: Callable[[], None]) -> None:
        self.scheduler.call_later(0.0, function)

    # -- what recipes are made with: the kazoo client's transport's ------------------------------

    @property
    def client(self) -> Any:
        return self.transport.client

    def session_timeout(self) -> float:
        return self.transport.session_timeout()

    def lock_object(self) -> Any:
        return self.transport.lock_object()

    def event_object(self) -> Any:
        return self.transport.event_object()

    def process_lock(self) -> Any:
        return self.transport.process_lock()

    def node_data(self) -> bytes:
        return self.transport.node_data()

    def guarded_transaction(self, path: str) -> Any:
        return self.transport.guarded_transaction(path)
