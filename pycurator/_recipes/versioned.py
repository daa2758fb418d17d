"""Writes that are never applied twice, as steps: a node read with its version, a conditional
write (a ``setData`` at the version read, or the create of a missing node) whose lost answer is
settled before anything else is tried, and an unconditional one sent again until answered.

Curator's framework sends a write again after a lost answer; a ``setData`` at a version then
fails (the first one took) and the recipe's loop applies its change again, to the new value: an
increment counted twice. Here a conditional write whose answer is lost (the connection dropped,
the session expired, no answer in time) is sent again *unchanged*, once connected: two writes at
one version (or two creates of one node) take effect once at most, so an answer to the second
says it all when it is a success; when it is refused, the first can no longer take effect
either, and the node, read, tells what it did (:func:`~pycurator._protocol.counters.fate_of`):
another's bytes at the version ours would have made, ours did not take; else it is unknown, and
said so, never tried again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    NodeExistsError,
    NoNodeError,
)

from .._protocol.counters import Fate, fate_of, next_version
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.parents import parents_steps
from .._protocol.requests import CreateMode, CreateNode, GetData, SetData
from .._protocol.steps import Await, CheckOpen, Send, Steps
from .._protocol.waits import RETRYABLE, connected_steps, read_sent_steps, resent_steps

#: What a node read gives: its bytes and version, or ``(None, None)`` when there is none.
Read = tuple[bytes | None, int | None]
#: What a conditional write did (None: refused), and the node's stat once it took effect.
Written = tuple[Fate | None, Any]


def read_node_steps(path: str, deadline: Deadline) -> Steps[Read]:
    """The node at ``path``: its bytes and version, ``(None, None)`` when it does not exist; a
    read that rides through a reconnect (ConnectionLoss once ``deadline`` passes). Sent at once
    (the usual case, answered with no more ado), and only after a lost answer with what riding
    through a reconnect takes."""
    request = GetData(path)
    try:
        try:
            data, stat = yield Await((yield Send(request)), deadline)
        except (*RETRYABLE, DeadlineExpired):
            data, stat = yield from read_sent_steps(request, deadline)
    except NoNodeError:
        return None, None
    return bytes(data or b""), stat.version


def create_with_parents_steps(
    path: str,
    data: bytes,
    acl: Sequence[Any] | None,
    deadline: Deadline,
    mode: CreateMode = CreateMode.PERSISTENT,
) -> Steps[Any]:
    """Create the node ``path`` holding ``data`` (in ``mode``), its missing parents made as
    containers (Curator's ``creatingParentContainersIfNeeded``, again if a parent is reaped
    meanwhile, until ``deadline``); its answer (NodeExistsError if it exists; a lost answer
    raised as it comes)."""
    request = CreateNode(path, data, acl, mode)
    while True:
        try:
            return (yield Await((yield Send(request)), deadline))
        except NoNodeError:
            if deadline.expired():
                raise
            with contextlib.suppress(NoNodeError):  # a level reaped as the next was made
                yield from parents_steps(path, acl, deadline)


def conditional_write_steps(
    path: str,
    data: bytes,
    version: int | None,
    acl: Sequence[Any] | None,
    patience: float,
) -> Steps[Written]:
    """Write ``data`` to ``path`` if its version is still ``version`` (None: create it, as it
    was missing): :attr:`Fate.APPLIED` and the node's new stat when it took effect; None when
    the server refused it (the node moved on, or appeared, or vanished: a failed try, safe to
    try again); :attr:`Fate.UNKNOWN` when its answer was lost and what it did cannot be known
    (see the module doc). ``patience``: how long, in seconds, an answer is waited for, and
    then, once one is lost, the connection and the answers that settle it (then: unknown).
    ConnectionClosedError when the client is stopped before the write is sent."""
    expected = 0 if version is None else next_version(version)
    in_doubt = False
    deadline = Deadline(patience)
    yield CheckOpen()
    while True:
        try:
            if version is None and not in_doubt:
                _, stat = yield from create_with_parents_steps(path, data, acl, deadline)
            elif version is None:
                _, stat = yield Await((yield Send(CreateNode(path, data, acl))), deadline)
            else:
                stat = yield Await((yield Send(SetData(path, data, version))), deadline)
            return Fate.APPLIED, stat
        except (BadVersionError, NodeExistsError, NoNodeError) as refused:
            if not in_doubt:
                return None, None
            if isinstance(refused, NoNodeError):
                return Fate.UNKNOWN, None  # taken, perhaps, and deleted since
            try:
                now, now_version = yield from read_node_steps(path, deadline)
            except RETRYABLE:
                return Fate.UNKNOWN, None
            fate = fate_of(expected, data, now_version, now)
            return (None if fate is Fate.NOT_APPLIED else fate), None
        except (*RETRYABLE, DeadlineExpired, ConnectionClosedError):
            if not in_doubt:
                in_doubt, deadline = True, Deadline(patience)
            elif deadline.expired():
                return Fate.UNKNOWN, None  # no answer that settles it in time
            try:
                yield from connected_steps(deadline)
            except (DeadlineExpired, ConnectionClosedError):
                return Fate.UNKNOWN, None


def unconditional_write_steps(
    path: str, data: bytes, acl: Sequence[Any] | None, create: bool, patience: float
) -> Steps[Any]:
    """Set ``path`` to ``data`` whatever its version (sent again after a lost answer: the same
    bytes twice are the bytes once); with ``create``, a missing node is made (container
    parents), as Curator's ``forceSet``. Its stat. ``patience`` bounds each wait for the
    connection (then ConnectionLoss)."""
    deadline = Deadline(patience)
    try:
        return (yield from resent_steps(SetData(path, data), deadline))
    except NoNodeError:
        if not create:
            raise
    try:
        return (yield from resent_create_steps(path, data, acl, deadline))
    except NodeExistsError:
        return (yield from resent_steps(SetData(path, data), Deadline(patience)))


def resent_create_steps(
    path: str,
    data: bytes,
    acl: Sequence[Any] | None,
    deadline: Deadline,
    mode: CreateMode = CreateMode.PERSISTENT,
) -> Steps[Any]:
    """A create with container parents, sent again after a lost answer, once connected (so a
    NodeExistsError may be our own create's: for nodes whose maker does not matter)."""
    while True:
        try:
            return (yield from create_with_parents_steps(path, data, acl, deadline, mode))
        except RETRYABLE:
            yield from connected_steps(deadline)


def settled(written: Written, unknown: Callable[[], BaseException]) -> bool:
    """A write's fate as a bool (taken or not); ``unknown()`` raised when it is unknown."""
    if written[0] is Fate.UNKNOWN:
        raise unknown()
    return written[0] is Fate.APPLIED


__all__ = [
    "Read",
    "Written",
    "conditional_write_steps",
    "create_with_parents_steps",
    "read_node_steps",
    "resent_create_steps",
    "settled",
    "unconditional_write_steps",
]
