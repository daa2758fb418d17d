"""A registration's node, as steps: what one instance of a discovery wants of its node
(:class:`Registration`), and the protocol that makes the node hold it (:func:`apply_steps`):
create it (container parents; one in the way kept if it may be ours, else deleted and made
again, as Curator does, so that its watchers hear of it), write it, check it after a
reconnect, delete it. :mod:`pycurator._recipes.registration` decides who applies which wish.

A sequential node's name is kept as the server gave it, so it is the one written, checked and
deleted (Curator forgets it: its unregister deletes a node that does not exist, and each
reconnect adds another); one whose create went unanswered is found again by its session.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import NamedTuple

from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    KazooException,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.discovery import ServiceInstance
from .._protocol.parents import parents_steps
from .._protocol.registration import (
    NodeRecord,
    is_mine,
    node_mode,
    sequential_nodes,
)
from .._protocol.requests import (
    CreateMode,
    CreateNode,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
    SetData,
    Watch,
)
from .._protocol.steps import (
    Await,
    NewSignal,
    OnAnswer,
    Outcome,
    Send,
    SessionId,
    Steps,
    WaitSignal,
)
from .._protocol.transport import Signal
from .._protocol.waits import RETRYABLE, connected_steps, sent_steps

#: Seconds before a node of ours another deleted is made again, unless another made it meanwhile
#: (Curator's register deletes a node in its way, then makes its own: the last registrar keeps it).
REMADE_AFTER = 0.25
#: A registration's key: the service's name and the instance's id (its node ``base/name/id``).
Key = tuple[str, str]


class Pending(NamedTuple):
    """A create sent whose answer never came: the node it may have made."""

    path: str
    mode: CreateMode
    session: int | None


class Keeping(NamedTuple):
    """How a registrar keeps its nodes: under ``base_path``; ``watch`` (a watcher that keeps
    the ``runs_inline`` contract) set on each node it makes, to hear of it deleted or changed by
    another; ``adopt``, how data another wrote is read as its instance (Curator's
    ``watchInstances``), or None to leave it be until the next reconnect writes ours back."""

    base_path: str
    watch: Watch
    adopt: Callable[[bytes], ServiceInstance | None] | None = None


class Registration:
    """What one instance's node should hold, and what we know of it. Read and changed under
    the registrar's lock, but for :attr:`record` and :attr:`pending`, which only the sync that
    holds it (:attr:`busy`) changes."""

    __slots__ = (
        "busy",
        "check",
        "data",
        "done",
        "failure",
        "key",
        "look",
        "path",
        "pending",
        "record",
        "waiters",
        "want",
        "wanted",
    )

    def __init__(self, key: Key, path: str) -> None:
        self.key, self.path = key, path  # ``base/name/id`` (a sequential node's prefix)
        self.want: ServiceInstance | None = None  # to hold; None once unregistered
        self.data = b""  # the bytes of ``want``
        self.wanted = 0  # the number of the latest wish
        self.done = 0  # the number of the wish last settled
        #: the node we made, as we made it, or None
        self.record: NodeRecord | None = None
        #: a create sent whose answer never came (its node may exist)
        self.pending: Pending | None = None
        self.check = False  # make sure the node holds our data (after a reconnect)
        self.look = False  # another touched the node: read it (its watch fired)
        self.busy = False  # a sync holds it
        self.waiters: list[Signal] = []  # woken when the sync that holds it lets go
        #: the error that settled a wish: (its number, the error)
        self.failure: tuple[int, BaseException] | None = None

    @property
    def dirty(self) -> bool:
        """Whether the node may not hold what it should."""
        return self.done < self.wanted or self.check or self.look


def apply_steps(
    keeping: Keeping,
    entry: Registration,
    want: ServiceInstance | None,
    data: bytes,
    check: bool,
    look: bool,
    deadline: Deadline,
    take_over: bool = True,
) -> Steps[Adopted | None]:
    """Make the node of ``entry`` hold ``want`` (``data``), or nothing. ``check``: make sure
    the node holds it (what we know of it may be out of date); ``look``: read the node another
    touched (made again if deleted; data another wrote adopted, or left be). ``take_over``:
    a node of another session in the way is deleted and made ours, as Curator's register
    does; else (a look, with no wish of ours to write) another registered the instance
    since, and its node is left to it, as Curator leaves it until its next reconnect (two
    registrars of one instance would otherwise take it from each other for ever): a node of
    ours found deleted is made again only after :data:`REMADE_AFTER`, if nobody made one
    meanwhile. The instance adopted and its bytes, if one was."""
    yield from connected_steps(deadline)
    session = yield SessionId()
    record = entry.record
    if record is not None and record.outlived(session):
        record = entry.record = None  # it went with its session
    pending = entry.pending
    if pending is not None and pending.session is not None and pending.session != session:
        entry.pending = None
    if want is None:
        yield from remove_steps(entry, session, deadline)
        return None
    mode = node_mode(want.service_type)
    if record is not None and record.mode is not mode:  # a type changed: another node
        yield from remove_steps(entry, session, deadline)
        record = None
    gone = False  # the node was just read, and is not there
    if record is not None and (check or look):
        try:
            held, stat = yield from sent_steps(GetData(record.path, keeping.watch), deadline)
        except NoNodeError:
            record = entry.record = None
            gone = True
        else:
            if not is_mine(stat, mode, session):
                record = entry.record = None
                if not take_over:
                    return _adopted(keeping, entry, held)
            elif held == data:
                entry.record = record.written(stat.version, data, want)
                return None
            elif look and not check and held != record.data and record.data == data:
                # written by another since, and nothing newer of ours to write
                adopted = _adopted_instance(keeping, entry, held)
                entry.record = record.written(stat.version, held, adopted or record.instance)
                return None if adopted is None else Adopted(adopted, held)
            else:
                record = record.written(stat.version, held, record.instance)
    if record is not None and (record.data != data or check):
        try:
            stat = yield from sent_steps(SetData(record.path, data), deadline)
        except NoNodeError:
            record = entry.record = None
        else:
            entry.record = record.written(stat.version, data, want)
            return None
    if record is not None:
        return None
    path = entry.path
    if mode.is_sequential:
        yield from create_sequential_steps(entry, want, data, path, session, keeping, deadline)
        return None
    if not take_over:  # read first: a refused create's watch would wake us
        if gone:  # another's register deletes the node in its way, then makes its own
            yield WaitSignal((yield NewSignal()), REMADE_AFTER)
            if entry.want is not want:  # a wish came meanwhile: it is written instead
                return None
        try:
            held, stat = yield from sent_steps(GetData(path, keeping.watch), deadline)
        except NoNodeError:
            pass
        else:
            if not is_mine(stat, mode, session):
                return _adopted(keeping, entry, held)
    return (
        yield from create_steps(
            entry, want, data, mode, path, session, keeping, deadline, take_over
        )
    )


class Adopted(NamedTuple):
    """What another wrote to a registration's node, taken as its instance
    (``watchInstances``): the instance, and the bytes it was read from."""

    instance: ServiceInstance
    data: bytes


def _adopted_instance(keeping: Keeping, entry: Registration, held: bytes) -> ServiceInstance | None:
    """The instance ``held`` is, when ``keeping`` adopts what another writes and it is an
    instance of the registration's name and id; None otherwise."""
    adopted = keeping.adopt(held) if keeping.adopt is not None else None
    if adopted is None or (adopted.name, adopted.id) != entry.key:
        return None
    return adopted


