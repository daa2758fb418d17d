"""How ``pycurator inspect`` shows a lock: as a table, as a JSON document, as a row of a tree;
shared by ``--watch`` and by the messages that name a lock's holders."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from .._protocol import wire
from .._protocol.ttl import TtlExpiry
from .._recipes.inspection import GROUP, NOT_A_LOCK, LockView, QueuedNode
from .._recipes.inspection_systems import name_session
from ._text import shown, shown_data


def _state(view: LockView, participant: QueuedNode) -> str:
    """``holder`` (``leader``), ``waiting``, ``blocking`` (a child that is no lock node but
    stands in the queue) or ``unknown`` (the tree cannot tell: a menagerie semaphore without
    ``--permits``)."""
    if participant.kind == "other":
        return "blocking"
    if participant.kind == "member":
        return "member"
    if not view.holders_known:
        return "unknown"
    if not participant.holder:
        return "waiting"
    return "leader" if view.layout in ELECTIONS else "holder"


#: The layouts whose holder is a leader.
ELECTIONS = ("latch", "zookeeper-election")


def _json_data(participant: QueuedNode) -> tuple[str, str]:
    """The node's data for JSON, exactly, and how it is given: as text where it is UTF-8
    (``"utf-8"``; JSON escapes what it must itself), else its bytes in base64 (``"base64"``)."""
    data = participant.entry.data
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


#: The most characters of a node's data a table shows.
DATA_WIDTH = 24


def participant_data(participant: QueuedNode, width: int | None = None) -> str:
    """The node's data for the terminal (see :mod:`pycurator.cli._text`), at most ``width``
    characters."""
    return shown_data(participant.entry.data, width)


def age(participant: QueuedNode, now_ms: int) -> float:
    return max(0, now_ms - participant.entry.created_ms) / 1000


def _participant_json(view: LockView, p: QueuedNode, now_ms: int) -> dict[str, Any]:
    data, encoding = _json_data(p)
    document = {
        "node": wire.join_path(view.path, p.entry.name),
        "kind": p.kind,
        "state": _state(view, p),
        "position": p.position if view.holders_known else None,
        "session": f"0x{p.entry.session:x}",
        "data": data,
        "data_encoding": encoding,
        "age_seconds": round(age(p, now_ms), 3),
    }
    in_name = name_session(view.layout, p.entry.name)
    if in_name is not None:  # WriteLock's and ZkLocker's names carry their session
        document["name_session"] = f"0x{in_name:x}"
    return document


def _counts(view: LockView, now_ms: int) -> dict[str, Any]:
    """What a dashboard reads of a lock: how many hold and wait, and the oldest holder's age
    (its node's: since it queued; None without a holder), each None where the tree cannot
    tell holders from waiters; and the children that block the queue."""
    blockers = [wire.join_path(view.path, name) for name in view.blockers]
    if not view.holders_known:
        return {
            "holder_count": None,
            "waiting": None,
            "oldest_holder_age_seconds": None,
            "blocked_by": blockers,
        }
    ages = [age(p, now_ms) for p in view.participants if p.holder]
    return {
        "blocked_by": blockers,
        "holder_count": len(ages),
        "waiting": _waiting(view),
        "oldest_holder_age_seconds": round(max(ages), 3) if ages else None,
    }


def view_as_json(view: LockView, now_ms: int) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints; a group's members are its participants
    (``member_count``, with no holder and no queue)."""
    if view.layout == GROUP:
        return {
            "path": view.path,
            "exists": True,
            "system": view.system,
            "layout": GROUP,
            "note": view.note,
            "ignored": [],
            "member_count": len(view.participants),
            "participants": [_participant_json(view, p, now_ms) for p in view.participants],
        }
    return {
        "path": view.path,
        "exists": view.exists,
        "system": view.system,
        "layout": view.layout,
        "note": view.note,
        "ignored": list(view.ignored),
        **_counts(view, now_ms),
        "participants": [_participant_json(view, p, now_ms) for p in view.participants],
    }


def aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows as aligned columns; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def _waiting(view: LockView) -> int:
    """The queue's length: the places of the lock nodes waiting (readers side by side share
    one), not counting the children that block it."""
    kinds = ("other", "member")  # a member waits for nothing
    return len({p.position for p in view.participants if not p.holder and p.kind not in kinds})


def holders_and_waiting(view: LockView) -> str:
    """How many hold and how many wait, as the table's first line says it."""
    if not view.holders_known:
        return f"holders unknown, {len(view.participants)} node(s) in line"
    holders = sum(p.holder for p in view.participants)
    return f"{holders} holder(s), {_waiting(view)} waiting"


def view_as_table(view: LockView, now_ms: int) -> str:
    """The readable table ``inspect`` prints."""
    path = shown(view.path)
    if not view.exists:
        return f"{path}: no such node (no holders, no waiters)\n"
    names = ", ".join(shown(n) for n in view.ignored[:5])
    names += ", ..." if len(view.ignored) > 5 else ""
    if view.layout == NOT_A_LOCK:  # its children are what they are: nothing is ignored
        children = f"{len(view.ignored)} child(ren): {names}" if view.ignored else "no children"
        return f"{path}: not a lock ({shown(view.note)}); {children}\n"
    if view.layout == GROUP:
        return group_as_table(view, now_ms)
    ignored = ""
    if view.ignored:
        ignored = f"{len(view.ignored)} other child(ren), not lock nodes, ignored: {names}"
    waiting = _waiting(view)
    if view.layout in ELECTIONS:
        leader = next((p for p in view.participants if p.holder), None)
        led = "no leader" if leader is None else f"leader '{participant_data(leader)}'"
        lines = [f"{path}: {view.layout}, {led}, {waiting} waiting"]
    else:
        lines = [f"{path}: {view.layout}, {holders_and_waiting(view)}"]
    if view.note:
        lines.append(shown(view.note))
    if ignored:
        lines.append(ignored)
    if view.participants:
        rows = [("POS", "STATE", "KIND", "SESSION", "AGE", "DATA", "NODE")]
        for p in view.participants:
            rows.append(
                (
                    str(p.position) if view.holders_known else "-",
                    _state(view, p),
                    shown(p.kind),
                    f"0x{p.entry.session:x}",
                    f"{age(p, now_ms):.1f}s",
                    participant_data(p, DATA_WIDTH),
                    shown(p.entry.name),
                )
            )
        lines += aligned(rows)
    return "\n".join(lines) + "\n"


def group_as_table(view: LockView, now_ms: int) -> str:
    """A group's members (Curator's ``GroupMember``): each id, its session, age and data."""
    lines = [f"{shown(view.path)}: group, {len(view.participants)} member(s)"]
    rows = [("MEMBER", "SESSION", "AGE", "DATA")]
    for p in view.participants:
        rows.append(
            (
                shown(p.entry.name),
                f"0x{p.entry.session:x}",
                f"{age(p, now_ms):.1f}s",
                participant_data(p, DATA_WIDTH),
            )
        )
    return "\n".join(lines + aligned(rows)) + "\n"


def tree_row(view: LockView, now_ms: int) -> dict[str, Any]:
    holders = [p for p in view.participants if p.holder]
    if view.layout == GROUP:
        return {"path": view.path, "system": view.system, "layout": GROUP, "holders": [],
                "member_count": len(view.participants)}  # fmt: skip
    return {
        "path": view.path,
        "system": view.system,
        "layout": view.layout,
        "holders": [_participant_json(view, p, now_ms) for p in holders],
        **_counts(view, now_ms),
    }


def tree_as_table(views: list[LockView], now_ms: int) -> str:
    """One line per lock: its path, layout, first holder's data and age, queue length."""
    if not views:
        return "no locks\n"
    rows: list[tuple[str, ...]] = [("LAYOUT", "HOLDERS", "WAITING", "HELD BY", "SINCE", "PATH")]
    for view in views:
        if view.layout == GROUP:
            members = f"{len(view.participants)} member(s)"
            rows.append((GROUP, "-", "-", members, "-", shown(view.path)))
            continue
        holders = [p for p in view.participants if p.holder]
        first = holders[0] if holders else None
        known = view.holders_known
        if view.blockers:
            held_by = f"blocked by {shown(view.blockers[0])}"
        else:
            held_by = "-" if first is None else participant_data(first, DATA_WIDTH) or "(no data)"
        rows.append(
            (
                view.layout,
                str(len(holders)) if known else "unknown",
                str(_waiting(view)) if known else "unknown",
                held_by,
                "-" if first is None else f"{age(first, now_ms):.1f}s",
                shown(view.path),
            )
        )
    return "\n".join(aligned(rows)) + "\n"


def ttl_as_json(expiry: TtlExpiry, now_ms: int) -> dict[str, Any]:
    """What ``inspect --json`` tells of a node a ``PersistentTtlNode`` keeps (``ttl_node``)."""
    expires = expiry.expires_ms
    return {
        "touches": expiry.touches,
        "touched_seconds_ago": round(max(0, now_ms - expiry.touched_ms) / 1000, 3),
        "ttl_seconds": None if expiry.ttl is None else round(expiry.ttl, 3),
        "expires_in_seconds": None if expires is None else round((expires - now_ms) / 1000, 3),
    }


def ttl_as_line(expiry: TtlExpiry, now_ms: int) -> str:
    """The line ``inspect`` prints of a node a ``PersistentTtlNode`` keeps: its last touch, its
    TTL as the touching tells it (ZooKeeper shows none), and when it expires unless touched."""
    ago = max(0, now_ms - expiry.touched_ms) / 1000
    line = f"kept by a PersistentTtlNode: its touch child touched {ago:.1f}s ago"
    expires = expiry.expires_ms
    if expiry.ttl is None or expires is None:
        return line + ", once: its TTL is told by the next touch\n"
    line += (
        f", {expiry.touches} times; TTL about {expiry.ttl:.1f}s (twice the time between touches)"
    )
    left = (expires - now_ms) / 1000
    if left >= 0:
        return line + f": expires in about {left:.1f}s unless touched again\n"
    return line + f": expired about {-left:.1f}s ago, reaped at the server's next check\n"
