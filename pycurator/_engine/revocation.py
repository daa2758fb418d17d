"""Curator's ``Revoker``: ask the holder of a revocable lock to release it."""

from __future__ import annotations

import re

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from .._protocol import wire
from .._protocol.errors import NotALockNodeError
from .._protocol.paths import validate_path

# What a lock, read/write lock or lease node is called once the protection prefix is stripped:
# a token and the server's sequence suffix (``%010d``: ten digits, or a sign and nine or more).
_LOCK_NODE_NAME = re.compile(
    "(?:{})(?:[0-9]{{10}}|-[0-9]{{9,10}})".format(
        "|".join(
            re.escape(token)
            for token in (
                wire.LOCK_NAME,
                wire.READ_LOCK_NAME,
                wire.WRITE_LOCK_NAME,
                wire.LEASE_NAME,
            )
        )
    )
)


def is_lock_node_name(name: str) -> bool:
    """Whether ``name`` (one path segment) is named like a node a Curator lock recipe creates:
    ``[_c_<uuid>-]lock-<seq>``, ``__READ__<seq>``, ``__WRIT__<seq>`` or ``lease-<seq>``."""
    return _LOCK_NODE_NAME.fullmatch(wire.strip_protection(name)) is not None


def attempt_revoke(client: KazooClient, node_path: str) -> None:
    """Write Curator's revocation message to a lock node; a node already gone is ignored.

    Only a holder that made its lock revocable reacts, by running its listener. The node must
    be named like a Curator lock or lease node (checked before any request) and be ephemeral,
    else :class:`NotALockNodeError` is raised and nothing is written. The write is conditional
    on the version read, so a node replaced in between is left alone.
    """
    validate_path(node_path)
    name = wire.node_name(node_path)
    if not is_lock_node_name(name):
        raise NotALockNodeError(
            node_path, f"{name!r} is not named like a Curator lock or lease node"
        )
    stat = client.exists(node_path)
    if stat is None:
        return
    if not stat.ephemeralOwner:
        raise NotALockNodeError(node_path, "it is a persistent node; lock nodes are ephemeral")
    created = stat.czxid
    while True:
        try:
            client.set(node_path, wire.REVOKE_MESSAGE, version=stat.version)
            return
        except NoNodeError:
            return
        except BadVersionError:
            # Someone wrote to it (another revoker, say): write again if it is the same node.
            stat = client.exists(node_path)
            if stat is None:
                return
            if stat.czxid != created:
                raise NotALockNodeError(
                    node_path, "it was replaced while it was checked; nothing was written"
                ) from None
