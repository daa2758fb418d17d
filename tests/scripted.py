"""A scripted server: runs a protocol's steps (:mod:`pycurator._protocol.steps`) with no server, no
thread and no sleep, as httpcore's mock backend stands in for a socket.

A script is the exchange, in order: each request the protocol sends (checked against it, field
by field) with the server's answer, each effect it owes (a background delete, a dropped watch),
and what happens while it waits (a watch event, a connection state change, a stop, its timeout).
The runner fails the test at the first request that differs, and :meth:`ScriptedServer.finish`
fails it when the script is not played to its end.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.exceptions import ConnectionClosedError
from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent, ZnodeStat

from pycurator._protocol.deadline import DeadlineExpired
from pycurator._protocol.requests import (
    AddWatch,
    AddWatchMode,
    GetData,
    ListChildren,
    NodeExists,
    RemoveWatches,
    Request,
    WatcherType,
)
from pycurator._protocol.steps import (
    Await,
    AwaitAll,
    NewSignal,
    Steps,
    WaitSignal,
    link_all,
    outcomes,
    perform,
)
from pycurator._protocol.transport import STOPPED_MESSAGE

T = TypeVar("T")


class _Some:
    """Matches any non-None value of a callable field (a watch, a reduction)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return self.what


#: A request's ``watch`` field, set to some watcher.
WATCHED: Any = _Some("WATCHED")
#: A request's ``reduce`` field, set to some reduction.
REDUCED: Any = _Some("REDUCED")


def stat(czxid: int, owner: int = 0) -> ZnodeStat:
    """A node's stat: its creation zxid and its ephemeral owner (session id)."""
    return ZnodeStat(czxid, czxid, 0, 0, 0, 0, 0, owner, 0, 0, czxid)


# -- the script's entries ----------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """While the protocol waits: the connection goes to ``state``; ``session``, if given, is
    the session id from now on (a new one after an expiry). As kazoo's client, a LOST state
    ends the session (none until a CONNECTED names the next); a SUSPENDED one keeps it."""

    state: str
    session: int | None = None


@dataclass(frozen=True)
class Reply:
    """The protocol sends ``request``; the server answers ``value``, or raises ``error``. With
    ``late``, the answer is held back: awaiting it passes the deadline, and it lands only when
    the script says so (:class:`Land`) or :meth:`ScriptedServer.land` is called."""

    request: Request
    value: Any = None
    error: BaseException | None = None
    late: bool = False
    #: the connection is lost as this answer is given (kazoo answers ConnectionLoss, and the
    #: client is not connected until a :class:`State` says CONNECTED)
    disconnects: bool = False
    #: what happens to the connection right after this answer is given, before the protocol's
    #: next step: each :class:`State` in turn (a drop, an expiry told at the reconnect, ...)
    then: tuple[State, ...] = ()
    #: another watcher of the client has the server drop a watch as this answer comes
    #: (:class:`~pycurator._protocol.steps.WatchRemovals` counts one more)
    drops_a_watch: bool = False


@dataclass(frozen=True)
class Owes:
    """The protocol hands the delete of ``path`` to the background (``sent``: after sending one)."""

    path: str
    sent: bool = False


@dataclass(frozen=True)
class Forgets:
    """The protocol drops its data watch on ``path``."""

    path: str


@dataclass(frozen=True)
class Fire:
    """While the protocol waits: the watches on ``path`` fire with ``type`` (the one-shot watches
    of the path, and the watches that stay which cover it)."""

    path: str
    type: str = EventType.DELETED


@dataclass(frozen=True)
class Stop:
    """While the protocol waits: the client is stopped."""


@dataclass(frozen=True)
class Timeout:
    """While the protocol waits: its wait's timeout passes."""


@dataclass(frozen=True)
class Land:
    """While the protocol waits: the late answers held back so far land, in order."""


@dataclass(frozen=True)
class Interrupt:
    """While the protocol awaits a late answer: ``error`` is thrown in (a cancellation,
    Ctrl-C); with ``lands``, late answers land in the next wait for one (the clean-up's)."""

    error: type[BaseException] = KeyboardInterrupt
    lands: bool = False


Entry = Reply | Owes | Forgets | Fire | State | Stop | Timeout | Land | Interrupt


# -- the server ----------------------------------------------------------------------------------


