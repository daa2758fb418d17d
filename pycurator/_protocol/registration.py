"""curator-x-discovery's registration rules, pure: where an instance's node goes and in which
mode (Curator's ``ServiceDiscoveryImpl``), how ZooKeeper names a sequential instance's node,
and whether a node the tree holds is the one a registration made.

An instance of service ``name`` with id ``id`` is the node ``base/name/id``: EPHEMERAL for
``DYNAMIC``, EPHEMERAL_SEQUENTIAL for ``DYNAMIC_SEQUENTIAL`` (the server appends ten digits to
``id``), PERSISTENT for ``STATIC`` and ``PERMANENT``; missing parents are containers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import wire
from .discovery import ServiceInstance, ServiceType
from .errors import InvalidServiceInstance
from .paths import validate_path
from .requests import CreateMode

#: The mode of each type's node (Curator's ``internalRegisterService``).
NODE_MODES = {
    ServiceType.DYNAMIC: CreateMode.EPHEMERAL,
    ServiceType.DYNAMIC_SEQUENTIAL: CreateMode.EPHEMERAL_SEQUENTIAL,
    ServiceType.STATIC: CreateMode.PERSISTENT,
    ServiceType.PERMANENT: CreateMode.PERSISTENT,
}
#: The suffix ZooKeeper appends to a sequential node's name: its parent's counter as ``%010d``
#: (negative once the counter has wrapped).
_SEQUENCE = re.compile(r"\d{10}|-\d{9}")


def node_mode(service_type: ServiceType) -> CreateMode:
    """The mode of the node of an instance of ``service_type``."""
    return NODE_MODES[service_type]


def check_segment(what: str, value: object) -> str:
    """``value`` if it can be one node of ``base/name/id``; TypeError, or ValueError naming
    ``what`` (``service name``, ``instance id``), otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    if "/" in value:
        raise ValueError(f"{what} {value!r} contains '/': it is one node of the path base/name/id")
    try:
        validate_path("/" + value)
    except ValueError as exc:
        raise ValueError(f"{what} {value!r} is not a ZooKeeper node name ({exc})") from None
    return value


def check_registrable(instance: object) -> ServiceInstance:
    """``instance`` if Curator would register it: a :class:`ServiceInstance` whose name and id
    are node names (one read from a node skipped the checks a new one gets);
    :class:`InvalidServiceInstance` naming the field otherwise."""
    if not isinstance(instance, ServiceInstance):
        raise TypeError(f"expected a ServiceInstance, not {type(instance).__name__}")
    for field in ("name", "id"):
        try:
            check_segment(field, getattr(instance, field))
        except (TypeError, ValueError) as exc:
            raise InvalidServiceInstance(field, getattr(instance, field), str(exc)) from None
    for field in ("port", "ssl_port"):
        port = getattr(instance, field)
        if port is not None and not 0 <= port <= 65535:
            raise InvalidServiceInstance(field, port, "outside 0-65535")
    return instance


def service_path(base_path: str, name: str) -> str:
    """The parent of the nodes of service ``name`` (Curator's ``pathForName``)."""
    return wire.join_path(base_path, check_segment("service name", name))


def instance_path(base_path: str, name: str, instance_id: str) -> str:
    """The node of instance ``instance_id`` of ``name`` (Curator's ``pathForInstance``); a
    sequential instance's node has ten digits more."""
    return node_path(
        base_path, check_segment("service name", name), check_segment("instance id", instance_id)
    )


def node_path(base_path: str, name: str, instance_id: str) -> str:
    """:func:`instance_path` of a name and id already checked (those of a registrable
    instance, :func:`check_registrable`)."""
    return wire.join_path(wire.join_path(base_path, name), instance_id)


def sequential_nodes(children: Iterable[str], instance_id: str) -> list[str]:
    """The names among ``children`` that ZooKeeper may have given a sequential node created as
    ``instance_id``: that id and a sequence suffix, in the order of their suffixes."""
    size = len(instance_id)
    found = [
        name
        for name in children
        if name.startswith(instance_id) and _SEQUENCE.fullmatch(name[size:]) is not None
    ]
    return sorted(found, key=lambda name: int(name[size:]))


def instance_keys(base_path: str, path: str) -> list[tuple[str, str]]:
    """The (service name, instance id) an instance node at ``path`` under ``base_path`` may
    be: its own name, and, for a name that ends in a sequence suffix, the name before it."""
    prefix = base_path.rstrip("/") + "/"
    if not path.startswith(prefix):
        return []
    parts = path[len(prefix) :].split("/")
    if len(parts) != 2:
        return []
    name, node = parts
    keys = [(name, node)]
    if len(node) > 10 and _SEQUENCE.fullmatch(node[-10:]) is not None:
        keys.append((name, node[:-10]))
    return keys


@dataclass(frozen=True)
class NodeRecord:
    """A node a registration made, as it made it: its path (a sequential one's as the server
    named it), its mode, the session of an ephemeral node (None for a persistent one), the data
    version and data it last wrote, and the instance that data is."""

    path: str
    mode: CreateMode
    session: int | None
    version: int
    data: bytes
    instance: ServiceInstance

    def outlived(self, session: int | None) -> bool:
        """Whether the node went with an ended session: ephemeral, and of another session than
        ``session`` (the client's now, None when it has none)."""
        return self.session is not None and self.session != session

    def written(self, version: int, data: bytes, instance: ServiceInstance) -> NodeRecord:
        """This record once ``data`` (``instance``) is written at data version ``version``."""
        return NodeRecord(self.path, self.mode, self.session, version, data, instance)


def is_mine(stat: Any, mode: CreateMode, session: int | None) -> bool:
    """Whether the node whose stat is ``stat`` can be kept as the node of ``mode`` a
    registration wants at its path: an ephemeral node of our own session (a create whose answer
    was lost), or, for a persistent node, any persistent node (it holds the instance at that
    path, and takes our data)."""
    owner = stat.ephemeralOwner
    if mode.is_ephemeral:
        return bool(owner) and owner == session
    return not owner


__all__ = [
    "NODE_MODES",
    "NodeRecord",
    "check_registrable",
    "check_segment",
    "instance_keys",
    "instance_path",
    "is_mine",
    "node_mode",
    "node_path",
    "sequential_nodes",
    "service_path",
]
