"""The engine of ZooKeeper's ``WriteLock`` and the election core of its
``LeaderElectionSupport`` (their rules are :mod:`pycurator._protocol.zkrecipes`), which both front
ends compose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from .._client import kazoo_internals
from .._client.transport import check_client_type
from .._engine.locks import LockEngine
from .._engine.participants import CloseMode
from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.ops import GetData
from .._protocol.paths import validate_path
from .._protocol.steps import Steps
from .._protocol.waits import read_sent_steps
from .._protocol.zkrecipes import (
    ELECTION_DRIVER,
    ELECTION_NAMING,
    WRITE_LOCK_DRIVER,
    WRITE_LOCK_NAMING,
    check_host_name,
)
from .latch import LatchCore


def write_lock_engine(client: KazooClient, dir: str, acl: Sequence[Any] | None) -> LockEngine:
    """The engine of a ``WriteLock`` on ``dir``, after checking the arguments: shared by the
    threaded and the asyncio lock."""
    validate_path(dir)
    check_client_type(client)
    return LockEngine(
        client,
        dir,
        WRITE_LOCK_DRIVER,
        data=wire.ZK_WRITE_LOCK_DATA,
        acl=acl,
        naming=WRITE_LOCK_NAMING,
    )


def election_core(client: KazooClient, root: str, host_name: str) -> LatchCore:
    """The core of a ``LeaderElectionSupport`` participant: a latch core whose offers are
    ``ROOT/n_<seq>`` holding ``host_name`` (UTF-8): shared by both front ends."""
    return LatchCore(
        client,
        root,
        check_host_name(host_name),
        CloseMode.SILENT,
        None,
        "standard",
        driver=ELECTION_DRIVER,
        naming=ELECTION_NAMING,
    )


def leader_steps(engine: LockEngine) -> Steps[str | None]:
    """``getLeaderHostName``: the data of the first offer still there, as UTF-8 text, or None
    when there is no offer. Reads that ride through a reconnect, within the client's session
    timeout."""
    deadline = Deadline(kazoo_internals.session_timeout(engine.client))
    names = yield from engine.sorted_children_steps(deadline)
    for name in names:
        path = wire.join_path(engine.base_path, name)
        try:
            data, _ = yield from read_sent_steps(GetData(path), deadline)
        except NoNodeError:
            continue  # gone since the listing: the next offer leads
        return bytes(data or b"").decode("utf-8", "replace")
    return None


__all__ = ["election_core", "leader_steps", "write_lock_engine"]
