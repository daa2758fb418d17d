"""Who holds and who waits on a path of the other Java lock systems, read from the tree alone.

``pycurator inspect`` tells Curator's layouts (:mod:`pycurator._recipes.inspection`) and these:
ZooKeeper's own ``WriteLock`` (``x-<session>-<seq>``) and ``LeaderElectionSupport`` (``n_<seq>``),
menagerie's lock (``lock-<seq>``), read/write lock (``readLock-``/``writeLock-``) and semaphore
(``permit-<seq>``), and ZkLocker (``dlk-[<key>-]<session>-<seq>``). Each is ordered and decided
as its Java system reads it (see ``docs/other-systems.md``); a pure function over names and
sessions, tested without a server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._protocol import wire
from .._protocol.zklocker import sequence as zklocker_sequence
from .._protocol.zkrecipes import znode_name_key

#: The layouts of the other systems, by the system that writes them.
SYSTEM_OF_LAYOUT = {
    "zookeeper-write-lock": "zookeeper",
    "zookeeper-election": "zookeeper",
    "menagerie-lock": "menagerie",
    "menagerie-read-write": "menagerie",
    "menagerie-semaphore": "menagerie",
    "zklocker": "zklocker",
}

_SEQ = r"(-?[0-9]+)"
_WRITE_LOCK = re.compile(re.escape(wire.ZK_WRITE_LOCK_HEAD) + r"(-?[0-9]+)-" + _SEQ)
_ELECTION = re.compile(re.escape(wire.ZK_ELECTION_HEAD) + _SEQ)
_MENAGERIE_LOCK = re.compile(re.escape(wire.MENAGERIE_LOCK_FILTER) + r"(?:-.*)?-([0-9]+)")
_MENAGERIE_RW = re.compile(
    f"({wire.MENAGERIE_READ_FILTER}|{wire.MENAGERIE_WRITE_FILTER})--?([0-9]+)"
)
_PERMIT = re.compile(re.escape(wire.MENAGERIE_PERMIT_HEAD) + r"([0-9]+)")
_ZKLOCKER = re.compile(re.escape(wire.ZKLOCKER_HEAD) + r"(?:(.+)-)?(-?[0-9]+)-([0-9]+)")


@dataclass(frozen=True)
class Node:
    """One child as the classification sees it: its name, the session that owns it (0 for a
    persistent node) and where it stands."""

    name: str
    session: int
    kind: str
    holder: bool
    position: int


def name_session(layout: str, name: str) -> int | None:
    """The session id a node's name carries (WriteLock's and ZkLocker's), else None."""
    if layout == "zookeeper-write-lock":
        match = _WRITE_LOCK.fullmatch(name)
        return int(match.group(1)) if match else None
    if layout == "zklocker":
        match = _ZKLOCKER.fullmatch(name)
        return int(match.group(2)) if match else None
    return None


def zklocker_key(name: str, session: int | None = None) -> str | None:
    """The key of a ZkLocker node (``""`` for a keyless one), or None if not a ZkLocker node.
    A key ending in ``-`` and a negative session read alike: ``session``, the node's owner,
    tells them apart."""
    match = _ZKLOCKER.fullmatch(name)
    if match is None:
        return None
    tail = f"-{session}-{match.group(3)}"
    if session is not None and name.endswith(tail):
        return name[len(wire.ZKLOCKER_HEAD) : -len(tail)]
    return match.group(1) or ""


def layout_of_others(names: Sequence[str]) -> str | None:
    """Which of the other systems the child names belong to (the first found, in the order
    of :data:`SYSTEM_OF_LAYOUT`), or None."""
    tests: list[tuple[str, Callable[[str], object]]] = [
        ("zookeeper-write-lock", _WRITE_LOCK.fullmatch),
        ("zookeeper-election", _ELECTION.fullmatch),
        ("menagerie-read-write", _MENAGERIE_RW.fullmatch),
        ("menagerie-semaphore", _PERMIT.fullmatch),
        ("zklocker", _ZKLOCKER.fullmatch),
        ("menagerie-lock", _MENAGERIE_LOCK.fullmatch),
    ]
    for layout, matches in tests:
        if any(matches(name) for name in names):
            return layout
    return None


def classify_others(
    layout: str, children: Sequence[tuple[str, int]], permits: int | None = None
) -> tuple[list[Node], list[str]]:
    """The participants of ``layout`` among ``children`` (name, owner session), in queue
    order with who holds, and the names of the other children (which take no part)."""
    if layout == "zookeeper-write-lock":
        return _write_lock(children)
    if layout == "zookeeper-election":
        return _queue(children, _ELECTION, "offer", 1)
    if layout == "menagerie-lock":
        return _queue(children, _MENAGERIE_LOCK, "lock", 1)
    if layout == "menagerie-semaphore":
        return _queue(children, _PERMIT, "permit", permits)
    if layout == "menagerie-read-write":
        return _read_write(children)
    if layout == "zklocker":
        return _zklocker(children)
    raise ValueError(f"not a layout of another system: {layout!r}")


