"""``CuratorCache``: Curator's cache of a subtree, for threads.

The cache follows its path, and the tree below it, with one watch that stays (ZooKeeper's
``addWatch``, recursive) and reads again each node the watch names; after every reconnect it
reads the tree again and tells only what changed. What a cache is lives in
:mod:`pycurator._cores.cache`, which the asyncio cache holds too; this shell runs its protocol
on kazoo's callbacks (no thread of its own), tells its listeners in order on the handler's
workers, and waits on handler events.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.cache import CLOSE_WAIT, CacheCore, CacheFace
from .._cores.cache_listeners import SupportsEvent
from .._cores.constructors import CacheConstructor
from .._protocol.cache import CacheEvent
from .._protocol.checks import check_timeout
from .._protocol.transport import Transport


class CacheEvents:
    """A cache's events from the moment it was made (see :meth:`CuratorCache.events`), for a
    ``for`` loop, which ends once the cache (or this iterator) is closed."""

    def __init__(self, core: CacheCore, ready: Any) -> None:
        self._core = core
        self._ready = ready  # a handler event, set when an event or the end comes
        self._queue: deque[CacheEvent] = deque()
        self._ended = False
        core.subscribe(self._put)

    def _put(self, event: CacheEvent | None) -> None:
        if event is None:
            self._ended = True
        else:
            self._queue.append(event)
        self._ready.set()

    def __iter__(self) -> CacheEvents:
        return self

    def __next__(self) -> CacheEvent:
        while True:
            if self._queue:
                return self._queue.popleft()
            if self._ended:
                raise StopIteration
            self._ready.clear()
            if not self._queue and not self._ended:
                self._ready.wait()

    def close(self) -> None:
        """Stop following the cache: the loop ends once the events already told are taken."""
        self._core.unsubscribe(self._put)
        self._put(None)

    def __enter__(self) -> CacheEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CacheShell:
    """How the threaded caches (``CuratorCache``, a group member's) run a
    :class:`~pycurator._cores.cache.CacheCore`: its protocol on kazoo's callbacks (no thread of
    its own), its news in order on the handler's serial queue, its waits on handler events."""

    def __init__(self, core: CacheCore) -> None:
        self.core = core
        transport = core.transport
        self._notices = transport.serial_queue()
        self._settled = transport.event_object()  # set once loaded or closed
        self._task: Any = None

    def start(self) -> None:
        """Load the tree and follow it; RuntimeError when started before."""
        mirror = self.core.begin(self._notices.post, self._settled.set)
        self._task = self.core.transport.start(mirror.steps())

    def close(self) -> None:
        """Stop following the tree (waiting at most :data:`CLOSE_WAIT` for the steps)."""
        if self.core.finish():
            task = self._task
            if task is not None:
                task.cancel()
                task.done.wait(CLOSE_WAIT)
        self.core.closed()

    def wait_initialized(self, timeout: float | None) -> bool:
        """Wait for the first load to be told (see :meth:`CuratorCache.wait_initialized`)."""
        timeout = check_timeout(timeout)
        if self._task is None:
            raise RuntimeError(f"the cache is not started: {self.core.path}")
        self._settled.wait(timeout)
        return self.core.loaded and self.core.started

    def events(self) -> CacheEvents:
        """A stream of the events told from now on."""
        return CacheEvents(self.core, self.core.transport.event_object())


class CuratorCache(CacheConstructor, CacheFace):
    """A local copy of ``path`` and the tree below it, shared with Java Curator's
    ``CuratorCache`` on the same path: the same nodes held, and the same events told.

    Once started, the cache loads the tree and then follows it: each node created, changed
    or deleted is told to the listeners, in order (``initialized()`` once the first load is
    told). After every reconnect (and a session's expiry) it reads the tree again and tells
    only the differences: no change missed, none told twice. Options (``CuratorCache.Options``
    or their names): ``SINGLE_NODE_CACHE`` (the node alone), ``COMPRESSED_DATA`` (gzip, as
    Curator's ``compressed()`` writes it), ``DO_NOT_CLEAR_ON_CLOSE``. ``exception_handler`` is
    called with an error that keeps a node from being read (Curator's ``withExceptionHandler``;
    by default it is logged).

    A cache writes nothing and costs no thread: its protocol runs on kazoo's callbacks, and
    its listeners run in order on a small pool of workers shared by every recipe of the
    client's handler. On a server without watches that stay (ZooKeeper before 3.6) it follows
    the tree with one-shot watches and tells the same events.
    """

    _shell_class = CacheShell
    _shell: CacheShell

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def start(self) -> None:
        """Load the tree and follow it, in the background.

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        self._shell.start()

    def close(self) -> None:
        """Stop following the tree: the watch is removed, listeners hear nothing more, the
        streams of :meth:`events` end, and what the cache holds is cleared (unless
        ``DO_NOT_CLEAR_ON_CLOSE``). Closing twice, or an unstarted cache, does nothing more."""
        self._shell.close()

    def __enter__(self) -> CuratorCache:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def wait_initialized(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the first load to be told: True
        once it is, False on timeout or once closed. RuntimeError before :meth:`start`."""
        return self._shell.wait_initialized(timeout)

    def add_listener(self, listener: SupportsEvent | Callable[..., Any]) -> None:
        """Tell ``listener`` (a :class:`CuratorCacheListener`, or any callable ``(type,
        old_data, data)``) of each event from now on, in order, on a worker of the client's
        handler. TypeError for anything else."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: SupportsEvent | Callable[..., Any]) -> None:
        """Tell ``listener`` nothing more."""
        self._core.remove_listener(listener)

    def events(self) -> CacheEvents:
        """The events told from now on, as :class:`~pycurator._protocol.cache.CacheEvent`
        (``type``, ``old_data``, ``data``, ``path``), for a ``for`` loop that ends once the
        cache closes (or the iterator's ``close()`` is called, from any thread)."""
        return self._shell.events()

    def __repr__(self) -> str:
        return self._core.describe("CuratorCache")


__all__ = ["CacheEvents", "CacheShell", "CuratorCache"]
