"""The protocols of ZooKeeper's own recipes over pycurator's engines (their rules are
:mod:`pycurator._protocol.zkrecipes`): the engine of a ``WriteLock``, and how a
``LeaderElectionSupport`` reads its leader; the election itself is
:mod:`pycurator._recipes.election`'s, composed into a core by :mod:`pycurator._cores.zkrecipes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.paths import validate_path
from .._protocol.requests import GetData
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._protocol.waits import read_sent_steps
from .._protocol.zkrecipes import WRITE_LOCK_DRIVER, WRITE_LOCK_NAMING
from .lock_engine import LockEngine


def write_lock_engine(transport: Transport, dir: str, acl: Sequence[Any] | None) -> LockEngine:
    """The engine of a ``WriteLock`` on ``dir``, after checking the arguments: shared by the
    threaded and the asyncio lock."""
    validate_path(dir)
    return LockEngine(
        transport,
        dir,
        WRITE_LOCK_DRIVER,
        data=wire.ZK_WRITE_LOCK_DATA,
        acl=acl,
        naming=WRITE_LOCK_NAMING,
    )


def leader_steps(engine: LockEngine) -> Steps[str | None]:
    """``getLeaderHostName``: the data of the first offer still there, as UTF-8 text, or None
    when there is no offer. Reads that ride through a reconnect, within the client's session
    timeout."""
    deadline = Deadline(engine.transport.session_timeout())
    names = yield from engine.sorted_children_steps(deadline)
    for name in names:
        path = wire.join_path(engine.base_path, name)
        try:
            data, _ = yield from read_sent_steps(GetData(path), deadline)
        except NoNodeError:
            continue  # gone since the listing: the next offer leads
        return bytes(data or b"").decode("utf-8", "replace")
    return None


__all__ = ["leader_steps", "write_lock_engine"]