def _others(children: Sequence[tuple[str, int]], taken: Sequence[Node]) -> list[str]:
    names = {node.name for node in taken}
    return [name for name, _ in children if name not in names]


def _write_lock(children: Sequence[tuple[str, int]]) -> tuple[list[Node], list[str]]:
    """Every child takes part in WriteLock's order (it filters none); the first holds, and
    a foreign child with a number can be that first and block every lock node."""
    ordered = sorted(children, key=lambda child: znode_name_key(child[0]))
    nodes: list[Node] = []
    for index, (name, session) in enumerate(ordered):
        is_lock = session != 0 and _WRITE_LOCK.fullmatch(name) is not None
        if not is_lock and znode_name_key(name)[0] == 1:
            continue  # no number: sorts last, never blocks, takes no part
        kind = "write" if is_lock else "other"
        nodes.append(Node(name, session, kind, index == 0 and is_lock, index))
    return nodes, _others(children, nodes)


def _queue(
    children: Sequence[tuple[str, int]],
    pattern: re.Pattern[str],
    kind: str,
    holders: int | None,
) -> tuple[list[Node], list[str]]:
    """Nodes named by ``pattern`` in the order of their last number; the first ``holders``
    hold (None: unknown, as menagerie's permits are not stored: none is called a holder). A
    persistent node so named takes its place in the queue as Java counts it, of kind ``other``,
    and never holds."""
    numbered = []
    for name, session in children:
        match = pattern.fullmatch(name)
        tail = None if match is None else match.group(match.lastindex or 0)
        sequence = None if tail is None else wire.java_parse_int(tail)
        if sequence is not None:
            numbered.append((sequence, name, session))
    numbered.sort()
    nodes = []
    waiting = 0
    for index, (_, name, session) in enumerate(numbered):
        holder = session != 0 and holders is not None and index < holders
        if not holder:
            waiting += 1
        nodes.append(
            Node(name, session, kind if session else "other", holder, 0 if holder else waiting)
        )
    return nodes, _others(children, nodes)


def _read_write(children: Sequence[tuple[str, int]]) -> tuple[list[Node], list[str]]:
    """menagerie's read/write lock: a writer holds when no read or write node has a lower
    number; a reader when no writer has one (a downgrade's ``readLock--<n>`` shares its
    writer's number, so it holds beside it). A persistent node so named blocks as Java reads
    it, of kind ``other``, and never holds."""
    numbered = []
    for name, session in children:
        match = _MENAGERIE_RW.fullmatch(name)
        sequence = None if match is None else wire.java_parse_int(match.group(2))
        if match is not None and sequence is not None:
            kind = "read" if match.group(1) == wire.MENAGERIE_READ_FILTER else "write"
            numbered.append((sequence, name, session, kind))
    numbered.sort()
    nodes: list[Node] = []
    waiting = 0
    for sequence, name, session, kind in numbered:
        lower = [n for n in numbered if n[0] < sequence and (kind == "write" or n[3] == "write")]
        holder = not lower and session != 0
        if not holder:
            waiting += 1
        shown = kind if session else "other"
        nodes.append(Node(name, session, shown, holder, 0 if holder else waiting))
    return nodes, _others(children, nodes)


def _zklocker(children: Sequence[tuple[str, int]]) -> tuple[list[Node], list[str]]:
    """ZkLocker: each node queues among the nodes its own Java locker lists (``dlk-<key>-``,
    or every ``dlk-`` node for a keyless one) and holds when it is the first of them. A
    persistent node so named blocks as Java reads it, of kind ``other``, and never holds."""
    numbered = []
    for name, session in children:
        match = _ZKLOCKER.fullmatch(name)
        sequence = None if match is None else zklocker_sequence(name)
        if match is not None and sequence is not None:
            numbered.append((sequence, name, session, zklocker_key(name, session) or ""))
    numbered.sort()
    nodes = []
    for sequence, name, session, key in numbered:
        prefix = f"{wire.ZKLOCKER_HEAD}{key}-" if key else wire.ZKLOCKER_HEAD
        ahead = [n for n in numbered if n[0] < sequence and n[1].startswith(prefix)]
        kind = (f"key {key}" if key else "keyless") if session else "other"
        nodes.append(Node(name, session, kind, not ahead and session != 0, len(ahead)))
    return nodes, _others(children, nodes)


__all__ = [
    "SYSTEM_OF_LAYOUT",
    "Node",
    "classify_others",
    "layout_of_others",
    "name_session",
    "zklocker_key",
]
