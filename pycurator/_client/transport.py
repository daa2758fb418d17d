"""The transport on a kazoo client: :class:`KazooTransport`, the
:class:`~pycurator._protocol.transport.Transport` every recipe of a client sends through
(:func:`transport_of`).

The protocols (:mod:`pycurator._recipes.lock_engine`...) say what they need as steps
(:mod:`pycurator._protocol.steps`) and requests (:mod:`pycurator._protocol.requests`); the runners
perform them here. Each request is sent by its function in
:data:`~pycurator._client.sending.SENDERS`. The transport is also what
a protocol's callbacks send through (a watcher sending its next request as it reads a deletion,
the undo of a create answered too late): they have it from their steps
(:class:`~pycurator._protocol.steps.GetTransport`), so that a scripted server can stand in for it
in tests.
"""

from __future__ import annotations

import functools
import socket
import weakref
from collections.abc import Callable, Generator
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import ConnectionClosedError
from kazoo.protocol.states import WatchedEvent

from .._protocol.requests import Request
from .._protocol.transport import Pending, closed_error
from . import kazoo_internals
from .background import SerialQueue, Timer
from .callback_runner import CallbackRun, run_in_background
from .runtime import Runtime, process_lock, runtime_of, shared
from .sending import SENDERS, forget_watch
from .services import HandlerServices


@functools.lru_cache(maxsize=1)
def default_node_data() -> bytes:
    """What Curator writes by default: ``InetAddress.getLocalHost().getHostAddress()``.

    Empty if the local host name does not resolve, as Curator does. Looked up once per process,
    as Curator looks it up once per JVM (``CuratorFrameworkFactory``'s local address): a lock
    made per tenant then costs neither a name look-up nor a bytes object of its own.
    """
    try:
        return socket.gethostbyname(socket.gethostname()).encode("ascii")
    except OSError:
        return b""


def is_client(value: object) -> bool:
    """Whether ``value`` is a kazoo client (started or not)."""
    return isinstance(value, KazooClient)


def check_client_type(client: KazooClient) -> None:
    """Raise TypeError for anything but a kazoo client (started or not)."""
    if not isinstance(client, KazooClient):
        raise TypeError(f"client must be a kazoo KazooClient, not {type(client).__name__}")


def check_client(client: KazooClient) -> None:
    """Raise a clear error for a client that cannot send requests (not a client, not started,
    or stopped: ``ConnectionClosedError``, as kazoo's own calls raise)."""
    check_client_type(client)
    if kazoo_internals.is_stopped(client):
        raise ConnectionClosedError("the kazoo client is not started, or has been stopped")


def guarded_transaction(client: KazooClient, path: str) -> TransactionRequest:
    """A kazoo transaction on ``client`` that also checks that the node at ``path`` exists:
    ZooKeeper applies all of it or nothing, so a holder whose node is gone cannot commit."""
    transaction = client.transaction()
    transaction.check(path, -1)
    return transaction


