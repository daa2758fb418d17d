"""``pycurator inspect --watch``: one lock followed live, through outages, until a signal ends
it or the reader of its output has gone.

The watch's own thread never waits on the server: a reader thread reads the lock (and sets the
child watch that wakes it), and the connection's changes come from a listener that only notes
them. So a suspended connection is told at once, and SIGTERM, SIGHUP or SIGINT (Ctrl-C) end the
watch at once, outage or not: the signal stops the client, which ends a read under way.
"""

from __future__ import annotations

import errno
import json
import threading
import time
from collections import deque
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, OperationTimeoutError, SessionExpiredError
from kazoo.protocol.states import KazooState, WatchedEvent

from .._recipes.inspection import GROUP, LockView, QueuedNode
from .._threads.inspection import inspect_lock
from ._common import Interrupter, output_gone
from ._text import shown
from ._views import ELECTIONS, participant_data, view_as_json, view_as_table

#: The connection as the watch tells it, and as its JSON documents' ``connection`` names it:
#: ``lost`` is an expired session, until the next one.
CONNECTED, SUSPENDED, LOST = "connected", "suspended", "lost"
STATES = {KazooState.CONNECTED: CONNECTED, KazooState.SUSPENDED: SUSPENDED, KazooState.LOST: LOST}
#: What a line says when the connection goes: what was shown may have changed since.
GONE = {
    SUSPENDED: "connection to ZooKeeper suspended: what is shown may be stale until it is back",
    LOST: "session expired: what is shown may be stale; connecting again with a new session",
}
#: The errors of a read that the connection's own change tells of (it is read again once back).
_CONNECTION_ERRORS = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)


def _label(p: QueuedNode) -> str:
    data = participant_data(p) or "no data"
    return f"{shown(p.kind)} {shown(p.entry.name)} ({data}, session 0x{p.entry.session:x})"


def changes(before: LockView | None, after: LockView) -> list[str]:
    """What happened between two readings of one lock: arrivals, departures and hand-offs;
    the whole lock when there is no reading before."""
    if before is None:
        return [view_as_table(after, int(time.time() * 1000)).rstrip("\n")]
    old = {p.entry.name: p for p in before.participants}
    new = {p.entry.name: p for p in after.participants}
    if after.layout == GROUP or before.layout == GROUP:
        return (
            [f"joined: {_label(p)}" for n, p in new.items() if n not in old]
            + [f"changed: {_label(p)}" for n, p in new.items() if n in old and old[n] != p]
            + [f"left: {_label(p)}" for n, p in old.items() if n not in new]
        )
    lines = []
    gone_holders = [old[n] for n in old if n not in new and old[n].holder]
    new_holders = [p for n, p in new.items() if p.holder and not (n in old and old[n].holder)]
    verb = "leads" if after.layout in ELECTIONS else "holds"
    handed = min(len(gone_holders), len(new_holders))
    lines += [
        f"hand-off: {_label(a)} -> {_label(b)}"
        for a, b in zip(gone_holders[:handed], new_holders[:handed], strict=True)
    ]
    gone_holders, new_holders = gone_holders[handed:], new_holders[handed:]
    lines += [f"released: {_label(p)}" for p in gone_holders]
    lines += [f"{verb}: {_label(p)}" for p in new_holders]
    lines += [f"left: {_label(p)}" for n, p in old.items() if n not in new and not p.holder]
    lines += [
        f"waits: {_label(p)} at position {p.position}"
        for n, p in new.items()
        if n not in old and not p.holder
    ]
    if before.exists and not after.exists:
        lines.append(f"{shown(after.path)}: no such node")
    return lines


class _Reader:
    """Reads the lock on a thread of its own, one reading at a time, each setting the child
    watch (or, for a missing path, the watch on the path) that sets :attr:`changed`. A reading
    asked for while one is under way follows it. Each reading, or the error that ended it, is
    kept for :meth:`readings` and told by setting ``wake``."""

    def __init__(
        self, client: KazooClient, path: str, permits: int | None, wake: threading.Event
    ) -> None:
        self._client = client
        self._path = path
        self._permits = permits
        self._wake = wake
        self._asked = threading.Event()
        self._closed = False
        self._done: deque[LockView | Exception] = deque()
        self.changed = threading.Event()
        threading.Thread(target=self._run, name="pycurator-watch", daemon=True).start()

    def ask(self) -> None:
        """Read the lock (again)."""
        self._asked.set()

    def close(self) -> None:
        """No more readings; one under way ends with the client's stop."""
        self._closed = True
        self._asked.set()

    def readings(self) -> list[LockView | Exception]:
        """The readings done since the last call, oldest first."""
        done = []
        while self._done:
            done.append(self._done.popleft())
        return done

    def _woken(self, event: WatchedEvent) -> None:
        self.changed.set()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._asked.wait()
            self._asked.clear()
            if self._closed:
                return
            result: LockView | Exception
            try:
                try:
                    self._client.get_children(self._path, watch=self._woken)
                except NoNodeError:
                    self._client.exists(self._path, watch=self._woken)
                result = inspect_lock(self._client, self._path, self._permits)
            except Exception as exc:
                result = exc
            self._done.append(result)
            self._wake.set()


