"""kazoo's private attributes, as pycurator reads and sets them on a client: each function names
the attribute it touches and the kazoo releases it was checked against
(:mod:`pycurator._client.kazoo_internals`, whose package gathers every such use)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import Watch
from kazoo.protocol.states import KazooState

#: What ``KazooClient._call`` writes on the wake-up pair's writing end per queued request.
WAKE_BYTE = b"\0"
#: ZooKeeper's ``NOWATCHER`` error code: the answer to a ``removeWatches`` for a watch the
#: session no longer holds.
NO_WATCHER = -121


def reads_error(code: int) -> bool:
    """Whether kazoo turns the server's error ``code`` into an exception on the request's
    result. ``kazoo.exceptions.EXCEPTIONS`` maps each code kazoo knows to its exception class;
    it is a defaultdict whose default raises ``RuntimeError("Invalid error code")`` on the
    connection thread, ending the client's connection loop (kazoo 2.9.0 to 2.11.0): a request
    whose answer may carry an unknown code must not be sent. :data:`NO_WATCHER` is known from
    kazoo 2.11.0 on."""
    return code in EXCEPTIONS  # a membership test does not call the default


def is_stopped(client: KazooClient) -> bool:
    """Whether ``client`` is stopped (or never started).

    ``KazooClient._stopped``: a handler event, set until ``start()`` and again by ``stop()``
    (kazoo 2.9.0 to 2.11.0).
    """
    return bool(client._stopped.is_set())


def session_timeout(client: KazooClient) -> float:
    """The session timeout ``client`` asks the server for, in seconds.

    ``KazooClient._session_timeout``: the ``timeout`` argument in milliseconds (kazoo 2.9.0 to
    2.11.0).
    """
    return float(client._session_timeout) / 1000.0


def session_of(client: KazooClient) -> int | None:
    """The session ``client`` is in, connected or not; None when it has none (never connected,
    expired, or stopped). A dropped connection does not end a session: kazoo's public
    ``client_id`` is None while the client is merely disconnected, and must not be read as
    "another session".

    ``KazooClient._session_id``: set by the handshake of each connection (the same id after a
    reconnect within the session), and None again once the session is told closed (kazoo's
    ``_reset_session``, after the LOST state change; kazoo 2.9.0 to 2.11.0). A LOST state is
    read as no session, so that listeners told LOST see none.
    """
    while True:
        session = client._session_id
        lost = client.state == KazooState.LOST
        if client._session_id == session:  # not changed while the state was read
            return None if lost or session is None else int(session)


#: Marks the connect function :func:`follow_connects` puts in the place of kazoo's.
_FOLLOWED = "_pycurator_followed"


def follow_connects(
    client: KazooClient,
    before: Callable[[], None],
    after: Callable[[float], None],
) -> None:
    """Have kazoo's connection thread call ``before()`` ahead of each attempt to connect, and
    ``after(timeout)`` once a server has answered, with the session timeout it granted, in
    seconds. Either may raise ``SessionExpiredError``: kazoo then ends the session as when a
    server says it has expired (its listeners hear LOST) and makes a new one on the next
    attempt. Following again replaces the calls (a forked child's new runtime).

    ``client._connection._connect(host, hostip, port)``: called by the connection thread inside
    ``_connect_attempt``, whose ``except SessionExpiredError`` ends the session
    (``_session_callback(EXPIRED_SESSION)``) and goes on connecting; it returns
    ``(read_timeout, connect_timeout)`` in milliseconds, ``read_timeout`` being two thirds of
    the negotiated session timeout (kazoo 2.9.0 to 2.11.0). Replaced on this instance only.
    pycurator's loop (:class:`LeanConnection`) serves the session from within ``_connect``: it
    makes both calls itself, around the handshake, and takes them over from kazoo's connection
    when :func:`use_lean_loop` comes after.
    """
    connection = client._connection
    connection._pycurator_follows = (before, after)
    if getattr(connection, "serves_connects", False):  # pycurator's loop calls them itself
        return
    original = getattr(connection._connect, _FOLLOWED, connection._connect)

    def connect(host: str, hostip: str, port: int) -> tuple[float, float]:
        before()
        read_timeout, connect_timeout = original(host, hostip, port)
        after(read_timeout * 1.5 / 1000.0)
        return read_timeout, connect_timeout

    setattr(connect, _FOLLOWED, original)
    connection._connect = connect


def _registry(client: KazooClient, children: bool) -> Any:
    """kazoo's registry of child (or data) watchers: ``_child_watchers`` / ``_data_watchers``,
    defaultdicts from server path to a set of watcher functions (kazoo 2.9.0 to 2.11.0)."""
    return client._child_watchers if children else client._data_watchers


def watchers(client: KazooClient, server_path: str, *, children: bool) -> set[Any]:
    """A copy of the watcher functions kazoo has registered for data (or child) events of
    ``server_path`` (``_data_watchers`` / ``_child_watchers``, as below)."""
    registry = _registry(client, children)
    return set(registry.get(server_path, ()))


def watched_paths(client: KazooClient, *, children: bool) -> set[str]:
    """The server paths kazoo keeps a data (or child) watcher entry for, empty entries too
    (``_data_watchers`` / ``_child_watchers``, as below)."""
    registry = _registry(client, children)
    return set(registry)


def discard_watcher(
    client: KazooClient, server_path: str, watcher: Callable[..., Any], *, children: bool
) -> bool:
    """Drop ``watcher`` from kazoo's registry of data (or child) watchers of ``server_path``
    (the path as the server names it, chroot included); whether other watchers remain there.
    An entry left empty is removed, so giving up on many nodes does not grow the registry.

    ``KazooClient._data_watchers`` / ``_child_watchers``: defaultdicts from server path to a set
    of watcher functions; the connection thread adds to a path's set when a watch request is
    answered and pops the path when its event arrives (kazoo 2.9.0 to 2.11.0). A watcher it
    adds while the entry is being removed is put back.
    """
    registry = _registry(client, children)
    watchers = registry.get(server_path)
    if watchers is None:
        return False
    watchers.discard(watcher)
    if watchers:
        return True
    removed = registry.pop(server_path, None)  # one operation under the GIL
    if removed:  # a watcher was registered meanwhile: keep it
        registry[server_path].update(removed)
        return True
    return False


def call(client: KazooClient, request: Any, result: Any) -> None:
    """Queue ``request`` (an object with ``type``, ``serialize()`` and ``deserialize()``) on the
    client's connection, its answer to go to the async ``result``.

    ``KazooClient._call(request, async_object)``: raises when the client is stopped, otherwise
    queues the request for the connection thread, which answers ``result`` with what
    ``request.deserialize(data, offset)`` returns, called on the request object itself as it
    reads the reply (kazoo 2.9.0 to 2.11.0). Every kazoo
    ``*_async`` call goes through it too, so counting requests by wrapping it counts ours.
    """
    client._call(request, result)


#: Marks the reader of watch events :func:`follow_watch_events` puts in the place of kazoo's.
_READ_EVENTS = "_pycurator_reads_events"


def follow_watch_events(client: KazooClient, on_event: Callable[[int, str], None]) -> None:
    """Have ``client``'s connection call ``on_event(type, server path)`` for each watch event
    it reads (the server's event type, its path chroot included), on the connection thread,
    right after kazoo has handed the event to its own watchers of the path; again, the call
    replaces the one given before. ``on_event`` must be short and never block.

    ``client._connection._read_watch_event(buffer, offset)``: called by the connection thread
    (kazoo's loop and pycurator's, :class:`LeanConnection`, alike) with each notification's
    body, a ``Watch`` record (type, state, path) at ``offset``; it pops kazoo's watchers of the
    path and dispatches them (kazoo 2.9.0 to 2.11.0). On kazoo's loop it is replaced on this
    instance only, which the client keeps across a stop and a start; pycurator's loop tells
    its ``event_follower`` instead, from the one read of the event.
    """
    connection = client._connection
    if hasattr(connection, "event_follower"):  # pycurator's loop reads the event once for both
        connection.event_follower = on_event
        return
    original = getattr(connection._read_watch_event, _READ_EVENTS, connection._read_watch_event)

    def read(buffer: bytes, offset: int) -> None:
        original(buffer, offset)
        watch, _ = Watch.deserialize(buffer, offset)
        on_event(watch.type, watch.path)

    setattr(read, _READ_EVENTS, original)
    read.on_event = on_event  # type: ignore[attr-defined]
    connection._read_watch_event = read


def call_first(client: KazooClient, request: Any, result: Any) -> None:
    """Queue ``request`` (as :func:`call`'s) ahead of every request queued so far: the first to
    be sent once the connection serves, as ZooKeeper's Java client sends its watches first on
    a new connection. Only on the connection thread as it tells the client's listeners of a
    CONNECTED state (nothing is being sent then); requests queued one after the other this
    way go in the reverse order.

    ``KazooClient._queue``: the deque of ``(request, async_object)`` the connection sends from
    its left; kazoo's loop sends one for each byte written on the wake-up pair
    (``client._connection._write_sock``), as ``KazooClient._call`` writes one per request;
    pycurator's loop sends the whole queue as it begins to serve (kazoo 2.9.0 to 2.11.0).
    """
    client._queue.appendleft((request, result))
    writer = client._connection._write_sock
    try:
        if isinstance(writer, socket.socket):  # kazoo's own pair: blocking, and this thread
            writer.send(WAKE_BYTE, socket.MSG_DONTWAIT)  # is the one that empties it
        else:
            writer.send(WAKE_BYTE)  # pycurator's writers never wait
    except BlockingIOError:  # full: written once the connection thread has read some
        client.handler.spawn(writer.send, WAKE_BYTE)
    except Exception:  # as kazoo's _call: the loop then ends, and the request fails with it
        pass


def observe_calls(client: KazooClient, observe: Callable[[Any], None]) -> Callable[[], None]:
    """Have ``observe(request)`` see every request ``client`` queues from now on (tests count
    round trips with it); returns the function that puts the client back as it was.

    Replaces ``KazooClient._call`` (see :func:`call`) on this instance only (kazoo 2.9.0 to 2.11.0).
    """
    original = client._call

    def observed(request: Any, async_object: Any) -> Any:
        observe(request)
        return original(request, async_object)

    client._call = observed

    def restore() -> None:
        client._call = original

    return restore


__all__ = [
    "NO_WATCHER",
    "WAKE_BYTE",
    "call",
    "call_first",
    "discard_watcher",
    "follow_connects",
    "follow_watch_events",
    "is_stopped",
    "observe_calls",
    "reads_error",
    "session_of",
    "session_timeout",
    "watched_paths",
    "watchers",
]
