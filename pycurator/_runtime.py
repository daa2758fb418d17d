"""What pycurator keeps per kazoo client, in one place, and the one place that handles a fork.

A :class:`Runtime` per client, found with :func:`runtime_of` (the same object each time, for as
long as the client lives), holds what is the client's own: the deletes it still owes (Curator's
guaranteed delete, its ``FailedDeleteManager``), sent again each time the client connects,
until each node is gone.

It refers to the :class:`HandlerServices` of the client's handler, found with
:func:`services_of`: the timer, the pool of workers, the queue of the requests sent after news
on kazoo's connection thread, and the delayed calls that set held nodes' watches
(:mod:`pycurator._background`). These are per handler, not per client: a small pool of workers
is shared by every recipe of every client of the handler, and every unit is of the handler's
kind (a thread, a greenlet or a green thread).

**Fork**: both registries (client to runtime, handler to services) are weak, so a client or a
handler nobody uses any more takes its part with it, and they live here alone, with the
process's one fork hook: a child starts with none (no thread or greenlet of the parent runs in
it) and with a new :func:`process_lock`.

Not here: lock listeners (``add_lock_listener``) are process-wide by API, and stay in
:mod:`pycurator._observe` (under :func:`process_lock`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState

from ._background import DelayedCalls, Pool, SerialQueue, Timer, Timers

log = logging.getLogger("pycurator")

#: Seconds before an owed delete that met a connection loss while connected is sent again.
RESEND_DELAY = 0.1


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


class Runtime:
    """What pycurator keeps for one kazoo client (see the module doc); :func:`runtime_of`
    makes it. It holds the client weakly: the client's listener set holds the runtime."""

    def __init__(self, client: KazooClient, services: HandlerServices) -> None:
        self._client = weakref.ref(client)
        self.services = services
        self._owed: set[str] = set()
        self._lock = client.handler.lock_object()  # held for bookkeeping only
        client.add_listener(self._on_state)

    @property
    def client(self) -> KazooClient | None:
        """The client, while it lives."""
        return self._client()

    def _on_state(self, state: str) -> bool:
        if state == KazooState.CONNECTED and self._owed:  # not sent from kazoo's thread
            self.services.requests.post(self._send_owed)
        return False

    # -- deletes owed ------------------------------------------------------------------------

    def owe_delete(self, path: str, sent: Any = None) -> None:
        """Delete ``path`` (one of our ephemeral nodes) until it is gone; ``sent``: kazoo's
        async result of a delete of it already on its way."""
        with self._lock:
            self._owed.add(path)
        if sent is not None:
            sent.rawlink(functools.partial(self._answered, path))
        else:
            self._send(path)

    def owes_delete(self, path: str) -> bool:
        """Whether ``path`` is still to be deleted."""
        with self._lock:
            return path in self._owed

    def _send_owed(self) -> None:
        with self._lock:
            paths = list(self._owed)
        for path in paths:
            self._send(path)

    def _send(self, path: str) -> None:
        client = self._client()
        if client is None or not client.connected:
            return  # sent again on the next CONNECTED
        client.delete_async(path).rawlink(functools.partial(self._answered, path))

    def _answered(self, path: str, result: Any) -> None:
        try:
            result.get()
        except (ConnectionLoss, OperationTimeoutError):
            client = self._client()
            if client is not None and client.connected:
                self.services.call_later(RESEND_DELAY, functools.partial(self._send, path))
            return  # otherwise the next CONNECTED sends it again
        except (NoNodeError, SessionExpiredError, ConnectionClosedError):
            pass
        except Exception:  # an error no retry can fix: the node goes with the session
            log.exception("background delete of %s failed", path)
        with self._lock:
            self._owed.discard(path)


_RUNTIMES: weakref.WeakKeyDictionary[KazooClient, Runtime] = weakref.WeakKeyDictionary()
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


def runtime_of(client: KazooClient) -> Runtime:
    """``client``'s runtime: made on first use, the same object for as long as the client
    lives."""
    runtime = _RUNTIMES.get(client)
    if runtime is None:
        with _LOCK:
            runtime = _RUNTIMES.get(client)
            if runtime is None:
                runtime = _RUNTIMES[client] = Runtime(client, services_of(client.handler))
    return runtime


def _forked() -> None:
    """The process's one fork hook, in the child: no unit of the parent's runs here, so no
    runtime and no service survives; each client made before the fork is detached from its
    old runtime, and gets a new one should the child use it."""
    global _LOCK
    _LOCK = threading.RLock()
    for client, runtime in list(_RUNTIMES.items()):
        client.remove_listener(runtime._on_state)
    _RUNTIMES.clear()
    _SERVICES.clear()


os.register_at_fork(after_in_child=_forked)


__all__ = [
    "RESEND_DELAY",
    "HandlerServices",
    "Runtime",
    "process_lock",
    "runtime_of",
    "services_of",
]
