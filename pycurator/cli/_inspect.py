"""``pycurator inspect`` (one lock, a tree of locks, or one lock followed live) and
``pycurator revoke``."""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from .._protocol import wire
from .._protocol.errors import NotALockNodeError
from .._recipes.inspection import NOT_A_LOCK, LockView, QueuedNode
from .._recipes.inspection_systems import name_session
from .._threads.inspection import inspect_lock
from .._threads.revocation import attempt_revoke
from ._common import (
    EXIT_REFUSED,
    EXIT_USAGE,
    CliError,
    Interrupter,
    checked_path,
    connected,
)
from ._text import shown, shown_data


def _state(view: LockView, participant: QueuedNode) -> str:
    """``holder`` (``leader``), ``waiting``, ``blocking`` (a child that is no lock node but
    stands in the queue) or ``unknown`` (the tree cannot tell: a menagerie semaphore without
    ``--permits``)."""
    if participant.kind == "other":
        return "blocking"
    if not view.holders_known:
        return "unknown"
    if not participant.holder:
        return "waiting"
    return "leader" if view.layout in _ELECTIONS else "holder"


#: The layouts whose holder is a leader.
_ELECTIONS = ("latch", "zookeeper-election")


def _data(participant: QueuedNode) -> str:
    """The node's data for JSON (which escapes what it must itself)."""
    return participant.entry.data.decode("utf-8", "replace")


def _shown_data(participant: QueuedNode) -> str:
    """The node's data for the terminal (see :mod:`pycurator.cli._text`)."""
    return shown_data(participant.entry.data)


def _age(participant: QueuedNode, now_ms: int) -> float:
    return max(0, now_ms - participant.entry.created_ms) / 1000


