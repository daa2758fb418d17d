"""Every use of kazoo's private attributes, in one place.

kazoo has no public way to tell a stopped client, to drop one watcher function, or to send a
request type it does not know; pycurator needs all three. Each function names the attribute it
touches and the kazoo version it was checked against; ``tests/test_kazoo_private.py`` fails
loudly if a kazoo release changes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

#: The kazoo release these touches were checked against.
CHECKED_VERSION = "2.11.0"


def is_stopped(client: KazooClient) -> bool:
    """Whether ``client`` is stopped (or never started).

    ``KazooClient._stopped``: a handler event, set until ``start()`` and again by ``stop()``
    (kazoo 2.11.0).
    """
    return bool(client._stopped.is_set())


def session_timeout(client: KazooClient) -> float:
    """The session timeout ``client`` asks the server for, in seconds.

    ``KazooClient._session_timeout``: the ``timeout`` argument in milliseconds (kazoo 2.11.0).
    """
    return float(client._session_timeout) / 1000.0


def _registry(client: KazooClient, children: bool) -> Any:
    """kazoo's registry of child (or data) watchers: ``_child_watchers`` / ``_data_watchers``,
    defaultdicts from server path to a set of watcher functions (kazoo 2.11.0)."""
    return client._child_watchers if children else client._data_watchers


def watchers(client: KazooClient, server_path: str, *, children: bool) -> set[Any]:
    """A copy of the watcher functions kazoo has registered for data (or child) events of
    ``server_path`` (``_data_watchers`` / ``_child_watchers``, as below)."""
    registry = _registry(client, children)
    return set(registry.get(server_path, ()))


def watched_paths(client: KazooClient, *, children: bool) -> set[str]:
    """The server paths kazoo keeps a data (or child) watcher entry for, empty entries too
    (``_data_watchers`` / ``_child_watchers``, as below)."""
    registry = _registry(client, children)
    return set(registry)


def discard_watcher(
    client: KazooClient, server_path: str, watcher: Callable[..., Any], *, children: bool
) -> bool:
    """Drop ``watcher`` from kazoo's registry of data (or child) watchers of ``server_path``
    (the path as the server names it, chroot included); whether other watchers remain there.
    An entry left empty is removed, so giving up on many nodes does not grow the registry.

    ``KazooClient._data_watchers`` / ``_child_watchers``: defaultdicts from server path to a set
    of watcher functions; the connection thread adds to a path's set when a watch request is
    answered and pops the path when its event arrives (kazoo 2.11.0). A watcher it adds while
    the entry is being removed is put back.
    """
    registry = _registry(client, children)
    watchers = registry.get(server_path)
    if watchers is None:
        return False
    watchers.discard(watcher)
    if watchers:
        return True
    removed = registry.pop(server_path, None)  # one operation under the GIL
    if removed:  # a watcher was registered meanwhile: keep it
        registry[server_path].update(removed)
        return True
    return False


def call(client: KazooClient, request: Any, result: Any) -> None:
    """Queue ``request`` (an object with ``type``, ``serialize()`` and ``deserialize()``) on the
    client's connection, its answer to go to the async ``result``.

    ``KazooClient._call(request, async_object)``: raises when the client is stopped, otherwise
    queues the request for the connection thread (kazoo 2.11.0). Every kazoo ``*_async`` call
    goes through it too, so counting requests by wrapping it counts ours.
    """
    client._call(request, result)


def observe_calls(client: KazooClient, observe: Callable[[Any], None]) -> Callable[[], None]:
    """Have ``observe(request)`` see every request ``client`` queues from now on (tests count
    round trips with it); returns the function that puts the client back as it was.

    Replaces ``KazooClient._call`` (see :func:`call`) on this instance only (kazoo 2.11.0).
    """
    original = client._call

    def observed(request: Any, async_object: Any) -> Any:
        observe(request)
        return original(request, async_object)

    client._call = observed

    def restore() -> None:
        client._call = original

    return restore


__all__ = [
    "CHECKED_VERSION",
    "call",
    "discard_watcher",
    "is_stopped",
    "observe_calls",
    "session_timeout",
    "watched_paths",
    "watchers",
]
