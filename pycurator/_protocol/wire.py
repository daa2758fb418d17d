"""Curator's wire strings and the pure rules built on them.

Every string that appears in a znode name or in node data is defined here once, with the Curator
class that defines it, so that pycurator writes exactly what Java Curator writes.
"""

from __future__ import annotations

import random as _random
import re
import unicodedata
from collections.abc import Iterable, Sequence

#: ``CreateBuilderImpl.PROTECTED_PREFIX``: marks a name made by a protected create.
PROTECTED_PREFIX = "_c_"
#: Length of ``_c_<uuid>-``: ``ProtectedUtils.PROTECTED_PREFIX_WITH_UUID_LENGTH``.
PROTECTED_PREFIX_WITH_UUID_LENGTH = len(PROTECTED_PREFIX) + 36 + 1

#: ``InterProcessMutex.LOCK_NAME``.
LOCK_NAME = "lock-"
#: ``InterProcessReadWriteLock.READ_LOCK_NAME``.
READ_LOCK_NAME = "__READ__"
#: ``InterProcessReadWriteLock.WRITE_LOCK_NAME``.
WRITE_LOCK_NAME = "__WRIT__"
#: ``InterProcessSemaphoreV2.LOCK_PARENT``: parent of the semaphore's internal mutex.
SEMAPHORE_LOCK_PARENT = "locks"
#: ``InterProcessSemaphoreV2.LEASE_PARENT``: parent of the lease nodes.
SEMAPHORE_LEASE_PARENT = "leases"
#: ``InterProcessSemaphoreV2.LEASE_BASE_NAME``.
LEASE_NAME = "lease-"
#: ``LeaderLatch.LOCK_NAME``.
LATCH_NAME = "latch-"
#: ``LockInternals.REVOKE_MESSAGE``: written to a holder's node to ask it to release.
REVOKE_MESSAGE = b"__REVOKE__"
#: ``PersistentTtlNode.DEFAULT_CHILD_NODE_NAME``: the child touched to keep a TTL node alive.
TTL_TOUCH_NAME = "touch"
#: ``PersistentTtlNode.DEFAULT_TOUCH_SCHEDULE_FACTOR``: the child is touched every ttl / 2.
TTL_TOUCH_FACTOR = 2


def new_protected_id() -> str:
    """A fresh protection id, as Java's ``UUID.randomUUID().toString()`` prints it.

    Its bits come from :mod:`random` (reseeded in a forked child), not from the system's
    generator: the id must be unique, not secret, and a system call per acquire lets go of the
    GIL and may wait to get it back behind kazoo's threads.
    """
    bits = _random.getrandbits(128) & ~(0xF000 << 64) & ~(0xC << 60) | 0x4000 << 64 | 0x8 << 60
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def protected_prefix(protected_id: str) -> str:
    """The name prefix ``_c_<id>-`` shared by every create attempt with this id."""
    return f"{PROTECTED_PREFIX}{protected_id}-"


def protected_id(name: str) -> str | None:
    """The protection id inside a node name, or None for a name not made by a protected create."""
    if (
        name.startswith(PROTECTED_PREFIX)
        and len(name) >= PROTECTED_PREFIX_WITH_UUID_LENGTH
        and name[PROTECTED_PREFIX_WITH_UUID_LENGTH - 1] == "-"
    ):
        return name[len(PROTECTED_PREFIX) : PROTECTED_PREFIX_WITH_UUID_LENGTH - 1]
    return None


def strip_protection(name: str) -> str:
    """A node name without its ``_c_<uuid>-`` prefix (the name unchanged if it has none)."""
    return name[PROTECTED_PREFIX_WITH_UUID_LENGTH:] if protected_id(name) is not None else name


def sort_key(name: str, *tokens: str) -> str:
    """Curator's ``fixForSorting``: the part after the last token, each token in turn.

    A name without a token keeps its whole name as key. Java compares keys as plain strings, and so
    does Python for the ASCII names involved.
    """
    for token in tokens:
        index = name.rfind(token)
        if index >= 0:
            name = name[index + len(token) :]
    return name


def sort_children(children: Iterable[str], *tokens: str) -> list[str]:
    """All children in queue order: a stable sort by :func:`sort_key`."""
    return sorted(children, key=lambda child: sort_key(child, *tokens))


def join_path(parent: str, child: str) -> str:
    """``ZKPaths.makePath`` for a validated parent and a single child name."""
    return f"/{child}" if parent == "/" else f"{parent}/{child}"


def node_name(path: str) -> str:
    """The last segment of a path."""
    return path.rsplit("/", 1)[-1]


