"""A client's watches that stay (ZooKeeper's ``addWatch``, which kazoo lacks), kept beside
kazoo's one-shot watchers: their sending and removal, who hears each event, how they outlive a
dropped connection, and how they end with the session.

The server keeps one watch per path for a session, and sends one event per path and change
whatever kinds of watch the session holds there. kazoo hands each event to its one-shot
watchers of the path; then :meth:`WatchesThatStay.on_event` hands it to the watches that stay
and cover it (:func:`~pycurator._client.kazoo_internals.follow_watch_events`): those on the
path itself (every event), and the recursive ones on the path or above it (creations,
deletions and data changes; the server sends them no children change). Each callback is
called once per event, through the handler's callback queue, in the order the events came.

A watch is registered as the server's answer to its ``addWatch`` is read, on the connection
thread, before any event it brings (:class:`~pycurator._client.records.AddWatch`). The server
drops a connection's watches with it: once the client reconnects within the session, every
watch is set again ahead of any other request (as ZooKeeper's Java client sends its watches
first), then each callback hears a NONE event of state CONNECTED (changes from then on are
told); when the connection drops, one of state CONNECTING; when the session ends, one of its
end (EXPIRED_SESSION, AUTH_FAILED, or CLOSED for a stop), and no more: the watch ended with
the session.

A server before 3.9 keeps one mode per path and session (ZOOKEEPER-4466: a one-shot watch set
on the path of a watch that stays ends the latter when it fires) and cannot drop a watch that
stays apart from the path's other watches (ZOOKEEPER-4472). So a one-shot watch the client
sends on a path whose watch that stays covers it is kept by the client alone (the server sends
the path's events anyway: :func:`keeps_one_shot`), and a watch that stays whose last callback
goes while such one-shot watches wait is kept on the server, told to nobody, until they have
fired or been dropped; where no other watch of the client is on the path, the server is asked
to drop every watch of it (ANY, which every server since 3.6 reads).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoWatcherError
from kazoo.protocol.states import (
    EVENT_TYPE_MAP,
    Callback,
    EventType,
    KazooState,
    KeeperState,
    WatchedEvent,
)

from .._protocol.requests import AddWatch, AddWatchMode, RemoveWatches, Watch, WatcherType
from .._protocol.steps import outcome
from . import kazoo_internals
from .queueing import CAN_REMOVE_WATCHES, explained, prefixed, sent
from .records import AddWatch as AddRecord
from .records import RemoveWatches as RemoveRecord
from .runtime import process_lock, runtime_of

log = logging.getLogger("pycurator")

#: ZooKeeper's ``NodeChildrenChanged``, which no recursive watch hears.
CHILDREN_CHANGED = 4
#: What a server needs for watches that stay.
ADD_WATCH_NEEDS = "ZooKeeper 3.6 or later"
_EXACT, _RECURSIVE = AddWatchMode.PERSISTENT, AddWatchMode.PERSISTENT_RECURSIVE


def tell(client: KazooClient, watches: Iterable[Watch], event: WatchedEvent) -> None:
    """Call each of ``watches`` with ``event`` through ``client``'s handler, as kazoo calls its
    watchers (at once, on this thread, once the handler is stopped)."""
    handler = client.handler
    for watch in watches:
        if handler.running:
            handler.dispatch_callback(Callback("watch", watch, (event,)))
            continue
        try:
            watch(event)
        except Exception:
            log.exception("a watch failed: %r", watch)


class WatchesThatStay:
    """The watches that stay of one client, by server path (chroot included) and mode; see the
    module doc. :func:`watches_of` makes it. Its lock is held for bookkeeping only."""

    def __init__(self, client: KazooClient) -> None:
        self._client = weakref.ref(client)
        self._lock = threading.Lock()
        #: the callbacks of each path, by mode (dicts as ordered sets); an empty one is a watch
        #: kept on the server for the client's one-shot watches of the path (see the module doc)
        self._watches: dict[AddWatchMode, dict[str, dict[Watch, None]]] = {
            _EXACT: {},
            _RECURSIVE: {},
        }
        #: the ``addWatch`` requests sent and not answered yet, by path and mode
        self._adding: Counter[tuple[str, AddWatchMode]] = Counter()
        #: the one-shot watch requests kept by the client alone, not answered yet, by path
        self._one_shots: Counter[str] = Counter()
        self._listening = False
        kazoo_internals.follow_watch_events(client, self.on_event)

    def __bool__(self) -> bool:
        return bool(self._watches[_EXACT] or self._watches[_RECURSIVE] or self._adding)

    # -- added and removed -------------------------------------------------------------------

    def adding(self, server_path: str, mode: AddWatchMode, watch: Watch) -> AddRecord:
        """The record of an ``addWatch`` of ``server_path`` to be sent now: ``watch`` is
        registered as its answer is read; :meth:`answered` must hear of an answer in error."""
        key = (server_path, mode)
        with self._lock:
            self._adding[key] += 1
        self._listen()

        def on_set() -> None:  # on the connection thread, before the watch's first event
            with self._lock:
                self._watches[mode].setdefault(server_path, {})[watch] = None
                _count_down(self._adding, key)

        return AddRecord(server_path, int(mode), on_set)

    def answered(self, server_path: str, mode: AddWatchMode, error: BaseException | None) -> None:
        """The answer to an ``addWatch`` came: an ``error``, or none (:meth:`adding`'s record
        registered the watch already)."""
        if error is not None:
            with self._lock:
                _count_down(self._adding, (server_path, mode))
            self._unlisten_if_idle()

    def remove(
        self, server_path: str, mode: AddWatchMode, watch: Watch | None
    ) -> tuple[bool, bool]:
        """Tell ``watch`` (or, None, every watch of ``server_path`` in ``mode``) nothing more:
        whether it was there, and whether the server should now drop its watch (none of ours
        stays there in that mode, none is on its way, and no one-shot watch of the client there
        waits on it)."""
        with self._lock:
            callbacks = self._watches[mode].get(server_path)
            if not callbacks or (watch is not None and watch not in callbacks):
                return False, False
            if watch is None:
                callbacks.clear()
            else:
                del callbacks[watch]
            drop = not callbacks and (server_path, mode) not in self._adding
            if drop and not self._keep(server_path, mode):
                del self._watches[mode][server_path]
            else:
                drop = False
        self._unlisten_if_idle()
        return True, drop

    def forget_path(self, server_path: str) -> None:
        """The server is asked to drop every watch of ``server_path`` (``removeWatches`` of
        ANY): tell none of ours there anything more."""
        with self._lock:
            for watches in self._watches.values():
                watches.pop(server_path, None)
        self._unlisten_if_idle()

    def holds(self, server_path: str) -> bool:
        """Whether a watch that stays is set (or on its way) on ``server_path`` itself, where a
        server before 3.9 drops it with any watch of the path it is asked to drop."""
        with self._lock:
            return any(server_path in watches for watches in self._watches.values()) or any(
                path == server_path for path, _ in self._adding
            )

    def covers(self, server_path: str, children: bool) -> bool:
        """Whether a one-shot watch of ``server_path``'s data (or ``children``) is kept by the
        client alone, a watch that stays there hearing what it would (counted until
        :meth:`one_shot_answered`)."""
        with self._lock:
            covered = server_path in self._watches[_EXACT] or (
                not children and server_path in self._watches[_RECURSIVE]
            )
            if covered:
                self._one_shots[server_path] += 1
            return covered

    def one_shot_answered(self, server_path: str) -> None:
        """A one-shot watch request :meth:`covers` counted was answered (kazoo registered its
        watcher, if the answer set one)."""
        with self._lock:
            _count_down(self._one_shots, server_path)
        self.release(server_path)

    def release(self, server_path: str) -> None:
        """Ask the server to drop the watches kept for one-shot watches of ``server_path`` that
        have all fired or been dropped (see the module doc); from any thread."""
        client = self._client()
        with self._lock:
            released = [
                mode
                for mode, watches in self._watches.items()
                if watches.get(server_path) == {} and not self._keep(server_path, mode)
            ]
            for mode in released:
                del self._watches[mode][server_path]
        if client is None or not released:
            return
        for mode in released:
            runtime_of(client).services.requests.post(
                lambda mode=mode: drop_on_server(client, server_path, mode.watcher_type)
            )
        self._unlisten_if_idle()

    def _keep(self, server_path: str, mode: AddWatchMode) -> bool:
        """Whether the watch that stays on ``server_path`` in ``mode`` must stay on the server
        for the client's one-shot watches there (under the lock)."""
        client = self._client()
        if client is None:
            return False
        return bool(
            self._one_shots.get(server_path)
            or kazoo_internals.watchers(client, server_path, children=False)
            or (mode is _EXACT and kazoo_internals.watchers(client, server_path, children=True))
        )

    # -- events ------------------------------------------------------------------------------

    def on_event(self, kind: int, server_path: str) -> None:
        """The connection read an event of ``kind`` on ``server_path``: hand it to the watches
        that cover it (on the connection thread, right after kazoo's watchers)."""
        exact, recursive = self._watches[_EXACT], self._watches[_RECURSIVE]
        if not exact and not recursive:
            return
        event_type = EVENT_TYPE_MAP.get(kind)
        if event_type is None or event_type == EventType.NONE:
            return
        targets: dict[Watch, None] = {}
        with self._lock:
            targets.update(exact.get(server_path, {}))
            if recursive and kind != CHILDREN_CHANGED:
                path = server_path
                while True:
                    targets.update(recursive.get(path, {}))
                    if path == "/":
                        break
                    path = path.rsplit("/", 1)[0] or "/"
        client = self._client()
        if client is None or kazoo_internals.is_stopped(client):
            return
        if targets:
            event = WatchedEvent(event_type, client.client_state, client.unchroot(server_path))
            tell(client, targets, event)
        self.release(server_path)  # kazoo's one-shot watchers of the path have fired

    def on_state(self, state: str) -> None:
        """The client's runtime tells a state change (on the connection thread, or its timer
        for a session it takes as expired): each watch is told, and set again once the client
        reconnects within the session; the session's end ends them all."""
        client = self._client()
        if client is None:
            return
        if state == KazooState.CONNECTED:
            self._set_again(client)
            keeper_state = KeeperState.CONNECTED
        elif state == KazooState.SUSPENDED:
            keeper_state = KeeperState.CONNECTING
        elif kazoo_internals.is_stopped(client):
            keeper_state = KeeperState.CLOSED
        elif client.client_state == KeeperState.AUTH_FAILED:
            keeper_state = KeeperState.AUTH_FAILED
        else:
            keeper_state = KeeperState.EXPIRED_SESSION
        with self._lock:
            callbacks: dict[Watch, None] = {}
            for watches in self._watches.values():
                for at_path in watches.values():
                    callbacks.update(at_path)
            if state == KazooState.LOST:
                for watches in self._watches.values():
                    watches.clear()
                self._adding.clear()
                self._one_shots.clear()
        if state == KazooState.LOST:
            self._unlisten_if_idle()
        tell(client, callbacks, WatchedEvent(EventType.NONE, keeper_state, None))

    def _set_again(self, client: KazooClient) -> None:
        """Queue an ``addWatch`` of every watch, ahead of any other request (the runtime tells
        CONNECTED on the connection thread, before it sends anything)."""
        with self._lock:
            keys = [(path, mode) for mode, watches in self._watches.items() for path in watches]
        for path, mode in reversed(keys):  # each queued first: the last goes first
            result = client.handler.async_result()
            result.rawlink(_told_if_failed(path))
            kazoo_internals.call_first(client, AddRecord(path, int(mode), _nothing), result)

    # -- the client's states, heard while any watch is set or on its way ---------------------

    def _listen(self) -> None:
        client = self._client()
        with self._lock:
            if self._listening or client is None:
                return
            self._listening = True
        runtime_of(client).listen(self.on_state)

    def _unlisten_if_idle(self) -> None:
        client = self._client()
        with self._lock:
            if not self._listening or self or client is None:
                return
            self._listening = False
        runtime_of(client).unlisten(self.on_state)