def _participant_json(view: LockView, p: QueuedNode, now_ms: int) -> dict[str, Any]:
    document = {
        "node": wire.join_path(view.path, p.entry.name),
        "kind": p.kind,
        "state": _state(view, p),
        "position": p.position if view.holders_known else None,
        "session": f"0x{p.entry.session:x}",
        "data": _data(p),
        "age_seconds": round(_age(p, now_ms), 3),
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
    ages = [_age(p, now_ms) for p in view.participants if p.holder]
    return {
        "blocked_by": blockers,
        "holder_count": len(ages),
        "waiting": _waiting(view),
        "oldest_holder_age_seconds": round(max(ages), 3) if ages else None,
    }


def view_as_json(view: LockView, now_ms: int) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints."""
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


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows as aligned columns; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def _short(text: str, width: int = 24) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _waiting(view: LockView) -> int:
    """The queue's length: the places of the lock nodes waiting (readers side by side share
    one), not counting the children that block it."""
    return len({p.position for p in view.participants if not p.holder and p.kind != "other"})


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
    ignored = ""
    if view.ignored:
        names = ", ".join(shown(n) for n in view.ignored[:5])
        names += ", ..." if len(view.ignored) > 5 else ""
        ignored = f"{len(view.ignored)} other child(ren), not lock nodes, ignored: {names}"
    if view.layout == NOT_A_LOCK:
        return f"{path}: not a lock ({shown(view.note)}); {ignored or 'no children'}\n"
    waiting = _waiting(view)
    if view.layout in _ELECTIONS:
        leader = next((p for p in view.participants if p.holder), None)
        led = "no leader" if leader is None else f"leader '{_shown_data(leader)}'"
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
                    f"{_age(p, now_ms):.1f}s",
                    _short(_shown_data(p)),
                    shown(p.entry.name),
                )
            )
        lines += _table(rows)
    return "\n".join(lines) + "\n"


# -- --tree ----------------------------------------------------------------------------------


def locks_below(client: KazooClient, path: str, permits: int | None = None) -> Iterator[LockView]:
    """Every lock at or below ``path`` (depth first, children in name order): each path whose
    children include Curator lock, lease or latch nodes (or another system's; ``permits``: the
    menagerie semaphores'). A lock's own nodes and a semaphore's ``locks``/``leases`` are not
    descended into; ``/zookeeper`` is skipped."""
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            view = inspect_lock(client, current, permits)
        except NoNodeError:
            continue
        if not view.exists:
            continue
        if view.participants or view.layout == "semaphore":
            yield view
        below = [n for n in view.ignored if "/" not in n]
        for name in sorted(below, reverse=True):
            child = wire.join_path(current, name)
            if child != "/zookeeper":
                stack.append(child)


def _tree_row(view: LockView, now_ms: int) -> dict[str, Any]:
    holders = [p for p in view.participants if p.holder]
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
        holders = [p for p in view.participants if p.holder]
        first = holders[0] if holders else None
        known = view.holders_known
        if view.blockers:
            held_by = f"blocked by {shown(view.blockers[0])}"
        else:
            held_by = "-" if first is None else _short(_shown_data(first)) or "(no data)"
        rows.append(
            (
                view.layout,
                str(len(holders)) if known else "unknown",
                str(_waiting(view)) if known else "unknown",
                held_by,
                "-" if first is None else f"{_age(first, now_ms):.1f}s",
                shown(view.path),
            )
        )
    return "\n".join(_table(rows)) + "\n"


# -- --watch ---------------------------------------------------------------------------------


def _label(view: LockView, p: QueuedNode) -> str:
    data = _shown_data(p) or "no data"
    return f"{shown(p.kind)} {shown(p.entry.name)} ({data}, session 0x{p.entry.session:x})"


def changes(before: LockView | None, after: LockView) -> list[str]:
    """What happened between two readings of one lock: arrivals, departures and hand-offs."""
    if before is None:
        return [view_as_table(after, int(time.time() * 1000)).rstrip("\n")]
    old = {p.entry.name: p for p in before.participants}
    new = {p.entry.name: p for p in after.participants}
    lines = []
    gone_holders = [old[n] for n in old if n not in new and old[n].holder]
    new_holders = [p for n, p in new.items() if p.holder and not (n in old and old[n].holder)]
    verb = "leads" if after.layout in _ELECTIONS else "holds"
    handed = min(len(gone_holders), len(new_holders))
    lines += [
        f"hand-off: {_label(before, a)} -> {_label(after, b)}"
        for a, b in zip(gone_holders[:handed], new_holders[:handed], strict=True)
    ]
    gone_holders, new_holders = gone_holders[handed:], new_holders[handed:]
    lines += [f"released: {_label(before, p)}" for p in gone_holders]
    lines += [f"{verb}: {_label(after, p)}" for p in new_holders]
    lines += [f"left: {_label(before, p)}" for n, p in old.items() if n not in new and not p.holder]
    lines += [
        f"waits: {_label(after, p)} at position {p.position}"
        for n, p in new.items()
        if n not in old and not p.holder
    ]
    if before.exists and not after.exists:
        lines.append(f"{shown(after.path)}: no such node")
    return lines


def watch(
    client: KazooClient,
    path: str,
    out: TextIO,
    as_json: bool,
    interval: float,
    stop: threading.Event,
    permits: int | None = None,
    wake: threading.Event | None = None,
) -> None:
    """Print the lock at ``path`` and then every change until ``stop`` is set: a line per
    event, or with ``as_json`` one JSON document per reading that changed (``permits``: a
    menagerie semaphore's). Setting ``wake`` as well as ``stop`` ends the wait in progress."""
    wake = threading.Event() if wake is None else wake

    def woken(_event: object) -> None:
        wake.set()

    before: LockView | None = None
    while not stop.is_set():
        wake.clear()
        if stop.is_set():  # set as we cleared: the wait below must not miss it
            break
        try:
            client.get_children(path, watch=woken)
        except NoNodeError:
            client.exists(path, watch=woken)
        view = inspect_lock(client, path, permits)
        if before is None or view != before:
            now_ms = int(time.time() * 1000)
            if as_json:
                out.write(json.dumps(view_as_json(view, now_ms)) + "\n")
            else:
                stamp = time.strftime("%H:%M:%S")
                out.writelines(f"{stamp} {line}\n" for line in changes(before, view))
            out.flush()
        before = view
        # the child watch wakes us at once; the interval catches a semaphore's inner nodes
        wake.wait(interval)


def cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    """Print the holders and waiters on a lock path, every lock below it (``--tree``), or
    follow it live (``--watch``, until interrupted)."""
    path = checked_path(args.path)
    if args.permits is not None and args.permits < 1:
        raise CliError(f"--permits must be 1 or more, not {args.permits}", EXIT_USAGE)
    if args.tree and args.watch:
        raise CliError("--tree and --watch do not go together", EXIT_USAGE)
    with connected(args) as client:
        if args.watch:
            stop, wake = threading.Event(), threading.Event()
            interrupt = Interrupter()

            def end() -> None:
                stop.set()
                wake.set()

            try:
                with interrupt.ending(end):
                    watch(client, path, out, args.json, args.interval, stop, args.permits, wake)
            except KazooException:
                if interrupt.signum is None:
                    raise
            return 0
        now_ms = int(time.time() * 1000)
        if args.tree:
            views = list(locks_below(client, path, args.permits))
            if args.json:
                document = [_tree_row(v, now_ms) for v in views]
                out.write(json.dumps(document, indent=2) + "\n")
            else:
                out.write(tree_as_table(views, now_ms))
            return 0
        view = inspect_lock(client, path, args.permits)
    if args.json:
        out.write(json.dumps(view_as_json(view, now_ms), indent=2) + "\n")
    else:
        out.write(view_as_table(view, now_ms))
    return 0


#: The locks whose path may be given to ``revoke`` by mistake for one of their nodes.
_REVOCABLE_LAYOUTS = {"mutex": "lock", "read-write": "read/write lock", "semaphore": "semaphore"}


def _refusal(client: KazooClient, node: str, reason: str) -> str:
    """Why ``revoke`` refused ``node``; for a lock's path, where its nodes are listed."""
    try:
        layout = inspect_lock(client, node).layout
    except KazooException:  # the refusal stands; only the hint is lost
        layout = NOT_A_LOCK
    if layout in _REVOCABLE_LAYOUTS:
        return (
            f"refused: {node} is a {_REVOCABLE_LAYOUTS[layout]}'s path, not one of its nodes; "
            f"'pycurator inspect {node}' lists them"
        )
    return f"refused: {node} is not a lock node: {reason}"


def cmd_revoke(args: argparse.Namespace, out: TextIO) -> int:
    """Write Curator's revocation message to a lock node (:func:`pycurator.attempt_revoke`,
    which refuses any other node)."""
    node = checked_path(args.node, "node path")
    with connected(args) as client:
        if client.exists(node) is None:
            raise CliError(f"no such node: {node}")
        try:
            attempt_revoke(client, node)
        except NotALockNodeError as exc:
            raise CliError(_refusal(client, node, exc.reason), EXIT_REFUSED) from exc
    out.write(f"asked the holder of {shown(node)} to release (only a revocable holder reacts)\n")
    return 0
