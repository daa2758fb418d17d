"""pycurator's recipes for asyncio: the same nodes, queues and rules as the threaded recipes
and Java Curator, awaited instead of blocked on.

``client`` is a started kazoo ``KazooClient`` (threading handler), which may serve threaded
code at the same time. Locks are owned per asyncio task. Waiting tasks cost no thread: kazoo's
answers and watches reach the loop through ``loop.call_soon_threadsafe``. A task cancelled
while it waits leaves no node and no watch behind; one cancelled inside ``async with lock:``
releases the lock; ``CancelledError`` always propagates.
"""

from __future__ import annotations

from .._engine.election import CloseMode, Participant
from ._leader import LeaderLatch
from ._lock import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    ReadLock,
    WriteLock,
)
from ._runner import commit
from ._selector import LeaderSelector, Leadership
from ._semaphore import InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease

__all__ = [
    "CloseMode",
    "InterProcessMultiLock",
    "InterProcessMutex",
    "InterProcessReadWriteLock",
    "InterProcessSemaphoreMutex",
    "InterProcessSemaphoreV2",
    "LeaderLatch",
    "LeaderSelector",
    "Leadership",
    "Lease",
    "Participant",
    "ReadLock",
    "WriteLock",
    "commit",
]
