"""Who holds and who waits on a lock path, read from the tree alone (``pycurator inspect``).

Works for every Curator lock layout, whichever language made the nodes: a mutex
(``_c_<uuid>-lock-<seq>``), a read/write lock (``__READ__`` / ``__WRIT__`` siblings), a
semaphore (``locks/`` and ``leases/``) and a leader latch (``_c_<uuid>-latch-<seq>``). A
``LeaderSelector`` is a mutex on the wire: its holder is the leader. Reading sends only
``getChildren`` and ``getData``. Who holds is decided by the recipes' own drivers
(:mod:`pycurator._protocol.drivers`) over the sorted names, so ``inspect`` and the recipes cannot
disagree; the classification is a pure function over names and sessions, tested without a
server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kazoo.exceptions import NoAuthError, NoNodeError

from .._protocol import wire
from .._protocol.barriers import is_barrier
from .._protocol.deadline import Deadline
from .._protocol.drivers import (
    LATCH_DRIVER,
    MUTEX_DRIVER,
    RW_SORT_TOKENS,
    ReadDriver,
    StandardDriver,
    write_driver,
)
from .._protocol.requests import GetData, ListChildren, NodeExists
from .._protocol.steps import Await, Send, Steps
from .inspection_systems import SYSTEM_OF_LAYOUT, classify_others, layout_of_others

#: Each answer is waited for as kazoo's blocking calls wait: until kazoo's own errors end it.
_NO_DEADLINE = Deadline(None)
#: Position of a holder; waiters count 1, 2, ... in the order they will be served.
HOLDING = 0


@dataclass(frozen=True)
class Entry:
    """A child node as listed: its path relative to the lock path, and what ``getData`` read."""

    name: str
    session: int
    data: bytes
    created_ms: int


@dataclass(frozen=True)
class QueuedNode:
    """One node in a lock's queue.

    ``kind``: ``mutex``, ``write``, ``read``, ``lease``, ``lock`` (a semaphore's internal mutex),
    ``latch`` (its holder is the leader) or ``other`` (a child with no Curator token, which
    still takes part in Curator's sort).
    ``position``: 0 for a holder, else the place in line.
    """

    entry: Entry
    kind: str
    holder: bool
    position: int


#: The layout of a path that holds no lock: children, but none a Curator lock node.
NOT_A_LOCK = "not-a-lock"
#: The layout of a group's path (Curator's ``GroupMember``): ephemeral children named by the
#: members' ids, none a lock node; each a participant of kind ``member``, holding nothing.
GROUP = "group"


@dataclass(frozen=True)
class LockView:
    """A lock path's layout (``mutex``, ``read-write``, ``semaphore``, ``latch``, ``empty``, a
    layout of another Java lock system,
    :data:`~pycurator._recipes.inspection_systems.SYSTEM_OF_LAYOUT`, or :data:`NOT_A_LOCK`), the
    ``system`` that writes it, and its queue.

    Only ephemeral children named like Curator's lock, lease and latch nodes (or the other
    system's) are holders or waiters. A child that is not a lock node but that the system's own
    order puts in the queue all the same (a persistent ``lock-0000000001``, Dubbo's
    ``providers-0000000001`` beside a ``WriteLock``) is a participant of kind ``other`` that
    never holds: its name is in ``blockers``, and ``note`` says what it blocks. The other children
    are listed in ``ignored``. ``note`` also says why a path is not a lock, when it is not.
    ``holders_known`` is False where the tree cannot tell holders from waiters (a menagerie
    semaphore whose permits were not given): no participant is then called a holder.
    """

    path: str
    exists: bool
    layout: str
    participants: tuple[QueuedNode, ...]
    ignored: tuple[str, ...] = ()
    note: str = ""
    system: str = "curator"
    holders_known: bool = True
    blockers: tuple[str, ...] = ()


def layout_of(names: Sequence[str]) -> str:
    """Which recipe a lock path's child names belong to."""
    if not names:
        return "empty"
    if set(names) <= {wire.SEMAPHORE_LOCK_PARENT, wire.SEMAPHORE_LEASE_PARENT}:
        return "semaphore"
    if any(wire.is_latch_node_name(n) for n in names):
        return "latch"
    if any(wire.READ_LOCK_NAME in n or wire.WRITE_LOCK_NAME in n for n in names):
        return "read-write"
    return "mutex"


def _kind(name: str, token: str, kind: str) -> str:
    return kind if token in name else "other"


def _classify_standard(
    entries: Sequence[Entry], driver: StandardDriver, kind: str
) -> list[QueuedNode]:
    by_name = {e.name: e for e in entries}
    ordered = driver.sort(list(by_name))
    return [
        QueuedNode(
            by_name[name],
            _kind(name, driver.token, kind),
            driver.decide(ordered, name).holds,
            i,
        )
        for i, name in enumerate(ordered)
    ]


def classify_mutex(entries: Sequence[Entry]) -> list[QueuedNode]:
    """Mutex: the mutex driver's order and decision (the first node holds it)."""
    return _classify_standard(entries, MUTEX_DRIVER, "mutex")


def classify_latch(entries: Sequence[Entry]) -> list[QueuedNode]:
    """Leader latch: nodes in queue order (by the part after ``latch-``), the first leads. This
    is Curator's ``getParticipants()``; the ids are the nodes' data."""
    return _classify_standard(entries, LATCH_DRIVER, "latch")


def classify_read_write(entries: Sequence[Entry]) -> list[QueuedNode]:
    """Read/write lock: the write and read drivers decide each node. The one rule the tree
    cannot show is per thread: a read node of the session whose write node holds and is the
    only writer ahead is taken for that holder's downgrade, and holds."""
    by_name = {e.name: e for e in entries}
    write, read = write_driver(), ReadDriver()
    ordered = write.sort(list(by_name))
    result: list[QueuedNode] = []
    writers_ahead = 0
    waiting = 0
    for name in ordered:
        entry = by_name[name]
        if wire.WRITE_LOCK_NAME in name:
            kind, holder = "write", write.decide(ordered, name).holds
        elif wire.READ_LOCK_NAME in name:
            kind = "read"
            decision = read.decide(ordered, name)
            holder = decision.holds or (
                writers_ahead == 1
                and decision.watch == ordered[0]
                and by_name[ordered[0]].session == entry.session
            )
        else:
            kind, holder = "other", write.decide(ordered, name).holds
        if kind == "write":
            writers_ahead += 1
        if not holder:
            waiting += 1
        result.append(QueuedNode(entry, kind, holder, HOLDING if holder else waiting))
    return result


def classify_semaphore(locks: Sequence[Entry], leases: Sequence[Entry]) -> list[QueuedNode]:
    """Semaphore: every lease node holds a lease, except the newest one when its session also
    owns the first node of ``locks/`` (that client holds the internal mutex and still waits for a
    lease to free up). Waiters queue on ``locks/``, first come, first served."""
    ordered_leases = sorted(leases, key=lambda e: wire.sort_key(e.name, wire.LEASE_NAME))
    ordered_locks = [p.entry for p in classify_mutex(locks)]
    pending = (
        ordered_leases[-1]
        if ordered_leases
        and ordered_locks
        and ordered_leases[-1].session == ordered_locks[0].session
        else None
    )
    result = [
        QueuedNode(e, "lease", e is not pending, 1 if e is pending else HOLDING)
        for e in ordered_leases
    ]
    result += [QueuedNode(e, "lock", False, i) for i, e in enumerate(ordered_locks, 1)]
    return result


def _read_entries(path: str, prefix: str = "") -> Steps[list[Entry] | None]:
    """The children of ``path`` with data and stat, or None when ``path`` does not exist.

    The reads are pipelined; a child deleted between the listing and its read is left out. A
    child whose ACL refuses us its data is kept with empty data: its stat (which ``exists``
    gives whatever the ACL) still tells its session and age.
    """
    try:
        names = yield Await((yield Send(ListChildren(path))), _NO_DEADLINE)
    except NoNodeError:
        return None
    replies = []
    for name in names:
        replies.append((name, (yield Send(GetData(wire.join_path(path, name))))))
    entries: list[Entry] = []
    for name, reply in replies:
        try:
            data, stat = yield Await(reply, _NO_DEADLINE)
        except NoNodeError:
            continue
        except NoAuthError:
            exists = NodeExists(wire.join_path(path, name))
            stat = yield Await((yield Send(exists)), _NO_DEADLINE)
            if stat is None:
                continue
            data = b""
        entries.append(Entry(prefix + name, stat.ephemeralOwner, data or b"", stat.ctime))
    return entries


def _is_participant(entry: Entry) -> bool:
    name = wire.node_name(entry.name)
    return entry.session != 0 and (wire.is_lock_node_name(name) or wire.is_latch_node_name(name))


def _split(entries: Sequence[Entry]) -> tuple[list[Entry], list[str]]:
    """Curator's lock and latch nodes among ``entries``, and the names of the others."""
    return (
        [e for e in entries if _is_participant(e)],
        [e.name for e in entries if not _is_participant(e)],
    )


def _semaphore_part(path: str) -> Steps[str]:
    """A note if ``path`` is the ``locks`` or ``leases`` child of a semaphore, else ``""``."""
    name = wire.node_name(path)
    parts = {wire.SEMAPHORE_LOCK_PARENT, wire.SEMAPHORE_LEASE_PARENT}
    if name not in parts or path.count("/") < 2:
        return ""
    parent = path.rsplit("/", 1)[0]
    try:
        siblings = yield Await((yield Send(ListChildren(parent))), _NO_DEADLINE)
    except NoNodeError:
        return ""
    if not set(siblings) <= parts:
        return ""
    return f"this is the {name} node of the semaphore at {parent}: inspect {parent}"


def _blocking_note(layout: str, blockers: Sequence[Entry]) -> str:
    """What the ``blockers`` (children in the queue that are no lock nodes) do to it."""
    if not blockers:
        return ""
    described = []
    for entry in blockers:
        if entry.session == 0:
            what = "a persistent node no session will ever delete"
        else:
            what = f"an ephemeral node of session 0x{entry.session:x}, not one of this lock's"
        described.append(f"{entry.name} ({what})")
    system = SYSTEM_OF_LAYOUT.get(layout, "curator")
    whose = _COUNTS_EVERY_CHILD.get(layout, f"{system}'s {layout} counts it")
    return (
        f"the queue is blocked by {', '.join(described)}: {whose}, so every lock node after it, "
        f"Java's included, waits behind it until it is deleted"
    )


#: Why a child that is not a lock node stands in a queue, by layout.
_COUNTS_EVERY_CHILD = {
    "mutex": "Curator sorts every child of a lock path",
    "read-write": "Curator sorts every child of a lock path",
    "latch": "Curator sorts every child of an election path",
    "zookeeper-write-lock": "ZooKeeper's WriteLock counts every child of its directory",
    "zookeeper-election": "LeaderElectionSupport counts every n_ child of its root",
    "menagerie-lock": "menagerie counts every child whose name starts with lock",
    "menagerie-read-write": "menagerie counts every readLock and writeLock child",
    "menagerie-semaphore": "menagerie counts every child whose name starts with permit",
    "zklocker": "ZkLocker counts every child whose name starts with its dlk- prefix",
}

#: Curator's sort tokens by layout (the mutex's for the others).
_CURATOR_TOKENS = {"read-write": RW_SORT_TOKENS, "latch": (wire.LATCH_NAME,)}
#: Above every key a queued sequence number has: a child whose sort key is below it stands in
#: the queue of Curator's lock nodes (ZooKeeper's sequences are digits).
_ABOVE_SEQUENCES = ":"


def _other_system(
    entries: Sequence[Entry],
    curator: Sequence[Entry],
    permits: int | None,
    layout: str | None,
) -> LockView | None:
    """The view of another Java lock system's path (``layout``: read it as that one), or None
    when it is Curator's (any protected name) or nobody's."""
    if layout is None:
        if any(wire.protected_id(e.name) is not None for e in curator):
            return None
        layout = layout_of_others([e.name for e in entries if e.session != 0])
        if layout is None:
            return None
    by_name = {e.name: e for e in entries}
    nodes, ignored = classify_others(layout, [(e.name, e.session) for e in entries], permits)
    known = not (layout == "menagerie-semaphore" and permits is None)
    participants = tuple(QueuedNode(by_name[n.name], n.kind, n.holder, n.position) for n in nodes)
    blockers = [p.entry for p in participants if p.kind == "other"]
    notes = [_blocking_note(layout, blockers)]
    if not known:
        notes.append("menagerie keeps its permits out of ZooKeeper: give --permits to tell holders")
    return LockView(
        "",
        True,
        layout,
        participants,
        tuple(ignored),
        "; ".join(n for n in notes if n),
        SYSTEM_OF_LAYOUT[layout],
        known,
        tuple(e.name for e in blockers),
    )


def _curator_view(path: str, entries: Sequence[Entry], layout: str | None) -> LockView:
    """The view of a Curator lock or latch (``layout``: read it as that one)."""
    lock_entries, ignored = _split(entries)
    names = [e.name for e in lock_entries]
    tokens = _CURATOR_TOKENS.get(layout or layout_of(names), (wire.LOCK_NAME,))
    queued = [
        e
        for e in entries
        if not _is_participant(e) and wire.sort_key(e.name, *tokens) < _ABOVE_SEQUENCES
    ]
    if layout is None:
        layout = layout_of(names or [e.name for e in queued])
    if layout == "read-write":
        participants = classify_read_write([*lock_entries, *queued])
    elif layout == "latch":
        participants = classify_latch([*lock_entries, *queued])
    else:
        participants = classify_mutex([*lock_entries, *queued])
    blockers = {e.name for e in queued}
    participants = [
        QueuedNode(p.entry, "other", False, p.position) if p.entry.name in blockers else p
        for p in participants
    ]
    ignored = [name for name in ignored if name not in blockers]
    note = _blocking_note(layout, queued)
    if not participants and ignored and all(e.session != 0 for e in entries):
        members = sorted(entries, key=lambda e: e.name)
        nodes = tuple(QueuedNode(e, "member", False, i) for i, e in enumerate(members, 1))
        return LockView(path, True, GROUP, nodes)
    if not participants and ignored:
        layout = NOT_A_LOCK
        note = "no child is a lock node (ephemeral, named like lock-, latch-, x-, dlk-, ...)"
    return LockView(
        path,
        True,
        layout,
        tuple(participants),
        tuple(ignored),
        note,
        blockers=tuple(e.name for e in queued),
    )


def inspect_lock_steps(
    path: str, permits: int | None = None, layout: str | None = None
) -> Steps[LockView]:
    """The holders and waiters on ``path`` (a validated lock path), whatever recipe made them,
    Curator's or another Java lock system's (``permits``: a menagerie semaphore's, which
    ZooKeeper does not keep).

    ``layout`` reads the path as that layout, whatever its children look like: as the recipe
    about to queue there sees it (which children stand in its queue, which block it).

    A path that holds no lock (persistent children, children with other names, a semaphore's
    ``locks``/``leases`` node given directly) has the layout :data:`NOT_A_LOCK` and no
    participants; one whose children are all ephemeral and none a lock node is a group's
    (:data:`GROUP`), its members the participants.
    """
    entries = yield from _read_entries(path)
    if entries is None:
        return LockView(path, False, "empty", ())
    note = yield from _semaphore_part(path)
    if note:
        return LockView(path, True, NOT_A_LOCK, (), tuple(e.name for e in entries), note)
    names = [e.name for e in entries]
    if layout is None and is_barrier(names):
        note = "a double barrier's members: no lock (pycurator inspect PATH shows them)"
        return LockView(path, True, NOT_A_LOCK, (), tuple(names), note)
    if layout == "semaphore" or (layout is None and layout_of(names) == "semaphore"):
        locks_parent = wire.SEMAPHORE_LOCK_PARENT
        leases_parent = wire.SEMAPHORE_LEASE_PARENT
        locks = yield from _read_entries(wire.join_path(path, locks_parent), f"{locks_parent}/")
        leases = yield from _read_entries(wire.join_path(path, leases_parent), f"{leases_parent}/")
        locks, ignored_locks = _split(locks or [])
        leases, ignored_leases = _split(leases or [])
        participants = classify_semaphore(locks, leases)
        ignored = ignored_locks + ignored_leases
        return LockView(path, True, "semaphore", tuple(participants), tuple(ignored))
    if layout is not None and layout in SYSTEM_OF_LAYOUT:
        other = _other_system(entries, [], permits, layout)
    else:
        other = (
            None
            if layout is not None
            else _other_system(entries, _split(entries)[0], permits, None)
        )
    if other is not None:
        return replace(other, path=path)
    return _curator_view(path, entries, layout)
