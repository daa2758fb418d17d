"""An opt-in kazoo handler that spends less client CPU per request: ``FastThreadingHandler``.

kazoo's connection thread calls its handler's ``select`` about four times per request (the loop's
wait, the reply's length and body, the write), and ``SequentialThreadingHandler`` builds, fills
and closes a new ``selectors.DefaultSelector`` (an epoll instance: four system calls) on every
call. ``FastThreadingHandler`` keeps one ``select.poll`` object per calling thread and per set of
descriptors, so a call is a single ``poll`` system call; its callback and completion workers take
their work from ``queue.SimpleQueue`` instead of ``queue.Queue``. Everything else (two worker
threads run callbacks in order, events, locks, ``AsyncResult``, ``spawn``) is kazoo's own.

It is an extension point kazoo offers (``KazooClient(handler=...)``), not a patch: other clients
in the process keep kazoo's handler::

    from kazoo.client import KazooClient
    from pycurator.handlers import FastThreadingHandler

    zk = KazooClient(hosts="zk1:2181", handler=FastThreadingHandler())

One handler per client, as with kazoo's handlers. POSIX only (``select.poll``).
"""

from __future__ import annotations

import queue
import select
import threading
from collections.abc import Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

__all__ = ["FastThreadingHandler"]

#: Pollers a thread keeps at most; kazoo's connection thread uses three descriptor sets, and a
#: reconnect brings new descriptors, after which the old pollers are dropped.
_MAX_POLLERS = 8
#: What ``selectors`` counts as readable and writable: any event but the other direction's, so a
#: hang-up or an error wakes both a reader and a writer (who then see it in recv or send).
_NOT_READ = ~select.POLLOUT
_NOT_WRITE = ~select.POLLIN


class _WorkQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """A ``SimpleQueue`` with the ``task_done`` kazoo's workers call after each item."""

    def task_done(self) -> None:
        """Nothing to count: nobody joins these queues."""


class FastThreadingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's ``SequentialThreadingHandler`` with a reused poller in ``select`` and lighter work
    queues; a drop-in for ``KazooClient(handler=...)`` with the same contract (callbacks run in
    order on two worker threads, ``select`` returns the ready objects it was given)."""

    queue_impl = _WorkQueue

    def __init__(self) -> None:
        super().__init__()
        self._pollers = threading.local()

    def select(
        self,
        rlist: Sequence[Any],
        wlist: Sequence[Any],
        xlist: Sequence[Any],
        timeout: float | None = None,
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """``select.select``'s contract (``xlist`` is never reported, as in kazoo's handler),
        with ``timeout`` in seconds or ``None`` to block; a closed descriptor raises
        ``ValueError`` as kazoo's handler does."""
        wait_ms = None
        if timeout is not None:
            if not isinstance(timeout, (int, float)):
                raise TypeError("timeout must be a number")
            if timeout < 0:
                raise ValueError("timeout must be non-negative")
            wait_ms = timeout * 1000.0  # poll rounds a fraction of a millisecond up
        read_fds = [_fd(obj) for obj in rlist]
        write_fds = [_fd(obj) for obj in wlist]
        key = (*read_fds, -1, *write_fds)
        try:
            poller = self._pollers.cache[key]
        except (AttributeError, KeyError):
            poller = self._new_poller(key, read_fds, write_fds)
        ready = poller.poll(wait_ms)
        if not ready:
            return [], [], []
        readable: list[Any] = []
        writable: list[Any] = []
        for fd, events in ready:
            if events & select.POLLNVAL:
                raise ValueError("Invalid event mask or fd")
            if events & _NOT_READ and fd in read_fds:
                readable.append(rlist[read_fds.index(fd)])
            if events & _NOT_WRITE and fd in write_fds:
                writable.append(wlist[write_fds.index(fd)])
        return readable, writable, []

    def _new_poller(self, key: tuple[int, ...], read_fds: list[int], write_fds: list[int]) -> Any:
        """A poller for these descriptors, kept for the calling thread (a poll object may not
        be used by two threads at once)."""
        cache: dict[tuple[int, ...], Any] | None = getattr(self._pollers, "cache", None)
        if cache is None or len(cache) >= _MAX_POLLERS:
            cache = self._pollers.cache = {}
        events: dict[int, int] = {}
        for fd in read_fds:
            events[fd] = events.get(fd, 0) | select.POLLIN
        for fd in write_fds:
            events[fd] = events.get(fd, 0) | select.POLLOUT
        poller = select.poll()
        for fd, mask in events.items():
            poller.register(fd, mask)
        cache[key] = poller
        return poller


def _fd(obj: Any) -> int:
    """The descriptor of a socket (or anything with ``fileno``), or an int as it is."""
    return obj if obj.__class__ is int else fileobj_to_fd(obj)
