"""Apache Curator's ZooKeeper recipes for Python, wire-compatible with Java Curator."""

from __future__ import annotations

from . import aio as aio  # the asyncio forms of the recipes
from ._client.lock_listeners import add_lock_listener, remove_lock_listener
from ._connect import TLSOptions, connect, reconnecting_retry
from ._cores.cache_listeners import (
    CuratorCacheListener,
    CuratorCacheListenerBuilder,
    PathChildrenCacheEvent,
    TreeCacheEvent,
)
from ._protocol.cache import CacheEvent, CacheEventType, CacheOption, ChildData
from ._protocol.errors import (
    CompressedDataError,
    ConnectTimeout,
    CorruptedDataError,
    IllegalTrySetVersionError,
    LockLostError,
    LockNotOwnedError,
    LockReleaseError,
    LockTimeout,
    NotALockNodeError,
    PyCuratorError,
    ServerFeatureError,
    UnknownOutcomeError,
)
from ._protocol.events import LockEvent, LockEventKind, LockListener
from ._protocol.modes import CreateMode
from ._recipes.hold_monitor import ConnectionPolicy
from ._threads.atomic import (
    AtomicStats,
    AtomicValue,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    PromotedToLock,
)
from ._threads.barriers import DistributedBarrier, DistributedDoubleBarrier
from ._threads.cache import CuratorCache
from ._threads.group import GroupMember
from ._threads.latch import CloseMode, LeaderLatch, LeaderLatchListener, Participant
from ._threads.multilock import InterProcessMultiLock
from ._threads.mutex import InterProcessMutex
from ._threads.persistent_node import PersistentNode, PersistentTtlNode
from ._threads.revocation import attempt_revoke
from ._threads.rwlock import InterProcessReadWriteLock
from ._threads.selector import LeaderSelector, Leadership
from ._threads.semaphore import InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease
from ._threads.shared import SharedCount, SharedValue, VersionedValue

#: The release, read by the packaging metadata too (its one source).
__version__ = "0.1.0"

__all__ = [
    "AtomicStats",
    "AtomicValue",
    "CacheEvent",
    "CacheEventType",
    "CacheOption",
    "ChildData",
    "CloseMode",
    "CompressedDataError",
    "ConnectTimeout",
    "ConnectionPolicy",
    "CorruptedDataError",
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
    "IllegalTrySetVersionError",
    "InterProcessMultiLock",
    "InterProcessMutex",
    "InterProcessReadWriteLock",
    "InterProcessSemaphoreMutex",
    "InterProcessSemaphoreV2",
    "LeaderLatch",
    "LeaderLatchListener",
    "LeaderSelector",
    "Leadership",
    "Lease",
    "LockEvent",
    "LockEventKind",
    "LockListener",
    "LockLostError",
    "LockNotOwnedError",
    "LockReleaseError",
    "LockTimeout",
    "NotALockNodeError",
    "Participant",
    "PathChildrenCacheEvent",
    "PersistentNode",
    "PersistentTtlNode",
    "PromotedToLock",
    "PyCuratorError",
    "ServerFeatureError",
    "SharedCount",
    "SharedValue",
    "TLSOptions",
    "TreeCacheEvent",
    "UnknownOutcomeError",
    "VersionedValue",
    "add_lock_listener",
    "attempt_revoke",
    "connect",
    "reconnecting_retry",
    "remove_lock_listener",
]
