"""Which clients pycurator's connection loop (:class:`~pycurator._client.kazoo_internals.loop.
LeanConnection`) serves: :func:`use_lean_loop` gives it to a client before it starts, where
:func:`loop_refusal` finds no reason to leave it on kazoo's own."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.connection import ConnectionHandler

from .client import is_stopped
from .loop import LeanConnection
from .releases import told_if_unchecked, unchecked


def loop_refusal(client: KazooClient) -> str | None:
    """Why :func:`use_lean_loop` leaves ``client`` on kazoo's loop, or None if it need not."""
    why = unchecked()
    if why is not None:
        return why
    if not isinstance(client.handler, SequentialThreadingHandler):
        return f"its handler is {type(client.handler).__name__}, not a threading one"
    if client.use_ssl:
        return "it talks TLS"
    if type(client._connection) is not ConnectionHandler and not isinstance(
        client._connection, LeanConnection
    ):
        return f"its connection is a {type(client._connection).__name__}"
    return None


def use_lean_loop(client: KazooClient) -> bool:
    """Give ``client`` (not yet started) pycurator's connection loop (:class:`LeanConnection`);
    whether it has it. Left on kazoo's loop (False) with a gevent or eventlet handler, with TLS,
    or on a kazoo release pycurator is not checked against
    (:mod:`~pycurator._client.kazoo_internals.releases`, said once in the log). Replaces
    ``KazooClient._connection`` (made in ``__init__`` with the client's connection retry, logger
    and SASL options, all kept) and ``KazooClient._call`` on this instance."""
    current = client._connection
    if isinstance(current, LeanConnection):
        return True
    if not is_stopped(client) or current._connection_routine is not None:
        raise RuntimeError("use_lean_loop() must be called before the client is started")
    if loop_refusal(client) is not None:
        told_if_unchecked()
        return False
    lean = LeanConnection(client, current.retry_sleeper, current.logger, current.sasl_options)
    follows = getattr(current, "_pycurator_follows", None)
    if follows is not None:  # the client's runtime was made first: it follows the new one
        lean._pycurator_follows = follows
    followed = getattr(current._read_watch_event, "on_event", None)
    if followed is not None:  # watch events were followed on kazoo's loop: they still are
        lean.event_follower = followed
    client._connection = lean
    client._call = lean.call
    return True


def uses_lean_loop(client: KazooClient) -> bool:
    """Whether ``client`` runs on pycurator's connection loop."""
    return isinstance(client._connection, LeanConnection)


def hold_sends(client: KazooClient) -> None:
    """The calling thread's requests on ``client`` held from now on, to be written together by
    :func:`send_held` (:meth:`LeanConnection.hold_sends`); on kazoo's loop, nothing: each is
    sent as it is made."""
    connection = client._connection
    if isinstance(connection, LeanConnection):
        connection.hold_sends()


def send_held(client: KazooClient) -> None:
    """Write the requests :func:`hold_sends` held on ``client``, in order."""
    connection = client._connection
    if isinstance(connection, LeanConnection):
        connection.send_held()


def read_answer(client: KazooClient, answer: Any, timeout: float | None) -> None:
    """Read ``client``'s connection on the calling thread until ``answer`` (of a request it
    sent) has come or ``timeout`` seconds (None: no limit) have passed, when the connection is
    pycurator's loop, serves a session and no other thread reads it
    (:meth:`~pycurator._client.kazoo_internals.reading.SessionReader.read_until`); else
    nothing, and the answer wakes the thread when it comes. Never on the loop thread, nor in
    a forked child (its parent's socket)."""
    connection = client._connection
    if isinstance(connection, LeanConnection):
        connection.read_answer(answer, timeout)


__all__ = [
    "hold_sends",
    "loop_refusal",
    "read_answer",
    "send_held",
    "use_lean_loop",
    "uses_lean_loop",
]
