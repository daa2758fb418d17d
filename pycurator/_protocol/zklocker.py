"""ZkLocker's rules (``com.fankux.zklocker.ZkLocker``): its names, its filter, its order, and
who holds; pure functions over child names, no I/O.

A ZkLocker node is ``<parent>/dlk-<key>-<sessionId>-<seq10>``, or ``dlk-<sessionId>-<seq10>``
without a key; the session id is Java's signed ``long`` in decimal. Java lists the parent,
keeps the children that start with ``dlk-<key>-`` (``dlk-`` without a key), orders them by
``Integer.parseInt`` of the text after the last ``-``, and holds when its node is first.

Those prefixes overlap (Java's bug 2): a keyless locker sees every keyed node, a keyed locker
sees no keyless one, and key ``a`` sees the nodes of key ``a-b`` but not the reverse. Read from
the right, a name tells its key exactly. The Python side waits for every lower node Java with
its key waits for (it agrees with Java there), and also for every lower node of a key whose
Java locker sees the Python node (:func:`conflicts`). A node only ever waits for nodes that sort
before it, in one total order that both languages share, so no cycle of waits can form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import wire
from .drivers import Decision, Naming, NodeVanishedError
from .paths import validate_path

HEAD = wire.ZKLOCKER_HEAD
#: A session id as Java's ``Long.toString`` writes it.
_SESSION = re.compile(r"-?[0-9]+")
#: A keyed name's body, read from the right: the key, then the session id.
_KEYED = re.compile(r"(.+?)-(-?[0-9]+)")
#: The largest value of a Java ``int``.
_INT_MAX = 2**31 - 1


def check_key(key: str | None) -> str | None:
    """``key`` if it makes a ZkLocker name that reads back as that key, else a clear error
    (TypeError, ValueError) naming the problem. None is ZkLocker's keyless lock."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise TypeError(f"key must be a str or None, not {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty (the keyless lock is key=None)")
    if "/" in key:
        raise ValueError(f"key {key!r} contains '/': a node name cannot hold one")
    if key.endswith("-"):
        raise ValueError(
            f"key {key!r} ends with '-': its nodes could not be told from those of key"
            f" {key[:-1]!r} under a negative session id"
        )
    try:
        validate_path(f"/{HEAD}{key}-0-0000000000")
    except ValueError as exc:
        raise ValueError(f"key {key!r} cannot be part of a node name: {exc}") from None
    return key


def java_prefix(key: str | None) -> str:
    """The prefix Java's ``getChildList`` keeps: ``dlk-<key>-``, or ``dlk-`` without a key."""
    return HEAD if key is None else f"{HEAD}{key}-"


def java_sees(key: str | None, name: str) -> bool:
    """Whether a Java locker with ``key`` counts the child ``name`` (its filter, exactly)."""
    return name.startswith(java_prefix(key))


def sequence(name: str) -> int | None:
    """The number a child sorts by: the text after its last ``-`` as Java's
    ``Integer.parseInt`` reads it (an optional ``+``, then decimal digits); None where that is
    no number, so the child takes no part (Java throws on it: bug 3). ``--2147483648``, one
    above Java's ``int``, is taken as it reads: ZooKeeper names a node so once its parent's
    counter wraps (Java throws on it too; every other negative sequence Java reads without its
    sign, and so does this function)."""
    tail = name[name.rfind("-") + 1 :]
    digits = tail[1:] if tail.startswith("+") else tail
    if not digits or not all(ch.isdecimal() and ord(ch) <= 0xFFFF for ch in digits):
        return None
    value = int(digits)
    if value > _INT_MAX and not (value == _INT_MAX + 1 and name.endswith(f"--{digits}")):
        return None
    return value


@dataclass(frozen=True, slots=True)
class LockerName:
    """A ZkLocker node's name read from the right: its key (None: keyless), session, sequence."""

    key: str | None
    session: int
    sequence: int


def parse(name: str) -> LockerName | None:
    """``name`` read from the right as ZkLocker writes it (``dlk-`` [key ``-``] session ``-``
    sequence, where a sequence past Java's ``int`` has its own ``-``); None for a child no
    ZkLocker writes."""
    number = sequence(name)
    if number is None or not name.startswith(HEAD):
        return None
    body = name[len(HEAD) : name.rfind("-")]
    if body.endswith("-"):  # ZooKeeper's negative sequence: "-" + "-0000000001"
        body = body[:-1]
    if _SESSION.fullmatch(body):
        return LockerName(None, int(body), number)
    keyed = _KEYED.fullmatch(body)
    if keyed is None:
        return None
    return LockerName(keyed.group(1), int(keyed.group(2)), number)


def conflicts(key: str | None, ours: str, other: str) -> bool:
    """Whether our node ``ours`` (made with ``key``) waits for ``other`` when ``other`` sorts
    first: Java with our key counts ``other``, or ``other`` is a ZkLocker node whose key's Java
    locker counts ours."""
    if java_sees(key, other):
        return True
    theirs = parse(other)
    return theirs is not None and java_sees(theirs.key, ours)


def naming(key: str | None) -> Naming:
    """How the engine names a ZkLocker node: ``dlk-[<key>-]<sessionId>-`` then the sequence,
    persistent parents; a lost create is found again among the session's nodes of that name."""
    return Naming(head=java_prefix(key), session=True, protected=False, parents="persistent")


def sort_children(children: Sequence[str]) -> list[str]:
    """The ZkLocker nodes among ``children`` (names that start ``dlk-`` and end in a number),
    by number, then by name: Java's order, and one order for every locker of the parent."""
    ranked = [
        (number, name)
        for name in children
        if name.startswith(HEAD) and (number := sequence(name)) is not None
    ]
    return [name for _, name in sorted(ranked)]


@dataclass(frozen=True, slots=True)
class ZkLockerDriver:
    """The lock engine's driver for a ZkLocker with ``key``: held when no node that sorts
    before ours :func:`conflicts` with it; otherwise watch the nearest such node."""

    key: str | None = None
    relist_before_holding: bool = False

    @property
    def token(self) -> str:
        """The prefix Java with our key keeps."""
        return java_prefix(self.key)

    def node_sequence(self) -> str | None:
        return None

    def sort(self, children: Sequence[str]) -> list[str]:
        return sort_children(children)

    def decide(self, children: Sequence[str], ours: str) -> Decision:
        try:
            index = children.index(ours)
        except ValueError:
            raise NodeVanishedError(ours) from None
        ahead = [child for child in children[:index] if conflicts(self.key, ours, child)]
        if not ahead:
            return Decision(True)
        return Decision(False, ahead[-1], len(ahead) == 1)


__all__ = [
    "HEAD",
    "LockerName",
    "ZkLockerDriver",
    "check_key",
    "conflicts",
    "java_prefix",
    "java_sees",
    "naming",
    "parse",
    "sequence",
    "sort_children",
]
