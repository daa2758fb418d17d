"""The unit of concurrency of a kazoo handler: whom a lock's ownership and re-entrancy follow.

kazoo's handlers each run on their own kind of unit: the OS thread for
``SequentialThreadingHandler``, the greenlet for ``SequentialGeventHandler`` and the green thread
(also a greenlet) for ``SequentialEventletHandler``, none of them needing monkey-patching. Locks
key their holds by :func:`unit_getter`'s unit, and every background task, wait and lock inside
pycurator goes through the client's handler (``spawn``, ``sleep_func``, ``event_object``,
``lock_object``), so recipes behave alike under the three.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

#: kazoo's handler names (``handler.name``) whose units are greenlets.
GREEN_HANDLERS = frozenset({"sequential_gevent_handler", "sequential_eventlet_handler"})


def is_green(handler: Any) -> bool:
    """True when ``handler`` runs its work in greenlets (gevent, eventlet) rather than threads."""
    return getattr(handler, "name", None) in GREEN_HANDLERS


def unit_getter(handler: Any) -> Callable[[], Hashable]:
    """A function returning the calling unit of ``handler``: the current greenlet under gevent
    and eventlet, else the current thread (any other handler is taken to be thread-based).

    Resolved once per lock, so the per-acquire cost is one call. The unit object itself (not an
    id that may be reused once it ends) is the key: a new unit never inherits a finished one's
    hold.
    """
    if is_green(handler):
        from greenlet import getcurrent

        return getcurrent  # type: ignore[no-any-return]
    return threading.current_thread