def _adopted(keeping: Keeping, entry: Registration, held: bytes) -> Adopted | None:
    adopted = _adopted_instance(keeping, entry, held)
    return None if adopted is None else Adopted(adopted, held)


def watch_steps(watch: Watch, path: str, version: int) -> Steps[None]:
    """Set ``watch`` on the node at ``path`` (sent, not awaited: it costs the caller no wait):
    the node deleted or changed by another from then on is heard. Its answer tells what
    happened before it was set: the node gone, or not at data version ``version``."""
    answer = yield Send(NodeExists(path, watch))
    yield OnAnswer(answer, functools.partial(_watch_set, watch, path, version), inline=True)


def _watch_set(watch: Watch, path: str, version: int, outcome: Outcome) -> None:
    stat, error = outcome
    if error is not None:
        return  # not set: the check after the reconnect sets it again
    if stat is None:
        watch(WatchedEvent(EventType.DELETED, KazooState.CONNECTED, path))
    elif stat.version != version:
        watch(WatchedEvent(EventType.CHANGED, KazooState.CONNECTED, path))


def create_steps(
    entry: Registration,
    want: ServiceInstance,
    data: bytes,
    mode: CreateMode,
    path: str,
    session: int | None,
    keeping: Keeping,
    deadline: Deadline,
    take_over: bool = True,
) -> Steps[Adopted | None]:
    """Create the node at ``path``, its watch sent right behind the create; one there
    already is kept if it may be ours (see
    :func:`~pycurator._protocol.registration.is_mine`), else deleted and made again, as
    Curator does, so that its watchers hear of it; unless not ``take_over``: then it is left
    to its owner, watched, and what it holds adopted if ``keeping`` adopts."""
    owner = session if mode.is_ephemeral else None
    while True:
        try:
            _, stat = yield from _created_steps(
                entry, path, data, mode, session, deadline, keeping.watch
            )
        except NodeExistsError:
            if not take_over:
                try:
                    held, stat = yield from sent_steps(GetData(path, keeping.watch), deadline)
                except NoNodeError:
                    continue
                if not is_mine(stat, mode, session):
                    return _adopted(keeping, entry, held)
            else:
                stat = yield from sent_steps(NodeExists(path), deadline)
                if stat is None:
                    continue
                if not is_mine(stat, mode, session):
                    yield from delete_steps(path, stat.version, deadline)
                    continue
            try:
                stat = yield from sent_steps(SetData(path, data), deadline)
            except NoNodeError:
                continue  # gone meanwhile: made again
        entry.record = NodeRecord(path, mode, owner, stat.version, data, want)
        return None


