"""``attempt_revoke``: Curator's ``Revoker``, blocking (its steps:
:func:`pycurator._recipes.revocation.revoke_steps`)."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._recipes.revocation import revoke_steps
from .runner import run


def attempt_revoke(client: KazooClient, node_path: str) -> None:
    """Write Curator's revocation message to a lock node; a node already gone is ignored.

    Only a holder that made its lock revocable reacts, by running its listener. The node must
    be named like a Curator lock or lease node (checked before any request) and be ephemeral,
    else :class:`NotALockNodeError` is raised and nothing is written. The write is conditional
    on the version read, so a node replaced in between is left alone.
    """
    run(transport_of(client), revoke_steps(node_path))


__all__ = ["attempt_revoke"]
