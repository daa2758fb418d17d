"""What a protocol asks the server for, as data: the requests its steps send.

A protocol never calls kazoo: it yields :class:`~pycurator._protocol.steps.Send` with one of these,
and its runner sends it (through :mod:`pycurator._client.transport` on a real client, or a scripted
server in tests) and gives back a pending answer, awaited later with
:class:`~pycurator._protocol.steps.Await`. So requests can be pipelined: a create and a listing are
both sent before either is awaited.

Paths are the client's (the chroot is the transport's business), except where a field says
otherwise. Answers and errors are kazoo's, as its ``*_async`` calls give them.

A request is a record made for each request sent and never changed once made: slotted, equal by
type and fields, and hashable, with a plain ``__init__`` (a frozen dataclass's sets each field
through ``object.__setattr__``, several times the cost, on every request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.protocol.states import WatchedEvent

#: A watch callback: called once with the event (on kazoo's threads).
Watch = Callable[[WatchedEvent], None]


@dataclass(slots=True, unsafe_hash=True)
class CreateNode:
    """``create`` of ``path`` with ``data`` (None: no data, as Java's ``null``); ``acl`` None
    (or empty) is the client's default ACL, or open to all when it has none. Answer: ``(path
    as the server names it, ZnodeStat)``; NoNodeError when a parent is missing (no parent is
    made)."""

    path: str
    data: bytes | None
    acl: Sequence[Any] | None = None
    ephemeral: bool = False
    sequence: bool = False


@dataclass(slots=True, unsafe_hash=True)
class MakeContainer:
    """``createContainer`` of an empty CONTAINER node at ``server_path``: the path as the server
    names it, chroot included (a missing chroot is made this way too). ``acl`` None is the
    client's default ACL. Answer: as :class:`CreateNode`'s; NodeExistsError if it exists."""

    server_path: str
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
    """``delete`` of ``path`` (any version); NoNodeError if it is gone."""

    path: str


Request = CreateNode | MakeContainer | ListChildren | NodeExists | GetData | SetData | DeleteNode


__all__ = [
    "CreateNode",
    "DeleteNode",
    "GetData",
    "ListChildren",
    "MakeContainer",
    "NodeExists",
    "Request",
    "SetData",
    "Watch",
]
