"""Every use of kazoo's private attributes, in one place, and every kazoo internal pycurator
relies on, named.

kazoo has no public way to tell a stopped client, to drop one watcher function, to send a
request type it does not know, to tell which server errors it can read, to learn the session
timeout the server granted, or to end a session on the client's side (Curator's injected
expiry); pycurator needs all six. Each function names the attribute it touches and the kazoo
releases it was checked against; ``tests/test_kazoo_private.py`` pins each and fails loudly if a
kazoo release changes them. ``./dev kazoo`` runs the library's tests on each of
:data:`CHECKED_VERSIONS`.

:class:`pycurator.handlers.FastThreadingHandler` subclasses kazoo's
``SequentialThreadingHandler`` and relies on how kazoo's connection uses a handler (kazoo 2.11.0,
and unchanged since 2.9.0; each point pinned by a test of the same name there):

- ``create_connection(...)`` makes the server socket; the connection reads it with ``recv``,
  writes it with ``send``, and hands it to ``select`` (``kazoo.protocol.connection``).
- ``create_socket_pair()`` makes the wake-up pair ``(reading end, writing end)``:
  ``KazooClient._call`` sends :data:`WAKE_BYTE` on the writing end for each queued request
  (and swallows any error of that send), and the connection thread reads one byte (``recv(1)``)
  for each request it takes from the queue.
- ``pending()``: before it would ``select`` for the rest of a reply, the connection asks the
  server socket for ``pending()`` if it has it, and reads without a ``select`` when it is > 0.
- ``dispatch_callback(callback)`` receives every watch event as a
  ``kazoo.protocol.states.Callback``, run as ``callback.func(*callback.args)``.
- ``queue_impl``: the class of the handler's callback and completion queues; the workers take
  work with ``get()`` and call ``task_done()`` after each item.
- ``async_result()`` makes the result of every request; the connection thread answers it with
  ``set()`` or ``set_exception()``.
- ``select(rlist, wlist, xlist, timeout)``: ``select.select``'s contract, called with the server
  socket and the pair's reading end.
- ``kazoo.handlers.threading.AsyncResult`` may be subclassed (the handler's results take
  :func:`pycurator.handlers.link_inline` callbacks): an instance keeps its attributes in its
  ``__dict__``, is answered only through ``set()`` and ``set_exception()``, and ``ready()``
  tells whether it was.
- ``kazoo.handlers.utils.fileobj_to_fd(obj)``: the descriptor of a socket or of anything with
  ``fileno()``, as kazoo's own ``select`` finds it.

pycurator's connection loop (:class:`LeanConnection`, given by :func:`use_lean_loop`)
subclasses kazoo's ``ConnectionHandler`` and takes the place of ``KazooClient._connection`` and
``KazooClient._call``; the members of both it builds on are named in its docstring and pinned
by ``test_the_connection_handler_has_the_members_the_lean_loop_builds_on`` and
``test_a_connect_attempt_serves_after_connect_and_ends_on_the_close_read``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.states import KazooState

#: The kazoo releases these touches and the handler's reliance were checked against: the
#: lowest the package allows (``kazoo>=2.11``) and the newest of every minor release above it.
#: All of them read the same in kazoo 2.9.0 and 2.10.0, which lack only ``NoWatcherError``
#: (see :func:`reads_error`).
CHECKED_VERSIONS = ("2.11.0",)
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
    if isinstance(connection, LeanConnection):
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


from .loop import LeanConnection, loop_refusal, use_lean_loop, uses_lean_loop  # noqa: E402

__all__ = [
    "CHECKED_VERSIONS",
    "NO_WATCHER",
    "WAKE_BYTE",
    "LeanConnection",
    "call",
    "discard_watcher",
    "follow_connects",
    "is_stopped",
    "loop_refusal",
    "observe_calls",
    "reads_error",
    "session_of",
    "session_timeout",
    "use_lean_loop",
    "uses_lean_loop",
    "watched_paths",
    "watchers",
]
