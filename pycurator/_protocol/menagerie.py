"""menagerie's rules (``org.menagerie``): how its locks and its semaphore name, read, order
and judge the children of a base node, as pure functions and drivers.

menagerie names each node ``<head><seq10>`` (``lock-``, ``readLock-``, ``writeLock-``,
``permit-``), keeps the children that start with a prefix (``ZkUtils.filterByPrefix``, a plain
``startsWith``) and orders them by ``Integer.parseInt`` of the text after the last ``-``
(``ZkUtils.sortBySequence``). A child Java cannot parse that way (no ``-``, a tail that is not
a Java ``int``) makes every Java acquire on the base throw; here it takes no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import wire
from .drivers import Decision, Naming, NodeVanishedError

#: Java's ``Integer.MIN_VALUE`` and ``Integer.MAX_VALUE``.

#: How each menagerie recipe names its node: its head, then ZooKeeper's sequence; the base
#: node and its missing ancestors are made persistent and empty; a lost create is found again
#: among the session's nodes with the head that no other acquire claims.
LOCK_NAMING = Naming(head=wire.MENAGERIE_LOCK_HEAD, protected=False, parents="persistent")
READ_NAMING = Naming(head=wire.MENAGERIE_READ_HEAD, protected=False, parents="persistent")
WRITE_NAMING = Naming(head=wire.MENAGERIE_WRITE_HEAD, protected=False, parents="persistent")
PERMIT_NAMING = Naming(head=wire.MENAGERIE_PERMIT_HEAD, protected=False, parents="persistent")


def sequence(name: str) -> int | None:
    """A node's sequence as menagerie reads it: ``Integer.parseInt`` of the text after the
    last ``-`` (``ZkUtils.parseSequenceNumber``); None where Java throws."""
    dash = name.rfind("-")
    return wire.java_parse_int(name[dash + 1 :]) if dash >= 0 else None


def sort_children(children: Sequence[str], prefixes: tuple[str, ...]) -> list[str]:
    """The children that start with one of ``prefixes`` and whose sequence Java parses, in
    menagerie's order: by sequence, ties in listing order (Java's sort is stable)."""
    kept = [(s, c) for c in children if c.startswith(prefixes) and (s := sequence(c)) is not None]
    return [child for _, child in sorted(kept, key=lambda item: item[0])]


def _known(number: int | None) -> int:
    assert number is not None  # the children come from sort_children, which parsed them
    return number


def _sequence_of(children: Sequence[str], ours: str) -> int:
    if ours not in children:
        raise NodeVanishedError(ours)
    return _known(sequence(ours))


@dataclass(frozen=True, slots=True)
class QueueDriver:
    """A menagerie lock's rule over the children named with ``prefixes``: we hold when no
    node named with ``blockers`` sorts before ours, and otherwise watch the nearest one.

    ``ReentrantZkLock`` walks its sorted list back from its own index, so a child whose
    sequence ties with ours sorts before it or after it as the listing comes
    (``ties_block``: count it as ahead, never holding where a Java peer may see it first);
    the read/write lock compares sequences with ``<``, so a tie never blocks there.
    """

    token: str = wire.MENAGERIE_LOCK_HEAD
    prefixes: tuple[str, ...] = (wire.MENAGERIE_LOCK_FILTER,)
    blockers: tuple[str, ...] = (wire.MENAGERIE_LOCK_FILTER,)
    ties_block: bool = True
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return sort_children(children, self.prefixes)

    def ahead(self, children: Sequence[str], ours: str) -> list[str]:
        """The blocking nodes that sort before ours, nearest last; NodeVanishedError when
        ours is not among ``children`` (in :meth:`sort`'s order)."""
        mine = _sequence_of(children, ours)
        found = []
        for child in children:
            number = _known(sequence(child))
            if child == ours or not child.startswith(self.blockers):
                continue
            if number < mine or (self.ties_block and number == mine):
                found.append(child)
        return found

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        ahead = self.ahead(children, ours)
        if not ahead:
            return Decision(True)
        return Decision(False, ahead[-1], len(ahead) == 1)


#: ``ReentrantZkLock``: every ``lock*`` child takes part (``ReentrantZkLock2``'s too).
LOCK_DRIVER = QueueDriver()

_RW = (wire.MENAGERIE_READ_FILTER, wire.MENAGERIE_WRITE_FILTER)

#: ``ReentrantZkReadWriteLock.WriteLock``: waits on the nearest lower reader or writer. A
#: holder's downgrade node takes the holder's sequence (see :class:`ReadSide`), so a decision
#: is confirmed on a fresh listing before it holds.
WRITE_DRIVER = QueueDriver(
    wire.MENAGERIE_WRITE_HEAD, _RW, _RW, ties_block=False, relist_before_holding=True
)
#: ``ReentrantZkReadWriteLock.ReadLock``: waits on the nearest lower writer only.
READ_DRIVER = QueueDriver(
    wire.MENAGERIE_READ_HEAD, _RW, (wire.MENAGERIE_WRITE_FILTER,), ties_block=False
)


@dataclass(frozen=True, slots=True)
class ReadSide:
    """The read side as one acquire sees it: :data:`READ_DRIVER`'s rule, except for the holder
    of the write lock (its node ``write_node``), who downgrades: it holds the read lock at once
    with ``readLock--<the write node's sequence text>``, a plain ephemeral node, as menagerie
    names it, which keeps later writers behind it."""

    write_node: str | None = None
    token: str = wire.MENAGERIE_READ_HEAD
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        if self.write_node is None:
            return None
        name = wire.node_name(self.write_node)
        return "-" + name[name.rfind("-") + 1 :]

    def sort(self, children: Sequence[str]) -> list[str]:
        return READ_DRIVER.sort(children)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        if self.write_node is not None:
            return Decision(True)
        return READ_DRIVER.decide(children, ours)


@dataclass(frozen=True, slots=True)
class PermitDriver:
    """``ZkSemaphore``'s rule: a ``permit-`` node holds a permit when fewer than ``permits``
    ``permit*`` children have a lower sequence. A waiter watches the ``permits`` nodes nearest
    ahead of its own (:meth:`watches`): a grant needs one of them gone, and a deletion wakes at
    most ``permits`` waiters."""

    permits: int
    token: str = wire.MENAGERIE_PERMIT_HEAD
    relist_before_holding: bool = False

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return sort_children(children, (wire.MENAGERIE_PERMIT_FILTER,))

    def _ahead(self, children: Sequence[str], ours: str) -> list[str]:
        mine = _sequence_of(children, ours)
        return [c for c in children if c != ours and _known(sequence(c)) < mine]

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        ahead = self._ahead(children, ours)
        if len(ahead) < self.permits:
            return Decision(True)
        return Decision(False, ahead[-1])

    def watches(self, children: Sequence[str], ours: str) -> list[str]:
        """The nodes a waiter watches: the ``permits`` nearest ahead of ours (none once
        held)."""
        ahead = self._ahead(children, ours)
        return ahead[-self.permits :] if len(ahead) >= self.permits else []


__all__ = [
    "LOCK_DRIVER",
    "LOCK_NAMING",
    "PERMIT_NAMING",
    "READ_DRIVER",
    "READ_NAMING",
    "WRITE_DRIVER",
    "WRITE_NAMING",
    "PermitDriver",
    "QueueDriver",
    "ReadSide",
    "sequence",
    "sort_children",
]
