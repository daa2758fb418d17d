"""Small helpers tests of ZooKeeper code keep writing: a bound for "soon", steady reconnects,
the client factory's type, polling (for a condition, for a value that stays), and children of a
node that may be gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

#: Generous bound for anything that should happen "soon" on a loaded 2-core machine.
SOON = 20.0

#: Reconnect attempts every 0.2 s, for clients that must find a restarted server again well
#: within their session timeout (kazoo's default back-off grows to a minute between attempts).
STEADY_RECONNECT: dict[str, Any] = {"max_tries": -1, "delay": 0.2, "backoff": 1, "max_delay": 0.2}

#: The type of the ``zk_client_factory`` fixture: keyword arguments go to ``KazooClient``.
ClientFactory = Callable[..., KazooClient]
#: The type of the ``curator_factory`` fixture: keyword arguments go to ``new_curator``; it
#: returns a started ``CuratorFramework`` (a JPype proxy).
CuratorFactory = Callable[..., Any]


def eventually(predicate: Callable[[], bool], timeout: float = SOON, what: str = "") -> None:
    """Poll ``predicate`` until it is true; ``AssertionError`` after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"not true within {timeout}s: {what or predicate}")
        time.sleep(0.02)


_V = TypeVar("_V")


def steady(value: Callable[[], _V], window: float = 0.5, timeout: float = SOON) -> _V:
    """``value()`` once it has stayed the same for ``window`` seconds; ``AssertionError`` after
    ``timeout``. For what is told after it is held: a cache (Curator's, ours) stores a change
    before it tells its listeners, so a listener's record may lag what the cache holds."""
    end = time.monotonic() + timeout
    seen = value()
    since = time.monotonic()
    while time.monotonic() - since < window:
        if time.monotonic() > end:
            raise AssertionError(f"still changing after {timeout}s: {seen!r}")
        time.sleep(0.02)
        now = value()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def children(client: KazooClient, path: str) -> list[str]:
    """Children of ``path``, or [] when it does not exist (an empty container may be reaped at
    any moment)."""
    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []
