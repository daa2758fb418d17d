"""Curator's ``Revoker``: ask the holder of a revocable lock to release it."""

from __future__ import annotations

import contextlib

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from . import _wire
from ._paths import validate_path


def attempt_revoke(client: KazooClient, node_path: str) -> None:
    """Write Curator's revocation message to a lock node; a node already gone is ignored.

    Only a holder that made its lock revocable reacts, by running its listener.
    """
    validate_path(node_path)
    with contextlib.suppress(NoNodeError):
        client.set(node_path, _wire.REVOKE_MESSAGE)
