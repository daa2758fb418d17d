"""Whether a path is a node kept by a ``PersistentTtlNode``, and when it expires, read from the
tree as steps (the rule is :mod:`pycurator._protocol.ttl`'s): ``pycurator inspect`` tells it."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.requests import ListChildren, NodeExists
from .._protocol.steps import Steps
from .._protocol.ttl import TtlExpiry, ttl_expiry
from .._protocol.waits import read_sent_steps


def ttl_node_steps(path: str, deadline: Deadline) -> Steps[TtlExpiry | None]:
    """What the ``touch`` child of ``path`` tells of its expiry (see
    :func:`~pycurator._protocol.ttl.ttl_expiry`); None when ``path`` has no such child (it is no
    node a ``PersistentTtlNode`` keeps, or it is gone). Reads ride through a reconnect, within
    ``deadline``."""
    try:
        children = yield from read_sent_steps(ListChildren(path), deadline)
    except NoNodeError:
        return None
    if wire.TTL_TOUCH_NAME not in children:
        return None
    touch = wire.join_path(path, wire.TTL_TOUCH_NAME)
    stat = yield from read_sent_steps(NodeExists(touch), deadline)
    if stat is None:
        return None
    return ttl_expiry(stat.ctime, stat.mtime, stat.version)


__all__ = ["ttl_node_steps"]
