"""The rules of Curator's ``DistributedDoubleBarrier``, without I/O: its members' names and
order, when a member may pass on entering, and what a leaving member does next.

A member is the ephemeral node ``PATH/<UUID>`` (Java's ``UUID.randomUUID().toString()``);
``PATH/ready`` (:data:`~pycurator._protocol.wire.BARRIER_READY`) is made by the member that sees
enough children. Leaving, the lowest member (in Java's string order) waits for the highest to
go; every other deletes its node and waits for the lowest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import wire

#: A member's name: Java's ``UUID.randomUUID().toString()``.
MEMBER_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_barrier(children: Sequence[str]) -> bool:
    """Whether ``children`` are a double barrier's: members named by a UUID, and ``ready``."""
    return bool(children) and all(
        name == wire.BARRIER_READY or MEMBER_NAME.fullmatch(name) for name in children
    )


def new_member_name() -> str:
    """A member's node name: a fresh random UUID, as Java prints it."""
    return wire.new_protected_id()


def check_member_qty(member_qty: object) -> int:
    """``member_qty`` if it is an int >= 1 (a threshold, not a limit: more may enter);
    TypeError or ValueError naming it."""
    if isinstance(member_qty, bool) or not isinstance(member_qty, int):
        raise TypeError(f"member_qty must be an int, not {member_qty!r}")
    if member_qty < 1:
        raise ValueError(f"member_qty must be >= 1, not {member_qty}")
    return member_qty


def may_pass(children: Iterable[str], member_qty: int) -> bool:
    """Whether a member that entered may pass, from the barrier's children: ``ready`` is
    there, or there are ``member_qty`` children (``ready`` counted, as Curator counts). Nothing
    else lets a member through: not a wake-up, not a reconnect (Curator's GH-1290)."""
    names = list(children)
    return wire.BARRIER_READY in names or len(names) >= member_qty


def members(children: Iterable[str]) -> list[str]:
    """The members among the barrier's children (all but ``ready``), in Java's string order."""
    return sorted((c for c in children if c != wire.BARRIER_READY), key=wire.java_string_key)


@dataclass(frozen=True)
class LeaveStep:
    """What a leaving member does next: ``delete_ours`` (its node, once), then, unless
    ``done``, wait while ``watch`` (a member's name) exists."""

    done: bool
    delete_ours: bool = False
    watch: str | None = None


def leave_step(names: list[str], ours: str, ours_there: bool) -> LeaveStep:
    """One round of a leave, in Curator's order: ``names`` are the members now (see
    :func:`members`), ``ours`` our member's name, ``ours_there`` whether our node should still
    exist (not deleted by an earlier round). The lowest member waits for the highest to go and
    leaves last; every other deletes its node and waits for the lowest. Done only once no
    member is left: Curator's member above the lowest returns as soon as one is left, the
    lowest still in. A node of ours gone meanwhile (its session expired) counts as deleted."""
    if not names:
        return LeaveStep(done=True)
    ours_there = ours_there and ours in names
    if ours_there and names == [ours]:
        return LeaveStep(done=True, delete_ours=True)
    if ours_there and names[0] == ours:
        return LeaveStep(done=False, watch=names[-1])
    return LeaveStep(done=False, delete_ours=ours_there, watch=names[0])


__all__ = [
    "MEMBER_NAME",
    "LeaveStep",
    "check_member_qty",
    "is_barrier",
    "leave_step",
    "may_pass",
    "members",
    "new_member_name",
]
