"""The transport: where the protocol's requests and effects meet kazoo.

The protocols (:mod:`pycurator._engine.locks`...) say what they need as steps
(:mod:`pycurator._protocol.steps`) and requests (:mod:`pycurator._protocol.ops`); the runners
perform them here, through a :class:`KazooTransport` of the client. It is also the *sender* a
protocol's callbacks use (a watcher sending its next request as it reads a deletion, the undo of a
create answered too late): a protocol asks its runner for one
(:class:`~pycurator._protocol.steps.GetSender`), so that a scripted server can stand in for it in
tests.

Also here, the ZooKeeper requests kazoo cannot send itself, sent through kazoo's connection:
kazoo serialises any request object with ``type``, ``serialize()`` and ``deserialize()``; these
follow ZooKeeper's jute records.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import ConnectionClosedError, KazooException
from kazoo.protocol.serialization import (
    Create2,
    Delete,
    Exists,
    GetChildren,
    read_string,
    write_buffer,
    write_string,
)
from kazoo.protocol.serialization import GetData as ReadData
from kazoo.protocol.states import WatchedEvent, ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from .._protocol.ops import (
    CreateNode,
    DeleteNode,
    GetData,
    ListChildren,
    MakeContainer,
    NodeExists,
    SetData,
)
from . import kazoo_internals
from .background import SerialQueue, Timer
from .runtime import HandlerServices, Runtime, closed_error, runtime_of

#: ZooKeeper's ``CreateMode.CONTAINER`` flag.
CONTAINER_FLAG = 4
#: ``ZooDefs.OpCode.createContainer``.
OP_CREATE_CONTAINER = 19
#: ``ZooDefs.OpCode.removeWatches``.
OP_REMOVE_WATCHES = 18
#: ``Watcher.WatcherType.Data`` as sent in a removeWatches request.
WATCHER_TYPE_DATA = 2
#: ``Watcher.WatcherType.Children``.
WATCHER_TYPE_CHILDREN = 1

_int = struct.Struct("!i")
_stat = struct.Struct("!qqqqiiiqiiq")


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


def prefixed(client: KazooClient, path: str) -> str:
    chroot: str = client.chroot or ""
    return chroot + path if path != "/" or not chroot else chroot


def is_plain(path: str) -> bool:
    """Whether ``path`` is one kazoo's path normalization leaves as it is (absolute, no empty
    segment, no trailing ``/``, no segment starting with ``.``): :func:`prefixed` is then the
    server's path, as kazoo's ``*_async`` calls make it."""
    return (
        path[:1] == "/"
        and "//" not in path
        and "/." not in path
        and (path[-1] != "/" or path == "/")
    )


def sent(client: KazooClient, request: Any) -> Any:
    """Queue a kazoo ``request`` (its path the server's) as kazoo's ``*_async`` calls do; its
    async result."""
    result = client.handler.async_result()
    kazoo_internals.call(client, request, result)
    return result


@dataclass(frozen=True)
class CreateContainer:
    """``createContainer``: a CONTAINER node, which the server deletes once it had children and is
    empty again. The reply carries the created path and its stat (``Create2Response``)."""

    path: str
    data: bytes
    acl: Sequence[Any]
    flags: int = CONTAINER_FLAG

    type: ClassVar[int] = OP_CREATE_CONTAINER

    def serialize(self) -> bytearray:
        b = bytearray()
        b.extend(write_string(self.path))
        b.extend(write_buffer(self.data))
        b.extend(_int.pack(len(self.acl)))
        for acl in self.acl:
            b.extend(_int.pack(acl.perms) + write_string(acl.id.scheme) + write_string(acl.id.id))
        b.extend(_int.pack(self.flags))
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> tuple[str, ZnodeStat]:
        path, offset = read_string(data, offset)
        return path, ZnodeStat._make(_stat.unpack_from(data, offset))


@dataclass(frozen=True)
class ReducedChildren:
    """``getChildren`` without a watch, whose answer is reduced as the connection thread reads
    it: the listing goes to ``reduce`` there, and only what that returns is kept for the
    reader. A listing nobody has read yet then costs nothing while its reader waits its turn
    (thousands of tasks queueing at once on one event loop would otherwise hold thousands of
    listings of thousands of names each, until the loop came to them). ``reduce`` must not
    raise: kazoo logs an error raised there."""

    path: str
    reduce: Callable[[list[str]], Any]

    type: ClassVar[int] = GetChildren.type

    def serialize(self) -> bytearray:
        return bytearray(GetChildren(self.path, None).serialize())

    def deserialize(self, data: bytes, offset: int) -> Any:
        return self.reduce(GetChildren.deserialize(data, offset))


@dataclass(frozen=True)
class RemoveWatches:
    """``removeWatches`` for the data watches this session holds on ``path``."""

    path: str
    watcher_type: int = WATCHER_TYPE_DATA

    type: ClassVar[int] = OP_REMOVE_WATCHES

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + _int.pack(self.watcher_type))

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> None:
        return None


def reduced_children_async(
    client: KazooClient, path: str, reduce: Callable[[list[str]], Any]
) -> Any:
    """An async result answered with ``reduce(children of path)``, the reduction made by the
    connection thread as the reply is read (:class:`ReducedChildren`); errors are kazoo's
    (NoNodeError when ``path`` is gone)."""
    return sent(client, ReducedChildren(prefixed(client, path), reduce))


def create_node_async(
    client: KazooClient,
    path: str,
    data: bytes | None,
    acl: Sequence[Any] | None,
    *,
    ephemeral: bool,
    sequence: bool,
) -> Any:
    """kazoo's ``create_async(path, data, acl, ephemeral, sequence, include_data=True)`` without
    its completion step: the answer, ``(server path, stat)``, is set on the returned async
    result by the connection thread itself, where kazoo's would go through its completion
    worker first (a thread hand-off per create). The path is the server's, chroot included
    (``client.unchroot`` gives the client's); errors are kazoo's (NoNodeError when a parent is
    missing: no parent is made). No ``acl`` (or an empty one) is the client's default ACL, or
    open to all when it has none, as kazoo's ``create`` does."""
    flags = (1 if ephemeral else 0) | (2 if sequence else 0)
    acl = list(acl or client.default_acl or OPEN_ACL_UNSAFE)
    return sent(client, Create2(prefixed(client, path), data, acl, flags))


#: Whether this kazoo can read the server's answer to a removeWatches for a watch that is gone
#: (``NoWatcherError``, kazoo 2.11.0 on): an older kazoo (below the package's floor, installed
#: anyway) ends its connection loop on it, so there the request is not sent.
CAN_REMOVE_WATCHES = kazoo_internals.reads_error(kazoo_internals.NO_WATCHER)


def remove_watches(client: KazooClient, path: str, watcher_type: int = WATCHER_TYPE_DATA) -> bool:
    """Ask the server to drop this session's data (or child) watches on ``path``, without
    waiting for the answer: a missing watch or a lost connection is fine (the watch dies with
    the session). Whether the request was queued: on a kazoo older than 2.11 it is never sent
    (see :data:`CAN_REMOVE_WATCHES`), and the server keeps the watch until it fires or the
    session ends."""
    if not CAN_REMOVE_WATCHES:
        return False
    with contextlib.suppress(KazooException):
        sent(client, RemoveWatches(prefixed(client, path), watcher_type))
        return True
    return False


def forget_watch(
    client: KazooClient,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    *,
    children: bool = False,
) -> None:
    """Drop a data (or child) watch we no longer wait on, in kazoo and (when no other watcher of
    this client shares it) on the server, so a waiter that gives up leaves no watch behind."""
    server_path = prefixed(client, path)
    if kazoo_internals.discard_watcher(client, server_path, watcher, children=children):
        return
    # a watch request of another of our watchers may be on its way: the one server watch it
    # sets goes too, and the count tells it to set it again (watch_sent_steps)
    runtime_of(client).watch_removals += 1
    remove_watches(client, path, WATCHER_TYPE_CHILDREN if children else WATCHER_TYPE_DATA)


class KazooTransport:
    """Performs a protocol's requests and effects on ``client``, and is everything the engine
    and the recipes' cores have of it: its runtime, session, handler and services, and the
    kazoo client itself for a recipe's ``client`` property. One serves every recipe of a
    client (:func:`pycurator._client.runners.transport_of`), which the runners take, and the
    protocol has as its sender. Sending never blocks, so every method may be called from any
    thread, kazoo's connection thread included where :func:`pycurator.handlers.runs_inline`
    allows."""

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

    def lock_object(self) -> Any:
        """A new lock of the handler's kind."""
        return self.client.handler.lock_object()

    def event_object(self) -> Any:
        """A new event of the handler's kind."""
        return self.client.handler.event_object()

    def session_timeout(self) -> float:
        """The client's session timeout, in seconds."""
        return kazoo_internals.session_timeout(self.client)

    def guarded_transaction(self, path: str) -> TransactionRequest:
        """A transaction that commits only while the node at ``path`` exists
        (:func:`guarded_transaction`)."""
        return guarded_transaction(self.client, path)

    def send(self, request: Any) -> Any:
        """Send ``request`` (a :mod:`pycurator._protocol.ops` request); kazoo's async result of
        it."""
        client = self.client
        kind = type(request)
        if kind is CreateNode:
            return create_node_async(
                client,
                request.path,
                request.data,
                request.acl,
                ephemeral=request.ephemeral,
                sequence=request.sequence,
            )
        # the request of a plain path (the protocol's own, validated) is made here, without
        # kazoo's normalization of the chroot and the path on every request; any other path
        # goes through kazoo's call, which normalizes it
        if kind is ListChildren:
            if request.reduce is not None:
                assert request.watch is None, "a reduced listing sets no watch"
                return reduced_children_async(client, request.path, request.reduce)
            if is_plain(request.path):
                return sent(client, GetChildren(prefixed(client, request.path), request.watch))
            return client.get_children_async(request.path, watch=request.watch)
        if kind is GetData:
            if is_plain(request.path):
                return sent(client, ReadData(prefixed(client, request.path), request.watch))
            return client.get_async(request.path, watch=request.watch)
        if kind is DeleteNode:
            if is_plain(request.path):
                return sent(client, Delete(prefixed(client, request.path), -1))
            return client.delete_async(request.path)
        if kind is NodeExists:
            if is_plain(request.path):
                return sent(client, Exists(prefixed(client, request.path), request.watch))
            return client.exists_async(request.path, watch=request.watch)
        if kind is SetData:
            return client.set_async(request.path, request.data, request.version)
        if kind is MakeContainer:
            acl = list(request.acl or client.default_acl or OPEN_ACL_UNSAFE)
            return sent(client, CreateContainer(request.server_path, b"", acl))
        raise TypeError(f"not a request: {request!r}")

    # -- the client's state ------------------------------------------------------------------

    def listen(self, listener: Callable[[str], object]) -> None:
        self.runtime.listen(listener)

    def unlisten(self, listener: Callable[[str], object]) -> None:
        self.runtime.unlisten(listener)

    def check_open(self, message: str | None = None) -> None:
        """ConnectionClosedError once the client is stopped (or not started): ``message``, or
        the runtime's (:func:`~pycurator._client.runtime.closed_error`)."""
        if kazoo_internals.is_stopped(self.client):
            raise ConnectionClosedError(message) if message is not None else closed_error()

    def connected(self) -> bool:
        return bool(self.client.connected)

    def session_id(self) -> int | None:
        return self.runtime.session_id()

    def chroot(self) -> str:
        return self.client.chroot or ""

    def claims(self) -> dict[str, object]:
        return self.runtime.claims

    def watch_removals(self) -> int:
        return self.runtime.watch_removals

    # -- what outlives a wait ----------------------------------------------------------------

    def owe_delete(self, path: str, sent: Any = None) -> None:
        """Curator's guaranteed delete of ``path`` in the background (``sent``: a delete of it
        already on its way)."""
        self.runtime.owe_delete(path, sent)

    def forget_watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], children: bool = False
    ) -> None:
        forget_watch(self.client, path, watcher, children=children)

    def call_later(self, delay: float, function: Callable[[], None]) -> Timer:
        return self.services.call_later(delay, function)

    def serial_queue(self) -> SerialQueue:
        """A new queue whose calls run one at a time, in order, on the handler's workers."""
        return self.runtime.services.serial_queue()

    # -- for the hold monitor's callbacks (pycurator._engine.hold_monitor.HoldSender) --

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        """Call ``function(argument)`` about ``delay`` seconds from now, batched with the other
        calls due then by the handler's one delayed-call unit: for calls that mostly find
        nothing left to do (the watch of a hold that has ended)."""
        self.runtime.services.delayed.add(delay, function, argument)

    def post_request(self, function: Callable[[], None]) -> None:
        """Run ``function()`` on the handler's queue of the requests sent after news on kazoo's
        connection thread, which must not send them itself: one worker, in turn."""
        self.runtime.services.requests.post(function)


__all__ = [
    "CAN_REMOVE_WATCHES",
    "CreateContainer",
    "KazooTransport",
    "ReducedChildren",
    "RemoveWatches",
    "create_node_async",
    "forget_watch",
    "is_client",
    "prefixed",
    "reduced_children_async",
    "remove_watches",
    "sent",
]
