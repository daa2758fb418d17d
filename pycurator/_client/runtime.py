"""What pycurator keeps per kazoo client, in one place, and the one place that handles a client's
stop, its session's expiry and a fork.

A :class:`Runtime` per client, found with :func:`runtime_of` (the same object each time, for as
long as the client lives), holds what is the client's own:

- its connection listeners: every wait, hold and election of every recipe listens here, so
  pycurator adds one listener to a kazoo client, whatever the number of its recipes, and only
  while something listens or a delete is owed (kazoo's registry is left as it was found);
- the deletes it still owes (Curator's guaranteed delete, its ``FailedDeleteManager``): sent
  again each time the client connects, until each node is gone, or the client is stopped;
- whether the client is stopped: the one error every wait of every recipe, threaded or
  asyncio, ends with then (:func:`closed_error`, raised by :meth:`Runtime.check_open`), and
  the reason a hold lost with the client gives (:meth:`Runtime.end_reason`).

It refers to its handler's services, shared by every client of the handler (:func:`services_of`).

**Stop and expiry** reach the runtime first: its listener (:meth:`Runtime._on_state`) is told
of every state change, forgets the deletes a stopped client owed (its ephemeral nodes go with
the session), then tells the client's listeners. kazoo tells its listeners nothing when a client
is stopped while already LOST (expired, or never connected): while anyone listens to such a
client, the runtime looks every :data:`STOP_POLL` seconds, so that their waits end too.

**A session timeout spent while suspended** is taken as the session's end, as Curator's
``ConnectionStateManager`` takes it (``checkSessionExpiration``): a client cut off from the
quorum cannot hear of its expiry, so from each suspension the runtime counts the session timeout
the server granted (the one asked for until a server answered), one timer per client. If the
connection is still not back when it runs out, the listeners hear LOST at once (every hold and
election ends, under either policy), and kazoo ends the session on its next attempt to connect
and makes a new one (Curator injects the expiry and makes a new handle). The server ends the old
session, and its nodes, when its timeout passes there; should the client reach a server in the
old session after all, kazoo ends it at once, unheard by the listeners.

**Fork**: the registries (client to runtime, handler to services, and what recipes share in the
process, :func:`shared`) are weak, so what nobody uses any more goes, and they live here alone,
with the process's one fork hook: a child starts with none (no thread or greenlet of the parent
runs in it) and with a new :func:`process_lock`.

The process's lock listeners are written under :func:`process_lock`
(:mod:`pycurator._client.lock_listeners`). Not here: the tasks of asyncio callbacks are the event
loop's (see :mod:`pycurator.aio._runner`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Hashable
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

from .._protocol.transport import CLIENT_STOPPED, SESSION_EXPIRED, closed_error
from . import kazoo_internals
from .background import Timer
from .services import HandlerServices

log = logging.getLogger("pycurator")

#: Seconds between looks at a client in the LOST state that someone listens to (kazoo tells
#: nobody when such a client is stopped).
STOP_POLL = 0.25
#: Seconds before an owed delete that met a connection loss while connected is sent again.
RESEND_DELAY = 0.1

#: A connection listener: called with each new ``KazooState``; what it returns is ignored.
Listener = Callable[[str], object]


class Runtime:
    """What pycurator keeps for one kazoo client (see the module doc); :func:`runtime_of`
    makes it. It holds the client weakly: the registry keeps it for as long as the client
    lives, and no longer."""

    def __init__(self, client: KazooClient, services: HandlerServices) -> None:
        self._client = weakref.ref(client)
        self.services = services
        #: Set in a forked child, where the client gets a new runtime (see :func:`runtime_of`):
        #: whoever keeps this one looks it up again.
        self.detached = False
        # (dicts, not sets: told, and sent, in the order they came, whatever their hashes)
        self._listeners: dict[Listener, None] = {}
        self._owed: dict[str, None] = {}
        #: Lock nodes whose names do not tell which acquire made them, by the acquire that
        #: claimed each (see :class:`~pycurator._protocol.drivers.Naming`).
        self.claims: dict[str, object] = {}
        #: How many times the client asked the server to drop a watch
        #: (:class:`~pycurator._protocol.steps.WatchRemovals`).
        self.watch_removals = 0
        #: The client's transport, while a recipe holds it (weakly: it holds the client), see
        #: :func:`~pycurator._client.transport.transport_of`.
        self.transport: Callable[[], Any] | None = None
        #: The client's watches that stay, once it has had one (``persistent_watches``).
        self.watches_that_stay: Any = None
        self._lock = client.handler.lock_object()  # held for bookkeeping only
        self._look: Timer | None = None  # a look for a stop, pending while the state is LOST
        self._told_stop = False  # the listeners have heard of the current stop
        self._attached = False  # our listener is the client's: something listens, or is owed
        self._granted: float | None = None  # the session timeout a server last granted
        self._counting: Timer | None = None  # the session timeout, counted from a suspension
        self._count = 0  # which count is current: a timer of an earlier one does nothing
        self._given_up: int | None = None  # a session taken as expired, until kazoo ends it
        kazoo_internals.follow_connects(client, self._before_connect, self._connected)

    @property
    def client(self) -> KazooClient | None:
        """The client, while it lives."""
        return self._client()

    # -- stop, expiry and the listeners ------------------------------------------------------

    @property
    def stopped(self) -> bool:
        """Whether the client is stopped (or never started, or gone)."""
        client = self._client()
        return client is None or kazoo_internals.is_stopped(client)

    def check_open(self) -> None:
        """Raise :func:`closed_error` if the client is stopped: how every wait ends then."""
        if self.stopped:
            raise closed_error()

    def session_id(self) -> int | None:
        """The session the client is in, connected or not
        (:func:`~pycurator._client.kazoo_internals.session_of`); None when it has none, or once
        its timeout has passed while suspended (taken as expired, as Curator takes it)."""
        client = self._client()
        if client is None:
            return None
        session = kazoo_internals.session_of(client)
        return None if session is not None and session == self._given_up else session

    def end_reason(self) -> str:
        """Why the client's session ended (at a LOST state): :data:`CLIENT_STOPPED` or
        :data:`SESSION_EXPIRED`."""
        return CLIENT_STOPPED if self.stopped else SESSION_EXPIRED

    def listen(self, listener: Listener) -> None:
        """Call ``listener(state)`` on each state change of the client, on kazoo's connection
        thread (or the handler's timer, for a stop kazoo does not tell and for a session
        timeout spent while suspended): it must be short and never block, nor send (see
        :attr:`HandlerServices.requests`). A stop is told as LOST: ask :attr:`stopped`."""
        client = self._client()
        if client is None:
            return
        with self._lock:
            self._listeners[listener] = None
            missed = self._attach(client)
        if client.state == KazooState.LOST:
            self._look_for_stop()
        elif missed:
            self._count_from_suspension()

    def unlisten(self, listener: Listener) -> None:
        """Stop calling ``listener`` (nothing if unknown)."""
        with self._lock:
            self._listeners.pop(listener, None)
            self._detach_if_idle()

    def listening(self) -> int:
        """How many listeners the client's recipes have here now."""
        return len(self._listeners)

    def _attach(self, client: KazooClient) -> bool:
        """Make our listener the client's (under the lock). True when it comes while the
        client is suspended: a suspension nobody heard begin (or whose count ended as the last
        listener left), whose session timeout the caller counts from now."""
        if self._attached:
            return False
        self._attached = True
        client.add_listener(self._on_state)
        return bool(client.state == KazooState.SUSPENDED)

    def _detach_if_idle(self) -> None:
        """Take our listener away once nothing listens and nothing is owed (under the lock)."""
        if self._attached and not self._listeners and not self._owed:
            self._attached = False
            self._stop_counting()  # its states go unheard now
            client = self._client()
            if client is not None:
                client.remove_listener(self._on_state)

    def _on_state(self, state: str) -> bool:
        """kazoo's listener, the client's only one of pycurator's: the one place a stop or an
        expiry is handled before the listeners hear of it."""
        client = self._client()
        if state == KazooState.CONNECTED:
            with self._lock:
                self._stop_counting()
                if client is not None and self._gave_up(client):
                    return False  # the connect hook ends this session now: nobody hears of it
            self._told_stop = False
            if self._owed:  # not sent from kazoo's connection thread
                self.services.requests.post(self._send_owed)
        elif state == KazooState.SUSPENDED:
            self._count_from_suspension()
        elif state == KazooState.LOST:
            with self._lock:
                self._stop_counting()
                self._given_up = None  # ended (by kazoo, as asked, or otherwise)
            if client is None or kazoo_internals.is_stopped(client):
                self._on_stop(client)
            else:
                self._look_for_stop()
        self._tell(state)
        return False

    def _on_stop(self, client: KazooClient | None) -> None:
        """The client is stopped: nothing it owed is owed any more (the session's ephemeral
        nodes go with it), and our listener leaves kazoo's registry as pycurator found it
        (the next use puts it back)."""
        with self._lock:
            self._told_stop = True
            self._owed.clear()
            self._stop_counting()
            if self._attached and client is not None:
                client.remove_listener(self._on_state)
            self._attached = False

    def _tell(self, state: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                log.exception("a connection listener failed: %r", listener)

    def _look_for_stop(self) -> None:
        """While the client is LOST and someone listens, tell them once it is stopped (kazoo
        does not: its state does not change). One look is pending at a time."""
        client = self._client()
        with self._lock:
            if client is None or client.state != KazooState.LOST or not self._listeners:
                return  # a look still pending finds the same, and ends
            if not kazoo_internals.is_stopped(client):
                self._told_stop = False
                if self._look is None:
                    self._look = self.services.call_later(STOP_POLL, self._looked)
                return
            tell, self._told_stop = not self._told_stop, True
        if tell:
            self._on_stop(client)
            self._tell(KazooState.LOST)

    def _looked(self) -> None:
        with self._lock:
            self._look = None
        self._look_for_stop()

    # -- a session timeout spent while suspended (Curator's injected expiry) ---------------

    def session_timeout(self) -> float:
        """The session timeout counted from a suspension, in seconds: the one a server last
        granted, or the one asked for until pycurator has seen a server's answer."""
        granted = self._granted
        if granted is not None:
            return granted
        client = self._client()
        return kazoo_internals.session_timeout(client) if client is not None else 0.0

    def _count_from_suspension(self) -> None:
        """Start counting the session timeout (once per suspension)."""
        timeout = self.session_timeout()
        with self._lock:
            if self._counting is not None or not self._attached:
                return
            self._count += 1
            self._counting = self.services.call_later(
                timeout, functools.partial(self._timed_out, self._count, timeout)
            )

    def _stop_counting(self) -> None:
        """The suspension has ended, or goes unheard (under the lock)."""
        self._count += 1
        counting, self._counting = self._counting, None
        if counting is not None:
            counting.cancel()

    def _timed_out(self, count: int, timeout: float) -> None:
        """The session timeout has passed since the suspension and the connection is not back:
        take the session as expired (on the handler's timer)."""
        client = self._client()
        with self._lock:
            if count != self._count or client is None:
                return  # reconnected, lost or stopped meanwhile
            self._counting = None
            session = kazoo_internals.session_of(client)
            if session is None or client.connected or kazoo_internals.is_stopped(client):
                return
            self._given_up = session
        log.warning(
            "session 0x%x: its timeout (%gs) has passed while the connection was suspended; "
            "it is taken as expired, and a new session is made once a server answers",
            session,
            timeout,
        )
        self._tell(KazooState.LOST)

    def _gave_up(self, client: KazooClient) -> bool:
        """Whether the session ``client`` would resume is one taken as expired."""
        given_up = self._given_up
        return given_up is not None and kazoo_internals.session_of(client) == given_up

    def _before_connect(self) -> None:
        """On kazoo's connection thread, before each attempt: a session given up on is not
        resumed (kazoo ends it, and makes a new one)."""
        client = self._client()
        if client is not None and self._gave_up(client):
            raise SessionExpiredError("the session timeout passed while suspended")

    def _connected(self, granted: float) -> None:
        """On kazoo's connection thread, once a server has answered: note the session timeout
        it granted; a session given up on as the server answered is ended at once."""
        self._granted = granted
        self._before_connect()

    # -- deletes owed ------------------------------------------------------------------------

    def owe_delete(self, path: str, sent: Any = None) -> None:
        """Delete ``path`` (one of our ephemeral nodes) until it is gone, or the client is
        stopped; ``sent``: kazoo's async result of a delete of it already on its way."""
        client = self._client()
        if client is None or kazoo_internals.is_stopped(client):
            return  # the node goes with the session
        with self._lock:
            self._owed[path] = None
            missed = self._attach(client)
        if missed:
            self._count_from_suspension()
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
                return
            if not self.stopped:
                return  # the next CONNECTED sends it again
        except (NoNodeError, SessionExpiredError, ConnectionClosedError):
            pass
        except Exception:  # an error no retry can fix: the node goes with the session
            log.exception("background delete of %s failed", path)
        with self._lock:
            self._owed.pop(path, None)
            self._detach_if_idle()


_RUNTIMES: weakref.WeakKeyDictionary[KazooClient, Runtime] = weakref.WeakKeyDictionary()
_SERVICES: weakref.WeakKeyDictionary[Any, HandlerServices] = weakref.WeakKeyDictionary()
_SHARED: weakref.WeakValueDictionary[Hashable, Any] = weakref.WeakValueDictionary()
_LOCK = threading.RLock()  # held to make an entry, and by process_lock()'s users, never long


def process_lock() -> Any:
    """The process's lock for short bookkeeping shared by every client (the lock listeners, the
    loss notices), renewed in a forked child. Re-entrant; never held across a wait."""
    return _LOCK


def shared(key: Hashable, make: Callable[[], Any]) -> Any:
    """The process's live object for ``key``, made by ``make()`` when none lives (weakly held)."""
    with _LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = make()
        return found


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
    """``client``'s runtime: made on first use, the same object while the client lives."""
    runtime = _RUNTIMES.get(client)
    if runtime is None:
        kazoo_internals.told_if_unchecked()  # once a process, on a kazoo not checked
        with _LOCK:
            runtime = _RUNTIMES.get(client)
            if runtime is None:
                runtime = _RUNTIMES[client] = Runtime(client, services_of(client.handler))
    return runtime


def _forked() -> None:
    """The process's one fork hook, in the child: no unit of the parent's runs here, so nothing
    registered survives; a client made before the fork is detached, made anew if used."""
    global _LOCK
    _LOCK = threading.RLock()
    for client, runtime in list(_RUNTIMES.items()):
        client.remove_listener(runtime._on_state)
        runtime.detached = True
    _RUNTIMES.clear()
    _SERVICES.clear()
    _SHARED.clear()


os.register_at_fork(after_in_child=_forked)


__all__ = [
    "RESEND_DELAY",
    "STOP_POLL",
    "Listener",
    "Runtime",
    "process_lock",
    "runtime_of",
    "services_of",
    "shared",
]
