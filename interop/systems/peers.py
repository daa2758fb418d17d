"""The four lock systems the handler and asyncio modules hand over across languages: each
one's Java peer, and where its lock lives (ZkLocker's Java parent is always ``/parent``)."""

from __future__ import annotations

from typing import Any

from pycurator.testing import JavaSystems

SYSTEMS = ("zookeeper write lock", "menagerie lock", "menagerie write lock", "zklocker")


def java_peer(system: str, java: JavaSystems, path: str, key: str) -> Any:
    """``system``'s Java peer on ``path`` (a ZkLocker peer takes ``key`` under ``/parent``)."""
    if system == "zookeeper write lock":
        return java.write_lock(path)
    if system == "menagerie lock":
        return java.reentrant_lock(path)
    if system == "menagerie write lock":
        return java.read_write_lock(path).write_lock()
    assert system == "zklocker", system
    return java.zk_locker(key)


def lock_path(system: str, zk_path: str) -> str:
    """Where ``system``'s lock of a test lives."""
    return "/parent" if system == "zklocker" else f"{zk_path}/lock"