def full_paths(parent: str, names: Sequence[str]) -> list[str]:
    """Child names made into full paths under ``parent``."""
    return [join_path(parent, name) for name in names]


# What a lock, read/write lock or lease node is called once the protection prefix is stripped:
# a token and the server's sequence suffix (``%010d``: ten digits, or a sign and nine or more).
_LOCK_NODE_NAME = re.compile(
    "(?:{})(?:[0-9]{{10}}|-[0-9]{{9,10}})".format(
        "|".join(
            re.escape(token) for token in (LOCK_NAME, READ_LOCK_NAME, WRITE_LOCK_NAME, LEASE_NAME)
        )
    )
)
# A latch node once the protection prefix is stripped: Curator's ``latch-`` and the sequence.
_LATCH_NODE_NAME = re.compile(re.escape(LATCH_NAME) + "(?:[0-9]{10}|-[0-9]{9,10})")


def is_lock_node_name(name: str) -> bool:
    """Whether ``name`` (one path segment) is named like a node a Curator lock recipe creates:
    ``[_c_<uuid>-]lock-<seq>``, ``__READ__<seq>``, ``__WRIT__<seq>`` or ``lease-<seq>``."""
    return _LOCK_NODE_NAME.fullmatch(strip_protection(name)) is not None


def is_latch_node_name(name: str) -> bool:
    """Whether ``name`` (one path segment) is named like a ``LeaderLatch`` node:
    ``[_c_<uuid>-]latch-<seq>``."""
    return _LATCH_NODE_NAME.fullmatch(strip_protection(name)) is not None


# -- the other Java lock systems on ZooKeeper (pycurator.zkrecipes, .menagerie, .zklocker) ------

#: ZooKeeper's ``recipes.lock.WriteLock``: nodes ``<dir>/x-<sessionId>-<seq>``
#: (``LockZooKeeperOperation``).
ZK_WRITE_LOCK_HEAD = "x-"
#: ZooKeeper's ``WriteLock.data``: what every WriteLock node holds.
ZK_WRITE_LOCK_DATA = b"\x12\x34"
#: ZooKeeper's ``recipes.leader.LeaderElectionSupport``: offers ``<root>/n_<seq>``.
ZK_ELECTION_HEAD = "n_"

#: menagerie's ``ReentrantZkLock``: ``<base>/lock-<seq>``; its children filter is ``lock``.
MENAGERIE_LOCK_HEAD = "lock-"
MENAGERIE_LOCK_FILTER = "lock"
#: menagerie's ``ReentrantZkReadWriteLock``: ``readLock-<seq>`` and ``writeLock-<seq>``
#: siblings; a downgrade's node is ``readLock--<write seq>`` (not sequential).
MENAGERIE_READ_HEAD = "readLock-"
MENAGERIE_WRITE_HEAD = "writeLock-"
MENAGERIE_READ_FILTER = "readLock"
MENAGERIE_WRITE_FILTER = "writeLock"
#: menagerie's ``ZkSemaphore``: one ``<base>/permit-<seq>`` per permit.
MENAGERIE_PERMIT_HEAD = "permit-"
MENAGERIE_PERMIT_FILTER = "permit"

#: ZkLocker's ``ZkLocker``: ``<parent>/dlk-[<key>-]<sessionId>-<seq>``; Java's parent is always
#: ``/parent`` (``ZkLocker.DIR``).
ZKLOCKER_HEAD = "dlk-"
ZKLOCKER_JAVA_PARENT = "/parent"


#: Java's ``int``: the sequence numbers the Java systems parse must fit in it.
JAVA_INT_MIN, JAVA_INT_MAX = -(2**31), 2**31 - 1


def java_parse_int(text: str) -> int | None:
    """``Integer.parseInt(text)``, or None where Java throws ``NumberFormatException``: an
    optional ``+`` or ``-``, then one or more decimal digits (any script's, one UTF-16 unit
    each, as ``Character.digit``), within the range of a Java ``int``."""
    sign, digits = 1, text
    if text[:1] in ("+", "-"):
        sign, digits = (-1 if text[0] == "-" else 1), text[1:]
    if not digits:
        return None
    value = 0
    for char in digits:
        digit = unicodedata.decimal(char, None) if ord(char) <= 0xFFFF else None
        if digit is None:
            return None
        value = value * 10 + digit
        if value > JAVA_INT_MAX + 1:
            return None
    value *= sign
    return value if JAVA_INT_MIN <= value <= JAVA_INT_MAX else None
