"""Apache Curator's ZooKeeper lock recipes for Python, wire-compatible with Java Curator."""

from __future__ import annotations

from ._errors import LockLostError, LockNotOwnedError, LockTimeout, PyCuratorError
from ._mutex import InterProcessMutex
from ._revocation import attempt_revoke

__all__ = [
    "InterProcessMutex",
    "LockLostError",
    "LockNotOwnedError",
    "LockTimeout",
    "PyCuratorError",
    "attempt_revoke",
]
