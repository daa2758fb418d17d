"""The line ``lock`` and ``elect`` keep up to date on a terminal while they wait."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from kazoo.client import KazooClient

from .._recipes.inspection import LockView
from .._threads.inspection import inspect_lock
from ._text import shown, shown_data

#: Seconds between two redraws (each after one read of the lock path).
REFRESH = 1.0
_CLEAR = "\r\x1b[K"
#: Longest :meth:`Progress.stop` waits for a redraw under way.
STOP_WAIT = 1.0
#: The most characters of the holder's data the line shows.
DATA_WIDTH = 40


def describe(view: LockView, session: int, now_ms: int) -> str:
    """What the wait looks like: how many nodes are ahead of ours, who holds, since when."""
    nodes = list(view.participants)
    ours = next((i for i, p in enumerate(nodes) if session and p.entry.session == session), None)
    ahead = f"{ours if ours is not None else len(nodes)} ahead"
    holder = next((p for p in nodes if p.holder and p.entry.session != session), None)
    if holder is None:
        if view.blockers:
            return f"{shown(view.path)}: {ahead}, blocked by {shown(view.blockers[0])}"
        return f"{shown(view.path)}: {ahead}"
    data = shown_data(holder.entry.data, DATA_WIDTH) or "(no data)"
    since = max(0, now_ms - holder.entry.created_ms) // 1000
    verb = "led" if view.layout in ("latch", "zookeeper-election") else "held"
    return f"{shown(view.path)}: {ahead}, {verb} by {data} since {since} s"


class Progress:
    """Redraws one status line on ``stream`` every :data:`REFRESH` seconds until stopped:
    first the connection being waited for, then the queue in front of us, read as ``layout``
    (``permits``: a menagerie semaphore's). Disabled, it writes nothing (not a terminal, or
    ``--quiet``)."""

    def __init__(
        self,
        stream: TextIO,
        path: str,
        enabled: bool,
        layout: str | None = None,
        permits: int | None = None,
    ) -> None:
        self._stream = stream
        self._path = path
        self._layout = layout
        self._permits = permits
        self._enabled = enabled
        self._client: KazooClient | None = None
        self._hosts = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._drawn = False
        self._thread: threading.Thread | None = None

    def connecting(self, hosts: str) -> None:
        """Show the connection wait until :meth:`follow` is called."""
        self._hosts = hosts
        if self._enabled and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pycurator-progress")
            self._thread.daemon = True
            self._thread.start()

    def follow(self, client: KazooClient) -> None:
        """Show the queue on the path, read with ``client`` (connected)."""
        self._client = client

    def stop(self) -> None:
        """Stop redrawing and erase the line. A redraw waiting for the server (gone) is not
        waited for: that thread draws nothing once stopped, and ends with the client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT)
            self._thread = None
        if self._drawn:
            self._stream.write(_CLEAR)
            self._stream.flush()
            self._drawn = False

    def _line(self) -> str:
        client = self._client
        if client is None:
            waited = time.monotonic() - self._started
            return f"connecting to {self._hosts} ({waited:.0f} s)"
        try:
            view = inspect_lock(client, self._path, self._permits, self._layout)
        except Exception as exc:  # a refresh that fails is shown, the wait goes on
            return f"waiting for {self._path} (cannot read its queue: {type(exc).__name__})"
        session = client.client_id[0] if client.client_id else 0
        return "waiting for " + describe(view, session, int(time.time() * 1000))

    def _run(self) -> None:
        while not self._stop.is_set():
            line = self._line()
            if self._stop.is_set():
                break
            self._stream.write(f"{_CLEAR}pycurator: {line}")
            self._stream.flush()
            self._drawn = True
            self._stop.wait(REFRESH)
