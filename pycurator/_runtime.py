"""What pycurator keeps for the kazoo clients of this process, in one place, and the one place
that handles a fork.

The :class:`HandlerServices` of a client's handler, found with :func:`services_of`: the timer,
the pool of workers, the queue of the requests sent after news on kazoo's connection thread,
and the delayed calls that set held nodes' watches (:mod:`pycurator._background`). These are
per handler, not per client: a small pool of workers is shared by every recipe of every client
of the handler, and every unit is of the handler's kind (a thread, a greenlet or a green
thread).

**Fork**: the registry (handler to services) is weak, so a handler nobody uses any more takes
its services with it, and it lives here alone, with the process's one fork hook: a child
starts with none (no thread or greenlet of the parent runs in it) and with a new
:func:`process_lock`.

Not here: lock listeners (``add_lock_listener``) are process-wide by API, and stay in
:mod:`pycurator._observe` (under :func:`process_lock`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ._background import DelayedCalls, Pool, SerialQueue, Timer, Timers


class HandlerServices:
    """What every client of one kazoo handler shares (see the module doc). Nothing runs until
    it is used: each unit is spawned while it has work. It does not keep the handler alive."""

    def __init__(self, handler: Any) -> None:
        self.timers = Timers(handler)
        self.pool = Pool(handler)
        #: The queue on which pycurator sends its own requests when news comes on kazoo's
        #: connection thread (after a reconnect: the checks of held nodes, the deletes still
        #: owed). That thread must not send: a request writes a byte to the pipe that wakes
        #: it, which only it empties, and hundreds of them fill it. One worker goes through
        #: them in turn.
        self.requests = SerialQueue(self.pool)
        #: Calls made a while after they are asked for (a held node's watch).
        self.delayed = DelayedCalls(handler)

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        """Run ``function()`` (short, never blocking) ``delay`` seconds from now on the
        handler's timer; the returned :class:`~pycurator._background.Timer` cancels it."""
        return self.timers.call_later(delay, function)

    def serial_queue(self) -> SerialQueue:
        """A new queue whose calls run one at a time, in order, on the handler's pool."""
        return SerialQueue(self.pool)


_SERVICES: weakref.WeakKeyDictionary[Any, HandlerServices] = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()  # held to make an entry, and by process_lock()'s users, never long


def process_lock() -> Any:
    """The process's lock for short bookkeeping shared by every client (the lock listeners,
    the loss notices), renewed in a forked child: a thread that held it does not survive the
    fork. Re-entrant; never held across a wait."""
    return _LOCK


def services_of(handler: Any) -> HandlerServices:
    """The services every client of ``handler`` shares (made on first use)."""
    services = _SERVICES.get(handler)
    if services is None:
        with _LOCK:
            services = _SERVICES.get(handler)
            if services is None:
                services = _SERVICES[handler] = HandlerServices(handler)
    return services


def _forked() -> None:
    """The process's one fork hook, in the child: no unit of the parent's runs here, so no
    service survives."""
    global _LOCK
    _LOCK = threading.RLock()
    _SERVICES.clear()


os.register_at_fork(after_in_child=_forked)


__all__ = [
    "HandlerServices",
    "process_lock",
    "services_of",
]