def _count_down(counter: Counter[Any], key: Any) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


def _nothing() -> None:
    """What a watch set again does as its answer is read: it is registered already."""


def _told_if_failed(path: str) -> Callable[[Any], None]:
    """What reads the answer to ``path``'s watch set again: a failure is logged (a dropped
    connection sets it again at the next reconnect)."""

    def answered(result: Any) -> None:
        error = outcome(result)[1]
        if error is not None:
            log.warning("the watch that stays on %s could not be set again: %r", path, error)

    return answered


#: Whether any client of the process has had a watch that stays: until one has, a one-shot
#: watch request costs no look-up of its client's.
_ANY_MADE = [False]


def watches_of(client: KazooClient) -> WatchesThatStay:
    """``client``'s watches that stay (made on first use; a client's runtime keeps them)."""
    runtime = runtime_of(client)
    watches: WatchesThatStay | None = runtime.watches_that_stay
    if watches is None:
        with process_lock():
            watches = runtime.watches_that_stay
            if watches is None:
                watches = runtime.watches_that_stay = WatchesThatStay(client)
                _ANY_MADE[0] = True
    return watches


def _made(client: KazooClient) -> WatchesThatStay | None:
    """``client``'s watches that stay, if it has had any."""
    if not _ANY_MADE[0]:
        return None
    watches: WatchesThatStay | None = runtime_of(client).watches_that_stay
    return watches