class KazooTransport:
    """The :class:`~pycurator._protocol.transport.Transport` on ``client``: it performs a
    protocol's requests and effects there, and is everything the engine and the recipes' cores
    have of it. One serves every recipe of a client (:func:`transport_of`), which the runners
    take, and the protocol has for its callbacks. Sending never blocks, so every method may be
    called from any thread, kazoo's connection thread included where
    :func:`pycurator.handlers.runs_inline` allows.

    The front ends have more of it than the protocol: the client's :attr:`runtime`,
    :attr:`handler` and :attr:`services`."""

    __slots__ = ("__weakref__", "_runtime", "client")

    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        """The client's runtime (:func:`~pycurator._client.runtime.runtime_of`), kept here
        until a fork detaches it: looked up on nearly every step, and the registry's weak
        look-up costs a call and a new weak reference each time."""
        runtime = self._runtime
        if runtime is None or runtime.detached:
            runtime = self._runtime = runtime_of(self.client)
        return runtime

    @property
    def handler(self) -> Any:
        """The client's kazoo handler (its events, locks and unit of concurrency)."""
        return self.client.handler

    @property
    def services(self) -> HandlerServices:
        """The services every client of the handler shares (its runtime's)."""
        return self.runtime.services

    # -- requests --------------------------------------------------------------------------

    def send(self, request: Request) -> Any:
        """Send ``request`` (a :mod:`pycurator._protocol.requests` request); kazoo's async result of
        it."""
        sender = SENDERS.get(type(request))
        if sender is None:
            raise TypeError(f"not a request: {request!r}")
        return sender(self.client, request)

    def hold_sends(self) -> None:
        kazoo_internals.hold_sends(self.client)

    def send_held(self) -> None:
        kazoo_internals.send_held(self.client)

    def read_answer(self, answer: Any, timeout: float | None) -> None:
        kazoo_internals.read_answer(self.client, answer, timeout)

    # -- the client's state ------------------------------------------------------------------

    def listen(self, listener: Callable[[str], object]) -> None:
        self.runtime.listen(listener)

    def unlisten(self, listener: Callable[[str], object]) -> None:
        self.runtime.unlisten(listener)

    def check_open(self, message: str | None = None) -> None:
        """ConnectionClosedError once the client is stopped (or not started): ``message``, or
        the runtime's (:func:`~pycurator._protocol.transport.closed_error`)."""
        if kazoo_internals.is_stopped(self.client):
            raise ConnectionClosedError(message) if message is not None else closed_error()

    def connected(self) -> bool:
        return bool(self.client.connected)

    def session_id(self) -> int | None:
        return self.runtime.session_id()

    def session_timeout(self) -> float:
        """The client's session timeout, in seconds."""
        return kazoo_internals.session_timeout(self.client)

    def chroot(self) -> str:
        return self.client.chroot or ""

    def claims(self) -> dict[str, object]:
        return self.runtime.claims

    def watch_removals(self) -> int:
        return self.runtime.watch_removals

    # -- what outlives a wait ----------------------------------------------------------------

    def owe_delete(self, path: str, sent: Pending | None = None) -> None:
        """Curator's guaranteed delete of ``path`` in the background (``sent``: a delete of it
        already on its way)."""
        self.runtime.owe_delete(path, sent)

    def forget_watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], children: bool = False
    ) -> None:
        forget_watch(self.client, path, watcher, children=children)

    def start(
        self,
        steps: Generator[Any, Any, Any],
        on_done: Callable[[CallbackRun], None] | None = None,
    ) -> CallbackRun:
        """Run ``steps`` in the background, driven by kazoo's callbacks
        (:func:`~pycurator._client.callback_runner.run_in_background`); ``on_done(run)`` once they
        end."""
        services = self.services
        return run_in_background(self, steps, on_done, services.new_flag(), services.call_later)

    # -- time and order ----------------------------------------------------------------------

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        return self.services.call_later(delay, function)

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        """Call ``function(argument)`` about ``delay`` seconds from now, batched with the other
        calls due then by the handler's one delayed-call unit: for calls that mostly find
        nothing left to do (the watch of a hold that has ended)."""
        self.runtime.services.delayed.add(delay, function, argument)

    def post_request(self, function: Callable[[], None]) -> None:
        """Run ``function()`` on the handler's queue of the requests sent after news on kazoo's
        connection thread, which must not send them itself: one worker, in turn."""
        self.runtime.services.requests.post(function)

    def serial_queue(self) -> SerialQueue:
        """A new queue whose calls run one at a time, in order, on the handler's workers."""
        return self.runtime.services.serial_queue()

    # -- what recipes are made with ----------------------------------------------------------

    def lock_object(self) -> Any:
        """A new lock of the handler's kind."""
        return self.client.handler.lock_object()

    def event_object(self) -> Any:
        """A new event of the handler's kind."""
        return self.client.handler.event_object()

    #: The process's lock (:func:`~pycurator._client.runtime.process_lock`).
    process_lock = staticmethod(process_lock)
    #: What recipes share within the process (:func:`~pycurator._client.runtime.shared`).
    shared = staticmethod(shared)

    def node_data(self) -> bytes:
        """Curator's default node data (:func:`default_node_data`)."""
        return default_node_data()

    def guarded_transaction(self, path: str) -> TransactionRequest:
        """A transaction that commits only while the node at ``path`` exists
        (:func:`guarded_transaction`)."""
        return guarded_transaction(self.client, path)


def transport_of(client: KazooClient) -> KazooTransport:
    """``client``'s transport (TypeError for anything but a kazoo client): one for all the
    recipes of a client while any holds it, so a recipe costs a reference to it and a run
    no new object. The client's runtime keeps it weakly (it holds the client, which the
    runtime must not keep alive); two threads making the first at once make two, either as
    good."""
    check_client_type(client)
    runtime = runtime_of(client)
    ref = runtime.transport
    transport: KazooTransport | None = ref() if ref is not None else None
    if transport is None:
        transport = KazooTransport(client)
        runtime.transport = weakref.ref(transport)
    return transport


__all__ = [
    "KazooTransport",
    "check_client",
    "check_client_type",
    "default_node_data",
    "guarded_transaction",
    "is_client",
    "transport_of",
]
