"""An opt-in kazoo handler that spends less client CPU per request: ``FastThreadingHandler``.

kazoo's connection thread calls its handler's ``select`` about four times per request (the loop's
wait, the reply's length and body, the write), and ``SequentialThreadingHandler`` builds, fills and
closes a new ``selectors.DefaultSelector`` (an epoll instance: four system calls) on every call.
``FastThreadingHandler`` keeps one ``select.poll`` object per calling thread and per set of
descriptors, so a call is a single ``poll`` system call at most; it reads the server's socket in
blocks (the replies and notifications that arrived together are then taken apart without another
system call or ``select``), sends without asking first whether the socket can take it (it waits only
when the kernel says it cannot), and runs pycurator's own watchers (which only record an event and
wake a waiter) on the connection thread rather than handing them to the callback worker; likewise a
callback pycurator links to a request's answer (:func:`link_inline`) runs on the thread that reads
the answer, and queuing a request never waits on kazoo's wake-up pair (see
:class:`~pycurator._handler_sockets.WakeWriter`). Its callback and completion workers take their
work from ``queue.SimpleQueue`` instead of ``queue.Queue``. Everything else (two worker threads run
other callbacks in order, events, locks, ``spawn``, ``AsyncResult`` otherwise) is kazoo's own.

It is an extension point kazoo offers (``KazooClient(handler=...)``), not a patch: other clients
in the process keep kazoo's handler::

    from kazoo.client import KazooClient
    from pycurator.handlers import FastThreadingHandler

    zk = KazooClient(hosts="zk1:2181", handler=FastThreadingHandler())

One handler per client, as with kazoo's handlers. POSIX only (``select.poll``). A TLS connection
(``use_ssl``) is not read in blocks (kazoo's SSL socket buffers already).
"""

from __future__ import annotations

import functools
import logging
import queue
import select
import ssl
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

from ._client import kazoo_internals
from ._handler_sockets import BufferedSocket, WakeWriter
from ._protocol import clock
from ._protocol.steps import link_inline
from ._protocol.transport import INLINE_MARK, runs_inline

__all__ = ["FastThreadingHandler", "link_inline", "runs_inline", "use_lean_loop", "uses_lean_loop"]

log = logging.getLogger(__name__)

#: Pollers a thread keeps at most; kazoo's connection thread uses three descriptor sets, and a
#: reconnect brings new descriptors, after which the old pollers are dropped.
_MAX_POLLERS = 8
#: What ``selectors`` counts as readable and writable: any event but the other direction's, so a
#: hang-up or an error wakes both a reader and a writer (who then see it in recv or send).
_NOT_READ = ~select.POLLOUT
_NOT_WRITE = ~select.POLLIN


#: Held while a result is answered, a callback linked or a waiter's gate made: uncontended in
#: practice (each is a few attribute moves), and one lock for all results instead of a lock and a
#: condition made for each.
_LINKS = threading.Lock()
#: What a result holds before it is answered.
_UNSET: Any = object()


class _InlineLinkedResult(AsyncResult):  # type: ignore[misc]
    """kazoo's ``AsyncResult`` contract (``set``/``set_exception`` once, ``get``/``wait`` with
    kazoo's timeout error, ``rawlink`` callbacks run on the completion worker), on a single
    ``threading.Lock`` made only when a thread waits before the answer, instead of a
    ``threading.Condition`` per result; and a callback run by the thread that sets it (see
    :func:`link_inline`)."""

    _inline: Callable[[Any], None] | None = None
    #: how a thread that waits may read the answer itself (see :meth:`read_by`)
    _read: Callable[[Any, float | None], None] | None = None

    def __init__(self, handler: Any) -> None:  # kazoo's __init__ would make a Condition
        self._handler = handler
        self._exception = _UNSET
        self._callbacks: list[Any] | None = None
        self._gate: threading.Lock | None = None
        self.value = None

    def ready(self) -> bool:
        return self._exception is not _UNSET

    def successful(self) -> bool:
        return self._exception is None

    @property
    def exception(self) -> BaseException | None:
        exception = self._exception
        return None if exception is _UNSET else exception

    def link_inline(self, callback: Callable[[Any], None]) -> None:
        self._inline = callback
        if self._exception is not _UNSET:
            self._run_inline()

    def read_by(self, read: Callable[[Any, float | None], None]) -> None:
        """Let a thread that waits for the answer read it itself, until it is answered:
        ``read(self, timeout)`` returns once it has come or ``timeout`` seconds (None: no
        limit) have passed, or at once when it cannot read (another thread reads). Given by
        pycurator's connection loop to the result of each request it sends, so that a kazoo
        call's answer (``get``, ``set``, ``delete``...) wakes no other thread."""
        self._read = read

    def set(self, value: Any = None) -> None:
        self.value = value
        self._answer(None)

    def set_exception(self, exception: BaseException) -> None:
        self._answer(exception)

    def _answer(self, exception: BaseException | None) -> None:
        self._read = None  # (the connection is not kept by an answered result)
        with _LINKS:
            self._exception = exception
            gate, callbacks = self._gate, self._callbacks
            self._gate = self._callbacks = None
        if callbacks:
            self._dispatch(callbacks)
        if gate is not None:
            gate.release()
        if self._inline is not None:
            self._run_inline()

    def _dispatch(self, callbacks: list[Any]) -> None:
        handler = self._handler
        for callback in callbacks:
            if handler.running:
                handler.completion_queue.put(functools.partial(callback, self))
            else:
                callback(self)

    def wait(self, timeout: float | None = None) -> bool:
        if self._exception is not _UNSET:
            return True
        read = self._read
        if read is not None:
            end = None if timeout is None else clock.monotonic() + timeout
            read(self, timeout)
            if self._exception is not _UNSET:
                return True
            if end is not None:
                timeout = end - clock.monotonic()
        with _LINKS:
            if self._exception is not _UNSET:
                return True
            gate = self._gate
            if gate is None:
                gate = self._gate = threading.Lock()
                gate.acquire()
        # every waiter passes the gate on once the answer opened it
        if gate.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            gate.release()
        return self._exception is not _UNSET

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if self._exception is _UNSET and block:
            self.wait(timeout)
        exception = self._exception
        if exception is None:
            return self.value
        if exception is _UNSET:
            raise self._handler.timeout_exception()
        raise exception

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def rawlink(self, callback: Callable[[Any], None]) -> None:
        with _LINKS:
            if self._exception is _UNSET:
                if self._callbacks is None:
                    self._callbacks = [callback]
                elif callback not in self._callbacks:
                    self._callbacks.append(callback)
                return
        self._dispatch([callback])

    def unlink(self, callback: Callable[[Any], None]) -> None:
        with _LINKS:
            if self._callbacks and callback in self._callbacks:
                self._callbacks.remove(callback)

    def _run_inline(self) -> None:
        # taken out in one step, so it runs once whichever thread sees the answer first
        callback = self.__dict__.pop("_inline", None)
        if callback is not None:
            try:
                callback(self)
            except Exception:
                log.exception("a callback failed")


