"""What a protocol asks the server for, as data: the requests its steps send.

A protocol never calls kazoo: it yields :class:`~pycurator._protocol.steps.Send` with one of these,
and its runner sends it through its transport (:mod:`pycurator._protocol.transport`: on a kazoo
client, :mod:`pycurator._client.transport`; a scripted server in tests) and gives back a pending
answer, awaited later with :class:`~pycurator._protocol.steps.Await`. So requests can be
pipelined: a create and a listing are both sent before either is awaited. A transaction is a
request like any other (:class:`Transaction`), its parts requests too.

Paths are the client's (the chroot is the transport's business), except where a field says
otherwise. Answers and errors are kazoo's, as its ``*_async`` calls give them.

A request is a record made for each request sent and never changed once made: slotted, equal by
type and fields, and hashable, with a plain ``__init__`` (a frozen dataclass's sets each field
through ``object.__setattr__``, several times the cost, on every request).

A new request is a record here, added to :data:`Request`, and its sending on the transport (see
:mod:`pycurator._protocol.transport`): so came the two kazoo lacks, a watch that stays
(:class:`AddWatch`, removed with :class:`RemoveWatches`) and a node with a time to live
(:class:`CreateNode` in a TTL mode).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.protocol.states import WatchedEvent

from .modes import AddWatchMode, CreateMode, WatcherType

#: A watch callback: called once with the event (on kazoo's threads).
Watch = Callable[[WatchedEvent], None]


@dataclass(slots=True, unsafe_hash=True)
class CreateNode:
    """``create`` of ``path`` with ``data`` (None: no data, as Java's ``null``) in ``mode``;
    ``acl`` None (or empty) is the client's default ACL, or open to all when it has none.
    ``ttl``: a TTL mode's time to live, in seconds (sent in whole milliseconds, at least one);
    ValueError, before anything is sent, for a TTL mode without one or another mode with one.
    Answer: ``(path as the server names it, ZnodeStat)``; NoNodeError when a parent is missing
    (no parent is made); :class:`~pycurator._protocol.errors.ServerFeatureError` for a TTL
    mode on a server that has TTL nodes off."""

    path: str
    data: bytes | None
    acl: Sequence[Any] | None = None
    mode: CreateMode = CreateMode.PERSISTENT
    ttl: float | None = None


@dataclass(slots=True, unsafe_hash=True)
class CreateParent:
    """An empty node made as a level of a path: at ``server_path``, the path as the server
    names it (chroot included, so that a missing chroot is made the same way), in ``mode`` (a
    CONTAINER, as Curator makes parents, or PERSISTENT). ``acl`` None is the client's default
    ACL. Answer: as :class:`CreateNode`'s; NodeExistsError if it exists."""

    server_path: str
    mode: CreateMode = CreateMode.CONTAINER
    acl: Sequence[Any] | None = None


@dataclass(slots=True, unsafe_hash=True)
class ListChildren:
    """``getChildren`` of ``path``, with ``watch`` set on its children if given. With
    ``reduce``, the listing is handed to ``reduce`` as the reply is read (on kazoo's connection
    thread, so it must be quick and never raise) and the answer is what it returns: a listing
    nobody has read yet then costs nothing while its reader waits. NoNodeError if ``path`` is
    gone."""

    path: str
    watch: Watch | None = None
    reduce: Callable[[list[str]], Any] | None = None


@dataclass(slots=True, unsafe_hash=True)
class NodeExists:
    """``exists`` of ``path``, with ``watch`` set if given; the answer is its ZnodeStat, or None
    when it does not exist."""

    path: str
    watch: Watch | None = None


@dataclass(slots=True, unsafe_hash=True)
class GetData:
    """``getData`` of ``path``, with ``watch`` set if given; the answer is ``(data,
    ZnodeStat)``. NoNodeError if ``path`` is gone."""

    path: str
    watch: Watch | None = None


@dataclass(slots=True, unsafe_hash=True)
class SetData:
    """``setData`` of ``path`` to ``data``, if its version is still ``version`` (-1: any); the
    answer is its new ZnodeStat. NoNodeError if it is gone, BadVersionError if it changed."""

    path: str
    data: bytes
    version: int = -1


@dataclass(slots=True, unsafe_hash=True)
class DeleteNode:
    """``delete`` of ``path``, if its version is still ``version`` (-1: any); NoNodeError if it
    is gone, BadVersionError if it changed."""

    path: str
    version: int = -1


@dataclass(slots=True, unsafe_hash=True)
class CheckVersion:
    """A part of a :class:`Transaction` only: the node at ``path`` exists, at ``version`` (-1:
    any)."""

    path: str
    version: int = -1


#: What a :class:`Transaction` is made of.
Operation = CreateNode | DeleteNode | SetData | CheckVersion


@dataclass(slots=True, unsafe_hash=True)
class Transaction:
    """ZooKeeper's ``multi``: every one of ``operations`` applied, in order, or none. The
    answer is kazoo's: one result per operation (a create's path, as the client names it; a
    delete's and a check's True; a write's ZnodeStat), or, when one failed, the error of each
    (the failed one's, and ``RolledBackError`` or ``RuntimeInconsistency`` for the others)."""

    operations: tuple[Operation, ...]


@dataclass(slots=True, unsafe_hash=True)
class AddWatch:
    """``addWatch`` of ``path`` in ``mode``: a watch that stays. ``watch`` is called with each
    event the mode covers, as it comes and in order, until it is removed (:class:`RemoveWatches`
    with it) or the session ends; beside kazoo's one-shot watchers of the same path, which hear
    the same events. A dropped connection keeps it: it is set again ahead of every other request
    once the client reconnects within the session. ``watch`` is also told of the connection,
    as events of type NONE (path None): CONNECTING when the connection drops (the changes made
    until it is back are never told), CONNECTED once the watch is set again (a change from then
    on is told), and, last, the session's end (EXPIRED_SESSION, AUTH_FAILED, or CLOSED when
    the client is stopped), which ends the watch.

    Answer: None, once the watch is set; :class:`~pycurator._protocol.errors.ServerFeatureError`
    on a server without persistent watches (ZooKeeper before 3.6)."""

    path: str
    watch: Watch
    mode: AddWatchMode = AddWatchMode.PERSISTENT_RECURSIVE


@dataclass(slots=True, unsafe_hash=True)
class RemoveWatches:
    """``removeWatches`` of this session's watches of ``watcher_type`` on ``path``; the answer
    is None. NoWatcherError when the session holds none (a kazoo below 2.11 cannot read that
    answer: the transport does not send it there, and answers None).

    A watch that stays (``PERSISTENT`` or ``PERSISTENT_RECURSIVE``, see :class:`AddWatch`) is
    removed by the client first: ``watch`` (or, None, every watch of the client on ``path`` in
    that mode) is told nothing more from now on, and NoWatcherError is the answer when it was
    not there. The server is asked to drop its watch once no watch of the client stays on
    ``path`` in that mode, whatever its release (one before 3.9 cannot drop a watch that stays
    apart from kazoo's one-shot watches of the same path: there it lasts until they fire); the
    answer comes at once, as the server's never changes what the client tells."""

    path: str
    watcher_type: WatcherType = WatcherType.DATA
    watch: Watch | None = None


Request = (
    CreateNode
    | CreateParent
    | ListChildren
    | NodeExists
    | GetData
    | SetData
    | DeleteNode
    | Transaction
    | AddWatch
    | RemoveWatches
)


__all__ = [
    "AddWatch",
    "AddWatchMode",
    "CheckVersion",
    "CreateMode",
    "CreateNode",
    "CreateParent",
    "DeleteNode",
    "GetData",
    "ListChildren",
    "NodeExists",
    "Operation",
    "RemoveWatches",
    "Request",
    "SetData",
    "Transaction",
    "Watch",
    "WatcherType",
]
