"""What a cache's listeners are, for both front ends: Curator's ``CuratorCacheListener``, its
builder (listeners for one kind of event, for ``initialized()``, or only once initialized) and
the adapters that tell Curator's older caches' listeners (``PathChildrenCache``, ``TreeCache``,
``NodeCache``) what a cache sees, as Curator's ``CuratorCacheListenerBuilder`` makes them.

A listener is an object with ``event(type, old_data, data)`` (and ``initialized()``, if it wants
to hear of the end of the first load), or any callable ``(type, old_data, data)``. Under
asyncio a listener may return an awaitable, which its front end runs: a built listener returns
one that awaits, in order, those its parts return.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any, Protocol

from .._protocol.cache import CHANGED, CREATED, DELETED, CacheEventType, ChildData


class SupportsEvent(Protocol):
    """A cache's listener: anything with ``event(type, old_data, data)``."""

    def event(self, type: Any, old_data: Any, data: Any, /) -> Any: ...


class CuratorCacheListener:
    """Told of a cache's events, in order: ``event(type, old_data, data)`` for each created,
    changed or deleted node (``old_data`` None for a creation, ``data`` None for a deletion),
    and ``initialized()`` once the first load is told. Subclass it, or give a cache any
    callable ``(type, old_data, data)``; :meth:`builder` makes listeners of parts."""

    #: Curator's ``CuratorCacheListener.Type``.
    Type = CacheEventType

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        """A node was created, changed or deleted."""

    def initialized(self) -> Any:
        """The nodes found when the cache started have all been told."""

    @staticmethod
    def builder() -> CuratorCacheListenerBuilder:
        """A builder of a listener made of parts (Curator's ``CuratorCacheListener.builder()``)."""
        return CuratorCacheListenerBuilder()


