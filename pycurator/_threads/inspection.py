"""Who holds and who waits on a lock path, read from the tree, blocking (its steps:
:func:`pycurator._recipes.inspection.inspect_lock_steps`)."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._recipes.inspection import LockView, inspect_lock_steps
from .runner import run


def inspect_lock(
    client: KazooClient, path: str, permits: int | None = None, layout: str | None = None
) -> LockView:
    """The holders and waiters on ``path``, whatever recipe made them (see
    :func:`~pycurator._recipes.inspection.inspect_lock_steps`), blocking the calling thread."""
    return run(transport_of(client), inspect_lock_steps(path, permits, layout))


__all__ = ["inspect_lock"]
