"""``pycurator watch PATH``: a subtree's events as they happen (as ``etcdctl watch --prefix``),
told by a :class:`~pycurator.CuratorCache` of PATH, through outages, until a signal ends it or the
reader of its output has gone.

The command's own thread never waits on the server: the cache's listener and the connection's
listener only note what they hear, and this thread prints it. So a suspended connection is told
at once, the changes made while away are told once it is back (the cache tells only the
differences), and SIGTERM, SIGHUP or SIGINT end the watch at once, outage or not.
"""

from __future__ import annotations

import argparse
import base64
import errno
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from .._protocol.cache import CacheEvent, CacheEventType, ChildData
from .._threads.cache import CuratorCache
from ._common import Interrupter, checked_path, connected, output_gone
from ._text import shown, shown_data
from ._watch import CONNECTED, GONE, STATES

#: How each kind of event is named in lines and documents.
_KINDS = {"NODE_CREATED": "created", "NODE_CHANGED": "changed", "NODE_DELETED": "deleted"}


def _json_data(node: ChildData | None) -> tuple[str | None, str | None]:
    """A node's data for JSON, exactly: text where it is UTF-8, else base64 (and which)."""
    if node is None or node.data is None:
        return None, None
    try:
        return node.data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(node.data).decode("ascii"), "base64"


def event_as_json(event: CacheEvent, now_ms: int) -> dict[str, Any]:
    """One event as a JSON document: its kind, path, the node's data and version after it
    (none for a deletion), and before it (none for a creation)."""
    data, encoding = _json_data(event.data)
    old, old_encoding = _json_data(event.old_data)
    return {
        "event": _KINDS[event.type.name],
        "path": event.path,
        "data": data,
        "data_encoding": encoding,
        "version": None if event.data is None else event.data.version,
        "old_data": old,
        "old_data_encoding": old_encoding,
        "old_version": None if event.old_data is None else event.old_data.version,
        "time_ms": now_ms,
    }


def _text(node: ChildData | None) -> str:
    if node is None or node.data is None:
        return "(no data)"
    return shown_data(node.data)


def event_as_line(event: CacheEvent) -> str:
    """One event as a line (after its time): its kind, path and data."""
    kind, path = _KINDS[event.type.name], shown(event.path)
    if event.type.name == "NODE_DELETED":
        return f"{kind} {path} (was {_text(event.old_data)})"
    if event.type.name == "NODE_CHANGED":
        return f"{kind} {path} {_text(event.data)} (was {_text(event.old_data)})"
    return f"{kind} {path} {_text(event.data)}"


class _Noter:
    """The cache's listener: notes each event (those of the first load with ``initial``
    only) and the end of the first load, with the cache's size then."""

    def __init__(
        self, note: Callable[[str, Any], None], cache: CuratorCache, initial: bool
    ) -> None:
        self._note = note
        self._cache = cache
        self._telling = initial

    def event(self, kind: CacheEventType, old: ChildData | None, new: ChildData | None) -> None:
        if self._telling:
            self._note("event", CacheEvent(kind, old, new))

    def initialized(self) -> None:
        self._telling = True
        self._note("initialized", self._cache.size())


class _Printer:
    """What the watch prints on ``out``: lines, or JSON documents."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self._out = out
        self._json = as_json

    def event(self, event: CacheEvent) -> None:
        if self._json:
            self._document(event_as_json(event, int(time.time() * 1000)))
        else:
            self._line(event_as_line(event))

    def initialized(self, path: str, size: int) -> None:
        if self._json:
            self._document({"initialized": True, "path": path, "nodes": size})
        else:
            self._line(f"watching {shown(path)}: {size} node(s)")

    def connection(self, state: str) -> None:
        if self._json:
            self._document({"connection": state})
        elif state == CONNECTED:
            self._line("connection to ZooKeeper back: the changes made meanwhile follow")
        else:
            self._line(GONE[state].replace("what is shown", "what was told"))

    def _document(self, document: dict[str, Any]) -> None:
        self._out.write(json.dumps(document) + "\n")
        self._out.flush()

    def _line(self, line: str) -> None:
        self._out.write(f"{time.strftime('%H:%M:%S')} {line}\n")
        self._out.flush()


def watch_tree(
    client: KazooClient, path: str, out: TextIO, as_json: bool, initial: bool, interval: float
) -> None:
    """Print every event of ``path`` and the tree below it on ``out`` as it happens (with
    ``initial``, the nodes there at the start first, as created), and the connection's changes.

    Returns on SIGTERM, SIGHUP or SIGINT, at once whatever the server does; raises
    ``BrokenPipeError`` once the reader of ``out`` has gone (noticed within ``interval``)."""
    stop, wake = threading.Event(), threading.Event()
    heard: deque[tuple[str, Any]] = deque()  # what the listeners noted, in order

    def note(kind: str, what: Any) -> None:  # on a worker or kazoo's thread: nothing more
        heard.append((kind, what))
        wake.set()

    cache = CuratorCache(client, path)
    cache.add_listener(_Noter(note, cache, initial))

    def listen(state: KazooState) -> None:
        note("connection", STATES.get(state, "suspended"))

    def end() -> None:
        stop.set()
        wake.set()

    client.add_listener(listen)
    cache.start()
    try:
        with Interrupter().ending(end):
            _print(path, out, _Printer(out, as_json), interval, heard, stop, wake)
    finally:
        client.remove_listener(listen)
        cache.close()


def _print(
    path: str,
    out: TextIO,
    printer: _Printer,
    interval: float,
    heard: deque[tuple[str, Any]],
    stop: threading.Event,
    wake: threading.Event,
) -> None:
    connection = CONNECTED
    while not stop.is_set():
        wake.clear()
        if output_gone(out):
            raise BrokenPipeError(errno.EPIPE, "the reader of the output has gone")
        while heard and not stop.is_set():
            kind, what = heard.popleft()
            if kind == "event":
                printer.event(what)
            elif kind == "initialized":
                printer.initialized(path, what)
            elif what != connection:
                connection = what
                printer.connection(what)
        wake.wait(interval)


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    """Print a subtree's events as they happen, until interrupted."""
    path = checked_path(args.path)
    with connected(args) as client:
        watch_tree(client, path, out, args.json, args.initial, args.interval)
    return 0


__all__ = ["cmd_watch", "event_as_json", "event_as_line", "watch_tree"]
