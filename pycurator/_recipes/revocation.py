"""Curator's ``Revoker``: ask the holder of a revocable lock to release it, as steps
(:mod:`pycurator._protocol.steps`); :func:`pycurator.attempt_revoke` runs them blocking."""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.errors import NotALockNodeError
from .._protocol.paths import validate_path
from .._protocol.requests import NodeExists, SetData
from .._protocol.steps import Await, Send, Steps


def revoke_steps(node_path: str, deadline: Deadline | None = None) -> Steps[None]:
    """Write Curator's revocation message to a lock node, as steps (see
    :func:`pycurator.attempt_revoke`); ``deadline``: for each answer (none by default: kazoo's
    own errors end a wait)."""
    validate_path(node_path)
    name = wire.node_name(node_path)
    if not wire.is_lock_node_name(name):
        raise NotALockNodeError(
            node_path, f"{name!r} is not named like a Curator lock or lease node"
        )
    deadline = deadline or Deadline(None)
    stat = yield Await((yield Send(NodeExists(node_path))), deadline)
    if stat is None:
        return
    if not stat.ephemeralOwner:
        raise NotALockNodeError(node_path, "it is a persistent node; lock nodes are ephemeral")
    created = stat.czxid
    while True:
        try:
            write = SetData(node_path, wire.REVOKE_MESSAGE, stat.version)
            yield Await((yield Send(write)), deadline)
            return
        except NoNodeError:
            return
        except BadVersionError:
            # Someone wrote to it (another revoker, say): write again if it is the same node.
            stat = yield Await((yield Send(NodeExists(node_path))), deadline)
            if stat is None:
                return
            if stat.czxid != created:
                raise NotALockNodeError(
                    node_path, "it was replaced while it was checked; nothing was written"
                ) from None


__all__ = ["revoke_steps"]