class Answer:
    """A scripted pending answer, with the interface of kazoo's async result that the protocol
    and the runners use."""

    def __init__(self, reply: Reply, reduce: Callable[[Any], Any] | None) -> None:
        self.reply = reply
        self._reduce = reduce
        self._ready = False
        self._links: list[Callable[[Any], None]] = []

    def ready(self) -> bool:
        return self._ready

    def successful(self) -> bool:
        return self._ready and self.reply.error is None

    @property
    def value(self) -> Any:
        """The answer, once it is in and is not an error (None otherwise)."""
        return self.get_nowait() if self.successful() else None

    def get_nowait(self) -> Any:
        assert self._ready, "read before it was answered"
        if self.reply.error is not None:
            raise self.reply.error
        if self._reduce is not None:
            return self._reduce(self.reply.value)
        return self.reply.value

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        if self._ready:
            callback(self)
        else:
            self._links.append(callback)

    def unlink(self, callback: Callable[[Any], None]) -> None:
        if callback in self._links:
            self._links.remove(callback)

    def land(self) -> None:
        self._ready = True
        links, self._links = self._links, []
        for callback in links:
            callback(self)


class Flag:
    """A runner's signal: a plain flag (nothing runs concurrently here)."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set


class _Now:
    """A serial queue that runs each call at once; a timer that fires at once."""

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        function(*args)

    def cancel(self) -> None:
        pass


class ScriptedServer:
    """Runs steps on a script (see the module doc); also the protocol's transport and sender.

    ``session``: the session id the client has; ``connected``: whether it is connected.
    :attr:`sent` lists every request the protocol sent; :attr:`log` each send, await and wait,
    in order (``("send", request)``, ``("await", request)``, ``("woken", None)`` or
    ``("timed out", None)``); :attr:`listeners` the connection listeners still registered;
    :attr:`watches` the one-shot watches still set, by path; :attr:`staying` the watches that
    stay (an answered :class:`~pycurator._protocol.requests.AddWatch`), by path and mode, told
    as the transport tells them: events they cover, and the connection's states as NONE events
    (a LOST state ends them).
    """

    def __init__(
        self, script: Iterable[Entry], *, session: int | None = 1, connected: bool = True
    ) -> None:
        self.script = list(script)
        self.session = session
        self.is_connected = connected
        self.stopped = False
        self.sent: list[Request] = []
        self.log: list[tuple[str, Request | None]] = []
        self.listeners: list[Callable[[str], object]] = []
        self.watches: defaultdict[str, list[Callable[[WatchedEvent], None]]] = defaultdict(list)
        self.staying: dict[tuple[str, AddWatchMode], list[Callable[[WatchedEvent], None]]] = {}
        #: the client's claims on its lock nodes (:class:`~pycurator._protocol.steps.Claims`)
        self.claimed: dict[str, object] = {}
        #: how many times the client had the server drop a watch (see :class:`Reply`)
        self.removals = 0
        self._held: list[Answer] = []
        self._land_next = False  # an Interrupt's late answers land in the next wait for one
        #: the first way the protocol departed from the script: raised by :meth:`run` and
        #: :meth:`finish` even if the protocol swallowed it (a callback's ``except Exception``)
        self.failure: AssertionError | None = None

    # -- driving -------------------------------------------------------------------------------

    def run(self, steps: Steps[T]) -> T:
        """Drive ``steps`` to their end; their value, or their error raised."""
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                self._raise_failure()
                return stop.value  # type: ignore[no-any-return]
            except BaseException:
                self._raise_failure()
                raise
            value, error = None, None
            try:
                if isinstance(step, Await):
                    value = self._await(step.result)
                elif isinstance(step, NewSignal):
                    value = Flag()
                elif isinstance(step, WaitSignal):
                    value = self._wait(step.signal)
                elif isinstance(step, AwaitAll):
                    unlink = link_all(step.answers, step.wake)
                    try:
                        self._wait(step.wake)
                    finally:
                        unlink()
                    value = outcomes(step.answers)
                else:
                    value = perform(self, step)
            except BaseException as exc:
                error = exc

    def finish(self) -> None:
        """Fail unless the whole script was played, and nothing listens any more."""
        self._raise_failure()
        assert not self.script, f"the protocol ended before the script: {self.script}"
        assert not self.listeners, f"listeners left: {self.listeners}"

    def fire(self, path: str, type: str = EventType.DELETED) -> None:
        """The watches on ``path`` fire with ``type`` (as :class:`Fire`, but at any time)."""
        watches = self.watches.pop(path, [])
        staying = self._covering(path, type)
        self._check(bool(watches or staying), f"no watch on {path} to fire")
        for watch in [*watches, *staying]:
            watch(WatchedEvent(type, KazooState.CONNECTED, path))

    def _covering(self, path: str, type: str) -> list[Callable[[WatchedEvent], None]]:
        """The watches that stay that hear an event of ``type`` on ``path``."""
        covering = list(self.staying.get((path, AddWatchMode.PERSISTENT), ()))
        at = path
        while type != EventType.CHILD:
            covering.extend(self.staying.get((at, AddWatchMode.PERSISTENT_RECURSIVE), ()))
            if at == "/":
                break
            at = at.rsplit("/", 1)[0] or "/"
        return list(dict.fromkeys(covering))

    def change(self, state: str, session: int | None = None) -> None:
        """The connection goes to ``state`` (as :class:`State`, but at any time)."""
        self.is_connected = state == KazooState.CONNECTED
        if session is not None:
            self.session = session
        elif state == KazooState.LOST:
            self.session = None
        self._tell(state)

    def drop(self) -> None:
        """The connection drops, the session living on (SUSPENDED), with no listener told
        yet: as the client is between the drop and kazoo's state change."""
        self.is_connected = False

    def land(self) -> None:
        """The answers held back so far land, in order (their linked callbacks run)."""
        held, self._held, self._land_next = self._held, [], False
        for answer in held:
            answer.land()

    def _check(self, ok: bool, message: str) -> None:
        if not ok:
            error = AssertionError(message)
            if self.failure is None:
                self.failure = error
            raise error

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _next(self, what: str) -> Entry:
        self._check(bool(self.script), f"the script has ended, but the protocol {what}")
        return self.script.pop(0)

    def _await(self, answer: Any) -> Any:
        assert isinstance(answer, Answer), f"not a scripted answer: {answer!r}"
        self.log.append(("await", answer.reply.request))
        interrupt = self.script[0] if self.script and not answer.ready() else None
        if isinstance(interrupt, Interrupt):
            del self.script[0]
            self._land_next = interrupt.lands
            raise interrupt.error()
        if not answer.ready() and self._land_next:
            self.land()
        if not answer.ready():
            raise DeadlineExpired()
        return answer.get_nowait()

    def _wait(self, signal: Any) -> bool:
        woken = self._waited(signal)
        self.log.append(("woken" if woken else "timed out", None))
        return woken

    def _waited(self, signal: Any) -> bool:
        while not signal.is_set():
            entry = self._next("waits")
            if isinstance(entry, Timeout):
                return False
            if isinstance(entry, Fire):
                self.fire(entry.path, entry.type)
            elif isinstance(entry, State):
                self.change(entry.state, entry.session)
            elif isinstance(entry, Stop):
                self.stopped = True
                self.change(KazooState.LOST)
            elif isinstance(entry, Land):
                self.land()
            else:
                self._check(False, f"the protocol waits, but the script expects {entry}")
        return True

    def _tell(self, state: str) -> None:
        for listener in list(self.listeners):
            listener(state)
        keeper = {
            KazooState.CONNECTED: KeeperState.CONNECTED,
            KazooState.SUSPENDED: KeeperState.CONNECTING,
        }.get(state, KeeperState.CLOSED if self.stopped else KeeperState.EXPIRED_SESSION)
        staying = list(dict.fromkeys(w for ws in self.staying.values() for w in ws))
        if state == KazooState.LOST:
            self.staying.clear()
        for watch in staying:
            watch(WatchedEvent(EventType.NONE, keeper, None))

    # -- the transport ---------------------------------------------------------------------------

    def hold_sends(self) -> None:
        """Nothing: the script plays each request as it is sent."""

    def send_held(self) -> None:
        """Nothing: see :meth:`hold_sends`."""

    def read_answer(self, answer: Any, timeout: float | None) -> None:
        """Nothing: the script answers each request as it is sent."""

    def send(self, request: Request) -> Answer:
        self.sent.append(request)
        self.log.append(("send", request))
        entry = self._next(f"sends {request}")
        self._check(
            isinstance(entry, Reply), f"the protocol sends {request}, the script expects {entry}"
        )
        assert isinstance(entry, Reply)
        self._check(matches(entry.request, request), f"sent {request}, expected {entry.request}")
        reduce = getattr(request, "reduce", None)
        answer = Answer(entry, reduce)
        if (
            isinstance(request, (GetData, ListChildren, NodeExists))
            and request.watch is not None
            and entry.error is None
            and not entry.late
        ):
            self.watches[request.path].append(request.watch)
        if isinstance(request, AddWatch) and entry.error is None and not entry.late:
            added = self.staying.setdefault((request.path, request.mode), [])
            if request.watch not in added:
                added.append(request.watch)
        if isinstance(request, RemoveWatches) and entry.error is None:
            self._remove_staying(request)
        if entry.disconnects:
            self.is_connected = False
        if entry.late:
            self._held.append(answer)
        else:
            answer.land()
        for change in entry.then:
            self.change(change.state, change.session)
        if entry.drops_a_watch:
            self.removals += 1
        return answer

    def _remove_staying(self, request: RemoveWatches) -> None:
        """A watch that stays removed (the whole path's, for a removal of ANY)."""
        kind = request.watcher_type
        if kind is WatcherType.ANY:
            for mode in AddWatchMode:
                self.staying.pop((request.path, mode), None)
            return
        if kind not in (WatcherType.PERSISTENT, WatcherType.PERSISTENT_RECURSIVE):
            return
        mode = (
            AddWatchMode.PERSISTENT
            if kind is WatcherType.PERSISTENT
            else AddWatchMode.PERSISTENT_RECURSIVE
        )
        watches = self.staying.get((request.path, mode), [])
        if request.watch is None:
            watches.clear()
        elif request.watch in watches:
            watches.remove(request.watch)
        if not watches:
            self.staying.pop((request.path, mode), None)

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
        return self.session

    def chroot(self) -> str:
        return ""

    def claims(self) -> dict[str, object]:
        return self.claimed

    def watch_removals(self) -> int:
        return self.removals

    def owe_delete(self, path: str, sent: Any = None) -> None:
        entry = self._next(f"owes the delete of {path}")
        self._check(
            entry == Owes(path, sent is not None), f"owes {path}, the script expects {entry}"
        )

    def forget_watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], children: bool = False
    ) -> None:
        entry = self._next(f"forgets its watch on {path}")
        self._check(entry == Forgets(path), f"forgets {path}, the script expects {entry}")
        watches = self.watches.get(path, [])
        if watcher in watches:
            watches.remove(watcher)

    def call_later(self, delay: float, function: Callable[[], None]) -> _Now:
        function()
        return _Now()

    def serial_queue(self) -> _Now:
        return _Now()

    def start(self, steps: Steps[Any]) -> None:
        """Background steps run at once, on the same script."""
        try:
            self.run(steps)
        except Exception as exc:
            raise AssertionError(f"background steps failed: {exc!r}") from exc

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        function(argument)

    def post_request(self, function: Callable[[], None]) -> None:
        function()

    # what recipes are made with: the engines under test are made with a kazoo client's
    # transport (never started), and only their steps run here

    @property
    def client(self) -> Any:
        raise AssertionError("a protocol reads no client")

    def session_timeout(self) -> float:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def lock_object(self) -> Any:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def event_object(self) -> Any:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def process_lock(self) -> Any:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def shared(self, key: Any, make: Any) -> Any:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def node_data(self) -> bytes:
        raise AssertionError("made with the recipe's transport, not the runner's")

    def guarded_transaction(self, path: str) -> Any:
        raise AssertionError("made with the recipe's transport, not the runner's")


def matches(expected: Any, actual: Any) -> bool:
    """Whether a request sent is the one expected: the same type and fields, where
    :data:`WATCHED` and :data:`REDUCED` match any callable."""
    if type(expected) is not type(actual):
        return False
    for item in dataclasses.fields(expected):
        want, got = getattr(expected, item.name), getattr(actual, item.name)
        if isinstance(want, _Some):
            if got is None:
                return False
        elif want != got:
            return False
    return True


__all__ = [
    "REDUCED",
    "WATCHED",
    "Answer",
    "Entry",
    "Fire",
    "Forgets",
    "Land",
    "Owes",
    "Reply",
    "ScriptedServer",
    "State",
    "Stop",
    "Timeout",
    "matches",
    "stat",
]