class _Calls(CuratorCacheListener):
    """A callable ``(type, old_data, data)`` as a listener."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        return self.function(type, old_data, data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Calls) and other.function == self.function

    def __hash__(self) -> int:
        return hash(self.function)


def as_listener(listener: object) -> Any:
    """``listener`` as something with ``event()`` and ``initialized()``: itself when it has
    ``event()`` (``initialized()`` optional), a callable wrapped; TypeError otherwise."""
    if callable(getattr(listener, "event", None)):
        if callable(getattr(listener, "initialized", None)):
            return listener
        return _EventOnly(listener)
    if callable(listener):
        return _Calls(listener)
    raise TypeError(
        f"a cache listener must have event(type, old_data, data) or be callable: {listener!r}"
    )


class _EventOnly(CuratorCacheListener):
    """A listener with ``event()`` and no ``initialized()``."""

    __slots__ = ("listener",)

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        return self.listener.event(type, old_data, data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _EventOnly) and other.listener == self.listener

    def __hash__(self) -> int:
        return hash(self.listener)


def all_awaited(results: list[Any]) -> Any:
    """What a listener made of parts returns for their ``results``: None, or an awaitable
    that awaits those that are awaitables, in order (under asyncio)."""
    pending = [result for result in results if inspect.isawaitable(result)]
    if not pending:
        return None

    async def each() -> None:
        for awaitable in pending:
            await awaitable

    return each()


class _ForTypes(CuratorCacheListener):
    """A part told only events of ``types``: ``call(old_data, data)`` makes its call."""

    __slots__ = ("call", "types")

    def __init__(
        self,
        types: frozenset[CacheEventType],
        call: Callable[[ChildData | None, ChildData | None], Any],
    ) -> None:
        self.types = types
        self.call = call

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        if type in self.types:
            return self.call(old_data, data)
        return None


class _ForInitialized(CuratorCacheListener):
    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function

    def initialized(self) -> Any:
        return self.function()


class PathChildrenCacheEventType(enum.Enum):
    """Curator's ``PathChildrenCacheEvent.Type`` (a cache never tells the connection's)."""

    CHILD_ADDED = "CHILD_ADDED"
    CHILD_UPDATED = "CHILD_UPDATED"
    CHILD_REMOVED = "CHILD_REMOVED"
    CONNECTION_SUSPENDED = "CONNECTION_SUSPENDED"
    CONNECTION_RECONNECTED = "CONNECTION_RECONNECTED"
    CONNECTION_LOST = "CONNECTION_LOST"
    INITIALIZED = "INITIALIZED"


class PathChildrenCacheEvent:
    """Curator's ``PathChildrenCacheEvent``: its ``type`` and the child's ``data`` (None for
    INITIALIZED)."""

    __slots__ = ("data", "type")

    #: Curator's ``PathChildrenCacheEvent.Type``.
    Type = PathChildrenCacheEventType

    def __init__(self, type: PathChildrenCacheEventType, data: ChildData | None) -> None:
        self.type = type
        self.data = data

    def __repr__(self) -> str:
        path = None if self.data is None else self.data.path
        return f"PathChildrenCacheEvent({self.type.name}, {path!r})"


class TreeCacheEventType(enum.Enum):
    """Curator's ``TreeCacheEvent.Type`` (a cache never tells the connection's)."""

    NODE_ADDED = "NODE_ADDED"
    NODE_UPDATED = "NODE_UPDATED"
    NODE_REMOVED = "NODE_REMOVED"
    CONNECTION_SUSPENDED = "CONNECTION_SUSPENDED"
    CONNECTION_RECONNECTED = "CONNECTION_RECONNECTED"
    CONNECTION_LOST = "CONNECTION_LOST"
    INITIALIZED = "INITIALIZED"


class TreeCacheEvent:
    """Curator's ``TreeCacheEvent``: its ``type``, the node's ``data`` (as removed, for
    NODE_REMOVED) and, for NODE_UPDATED, its ``old_data``."""

    __slots__ = ("data", "old_data", "type")

    #: Curator's ``TreeCacheEvent.Type``.
    Type = TreeCacheEventType

    def __init__(
        self,
        type: TreeCacheEventType,
        data: ChildData | None,
        old_data: ChildData | None = None,
    ) -> None:
        self.type = type
        self.data = data
        self.old_data = old_data

    def __repr__(self) -> str:
        path = None if self.data is None else self.data.path
        return f"TreeCacheEvent({self.type.name}, {path!r})"


#: What a ``PathChildrenCache`` listener is told for each of a cache's events.
_CHILD_TYPES = {
    CREATED: PathChildrenCacheEventType.CHILD_ADDED,
    CHANGED: PathChildrenCacheEventType.CHILD_UPDATED,
    DELETED: PathChildrenCacheEventType.CHILD_REMOVED,
}


def _child_event(listener: object) -> Callable[[Any, Any], Any]:
    """An old cache's listener as a call ``(client, event)``: its ``child_event`` (Curator's
    ``childEvent``), or itself when callable; TypeError otherwise."""
    method = getattr(listener, "child_event", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(listener):
        return listener
    raise TypeError(f"listener must have child_event(client, event) or be callable: {listener!r}")


class _PathChildren(CuratorCacheListener):
    """A ``PathChildrenCache`` listener told of the children of ``root``, not of ``root``."""

    __slots__ = ("call", "client", "root")

    def __init__(self, root: str, client: Any, listener: object) -> None:
        if not isinstance(root, str):
            raise TypeError(f"root_path must be a str, not {root!r}")
        self.root = root
        self.client = client
        self.call = _child_event(listener)

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        node = old_data if type is DELETED else data
        if node is None or node.path == self.root:
            return None
        return self.call(self.client, PathChildrenCacheEvent(_CHILD_TYPES[type], node))

    def initialized(self) -> Any:
        event = PathChildrenCacheEvent(PathChildrenCacheEventType.INITIALIZED, None)
        return self.call(self.client, event)


class _Tree(CuratorCacheListener):
    """A ``TreeCache`` listener."""

    __slots__ = ("call", "client")

    def __init__(self, client: Any, listener: object) -> None:
        self.client = client
        self.call = _child_event(listener)

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        if type is CREATED:
            event = TreeCacheEvent(TreeCacheEventType.NODE_ADDED, data)
        elif type is CHANGED:
            event = TreeCacheEvent(TreeCacheEventType.NODE_UPDATED, data, old_data)
        else:
            event = TreeCacheEvent(TreeCacheEventType.NODE_REMOVED, old_data)
        return self.call(self.client, event)

    def initialized(self) -> Any:
        return self.call(self.client, TreeCacheEvent(TreeCacheEventType.INITIALIZED, None))


class _Node(CuratorCacheListener):
    """A ``NodeCache`` listener: ``node_changed()`` (Curator's ``nodeChanged``) on any event."""

    __slots__ = ("call",)

    def __init__(self, listener: object) -> None:
        method = getattr(listener, "node_changed", None)
        if callable(method):
            self.call = method
        elif callable(listener):
            self.call = listener
        else:
            raise TypeError(f"listener must have node_changed() or be callable: {listener!r}")

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        return self.call()


class _Built(CuratorCacheListener):
    """A listener made of ``parts``, each told in turn; with ``after_initialized``, told no
    event before ``initialized()``."""

    __slots__ = ("is_initialized", "parts")

    def __init__(self, parts: list[Any], after_initialized: bool) -> None:
        self.parts = parts
        self.is_initialized = not after_initialized

    def event(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> Any:
        if not self.is_initialized:
            return None
        return all_awaited([part.event(type, old_data, data) for part in self.parts])

    def initialized(self) -> Any:
        self.is_initialized = True
        return all_awaited([part.initialized() for part in self.parts])


def _checked(function: object, what: str) -> Callable[..., Any]:
    if not callable(function):
        raise TypeError(f"{what} must be callable, not {function!r}")
    return function


class CuratorCacheListenerBuilder:
    """Curator's ``CuratorCacheListenerBuilder``: each ``for_*`` adds a part (and returns the
    builder), :meth:`build` makes the listener that tells each part in the order added."""

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._after_initialized = False

    def _add(self, part: Any) -> CuratorCacheListenerBuilder:
        self._parts.append(part)
        return self

    def for_all(self, listener: object) -> CuratorCacheListenerBuilder:
        """Tell ``listener`` (a listener, or a callable ``(type, old_data, data)``) all."""
        return self._add(as_listener(listener))

    def for_creates(self, listener: Callable[[ChildData], Any]) -> CuratorCacheListenerBuilder:
        """Call ``listener(data)`` for each node created."""
        call = _checked(listener, "listener")
        return self._add(_ForTypes(frozenset({CREATED}), lambda old, new: call(new)))

    def for_changes(
        self, listener: Callable[[ChildData, ChildData], Any]
    ) -> CuratorCacheListenerBuilder:
        """Call ``listener(old_data, data)`` for each node changed."""
        return self._add(_ForTypes(frozenset({CHANGED}), _checked(listener, "listener")))

    def for_creates_and_changes(
        self, listener: Callable[[ChildData | None, ChildData], Any]
    ) -> CuratorCacheListenerBuilder:
        """Call ``listener(old_data, data)`` for each node created (``old_data`` None) or
        changed."""
        return self._add(_ForTypes(frozenset({CREATED, CHANGED}), _checked(listener, "listener")))

    def for_deletes(self, listener: Callable[[ChildData], Any]) -> CuratorCacheListenerBuilder:
        """Call ``listener(old_data)`` for each node deleted."""
        call = _checked(listener, "listener")
        return self._add(_ForTypes(frozenset({DELETED}), lambda old, new: call(old)))

    def for_initialized(self, listener: Callable[[], Any]) -> CuratorCacheListenerBuilder:
        """Call ``listener()`` once the first load is told."""
        return self._add(_ForInitialized(_checked(listener, "listener")))

    def for_path_children_cache(
        self, root_path: str, client: Any, listener: object
    ) -> CuratorCacheListenerBuilder:
        """Tell a ``PathChildrenCache`` listener (``child_event(client, event)``, or a callable
        ``(client, event)``) of the children of ``root_path`` as
        :class:`PathChildrenCacheEvent`: CHILD_ADDED, CHILD_UPDATED, CHILD_REMOVED and
        INITIALIZED; never of ``root_path`` itself, nor of the connection."""
        return self._add(_PathChildren(root_path, client, listener))

    def for_tree_cache(self, client: Any, listener: object) -> CuratorCacheListenerBuilder:
        """Tell a ``TreeCache`` listener (``child_event(client, event)``, or a callable
        ``(client, event)``) as :class:`TreeCacheEvent`: NODE_ADDED, NODE_UPDATED (with the
        old data), NODE_REMOVED and INITIALIZED; never of the connection."""
        return self._add(_Tree(client, listener))

    def for_node_cache(self, listener: object) -> CuratorCacheListenerBuilder:
        """Tell a ``NodeCache`` listener (``node_changed()``, or a callable ``()``) of every
        event (meant for a ``SINGLE_NODE_CACHE``)."""
        return self._add(_Node(listener))

    def after_initialized(self) -> CuratorCacheListenerBuilder:
        """Tell the built listener no event before ``initialized()``: not the first load's."""
        self._after_initialized = True
        return self

    def build(self) -> CuratorCacheListener:
        """The listener of the parts added so far."""
        return _Built(list(self._parts), self._after_initialized)


__all__ = [
    "CuratorCacheListener",
    "CuratorCacheListenerBuilder",
    "PathChildrenCacheEvent",
    "PathChildrenCacheEventType",
    "SupportsEvent",
    "TreeCacheEvent",
    "TreeCacheEventType",
    "all_awaited",
    "as_listener",
]