def held_on(client: KazooClient, server_path: str) -> bool:
    """Whether ``client`` has a watch that stays on ``server_path`` itself (none made yet: no)."""
    watches = _made(client)
    return watches is not None and watches.holds(server_path)


def keeps_one_shot(client: KazooClient, server_path: str, children: bool) -> Any:
    """For a one-shot watch request of ``server_path``'s data (or ``children``) to be sent:
    None when the server must set its watch; else a function to call with its answer, the
    client then keeping the watch alone (see the module doc)."""
    watches = _made(client)
    if watches is None or not watches.covers(server_path, children):
        return None
    return lambda _: watches.one_shot_answered(server_path)


def released_one_shot(client: KazooClient, server_path: str) -> None:
    """A one-shot watcher of ``server_path`` was dropped: a watch kept for it may go."""
    watches = _made(client)
    if watches is not None:
        watches.release(server_path)


# -- sending -------------------------------------------------------------------------------


def send_add_watch(client: KazooClient, request: AddWatch) -> Any:
    """``addWatch``: the watch is registered as the answer is read."""
    mode = AddWatchMode(request.mode)
    server_path = prefixed(client, request.path)
    watches = watches_of(client)
    answer = sent(client, watches.adding(server_path, mode, request.watch))
    answer.rawlink(lambda result: watches.answered(server_path, mode, outcome(result)[1]))
    return explained(client, answer, "persistent watches", request.path, ADD_WATCH_NEEDS)


