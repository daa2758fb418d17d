"""What every client of one kazoo handler shares: :class:`HandlerServices`, the timer, the pool
of workers, the queue of the requests sent after news on kazoo's connection thread, the delayed
calls, and the units that run leader selectors' terms (:mod:`pycurator._client.background`). One
per handler, found with :func:`~pycurator._client.runtime.services_of`, which keeps the registry
(and the fork hook that empties it). These are per handler, not per client: a small pool of
workers is shared by every recipe of every client of the handler, and every unit is of the
handler's kind (a thread, a greenlet or a green thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .background import DelayedCalls, Pool, SerialQueue, Timer, Timers, Units
from .concurrency import flag_maker


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
        #: The units that run leader selectors' terms, a few kept idle between them.
        self.leaders = Units(handler)
        #: Makes an event that is set once, for the handler's units to wait on (see
        #: :func:`~pycurator._client.concurrency.flag_maker`).
        self.new_flag = flag_maker(handler)

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        """Run ``function()`` (short, never blocking) ``delay`` seconds from now on the
        handler's timer; the returned :class:`~pycurator._client.background.Timer` cancels it."""
        return self.timers.call_later(delay, function)

    def serial_queue(self) -> SerialQueue:
        """A new queue whose calls run one at a time, in order, on the handler's pool."""
        return SerialQueue(self.pool)


__all__ = ["HandlerServices"]
