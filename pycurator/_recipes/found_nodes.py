"""Our node found again by its name, as steps: the node of a create whose answer was lost,
one met as existing under our protected name, and the orphans a lost create may have left.

A protected name (``_c_<uuid>-<name>``, the uuid a keeper's own) tells our nodes from anyone
else's, but not from our earlier sessions': an ephemeral one is ours only if this session made
it, and an earlier session's is deleted (CURATOR-498). An unprotected ephemeral sequential name
tells nothing: a node of ours is one this session made that no other keeper of the client has
claimed (the client's claims).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from kazoo.exceptions import ConnectionClosedError, KazooException, NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.modes import CreateMode
from .._protocol.requests import DeleteNode, ListChildren, NodeExists
from .._protocol.steps import OweDelete, SessionId, Steps
from .._protocol.waits import sent_steps

#: A sequential node's suffix: ZooKeeper's ``%010d`` of the parent's counter.
_SEQUENCE = re.compile(r"[0-9]{10}|-[0-9]{9,10}")


def parent_of(path: str) -> str:
    """The parent of an absolute path (``/`` for a node at the root)."""
    return path.rsplit("/", 1)[0] or "/"


def sequenced(child: str, name: str) -> bool:
    """Whether ``child`` is ``name`` and a sequence number: a sequential create of ``name``."""
    return child.startswith(name) and _SEQUENCE.fullmatch(child[len(name) :]) is not None


def adoptable_steps(path: str, by_session: bool, deadline: Deadline) -> Steps[bool]:
    """A node exists at ``path`` where we create ours: whether we take it as ours (Curator adopts
    it). ``by_session`` (a protected ephemeral name): only if this session made it; an earlier
    session's is deleted, to be made again (False)."""
    if not by_session:
        return True
    stat = yield from sent_steps(NodeExists(path), deadline)
    if stat is None:
        return False  # gone meanwhile: created again
    if stat.ephemeralOwner == (yield SessionId()):
        return True
    with contextlib.suppress(KazooException):  # gone, or changed: the next create says which
        yield from sent_steps(DeleteNode(path, stat.version), deadline)
    return False


def lost_node_steps(
    path: str,
    protected_id: str | None,
    mode: CreateMode,
    claims: dict[str, object] | None,
    claimant: object,
    deadline: Deadline,
) -> Steps[str | None]:
    """Our node from a first create of ``path`` (in ``mode``) whose answer was lost, if the
    server made it: under our protected name (an ephemeral one only if this session made it, an
    earlier session's deleted), or, with ``claims`` (an unprotected ephemeral sequential name),
    one of this session's that nobody claims, claimed for ``claimant``. None when there is none."""
    parent, name = parent_of(path), wire.node_name(path)
    try:
        children: list[str] = yield from sent_steps(ListChildren(parent), deadline)
    except NoNodeError:
        return None
    session = yield SessionId()
    prefix = wire.protected_prefix(protected_id) if protected_id is not None else None
    for child in sorted(children):
        found = wire.join_path(parent, child)
        if prefix is not None and not child.startswith(prefix):
            continue
        if claims is not None and (not sequenced(child, name) or found in claims):
            continue
        stat: Any = yield from sent_steps(NodeExists(found), deadline)
        if stat is None:
            continue
        if not mode.is_ephemeral or stat.ephemeralOwner == session:
            if claims is not None:
                claims[found] = claimant
            return found
        if prefix is not None:
            yield OweDelete(found)  # an earlier session's, under our name
    return None


def orphans_steps(path: str, protected_id: str) -> Steps[None]:
    """Delete, in the background, any node a lost create of ``path`` under our protected name
    made."""
    parent = parent_of(path)
    prefix = wire.protected_prefix(protected_id)
    try:
        children: list[str] = yield from sent_steps(ListChildren(parent))
    except (NoNodeError, ConnectionClosedError):
        return
    except KazooException:
        return  # nothing more to be done than a session's end would do
    for child in children:
        if child.startswith(prefix):
            yield OweDelete(wire.join_path(parent, child))


__all__ = ["adoptable_steps", "lost_node_steps", "orphans_steps", "parent_of", "sequenced"]
