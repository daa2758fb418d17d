"""Every use of kazoo's private attributes, in one place, and every kazoo internal pycurator
relies on, named.

kazoo has no public way to tell a stopped client, to drop one watcher function, to send a
request type it does not know (first, or in turn), to hear the watch events it has no watcher
for (a watch that stays), to tell which server errors it can read, to learn the session
timeout the server granted, or to end a session on the client's side (Curator's injected
expiry); pycurator needs all seven. Each function names the attribute it touches and the kazoo
releases it was checked against (:mod:`.client`); ``tests/test_kazoo_private.py`` pins each and
fails loudly if a kazoo release changes them. Which releases those are, and what pycurator does on
another, is one rule in :mod:`.releases`.

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

from .client import (
    NO_WATCHER,
    WAKE_BYTE,
    call,
    call_first,
    discard_watcher,
    follow_connects,
    follow_watch_events,
    is_stopped,
    observe_calls,
    reads_error,
    session_of,
    session_timeout,
    watched_paths,
    watchers,
)
from .loop import LeanConnection
from .loop_choice import (
    hold_sends,
    loop_refusal,
    read_answer,
    send_held,
    use_lean_loop,
    uses_lean_loop,
)
from .releases import CHECKED, checked, told_if_unchecked

__all__ = [
    "CHECKED",
    "NO_WATCHER",
    "WAKE_BYTE",
    "LeanConnection",
    "call",
    "call_first",
    "checked",
    "discard_watcher",
    "follow_connects",
    "follow_watch_events",
    "hold_sends",
    "is_stopped",
    "loop_refusal",
    "observe_calls",
    "read_answer",
    "reads_error",
    "send_held",
    "session_of",
    "session_timeout",
    "told_if_unchecked",
    "use_lean_loop",
    "uses_lean_loop",
    "watched_paths",
    "watchers",
]
