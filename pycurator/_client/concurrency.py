"""The unit of concurrency of a kazoo handler: whom a lock's ownership and re-entrancy follow.

kazoo's handlers each run on their own kind of unit: the OS thread for
``SequentialThreadingHandler``, the greenlet for ``SequentialGeventHandler`` and the green thread
(also a greenlet) for ``SequentialEventletHandler``, none of them needing monkey-patching. Locks
key their holds by :func:`unit_getter`'s unit, and every background task, wait and lock inside
pycurator goes through the client's handler (``spawn``, ``sleep_func``, ``event_object``,
``lock_object``), so recipes behave alike under the three.

It also makes the event a handler's units wait on when it is set once and never cleared (a task's
end, a latch's next change; :func:`flag_maker`): under a thread-based handler, one without the
condition and the two locks of a ``threading.Event``.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

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


#: Held while a :class:`_Flag` is set or a waiter's gate is made: a few attribute moves.
_GATES = threading.Lock()


class _Flag:
    """A handler event that is set once (``set``, ``is_set``, ``wait``, no ``clear``), for a
    thread-based handler: a lock per waiting thread, made only when one waits, instead of a
    ``threading.Event``'s condition and lock made with every event."""

    __slots__ = ("_gates", "_set")

    def __init__(self) -> None:
        self._set = False
        self._gates: list[Any] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with _GATES:
            self._set = True
            gates, self._gates = self._gates, None
        for gate in gates or ():
            gate.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether set, waiting at most ``timeout`` seconds (None: no limit)."""
        if self._set:
            return True
        with _GATES:
            if self._set:
                return True
            gate = threading.Lock()
            gate.acquire()
            if self._gates is None:
                self._gates = [gate]
            else:
                self._gates.append(gate)
        if gate.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            return True
        with _GATES:
            if self._gates is not None and gate in self._gates:
                self._gates.remove(gate)
        return self._set


def flag_maker(handler: Any) -> Callable[[], Any]:
    """What makes an event ``handler``'s units may wait on, for one that is set once and never
    cleared: a lean one under a thread-based kazoo handler, else the handler's own event. It
    does not keep ``handler`` alive (the handler's services keep it, and the handler is the key
    they are kept by)."""
    if isinstance(handler, SequentialThreadingHandler) and not is_green(handler):
        return _Flag
    return functools.partial(_event_of, weakref.ref(handler))


def _event_of(handler: Callable[[], Any]) -> Any:
    """A new event of the handler ``handler()`` (a weak reference)."""
    return handler().event_object()