class _WorkQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """A ``SimpleQueue`` with the ``task_done`` kazoo's workers call after each item."""

    def task_done(self) -> None:
        """Nothing to count: nobody joins these queues."""


class FastThreadingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's ``SequentialThreadingHandler`` with a reused poller in ``select``, sockets read in
    blocks, inline pycurator watchers and lighter work queues; a drop-in for
    ``KazooClient(handler=...)`` with the same contract (other callbacks run in order on two
    worker threads, ``select`` returns the ready objects it was given)."""

    queue_impl = _WorkQueue

    def __init__(self) -> None:
        super().__init__()
        self._pollers = threading.local()

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        """kazoo's connection, read in blocks unless it is a TLS one."""
        sock = super().create_connection(*args, **kwargs)
        return sock if isinstance(sock, ssl.SSLSocket) else BufferedSocket(sock)

    def create_socket_pair(self) -> tuple[Any, Any]:
        """kazoo's wake-up pair: its reading end (the first) read in blocks, its writing end
        never waiting (:class:`~pycurator._handler_sockets.WakeWriter`)."""
        reader, writer = super().create_socket_pair()
        buffered = BufferedSocket(reader)
        return buffered, WakeWriter(writer, buffered)

    def async_result(self) -> Any:
        """kazoo's ``AsyncResult``, which also takes :func:`link_inline` callbacks."""
        return _InlineLinkedResult(self)

    def dispatch_callback(self, callback: Any) -> None:
        """Run a watcher marked with :func:`runs_inline` now, on the calling (connection)
        thread; queue anything else for the callback worker, as kazoo's handler does."""
        if getattr(callback.func, INLINE_MARK, False):
            try:
                callback.func(*callback.args)
            except Exception:
                log.exception("a watcher failed")
            return
        super().dispatch_callback(callback)

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
        if not wlist:
            read_fds = []
            known = None
            for obj in rlist:
                if obj.__class__ is BufferedSocket:
                    if obj.readable or obj.offset < len(obj.buffer) or obj.owed:  # pending()
                        known = [obj] if known is None else [*known, obj]
                    read_fds.append(obj.fd if obj.fd >= 0 else _fd(obj))
                else:
                    read_fds.append(_fd(obj))
            if known is not None:
                return known, [], []
            write_fds = []
        elif not rlist and len(wlist) == 1 and wlist[0].__class__ is BufferedSocket:
            wlist[0].write_wait = timeout
            return [], [wlist[0]], []
        else:
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
                obj = rlist[read_fds.index(fd)]
                if obj.__class__ is BufferedSocket:
                    obj.readable = True
                readable.append(obj)
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


def use_lean_loop(client: Any) -> bool:
    """Serve ``client`` (a ``KazooClient`` not yet started) with pycurator's connection loop;
    whether it is served so. Call it once, before ``start()``; :func:`pycurator.connect` calls it
    for every client it makes.

    kazoo keeps what a user relies on: the whole ``KazooClient`` API, its connection retry and
    reconnects, the handshake (session id and password, read-only mode), digest and SASL auth,
    the states and their listeners, watches, requests queued while disconnected and failed on a
    drop or an expiry. The loop replaces only how requests and answers travel while a session
    is up: the calling thread writes its own request, and the connection thread takes every
    answer that has arrived in one read. It spends about half the client CPU per request of
    kazoo's loop; with :class:`FastThreadingHandler` (recommended) each answer wakes its waiter
    through a single lock.

    ``client`` stays on kazoo's loop (False) when its handler is not a threading one (gevent,
    eventlet), when it talks TLS, or on a kazoo release pycurator was not checked against (said
    once in the ``pycurator`` log). ``RuntimeError`` if ``client`` was started already."""
    return kazoo_internals.use_lean_loop(client)


def uses_lean_loop(client: Any) -> bool:
    """Whether ``client`` is served by pycurator's connection loop (:func:`use_lean_loop`)."""
    return kazoo_internals.uses_lean_loop(client)
