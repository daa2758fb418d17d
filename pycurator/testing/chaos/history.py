"""The chaos run's history model: where its locks live, and one record per hold."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from pycurator._protocol.wire import (
    READ_LOCK_NAME,
    SEMAPHORE_LEASE_PARENT,
    SEMAPHORE_LOCK_PARENT,
    WRITE_LOCK_NAME,
)

ROOT = "/chaos"
MUTEX = f"{ROOT}/mutex"
RW = f"{ROOT}/rw"
SEMAPHORE = f"{ROOT}/semaphore"
SEMAPHORE_MAX = 2
LATCH = f"{ROOT}/latch"
SELECTOR = f"{ROOT}/selector"
#: ZooKeeper's own WriteLock (``zookeeper-recipes-lock``) and menagerie's ReentrantZkLock:
#: exclusive locks of other Java systems, each shared by both languages on its own path.
ZKWRITE = f"{ROOT}/zkwrite"
MENAGERIE = f"{ROOT}/menagerie"


class Kind(NamedTuple):
    """What a kind of contender takes: the lock's name, and whether its holds are exclusive."""

    lock: str
    exclusive: bool


#: The lock each kind of contender takes, and whether its holds are exclusive.
KINDS = {
    "mutex": Kind("mutex", True),
    "write": Kind("rw", True),
    "read": Kind("rw", False),
    "lease": Kind("semaphore", False),
    "latch": Kind("latch", True),
    "selector": Kind("selector", True),
    "zk-write": Kind("zkwrite", True),
    "menagerie": Kind("menagerie", True),
}
ELECTION_LOCKS = ("latch", "selector")
#: The locks (and elections) whose holds are exclusive: each has a counter and a log.
EXCLUSIVE = ("mutex", "rw", "latch", "selector", "zkwrite", "menagerie")
#: The kinds whose Java contender is a peer of another Java lock system (its own session).
SYSTEM_KINDS = ("zk-write", "menagerie")
#: The elections' paths are plain nodes, made before the run: Curator 5.4's latch gives up a
#: create whose container parent the server reaped meanwhile, and waits for a reconnect.
ELECTIONS = (LATCH, SELECTOR)
LOCK_PATHS = (
    MUTEX,
    RW,
    f"{SEMAPHORE}/{SEMAPHORE_LEASE_PARENT}",
    f"{SEMAPHORE}/{SEMAPHORE_LOCK_PARENT}",
    *ELECTIONS,
    ZKWRITE,
    MENAGERIE,
)

#: The recipe whose nodes live under each of :data:`LOCK_PATHS`, as a live orphan names it.
RECIPES = {
    MUTEX: "InterProcessMutex",
    RW: "InterProcessReadWriteLock",
    f"{SEMAPHORE}/{SEMAPHORE_LEASE_PARENT}": "InterProcessSemaphoreV2 (lease)",
    f"{SEMAPHORE}/{SEMAPHORE_LOCK_PARENT}": "InterProcessSemaphoreV2 (its lock)",
    LATCH: "LeaderLatch",
    SELECTOR: "LeaderSelector",
    ZKWRITE: "ZooKeeper's WriteLock",
    MENAGERIE: "menagerie's ReentrantZkLock",
}


def recipe_of(node: str) -> str:
    """The recipe a lock node under :data:`LOCK_PATHS` belongs to (the read/write lock's side
    named by its node's name), or ``"no recipe's path"`` for a node elsewhere."""
    parent, _, name = node.rpartition("/")
    recipe = RECIPES.get(parent, "no recipe's path")
    if parent == RW:
        side = "read" if READ_LOCK_NAME in name else "write" if WRITE_LOCK_NAME in name else "?"
        recipe = f"{recipe} ({side})"
    return recipe


#: fenced (committed), rejected (node gone), unknown (no answer), killed (before its record).
Outcome = Literal["fenced", "rejected", "unknown", "killed"]


def counter_path(lock: str) -> str:
    return f"{ROOT}/counters/{lock}"


def log_path(lock: str, hold_id: str) -> str:
    return f"{ROOT}/log/{lock}/{hold_id}"


@dataclass
class Hold:
    """One hold as its holder saw it: times in monotonic nanoseconds (either language)."""

    hold_id: str
    who: str
    language: str
    lock: str
    exclusive: bool
    node: str
    token: int
    enter_ns: int
    fence_ns: int = 0
    exit_ns: int = 0
    outcome: Outcome = "unknown"
    value: int | None = None  # the counter value an exclusive hold wrote
    fences: list[int] = field(default_factory=list)  # when each fence attempt was sent


def log_entry(hold: Hold, value: int) -> bytes:
    """A log entry's data: the value written, and which of the hold's fence attempts wrote it."""
    return f"{value}:{len(hold.fences) - 1}".encode()


class LogEntry(NamedTuple):
    """A committed fence as the lock's log has it."""

    value: int
    attempt: int


#: lock -> hold id -> its committed fence.
Logs = dict[str, dict[str, LogEntry]]


@dataclass
class Orphans:
    """Lock nodes left once every contender's session ended: in the tree, and in the servers'
    ``dump`` of ephemeral nodes by session."""

    tree: list[str] = field(default_factory=list)
    dump: dict[str, list[str]] = field(default_factory=dict)


#: How the names of the Java side's contenders and workers begin (``ja-mutex-0``).
JAVA_PREFIX = "ja-"


@dataclass(frozen=True)
class LiveOrphan:
    """A lock node found at a quiet moment in a session that lives on, that no holder or waiter
    of the run owns: nobody will delete it until that session ends, and every contender of its
    lock waits behind it meanwhile. ``who`` and ``client`` name the contender (or worker) and
    which of its clients is in that session; both are empty for a session no client of the run
    is in."""

    node: str
    session: int
    recipe: str
    who: str
    client: str

    @property
    def javas(self) -> bool:
        """Whether a Java original left it (a contender of the Java side): Curator and the
        other Java systems leave such nodes themselves after a drop, so the run reports them
        without failing; pycurator's fail it."""
        return self.who.startswith(JAVA_PREFIX)

    def __str__(self) -> str:
        owner = f"{self.who}'s {self.client}" if self.who else "no client of the run"
        java = " (the Java original's own: reported, not failed)" if self.javas else ""
        return (
            f"live orphan {self.node} ({self.recipe}) in session {self.session:#x}"
            f" of {owner}, which owns no such node{java}"
        )


@dataclass
class QuietCheck:
    """One audit of lock nodes at a quiet moment (see :mod:`pycurator.testing.chaos.quiet`):
    when, whether the moment was reached within its bounds (``problems`` say why not), how
    long it took, how many lock nodes were there and how many of them a holder or waiter
    owned, and the live orphans."""

    when: str
    reached: bool
    seconds: float
    nodes: int
    owned: int
    live_orphans: list[LiveOrphan] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the moment fails the run: not reached, or a live orphan of pycurator's (or
        of a session no client of the run is in)."""
        return not self.reached or any(not orphan.javas for orphan in self.live_orphans)


@dataclass
class Pause:
    """A worker SIGSTOPped right after it entered the mutex, resumed once its session expired."""

    worker: str
    hold_id: str
    paused_ns: int
    resumed_ns: int


@dataclass
class Faults:
    """What the fault driver did, by kind, with notes on the notable ones."""

    counts: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
