"""Who holds the lock, and whom a waiter watches: pure functions over sorted child names.

These are Curator's ``LockInternalsDriver`` predicates. Each takes all children of the lock path,
already in queue order (:func:`pycurator._protocol.wire.sort_children`), and the name of our own
node.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from . import wire
from .requests import CreateMode


class NodeVanishedError(LookupError):
    """Our node is not among the children: the session that made it has expired."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Sequential path not found: {name}")
        self.name = name


@dataclass(frozen=True, slots=True)
class Decision:
    """``holds``: we hold it. Otherwise ``watch`` names the child to wait on, and
    ``then_holds`` says whether its deletion alone gives us the lock (nodes that sort before
    ours can only go away), so that a waiter need not keep the listing to decide again."""

    holds: bool
    watch: str | None = None
    then_holds: bool = False


class Driver(Protocol):
    """What the engine asks of a recipe: the name token, the sort order and the decision."""

    @property
    def token(self) -> str:
        """The name part after the protected prefix, e.g. ``lock-``."""
        ...

    @property
    def relist_before_holding(self) -> bool:
        """Whether the engine must list the children again before it may conclude that a
        decision made over the children it already knows (less those seen deleted) holds.

        False where no node created later can sort before ours; True for the write lock, where
        the holder's downgrade read node (CURATOR-621) takes the holder's sequence number.
        """
        ...

    def node_sequence(self) -> str | None:
        """A sequence number for our node, which is then created EPHEMERAL rather than
        EPHEMERAL_SEQUENTIAL; None (the rule) lets ZooKeeper number it."""
        ...

    def sort(self, children: Sequence[str]) -> list[str]:
        """All children in queue order."""
        ...

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        """Do we hold it, and if not, whom do we watch? ``children`` are in queue order."""
        ...


@dataclass(frozen=True, slots=True)
class Naming:
    """How a lock system names its node, and finds it again after a create whose answer was
    lost.

    Curator's (the default, ``protected``): ``_c_<uuid>-`` then the driver's token, the uuid
    fresh for each acquire, so the name alone tells our node; missing parents are made as
    containers. Another system's: ``head``, then the session id and ``-`` when ``session``
    (``x-<sessionId>-``), then the sequence; missing parents are made persistent. Such a name
    tells at most the session, and several acquires of one client may share it: a lost create
    is found again among the client's nodes no other acquire has claimed (``claims``), and a
    node of another session is never touched.
    """

    head: str = ""
    session: bool = False
    protected: bool = True
    parents: Literal["containers", "persistent"] = "containers"

    @property
    def claims(self) -> bool:
        """Whether nodes made this way are claimed by the acquire that made them."""
        return not self.protected

    @property
    def parent_mode(self) -> CreateMode:
        """How missing parents are made (:func:`~pycurator._protocol.parents.parents_steps`)."""
        return CreateMode.CONTAINER if self.parents == "containers" else CreateMode.PERSISTENT

    def prefix(self, token: str, session_id: int | None, protected_id: str) -> str:
        """The name of our node before its sequence number."""
        if self.protected:
            return wire.protected_prefix(protected_id) + token
        if self.session:
            return f"{self.head}{session_id}-"
        return self.head

    def made(self, child: str, prefix: str) -> bool:
        """Whether ``child`` may be a node made with ``prefix``. Under a protected name, any
        child that starts with it; otherwise the sequence must follow the prefix at once, as a
        user's part of a name (a key) may make one prefix start another's node name."""
        if not child.startswith(prefix):
            return False
        return self.protected or _SEQUENCE.fullmatch(child, len(prefix)) is not None


#: A sequence number as ZooKeeper appends it (``%010d``, negative once the counter wraps).
_SEQUENCE = re.compile(r"-?[0-9]+")

#: Curator's naming: protected names, container parents.
CURATOR_NAMING = Naming()