def send_remove(client: KazooClient, request: RemoveWatches) -> Any:
    """``removeWatches`` of a watch that stays: told nothing more at once (NoWatcherError when
    it was not there), then dropped on the server once none of the client's is left there
    (see the module doc); the answer comes at once."""
    server_path = prefixed(client, request.path)
    mode = _EXACT if request.watcher_type is WatcherType.PERSISTENT else _RECURSIVE
    found, drop = watches_of(client).remove(server_path, mode, request.watch)
    result = client.handler.async_result()
    if not found:
        result.set_exception(NoWatcherError())
        return result
    if drop:
        drop_on_server(client, server_path, request.watcher_type)
    result.set(None)
    return result


def drop_on_server(client: KazooClient, server_path: str, kind: WatcherType) -> None:
    """Ask the server to drop the client's watch that stays on ``server_path`` (of ``kind``),
    not waiting for the answer, which changes nothing here: with ANY where no other watch of
    the client is on the path, else with ``kind`` (which a server before 3.9 refuses)."""
    if not CAN_REMOVE_WATCHES:
        return  # the server keeps it until the session ends, and its events are told nobody
    alone = not (
        held_on(client, server_path)
        or kazoo_internals.watchers(client, server_path, children=False)
        or kazoo_internals.watchers(client, server_path, children=True)
    )
    if alone:  # a one-shot watch a request on its way sets goes too: counted, as forgotten
        runtime_of(client).watch_removals += 1
    with contextlib.suppress(KazooException):
        sent(client, RemoveRecord(server_path, WatcherType.ANY if alone else kind))


__all__ = [
    "ADD_WATCH_NEEDS",
    "CHILDREN_CHANGED",
    "WatchesThatStay",
    "drop_on_server",
    "held_on",
    "keeps_one_shot",
    "released_one_shot",
    "send_add_watch",
    "send_remove",
    "tell",
    "watches_of",
]
