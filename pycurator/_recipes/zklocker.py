"""ZkLocker's engine, which both front ends compose."""

from __future__ import annotations

from kazoo.security import OPEN_ACL_UNSAFE

from .._protocol import zklocker
from .._protocol.paths import validate_path
from .._protocol.transport import Transport
from .lock_engine import LockEngine


def zklocker_engine(transport: Transport, parent: str, key: str | None) -> LockEngine:
    """The engine of a ZkLocker named ``key`` under ``parent``, after checking every argument:
    shared by the threaded and the asyncio ZkLocker."""
    validate_path(parent)
    if parent == "/":
        raise ValueError("parent must not be '/': ZkLocker's nodes go under a parent of their own")
    key = zklocker.check_key(key)
    return LockEngine(
        transport,
        parent,
        zklocker.ZkLockerDriver(key),
        acl=OPEN_ACL_UNSAFE,
        naming=zklocker.naming(key),
        null_data=True,
    )


__all__ = ["zklocker_engine"]