def _index_of(children: Sequence[str], ours: str) -> int:
    try:
        return children.index(ours)
    except ValueError:
        raise NodeVanishedError(ours) from None


@dataclass(frozen=True, slots=True)
class StandardDriver:
    """Curator's ``StandardLockInternalsDriver``: the first ``max_leases`` nodes hold the lock;
    a waiter watches the node ``max_leases`` places before its own."""

    token: str = wire.LOCK_NAME
    max_leases: int = 1
    sort_tokens: tuple[str, ...] = ()
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return wire.sort_children(children, *(self.sort_tokens or (self.token,)))

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        index = _index_of(children, ours)
        if index < self.max_leases:
            return Decision(True)
        return Decision(False, children[index - self.max_leases], index == self.max_leases)


#: The drivers of Curator's mutex (and the selector, whose node is a mutex node) and latch:
#: immutable, so one of each serves every lock and election.
MUTEX_DRIVER = StandardDriver(wire.LOCK_NAME)
LATCH_DRIVER = StandardDriver(wire.LATCH_NAME)

#: Sort order of the read/write lock: strip ``__READ__``, then ``__WRIT__``.
RW_SORT_TOKENS = (wire.READ_LOCK_NAME, wire.WRITE_LOCK_NAME)


@functools.cache
def write_driver() -> StandardDriver:
    """The write side of ``InterProcessReadWriteLock``: a mutex over all children (one
    driver, immutable, serves every lock)."""
    return StandardDriver(wire.WRITE_LOCK_NAME, 1, RW_SORT_TOKENS, relist_before_holding=True)


@dataclass(frozen=True, slots=True)
class ReadDriver:
    """The read side of ``InterProcessReadWriteLock``: held when no write node is ahead of ours;
    otherwise watch the first write node."""

    token: str = wire.READ_LOCK_NAME
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return wire.sort_children(children, *RW_SORT_TOKENS)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        first_write: str | None = None
        writes = 0
        for child in children:
            if wire.WRITE_LOCK_NAME in child:
                first_write = first_write or child
                writes += 1
            elif child.startswith(ours):
                return Decision(first_write is None, first_write, writes == 1)
        raise NodeVanishedError(ours)


@dataclass(frozen=True, slots=True)
class ReadSideDriver:
    """The read side as one acquire sees it: :class:`ReadDriver`'s rule, except for the holder
    of the write lock, whose write node is ``write_node``: it holds the read lock at once, with
    a node that takes the write node's sequence and is not sequential (CURATOR-621, Curator
    5.5), so it sorts beside the write node and a queued writer stays behind the reader."""

    write_node: str | None = None
    rules: ReadDriver = ReadDriver()
    token: str = wire.READ_LOCK_NAME
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        if self.write_node is None:
            return None
        return wire.sort_key(wire.node_name(self.write_node), wire.WRITE_LOCK_NAME)

    def sort(self, children: Sequence[str]) -> list[str]:
        return self.rules.sort(children)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        if self.write_node is not None:
            return Decision(True)
        return self.rules.decide(children, ours)


def after_wake(
    decision: Decision, deleted: bool, state_changed: bool, relist_before_holding: bool
) -> Decision | None:
    """What a waiter that made ``decision`` knows once woken: the lock, still to be confirmed
    (the watched node is deleted and ``then_holds``), the same decision (an event that changed
    nothing: watch again), or nothing (None: list the children again). A connection state
    change always lists again: our node may have gone with the session."""
    if state_changed:
        return None
    if not deleted:
        return decision
    if decision.then_holds and not relist_before_holding:
        return Decision(True)
    return None


def asks_first(decision: Decision, relist_before_holding: bool) -> str:
    """The request a waiter sends first once the node it watches is deleted: ``exists`` (to
    confirm that our node is still there, when that deletion gives us the lock) or
    ``children`` (the listing :func:`after_wake` asks for)."""
    if decision.then_holds and not relist_before_holding:
        return "exists"
    return "children"