def create_sequential_steps(
    entry: Registration,
    want: ServiceInstance,
    data: bytes,
    path: str,
    session: int | None,
    keeping: Keeping,
    deadline: Deadline,
) -> Steps[None]:
    """Create the sequential node of ``path``, or take the one a create whose answer never
    came made in this session; its watch sent once its name is known."""
    mode = CreateMode.EPHEMERAL_SEQUENTIAL
    if entry.pending is not None:
        found = yield from find_sequential_steps(entry.pending, session, deadline)
        if found is not None:  # ours from now on, whatever it holds: then written
            node, version = found
            record = entry.record = NodeRecord(node, mode, session, version, b"", want)
            entry.pending = None
            try:
                stat = yield from sent_steps(SetData(node, data), deadline)
            except NoNodeError:
                entry.record = None  # deleted by another meanwhile: made again below
            else:
                entry.record = record.written(stat.version, data, want)
                yield from watch_steps(keeping.watch, node, stat.version)
                return
        entry.pending = None
    created, stat = yield from _created_steps(entry, path, data, mode, session, deadline)
    node = wire.join_path(path.rsplit("/", 1)[0] or "/", wire.node_name(created))
    entry.record = NodeRecord(node, mode, session, stat.version, data, want)
    yield from watch_steps(keeping.watch, node, stat.version)


def _created_steps(
    entry: Registration,
    path: str,
    data: bytes,
    mode: CreateMode,
    session: int | None,
    deadline: Deadline,
    watch: Watch | None = None,
) -> Steps[tuple[str, ZnodeStat]]:
    """One create's answer, missing parents made (as containers) and the create sent again;
    until the server answers, :attr:`Registration.pending` names what it may have made.
    ``watch``: set on ``path`` by a request sent right behind the create."""
    while True:
        entry.pending = Pending(path, mode, session)
        try:
            sent = yield Send(CreateNode(path, data, mode=mode))
            if watch is not None:
                yield from watch_steps(watch, path, 0)
            answer: tuple[str, ZnodeStat] = yield Await(sent, deadline)
        except NoNodeError:
            entry.pending = None
            # a level above reaped by the server as we made ours: made again, as ours is
            with contextlib.suppress(NoNodeError):
                yield from parents_steps(path, deadline=deadline)
            continue
        except KazooException as exc:
            if not isinstance(exc, (*RETRYABLE, ConnectionClosedError)):
                entry.pending = None  # the server refused it: nothing was made
            raise
        entry.pending = None
        return answer


def find_sequential_steps(
    pending: Pending, session: int | None, deadline: Deadline
) -> Steps[tuple[str, int] | None]:
    """The node a sequential create (``pending``) whose answer never came made in
    ``session``, and its data version, if it made one; any more such nodes are deleted."""
    parent, prefix = pending.path.rsplit("/", 1)
    parent = parent or "/"
    try:
        names = yield from sent_steps(ListChildren(parent), deadline)
    except NoNodeError:
        return None
    ours = []
    for name in sequential_nodes(names, prefix):
        node = wire.join_path(parent, name)
        stat = yield from sent_steps(NodeExists(node), deadline)
        if stat is not None and stat.ephemeralOwner == session:
            ours.append((node, stat.version))
    for node, version in ours[1:]:
        yield from delete_steps(node, version, deadline)
    return ours[0] if ours else None


def remove_steps(entry: Registration, session: int | None, deadline: Deadline) -> Steps[None]:
    """Delete the node of ``entry`` if it is ours: the one we made, or one a create whose
    answer never came may have made."""
    record, pending = entry.record, entry.pending
    if record is not None:
        yield from delete_steps(record.path, record.version, deadline, record.mode, session)
        entry.record = None
    elif pending is not None:
        if pending.mode.is_sequential:
            found = yield from find_sequential_steps(pending, session, deadline)
            if found is not None:
                yield from delete_steps(found[0], found[1], deadline, pending.mode, session)
        else:
            yield from delete_steps(pending.path, -1, deadline, pending.mode, session)
        entry.pending = None


def delete_steps(
    path: str,
    version: int,
    deadline: Deadline,
    mode: CreateMode | None = None,
    session: int | None = None,
) -> Steps[None]:
    """Delete ``path`` at ``version`` (-1: any); with ``mode``, only while it is a node of
    ours (see :func:`~pycurator._protocol.registration.is_mine`), whatever its version. Gone
    already is fine."""
    while True:
        if version < 0 and mode is not None:
            stat = yield from sent_steps(NodeExists(path), deadline)
            if stat is None or not is_mine(stat, mode, session):
                return
            version = stat.version
        try:
            yield from sent_steps(DeleteNode(path, version), deadline)
            return
        except NoNodeError:
            return
        except BadVersionError:
            if mode is None:
                return  # changed by another since: not ours to delete
            version = -1


__all__ = [
    "REMADE_AFTER",
    "Adopted",
    "Key",
    "Pending",
    "Registration",
    "apply_steps",
    "create_sequential_steps",
    "create_steps",
    "delete_steps",
    "find_sequential_steps",
    "remove_steps",
]
