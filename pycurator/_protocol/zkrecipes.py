"""ZooKeeper's own recipes, as pure rules: how ``recipes.lock.WriteLock`` and
``recipes.leader.LeaderElectionSupport`` name, read and order their nodes, and who holds.

- ``WriteLock``: nodes ``<dir>/x-<sessionId>-<seq>`` holding ``0x12 0x34``; every child of the
  directory takes part, ordered as ``ZNodeName`` orders them (:func:`znode_name_key`); the
  first holds, every other watches the one just before its own.
- ``LeaderElectionSupport``: offers ``<root>/n_<seq>`` holding the host name; ordered by the
  integer after ``n_``; the first leads. Java parses every child that way and fails on one
  that does not parse; here such a child takes no part (:func:`offer_number`).

The engine (:mod:`pycurator._recipes.lock_engine`) and the election
(:mod:`pycurator._recipes.election`) run these drivers with the namings below
(:mod:`pycurator._recipes.zkrecipes`); :mod:`pycurator.zkrecipes` and :mod:`pycurator.aio.zkrecipes`
are the shells.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import wire
from .drivers import Decision, Naming, NodeVanishedError

#: ``Integer.MIN_VALUE`` and ``Integer.MAX_VALUE``.

#: How ``WriteLock`` names its node: ``x-<sessionId>-<seq>``, the directory made PERSISTENT.
WRITE_LOCK_NAMING = Naming(
    head=wire.ZK_WRITE_LOCK_HEAD, session=True, protected=False, parents="persistent"
)
#: How ``LeaderElectionSupport`` names its offer: ``n_<seq>``; a missing root is made
#: PERSISTENT (Java requires it to exist).
ELECTION_NAMING = Naming(head=wire.ZK_ELECTION_HEAD, protected=False, parents="persistent")


def split_znode_name(name: str) -> tuple[str, int | None]:
    """``ZNodeName``'s prefix and sequence of a child name: split at the last ``-``, which,
    when the character before it is also ``-``, is the sign of a negative sequence (a parent's
    counter past 2^31 - 1); the sequence is ``Integer.parseInt`` of the tail, or None."""
    index = name.rfind("-")
    if index < 0:
        return name, None
    if index > 0 and name[index - 1] == "-":
        index -= 1
    return name[:index], wire.java_parse_int(name[index + 1 :])


def znode_name_key(name: str) -> tuple[int, int, bytes]:
    """``ZNodeName.compareTo`` as a sort key: by sequence, then prefix (``String.compareTo``);
    a name without a sequence after every name with one, those by prefix.

    Java sorts ``dir + "/" + name``: the same order, except that names without a ``-`` (all
    unnumbered, so behind every lock node) then tie, and its ``TreeSet`` keeps one of each tie;
    here every child is kept."""
    prefix, sequence = split_znode_name(name)
    if sequence is None:
        return 1, 0, wire.java_string_key(prefix)
    return 0, sequence, wire.java_string_key(prefix)


def _first_or_predecessor(children: Sequence[str], ours: str) -> Decision:
    try:
        index = children.index(ours)
    except ValueError:
        raise NodeVanishedError(ours) from None
    if index == 0:
        return Decision(True)
    return Decision(False, children[index - 1], index == 1)


class WriteLockDriver:
    """``WriteLock``'s rule: every child of the directory in ``ZNodeName`` order; the first
    holds, a waiter watches the child just before its own.

    A later child may sort before ours (a foreign numbered child, or any node once the
    directory's counter has wrapped to negative numbers): the children are listed again before
    a waiter concludes that it holds, so that it agrees with Java on who holds."""

    token = wire.ZK_WRITE_LOCK_HEAD
    relist_before_holding = True

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return sorted(children, key=znode_name_key)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        return _first_or_predecessor(children, ours)

    def __repr__(self) -> str:
        return "WriteLockDriver()"


def offer_number(name: str) -> int | None:
    """The number of an offer ``n_<int>`` (``Integer.valueOf(name.substring(2))``), or None
    for a child that is not an offer (Java's ``start()`` throws ``NumberFormatException`` on
    it; note that Java reads any two characters as the head: to Java, ``ab12`` is offer 12)."""
    if not name.startswith(wire.ZK_ELECTION_HEAD):
        return None
    return wire.java_parse_int(name[len(wire.ZK_ELECTION_HEAD) :])


class ElectionDriver:
    """``LeaderElectionSupport``'s rule: the offers ``n_<int>`` by number (ties in listing
    order, as Java's stable sort), other children left out; the first leads, every other
    watches the offer just before its own."""

    token = wire.ZK_ELECTION_HEAD
    relist_before_holding = True  # after a wrap of the root's counter, a later offer leads

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        numbered = [
            (number, child) for child in children if (number := offer_number(child)) is not None
        ]
        return [child for _, child in sorted(numbered, key=lambda pair: pair[0])]

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        return _first_or_predecessor(children, ours)

    def __repr__(self) -> str:
        return "ElectionDriver()"


#: The drivers hold no state: one of each serves every lock and election.
WRITE_LOCK_DRIVER = WriteLockDriver()
ELECTION_DRIVER = ElectionDriver()


def check_host_name(host_name: object) -> str:
    """``host_name`` if it is a str that UTF-8 can write; TypeError or ValueError otherwise."""
    if not isinstance(host_name, str):
        raise TypeError(f"host_name must be a str, not {type(host_name).__name__}")
    try:
        host_name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"host_name cannot be written as UTF-8: {exc.reason}") from None
    return host_name


__all__ = [
    "ELECTION_DRIVER",
    "ELECTION_NAMING",
    "WRITE_LOCK_DRIVER",
    "WRITE_LOCK_NAMING",
    "ElectionDriver",
    "WriteLockDriver",
    "check_host_name",
    "offer_number",
    "split_znode_name",
    "znode_name_key",
]
