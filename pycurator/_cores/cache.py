"""The cache's core, held by both front ends (``pycurator.CuratorCache`` and
``pycurator.aio.CuratorCache``): what a cache is, whichever way its owner waits.

:class:`CacheCore` checks the arguments, keeps the life cycle (Curator's LATENT, STARTED,
CLOSED), the tree (:class:`~pycurator._protocol.cache.CacheTree`) and the protocol that keeps
it (:class:`~pycurator._recipes.cache.Mirror`), the listeners and the streams of events, and
turns what the protocol reads into what a cache tells: each batch of events posted once, its
listeners told in order, never on the protocol's path. A front end gives it how to post a call
and how to wake its waiters (:meth:`CacheCore.begin`), runs the protocol's steps its own way,
and waits its own way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .._protocol.cache import CacheEvent, CacheOption, CacheTree, ChildData
from .._protocol.paths import validate_path
from .._protocol.transport import Transport
from .._recipes.cache import Mirror
from .cache_listeners import all_awaited, as_listener
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger("pycurator")

#: The longest a cache's ``close()`` waits for its steps to end (they wait for nothing then).
CLOSE_WAIT = 2.0


def check_options(options: Iterable[object] | None) -> frozenset[CacheOption]:
    """The options given (:class:`CacheOption` members, or their names); TypeError or
    ValueError naming one that is none."""
    if options is None:
        return frozenset()
    if isinstance(options, (str, CacheOption)):
        options = (options,)
    chosen = set()
    for option in options:
        if isinstance(option, CacheOption):
            chosen.add(option)
        elif isinstance(option, str) and option in CacheOption.__members__:
            chosen.add(CacheOption[option])
        elif isinstance(option, str):
            raise ValueError(f"not an option of CuratorCache: {option!r}")
        else:
            raise TypeError(f"options must be CuratorCache.Options, not {option!r}")
    return frozenset(chosen)


def check_handler(handler: object) -> Callable[[Exception], Any] | None:
    """``handler`` if it is None or callable; TypeError otherwise."""
    if handler is not None and not callable(handler):
        raise TypeError(f"exception_handler must be callable, not {handler!r}")
    return handler


class CacheCore:
    """One cache of ``path`` (and, unless ``SINGLE_NODE_CACHE``, the tree below it), for a
    front end to hold and drive.

    The arguments are checked as Curator checks them (TypeError or ValueError). :meth:`begin`
    makes the protocol and :meth:`finish` stops it; the front end runs its steps, and calls
    :meth:`closed` once they have ended (or it gave up waiting for them). Reads of what the
    cache holds need no lock: the protocol alone changes the tree. Everything here returns at
    once."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        options: Iterable[object] | None,
        exception_handler: Callable[[Exception], Any] | None,
    ) -> None:
        validate_path(path)
        self.transport = transport
        self.options = check_options(options)
        self._handler = check_handler(exception_handler)
        self.tree = CacheTree(path, CacheOption.SINGLE_NODE_CACHE not in self.options)
        #: Where the cache stands; only :meth:`begin` and :meth:`finish` move it.
        self.state = Lifecycle.LATENT
        #: The protocol, once started.
        self.mirror: Mirror | None = None
        #: Told ``event(type, old_data, data)`` and ``initialized()``, in order of addition.
        self.listeners: list[Any] = []
        #: The streams of events (each a ``put(event)``; None is put once the cache closes).
        self.streams: list[Callable[[CacheEvent | None], None]] = []
        self._post: Callable[..., None] | None = None
        self._changed: Callable[[], None] | None = None

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self.transport.client

    @property
    def path(self) -> str:
        """The cached path, as given."""
        return self.tree.root

    @property
    def started(self) -> bool:
        """Whether started and not closed."""
        return self.state is Lifecycle.STARTED

    @property
    def loaded(self) -> bool:
        """Whether the first load has been told (``initialized()``)."""
        return self.mirror is not None and self.mirror.loaded

    # -- what the cache holds ------------------------------------------------------------------

    def get(self, path: str) -> ChildData | None:
        """The node at ``path`` as held, or None."""
        return self.tree.nodes.get(path)

    def size(self) -> int:
        """How many nodes are held."""
        return len(self.tree.nodes)

    def nodes(self) -> list[ChildData]:
        """Every node held, a copy taken at once."""
        return list(self.tree.nodes.values())

    # -- listeners -------------------------------------------------------------------------------

    def add_listener(self, listener: object) -> None:
        """Tell ``listener`` (with ``event()``, or a callable) from now on; TypeError for
        anything else."""
        self.listeners.append(as_listener(listener))

    def remove_listener(self, listener: object) -> None:
        """Tell ``listener`` nothing more (nothing if it was not told)."""
        try:
            wrapped = as_listener(listener)
        except TypeError:
            return
        if wrapped in self.listeners:
            self.listeners.remove(wrapped)

    def subscribe(self, put: Callable[[CacheEvent | None], None]) -> None:
        """Hand each event to ``put``, and None once the cache closes (at once if it has)."""
        if self.state is Lifecycle.CLOSED:
            put(None)
            return
        self.streams.append(put)

    def unsubscribe(self, put: Callable[[CacheEvent | None], None]) -> None:
        """Hand ``put`` nothing more."""
        if put in self.streams:
            self.streams.remove(put)

    # -- the life cycle ------------------------------------------------------------------------

    def begin(self, post: Callable[..., None], changed: Callable[[], None]) -> Mirror:
        """Move to STARTED (RuntimeError if started before, as Curator); the protocol, whose
        steps the front end runs. Its news is told through ``post(callback, *args)`` (run
        later, in order, never on the protocol's path) and ``changed()`` (wake whoever waits;
        called from any thread)."""
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Cannot be started more than once: {self.path}")
        self.state = Lifecycle.STARTED
        self._post, self._changed = post, changed
        self.mirror = Mirror(
            self.tree,
            compressed=CacheOption.COMPRESSED_DATA in self.options,
            tell=self._tell,
            initialized=self._initialized,
            on_error=self._error,
        )
        return self.mirror

    def finish(self) -> bool:
        """Move to CLOSED; whether it was started (closing twice, or before a start, does
        nothing more, as in Curator). The front end then cancels the steps (which remove their
        watches, each node's with one-shot watches)."""
        if self.state is not Lifecycle.STARTED:
            self.state = Lifecycle.CLOSED
            return False
        self.state = Lifecycle.CLOSED
        return True

    def closed(self) -> None:
        """After :meth:`finish`, once the steps have ended (or the front end stopped waiting
        for them): what is held is cleared unless ``DO_NOT_CLEAR_ON_CLOSE``, no listener hears
        more, every stream ends, and waiters wake."""
        if CacheOption.DO_NOT_CLEAR_ON_CLOSE not in self.options:
            self.tree.nodes.clear()
        self.listeners.clear()
        streams, self.streams = self.streams, []
        post, changed = self._post, self._changed
        self._post = None
        for put in streams:  # after the events posted before
            if post is not None:
                post(put, None)
            else:
                put(None)
        if changed is not None:
            changed()

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        """Call ``function(*args)`` on the cache's worker, after the news posted before
        (nothing unless started); from any thread."""
        post = self._post
        if post is not None and self.state is Lifecycle.STARTED:
            post(function, *args)

    # -- news from the protocol (called by its steps: never block) ------------------------------

    def _tell(self, events: list[CacheEvent]) -> None:
        post = self._post
        if post is not None and self.state is Lifecycle.STARTED:
            post(self._deliver, events)

    def _deliver(self, events: list[CacheEvent]) -> Any:
        """Tell one batch of events to every listener, then to every stream (on the front
        end's worker); an awaitable the listeners returned, to run."""
        awaiting: list[Any] = []
        for listener in list(self.listeners):
            for event in events:
                try:
                    result = listener.event(event.type, event.old_data, event.data)
                except Exception:
                    log.exception("a cache listener failed: %r", listener)
                    continue
                if result is not None:
                    awaiting.append(result)
        for put in list(self.streams):
            for event in events:
                put(event)
        return all_awaited(awaiting)

    def _initialized(self) -> None:
        post = self._post
        if post is not None:
            post(self._deliver_initialized)

    def _deliver_initialized(self) -> Any:
        """Tell every listener ``initialized()``, then wake the waiters (on the front end's
        worker, after the first load's events); an awaitable the listeners returned."""
        awaiting: list[Any] = []
        for listener in list(self.listeners):
            try:
                result = listener.initialized()
            except Exception:
                log.exception("a cache listener failed: %r", listener)
                continue
            if result is not None:
                awaiting.append(result)
        changed = self._changed
        if changed is not None:
            changed()
        return all_awaited(awaiting)

    def _error(self, error: Exception) -> None:
        handler, post = self._handler, self._post
        if handler is not None and post is not None:
            post(handler, error)

    def describe(self, kind: str) -> str:
        """The cache's repr, as a ``kind`` (its class's name as users write it)."""
        return f"{kind}({self.path!r}, state={self.state.value}, size={self.size()})"


class CacheFace:
    """A cache over a :class:`~pycurator._cores.cache.CacheCore`: what it holds, read with no
    request and no wait."""

    _core: CacheCore

    #: Curator's ``CuratorCache.Options``.
    Options = CacheOption

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self._core.client

    @property
    def path(self) -> str:
        """The cached path, as given."""
        return self._core.path

    @property
    def options(self) -> frozenset[CacheOption]:
        """The options given."""
        return self._core.options

    def get(self, path: str) -> ChildData | None:
        """The node at ``path`` as the cache holds it (path, stat, data), or None."""
        return self._core.get(path)

    def size(self) -> int:
        """How many nodes the cache holds (its root included, when it exists)."""
        return self._core.size()

    def __iter__(self) -> Iterator[ChildData]:
        """Every node the cache holds, as at the call, in no set order."""
        return iter(self._core.nodes())


__all__ = ["CLOSE_WAIT", "CacheCore", "CacheFace", "check_handler", "check_options"]
