"""The seam between the protocols and a client: :class:`Transport`, the one thing the engine and
the recipes' cores know of a client, typed; the contract of the callbacks it runs on the thread
that reads the server's answers; and the reasons it gives for a session's end.

A protocol's steps reach the client through their runner's transport: each effect a step says
(:mod:`pycurator._protocol.steps`) is one call of it (:func:`~pycurator._protocol.steps.perform`),
and the protocol's callbacks (a watcher, the undo of a create answered too late) use the one
their steps were given (:class:`~pycurator._protocol.steps.GetTransport`). An engine or a core
is built with the transport of its recipe's client, from which it takes its locks, events,
queues and timers. On a kazoo client it is :class:`pycurator._client.transport.KazooTransport`
(one per client); in tests, a scripted server (``tests/scripted.py``) or the explorer's model
of a client (``tests/explorer/model.py``).

Sending a request the transport does not know yet takes two things: its record in
:mod:`pycurator._protocol.requests`, what it asks for; and its sending, in
:data:`pycurator._client.sending.SENDERS` (with its jute record, when kazoo has none, in
:mod:`pycurator._client.records`). Nothing here changes: so came a watch that stays
(``AddWatch``) and a node with a time to live.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from types import TracebackType
from typing import Any, Protocol, TypeVar

from kazoo.exceptions import ConnectionClosedError
from kazoo.protocol.states import WatchedEvent

from .requests import Request

F = TypeVar("F", bound=Callable[..., Any])

#: The reason a hold is lost (or a wait ends) when its client is stopped.
CLIENT_STOPPED = "client stopped"
#: The reason a hold is lost when its session ends otherwise (its session timeout spent while
#: suspended included: Curator's injected expiry).
SESSION_EXPIRED = "session expired"
#: The message of the ``ConnectionClosedError`` every wait ends with once its client is stopped.
STOPPED_MESSAGE = "the kazoo client has been stopped"


def closed_error() -> ConnectionClosedError:
    """The error a wait ends with once its client is stopped."""
    return ConnectionClosedError(STOPPED_MESSAGE)


class Pending(Protocol):
    """A request's answer to come: kazoo's async result (or a scripted server's). Once
    :meth:`ready` and :meth:`successful`, :attr:`value` is the answer (read without a lock)."""

    @property
    def value(self) -> Any: ...

    def ready(self) -> bool: ...

    def successful(self) -> bool: ...

    def get_nowait(self) -> Any: ...

    def rawlink(self, callback: Callable[[Any], None]) -> None: ...

    def unlink(self, callback: Callable[[Any], None]) -> None: ...


class Signal(Protocol):
    """A flag set from any thread (kazoo's callbacks), waited on by a runner."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def is_set(self) -> bool: ...


class Event(Signal, Protocol):
    """An event of the client's handler: a :class:`Signal` a unit waits on."""

    def wait(self, timeout: float | None = None) -> bool: ...


class Lock(Protocol):
    """A lock of the client's handler (``with lock:``), held for bookkeeping only."""

    def __enter__(self) -> Any: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Any: ...


class Timer(Protocol):
    """A call due later; :meth:`cancel` keeps it from running."""

    def cancel(self) -> None: ...


class Queue(Protocol):
    """Calls run one at a time, in the order posted, on the handler's workers."""

    def post(self, function: Callable[..., Any], *args: Any) -> None: ...


class Transport(Protocol):
    """What the engine and the recipes' cores know of a client, and the protocols' callbacks do
    from any thread: send, follow the client's state, owe what outlives a wait, call later,
    and make the handler's locks and events. Sending never blocks, so every method may be
    called from any thread (kazoo's connection thread included, where the handler lets it
    send)."""

    # -- requests ------------------------------------------------------------------------------

    def send(self, request: Request) -> Pending:
        """Send ``request``; its answer to come (kazoo's errors, as its ``*_async`` calls give
        them)."""

    def hold_sends(self) -> None:
        """Hold what the calling thread sends from now on, to be written together by
        :meth:`send_held`: a runner holds a run of sends one behind the other (a create and
        the watch on its node), which then costs one write. Nothing where each request is
        written as it is sent. The thread waits for no answer while it holds."""

    def send_held(self) -> None:
        """Write what the calling thread held since :meth:`hold_sends`, in the order it was
        sent, and stop holding; nothing if it holds nothing."""

    def read_answer(self, answer: Pending, timeout: float | None) -> None:
        """Read the connection on the calling thread until ``answer`` (of a request it sent)
        has come or ``timeout`` seconds (None: no limit) have passed, if nobody else reads it,
        so that the answer need not wake the thread; else return at once (as wherever the
        connection has a reader of its own only). A blocking runner's wait calls it first."""

    # -- the client's state --------------------------------------------------------------------

    def listen(self, listener: Callable[[str], object]) -> None:
        """Call ``listener(state)`` on each connection state change, on kazoo's connection
        thread (short, never blocking, never sending); a stop is told as LOST."""

    def unlisten(self, listener: Callable[[str], object]) -> None:
        """Stop calling ``listener`` (nothing if unknown)."""

    def check_open(self, message: str | None = None) -> None:
        """``ConnectionClosedError`` once the client is stopped (or not started): ``message``,
        or :data:`STOPPED_MESSAGE`."""

    def connected(self) -> bool:
        """Whether the client is connected now."""

    def session_id(self) -> int | None:
        """The session the client is in, connected or not (see
        :class:`~pycurator._protocol.steps.SessionId`)."""

    def session_timeout(self) -> float:
        """The client's session timeout, in seconds."""

    def chroot(self) -> str:
        """The client's chroot (``""`` for none)."""

    def claims(self) -> dict[str, object]:
        """The client's claims on its lock nodes (see
        :class:`~pycurator._protocol.steps.Claims`)."""

    def watch_removals(self) -> int:
        """How many times the client has had the server drop a watch (see
        :class:`~pycurator._protocol.steps.WatchRemovals`)."""

    # -- what outlives a wait ------------------------------------------------------------------

    def owe_delete(self, path: str, sent: Pending | None = None) -> None:
        """Curator's guaranteed delete of ``path`` in the background (``sent``: a delete of it
        already on its way)."""

    def forget_watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], children: bool = False
    ) -> None:
        """Drop ``watcher`` from the data (or ``children``) watches of ``path``, on the server
        too when no other watcher of the client shares it."""

    def start(self, steps: Generator[Any, Any, Any]) -> object:
        """Run ``steps`` in the background, driven by the client's callbacks (no unit of their
        own); a handle on the run."""

    # -- time and order ------------------------------------------------------------------------

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        """Run ``function()`` (short, never blocking) ``delay`` seconds from now."""

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        """Call ``function(argument)`` about ``delay`` seconds from now, batched with the other
        calls due then: for calls that mostly find nothing left to do."""

    def post_request(self, function: Callable[[], None]) -> None:
        """Run ``function()`` (which sends, never waits) off kazoo's connection thread, which
        must not send, after the calls posted before it: one worker, in turn."""

    def serial_queue(self) -> Queue:
        """A new queue whose calls run one at a time, in order, on the handler's workers."""

    # -- what recipes are made with ------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The kazoo client (a recipe's ``client`` property): never read by a protocol."""

    def lock_object(self) -> Lock:
        """A new lock of the handler's kind."""

    def event_object(self) -> Event:
        """A new event of the handler's kind."""

    def process_lock(self) -> Lock:
        """The process's lock for short bookkeeping shared by every client (renewed in a forked
        child); re-entrant, never held across a wait."""

    def shared(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The process's live object for ``key``, made by ``make()`` when none lives: held
        weakly (it lives while its users keep it), and none of the parent's in a forked child."""

    def node_data(self) -> bytes:
        """What Curator writes in a node made without data: the host's address."""

    def guarded_transaction(self, path: str) -> Any:
        """A kazoo transaction that commits only while the node at ``path`` exists (a recipe's
        ``guarded_transaction()``)."""


def is_stopped(transport: Transport) -> bool:
    """Whether ``transport``'s client is stopped (or not started)."""
    try:
        transport.check_open()
    except ConnectionClosedError:
        return True
    return False


def end_reason(transport: Transport) -> str:
    """Why the session of ``transport``'s client ended, at a LOST state: :data:`CLIENT_STOPPED`
    or :data:`SESSION_EXPIRED`."""
    return CLIENT_STOPPED if is_stopped(transport) else SESSION_EXPIRED


#: The attribute that marks a watcher as safe to run on the thread that reads the server.
INLINE_MARK = "_pycurator_runs_inline"


def runs_inline(watcher: F) -> F:
    """Mark ``watcher`` (a kazoo watch callback) as one that only records its event, wakes a
    waiter and perhaps queues a request it does not wait for: it never blocks and takes no
    lock held across a request. A handler that looks for the mark (the fast handler) runs it
    on the connection thread as the notification is read; others run it as usual. Returns
    ``watcher``."""
    setattr(watcher, INLINE_MARK, True)
    return watcher


def set_here(signal: Signal) -> None:
    """Set ``signal``; a runner's signal that can (the callback runner's, with ``set_here``)
    resumes the steps waiting on it on the calling thread rather than a hand-off later on a
    worker. The caller must be a thread that may run steps: a watcher marked
    :func:`runs_inline` (the connection thread only under a handler that lets it send), or a
    unit of pycurator's own that holds no lock another thread may hold while it waits for these
    steps."""
    here = getattr(signal, "set_here", None)
    if here is not None:
        here()
    else:
        signal.set()


def ignore(*_: object) -> None:
    """A callback that does nothing: what stands for one let go, once nothing more is told."""


__all__ = [
    "CLIENT_STOPPED",
    "INLINE_MARK",
    "SESSION_EXPIRED",
    "STOPPED_MESSAGE",
    "Event",
    "Lock",
    "Pending",
    "Queue",
    "Signal",
    "Timer",
    "Transport",
    "closed_error",
    "end_reason",
    "ignore",
    "is_stopped",
    "runs_inline",
    "set_here",
]