class _Printer:
    """What the watch prints on ``out``: the lock's changes as lines, or as JSON documents."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self._out = out
        self._json = as_json
        self.before: LockView | None = None

    def reading(self, view: LockView, whole: bool, connection: str) -> None:
        """A reading of the lock: printed if it changed, or ``whole`` (the first after the
        connection came back)."""
        if not whole and view == self.before:
            return
        if self._json:
            self._document(view, connection)
        else:
            self._lines(changes(None if whole else self.before, view))
        self.before = view

    def connection(self, state: str, path: str) -> None:
        """The connection changed to ``state``."""
        if self._json:
            if self.before is not None:  # the lock as last read, said to be stale now
                self._document(self.before, state)
        elif state == CONNECTED:
            self._lines([f"connection to ZooKeeper back: reading {shown(path)} again"])
        else:
            self._lines([GONE[state]])

    def _document(self, view: LockView, connection: str) -> None:
        document: dict[str, Any] = view_as_json(view, int(time.time() * 1000))
        document.update(connection=connection, stale=connection != CONNECTED)
        self._out.write(json.dumps(document) + "\n")
        self._out.flush()

    def _lines(self, lines: list[str]) -> None:
        stamp = time.strftime("%H:%M:%S")
        self._out.writelines(f"{stamp} {line}\n" for line in lines)
        self._out.flush()


def follow(
    client: KazooClient,
    path: str,
    out: TextIO,
    as_json: bool,
    interval: float,
    permits: int | None = None,
) -> None:
    """Print the lock at ``path`` and then every change on ``out``: a line per event, or with
    ``as_json`` one JSON document per reading that changed (``permits``: a menagerie
    semaphore's). Woken by the child watch, and every ``interval`` seconds (for a semaphore's
    inner nodes). A connection suspended or a session expired is told at once (in JSON, the
    last document again, ``connection`` saying which and ``stale`` true); once the connection
    is back, that is told and the lock read and shown whole again.

    Returns on SIGTERM, SIGHUP or SIGINT, at once whatever the server does; raises
    ``BrokenPipeError`` once the reader of ``out`` has gone (noticed within ``interval``)."""
    stop, wake = threading.Event(), threading.Event()
    states: deque[str] = deque()

    def listen(state: KazooState) -> None:  # on kazoo's thread: note, wake, nothing more
        states.append(STATES.get(state, SUSPENDED))
        wake.set()

    def end() -> None:
        stop.set()
        wake.set()
        client.stop()  # a read under way ends with it

    reader = _Reader(client, path, permits, wake)
    client.add_listener(listen)
    try:
        with Interrupter().ending(end):
            _follow(client, path, out, _Printer(out, as_json), interval, reader, states, stop, wake)
    finally:
        client.remove_listener(listen)
        reader.close()


def _follow(
    client: KazooClient,
    path: str,
    out: TextIO,
    printer: _Printer,
    interval: float,
    reader: _Reader,
    states: deque[str],
    stop: threading.Event,
    wake: threading.Event,
) -> None:
    connection = CONNECTED if client.connected else SUSPENDED
    whole = True  # the next reading is shown whole: the first, and the first once back
    due = 0.0  # when the next reading is, on the monotonic clock
    while not stop.is_set():
        wake.clear()
        if output_gone(out):
            raise BrokenPipeError(errno.EPIPE, "the reader of the output has gone")
        while states:
            state = states.popleft()
            if stop.is_set():  # stopping the client on a signal tells LOST: not an outage
                return
            if state == connection:
                continue
            connection = state
            printer.connection(state, path)
            if state == CONNECTED:
                whole, due = True, 0.0
        for reading in reader.readings():
            if isinstance(reading, _CONNECTION_ERRORS):
                continue  # told by the connection's change; read again once it is back
            if isinstance(reading, Exception):
                raise reading
            if connection == CONNECTED:  # else it came as the connection went: read again later
                printer.reading(reading, whole, connection)
                whole = False
        if reader.changed.is_set():
            reader.changed.clear()
            due = 0.0
        now = time.monotonic()
        if connection == CONNECTED and now >= due:
            reader.ask()
            due = now + interval
        wake.wait(min(interval, max(0.0, due - now)) if connection == CONNECTED else interval)
