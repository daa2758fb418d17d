"""What a counter's node or a double barrier holds, read from the tree alone (``pycurator
inspect``, ``pycurator count``): a counter's value as each of Curator's recipes would read its
bytes, and a double barrier's members. Reading sends only ``getData`` and ``getChildren``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from .._protocol import wire
from .._protocol.barriers import is_barrier
from .._protocol.barriers import members as members_of
from .._protocol.counters import INT, LONG
from .._protocol.deadline import Deadline
from .._protocol.errors import CorruptedDataError
from .._protocol.requests import GetData, ListChildren
from .._protocol.steps import Await, Send, Steps

#: Each answer is waited for as kazoo's blocking calls wait: until kazoo's own errors end it.
_NO_DEADLINE = Deadline(None)
#: The recipes that read a counter's bytes, and how each reads them.
READERS: dict[str, Callable[[bytes, str], int]] = {
    "SharedCount": INT.decode,
    "DistributedAtomicInteger": INT.decode_atomic,
    "DistributedAtomicLong": LONG.decode_atomic,
}
#: The sizes of a counter's node: a Java ``int``'s and a ``long``'s.
COUNTER_SIZES = (INT.size, LONG.size)


def java_readings(data: bytes, path: str) -> dict[str, int | None]:
    """What each of :data:`READERS` reads from ``data`` (None where Java throws)."""
    readings: dict[str, int | None] = {}
    for recipe, read in READERS.items():
        try:
            readings[recipe] = read(data, path)
        except CorruptedDataError:
            readings[recipe] = None
    return readings


@dataclass(frozen=True)
class CounterView:
    """A counter's node: its bytes, version and zxid, and what each recipe reads there."""

    path: str
    data: bytes
    version: int
    zxid: int
    readings: dict[str, int | None]


@dataclass(frozen=True)
class Member:
    """A double barrier's member node: its name, session, data and creation time."""

    name: str
    session: int
    data: bytes
    created_ms: int


@dataclass(frozen=True)
class BarrierView:
    """A double barrier's members (in Java's order) and whether ``ready`` is there (it made
    once ``member_qty`` entered, deleted once they left)."""

    path: str
    members: tuple[Member, ...]
    ready: bool


def counter_or_barrier_steps(path: str) -> Steps[CounterView | BarrierView | None]:
    """The counter at ``path`` (a node with no children holding a Java ``int``'s or
    ``long``'s bytes), or the double barrier (its children are members and ``ready``), or None
    for anything else (no node included)."""
    listing = yield Send(ListChildren(path))
    read = yield Send(GetData(path))
    try:
        children: list[str] = yield Await(listing, _NO_DEADLINE)
        data, stat = yield Await(read, _NO_DEADLINE)
    except NoNodeError:
        return None
    if not children:
        data = bytes(data or b"")
        if len(data) not in COUNTER_SIZES:
            return None
        return CounterView(path, data, stat.version, stat.mzxid, java_readings(data, path))
    if not is_barrier(children):
        return None
    sent = []
    for name in members_of(children):
        sent.append((name, (yield Send(GetData(wire.join_path(path, name))))))
    members = []
    for name, answer in sent:
        try:
            member, member_stat = yield Await(answer, _NO_DEADLINE)
        except NoNodeError:
            continue  # left meanwhile
        members.append(
            Member(name, member_stat.ephemeralOwner, bytes(member or b""), member_stat.ctime)
        )
    return BarrierView(path, tuple(members), wire.BARRIER_READY in children)


__all__ = [
    "COUNTER_SIZES",
    "READERS",
    "BarrierView",
    "CounterView",
    "Member",
    "counter_or_barrier_steps",
    "java_readings",
]
