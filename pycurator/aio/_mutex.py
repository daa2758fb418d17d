"""The asyncio ``InterProcessMutex``: Curator's re-entrant, fair mutex, owned per task."""

from __future__ import annotations

from .._cores.constructors import MutexConstructor
from ._lock import AsyncReentrantLock


class InterProcessMutex(MutexConstructor, AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.InterProcessMutex`: the same nodes, queue and
    rules, shared with Java Curator and threaded pycurator; re-entrant per task."""


__all__ = ["InterProcessMutex"]
