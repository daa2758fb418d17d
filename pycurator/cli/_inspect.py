"""``pycurator inspect`` (one lock, a tree of locks, or one lock followed live) and
``pycurator revoke``."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from .._protocol import wire
from .._protocol.errors import NotALockNodeError
from .._recipes.inspection import NOT_A_LOCK, LockView
from .._threads.inspection import inspect_lock, inspect_ttl_node
from .._threads.revocation import attempt_revoke
from ._common import EXIT_REFUSED, EXIT_USAGE, CliError, checked_path, connected
from ._text import shown
from ._views import (
    tree_as_table,
    tree_row,
    ttl_as_json,
    ttl_as_line,
    view_as_json,
    view_as_table,
)
from ._watch import follow

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
            follow(client, path, out, args.json, args.interval, args.permits)
            return 0
        now_ms = int(time.time() * 1000)
        if args.tree:
            views = list(locks_below(client, path, args.permits))
            if args.json:
                document = [tree_row(v, now_ms) for v in views]
                out.write(json.dumps(document, indent=2) + "\n")
            else:
                out.write(tree_as_table(views, now_ms))
            return 0
        view = inspect_lock(client, path, args.permits)
        expiry = inspect_ttl_node(client, path) if view.layout == NOT_A_LOCK else None
    if args.json:
        shown_view = view_as_json(view, now_ms)
        if expiry is not None:
            shown_view["ttl_node"] = ttl_as_json(expiry, now_ms)
        out.write(json.dumps(shown_view, indent=2) + "\n")
    else:
        out.write(view_as_table(view, now_ms))
        if expiry is not None:
            out.write(ttl_as_line(expiry, now_ms))
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
