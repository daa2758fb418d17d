"""ZooKeeper's enumerations a request carries: the modes a node is created in, the modes of a
watch that stays, the kinds of watch ``removeWatches`` drops; each valued as the request sends
it. The requests (:mod:`pycurator._protocol.requests`) carry them, and the recipes' cores and
front ends take them from users."""

from __future__ import annotations

import enum


class CreateMode(enum.IntEnum):
    """ZooKeeper's ``CreateMode``, its seven modes valued as its create request's flags. A
    CONTAINER node is sent as ZooKeeper's ``createContainer``, and a TTL mode as its
    ``createTTL``, with the node's time to live."""

    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3
    CONTAINER = 4
    PERSISTENT_WITH_TTL = 5
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6

    @property
    def is_ttl(self) -> bool:
        """Whether the node has a time to live."""
        return self >= CreateMode.PERSISTENT_WITH_TTL

    @property
    def is_ephemeral(self) -> bool:
        """Whether the node ends with the session that made it."""
        return self in (CreateMode.EPHEMERAL, CreateMode.EPHEMERAL_SEQUENTIAL)

    @property
    def is_sequential(self) -> bool:
        """Whether the server appends a sequence number to the node's name."""
        return self in _SEQUENTIAL

    @property
    def unsequenced(self) -> CreateMode:
        """The mode that makes the same kind of node under a name given whole: this mode less
        its sequence number (itself when it has none)."""
        return _UNSEQUENCED.get(self, self)


_SEQUENTIAL = frozenset(
    {
        CreateMode.PERSISTENT_SEQUENTIAL,
        CreateMode.EPHEMERAL_SEQUENTIAL,
        CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL,
    }
)
_UNSEQUENCED = {
    CreateMode.PERSISTENT_SEQUENTIAL: CreateMode.PERSISTENT,
    CreateMode.EPHEMERAL_SEQUENTIAL: CreateMode.EPHEMERAL,
    CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL: CreateMode.PERSISTENT_WITH_TTL,
}


class AddWatchMode(enum.IntEnum):
    """ZooKeeper's ``AddWatchMode``, valued as an ``addWatch`` request sends it."""

    #: the node's own events: its creation, deletion, data and children changes
    PERSISTENT = 0
    #: the creation, deletion and data changes of the node and of every node below it (no
    #: children changes: a child's creation or deletion is told as its own)
    PERSISTENT_RECURSIVE = 1

    @property
    def watcher_type(self) -> WatcherType:
        """The :class:`WatcherType` that removes a watch of this mode."""
        if self is AddWatchMode.PERSISTENT:
            return WatcherType.PERSISTENT
        return WatcherType.PERSISTENT_RECURSIVE


class WatcherType(enum.IntEnum):
    """ZooKeeper's ``Watcher.WatcherType``, valued as a ``removeWatches`` request sends it."""

    CHILDREN = 1
    DATA = 2
    ANY = 3
    PERSISTENT = 4
    PERSISTENT_RECURSIVE = 5


__all__ = ["AddWatchMode", "CreateMode", "WatcherType"]
