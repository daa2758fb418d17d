"""A group member's core, held by both front ends (``pycurator.GroupMember`` and
``pycurator.aio.GroupMember``): Curator's ``GroupMember``, an ephemeral node
``membership_path/this_id`` kept as a ``PersistentNode`` keeps it, and a cache of the group
(:mod:`pycurator._cores.cache`) that says who the members are.

:class:`GroupCore` checks the arguments (a member id that is not a node name is refused by
name, before anything is sent) and makes the two cores a front end runs; the face reads the
members from the cache, as Curator's ``getCurrentMembers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._protocol import wire
from .._protocol.modes import CreateMode
from .._protocol.paths import validate_path
from .._protocol.transport import Transport
from .cache import CacheCore
from .persistent_node import PersistentNodeCore, checked_data

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def check_member_id(this_id: object) -> str:
    """``this_id`` if it names one node below the group's path; TypeError or ValueError
    naming the member id otherwise (empty, with ``/``, ``.`` or ``..``, a character ZooKeeper
    refuses)."""
    if not isinstance(this_id, str):
        raise TypeError(f"this_id must be a str, not {type(this_id).__name__}")
    if not this_id:
        raise ValueError("member id must not be empty")
    if "/" in this_id:
        raise ValueError(f"member id must not hold '/': {this_id!r} would name a node below it")
    try:
        validate_path("/" + this_id)
    except ValueError as exc:
        raise ValueError(f"member id {this_id!r} is not a node name: {exc}") from None
    return this_id


class GroupCore:
    """One member of the group at ``membership_path``: its node (EPHEMERAL, not protected,
    ``payload`` as data, or the host's address as Curator writes it by default) and the cache
    of the group's path. Everything here returns at once."""

    def __init__(
        self, transport: Transport, membership_path: str, this_id: str, payload: bytes | None
    ) -> None:
        validate_path(membership_path)
        self.this_id = check_member_id(this_id)
        path = wire.join_path(membership_path, this_id)
        data = transport.node_data() if payload is None else checked_data(payload, path, "payload")
        self.membership_path = membership_path
        self.node = PersistentNodeCore(transport, path, CreateMode.EPHEMERAL, data, False)
        self.cache = CacheCore(transport, membership_path, None, None)

    def current_members(self) -> dict[str, bytes]:
        """Each member's id and data, as the cache holds them (the direct children of the
        group's path), in id order; this member always, with its data, as Curator's."""
        members: dict[str, bytes] = {}
        group = self.membership_path
        for node in self.cache.nodes():
            parent, _, name = node.path.rpartition("/")
            if (parent or "/") == group and node.path != group:
                members[name] = node.data or b""
        members.setdefault(self.this_id, self.node.get_data())
        return dict(sorted(members.items()))


class GroupMemberFace:
    """A group member over a :class:`GroupCore`: what it reads there alone."""

    _core: GroupCore

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return self._core.node.client

    @property
    def membership_path(self) -> str:
        """The group's path, as given."""
        return self._core.membership_path

    @property
    def this_id(self) -> str:
        """This member's id, as given."""
        return self._core.this_id

    def get_current_members(self) -> dict[str, bytes]:
        """Every member's id and payload, as the group's cache holds them now (no request),
        this member's always included, as Curator's ``getCurrentMembers``."""
        return self._core.current_members()

    def id_from_path(self, path: str) -> str:
        """The member id a member node's full path names (its last segment); ValueError
        naming ``path`` when it is no path (Curator validates it too)."""
        return wire.node_name(validate_path(path))

    def set_this_data(self, data: bytes) -> None:
        """Keep this member's node with ``data`` (written in the background, again after each
        recreate); RuntimeError once closed."""
        self._core.node.set_data(data)


__all__ = ["GroupCore", "GroupMemberFace", "check_member_id"]
