"""pycurator's recipes for asyncio: the same nodes, queues and rules as the threaded recipes
and Java Curator, awaited instead of blocked on.

``client`` is a started kazoo ``KazooClient`` (threading handler), which may serve threaded
code at the same time. Locks are owned per asyncio task. Waiting tasks cost no thread: kazoo's
answers and watches reach the loop through ``loop.call_soon_threadsafe``. A task cancelled
while it waits leaves no node and no watch behind; one cancelled inside ``async with lock:``
releases the lock; ``CancelledError`` always propagates.
"""

from __future__ import annotations

from .._cores.cache_listeners import (
    CuratorCacheListener,
    CuratorCacheListenerBuilder,
    PathChildrenCacheEvent,
    TreeCacheEvent,
)
from .._cores.latch import CloseMode
from .._protocol.cache import CacheEvent, CacheEventType, CacheOption, ChildData
from .._protocol.modes import CreateMode
from .._recipes.atomic import AtomicStats, AtomicValue, PromotedToLock
from .._recipes.participants import Participant
from .._recipes.shared_value import VersionedValue
from ._atomic import DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicValue
from ._barriers import DistributedBarrier, DistributedDoubleBarrier
from ._cache import CuratorCache
from ._group import GroupMember
from ._latch import LeaderLatch
from ._multilock import InterProcessMultiLock
from ._mutex import InterProcessMutex
from ._persistent_node import PersistentNode, PersistentTtlNode
from ._runner import commit
from ._rwlock import InterProcessReadWriteLock, ReadLock, WriteLock
from ._selector import LeaderSelector, Leadership
from ._semaphore import InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease
from ._shared import SharedCount, SharedValue

__all__ = [
    "AtomicStats",
    "AtomicValue",
    "CacheEvent",
    "CacheEventType",
    "CacheOption",
    "ChildData",
    "CloseMode",
    "CreateMode",
    "CuratorCache",
    "CuratorCacheListener",
    "CuratorCacheListenerBuilder",
    "DistributedAtomicInteger",
    "DistributedAtomicLong",
    "DistributedAtomicValue",
    "DistributedBarrier",
    "DistributedDoubleBarrier",
    "GroupMember",
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
    "PathChildrenCacheEvent",
    "PersistentNode",
    "PersistentTtlNode",
    "PromotedToLock",
    "ReadLock",
    "SharedCount",
    "SharedValue",
    "TreeCacheEvent",
    "VersionedValue",
    "WriteLock",
    "commit",
]
