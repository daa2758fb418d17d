"""The invariants on kept nodes (``PersistentNode``, Curator's node that stays), read from the
recipe's public surface (its ``actual_path`` and ``get_data()``) against the server's truth,
after every turn (:func:`check_now`) and once all have ended (:func:`check_end`):

- ``one-node``: an instance never has two nodes: no more than one node bears its protected name
  (``_c_<uuid>-``, one uuid for the instance's life), a lost create's included;
- ``kept``: an instance started and not closing has its node, in its client's live session,
  with the data last given, once the schedule is quiet around it: its client connected (and
  answered) for :data:`KEPT_WITHIN`, its node not deleted (or its data not given) within it;
  and once closed, none of its nodes stands after the schedule has settled.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .connection import Link

if TYPE_CHECKING:
    from .world import World

#: Seconds within which a kept node is made again, or given its data, once its client could
#: know (connected and answered): a watch event, or the reconnect, and a round trip or two.
KEPT_WITHIN = 1.0
#: The invariants of this module (see the module doc), among the world's.
INVARIANTS = ("one-node", "kept")
#: Curator's protected prefix of a node's name: ``_c_``, a UUID, ``-``.
PROTECTED = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-")


@dataclasses.dataclass(eq=False)
class Kept:
    """One participant's kept node: ``path()`` and ``data()`` read what its user is told
    (``actual_path``, ``get_data()``); ``parent`` is where its nodes are made. The times are the
    user's: started, closing (``close()`` called), closed (``close()`` returned), the data last
    given."""

    who: str
    link: Link
    parent: str
    path: Callable[[], str | None]
    data: Callable[[], bytes]
    started_at: float | None = None
    closing_at: float | None = None
    closed_at: float | None = None
    data_at: float = 0.0
    #: its protected name's prefix, once its first create has told it
    prefix: str | None = None


def _mine(world: World, kept: Kept) -> list[str]:
    """The nodes that bear ``kept``'s protected name, now."""
    parent = world.server.nodes.get(kept.parent)
    if parent is None or kept.prefix is None:
        return []
    return sorted(name for name in parent.children if name.startswith(kept.prefix))


def check_now(world: World) -> None:
    for kept in world.kept:
        path = kept.path()
        if path is not None and kept.prefix is None:
            protected = PROTECTED.match(path.rsplit("/", 1)[1])
            if protected is not None:
                kept.prefix = protected.group(0)
        mine = _mine(world, kept)
        if len(mine) > 1:
            world.fail(f"one-node: {kept.who} has {len(mine)} nodes at once: {mine}")
        _check_kept(world, kept, path)


def _check_kept(world: World, kept: Kept, path: str | None) -> None:
    link = kept.link
    if (
        kept.started_at is None
        or kept.closing_at is not None
        or link.stopped_at is not None
        or link.client._stopped.is_set()  # kazoo's: stopped, its loop not ended yet
        or link.connected_since is None
    ):
        return
    now = world.now
    quiet = max(kept.started_at, link.connected_since, link.stall_until)
    gone = world.server.gone.get(path) if path is not None else None
    if gone is not None:
        quiet = max(quiet, gone[2])
    if now <= quiet + KEPT_WITHIN:
        return
    if path is None:
        world.fail(f"kept: {kept.who} has no node, started and connected since t={quiet:.3f}")
        return
    node = world.server.nodes.get(path)
    session = link.client._session_id
    if node is None or node.owner != session:
        world.fail(
            f"kept: {kept.who}'s {path} does not stand in its live session {session or 0:#x},"
            f" connected since t={quiet:.3f}"
        )
    elif now > kept.data_at + KEPT_WITHIN and node.data != kept.data():
        world.fail(f"kept: {kept.who}'s {path} holds {node.data!r}, not {kept.data()!r}")


def check_end(world: World) -> None:
    for kept in world.kept:
        mine = _mine(world, kept)
        if kept.closed_at is not None and mine:
            world.fail(f"kept: {kept.who} closed its node, and {mine} still stand")


__all__ = ["INVARIANTS", "KEPT_WITHIN", "Kept", "check_end", "check_now"]
