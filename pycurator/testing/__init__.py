"""Real ZooKeeper for tests: a local server, four-letter words, session expiry on demand, and
Java Curator through JPype (imported only when used), with an adapter per Curator recipe that
has the interface of pycurator's own, a Java service discovery peer, and peers of the other
Java lock systems (ZooKeeper's recipes, menagerie, ZkLocker) behind one small interface.
``JavaWriteLock`` here is Curator's read/write lock's write side; ZooKeeper's ``WriteLock`` peer
is ``JavaZkRecipesWriteLock`` (``pycurator.testing._zkrecipes.JavaWriteLock``).

The pytest fixtures live in :mod:`pycurator.testing.pytest_plugin`, loaded automatically when the
package is installed.
"""

from __future__ import annotations

from ._curator import (
    CURATOR,
    SEED_SYSTEMS_ENV,
    add_classpath,
    classpath_curator_version,
    curator_at_least,
    curator_classpath,
    curator_client,
    curator_version,
    java_acquire,
    java_nano_time,
    jclass,
    new_curator,
    seed_systems_dir,
    session_of,
    start_jvm,
    systems_classpath,
)
from ._discovery import (
    CURATOR_DISCOVERY,
    JavaServiceCache,
    JavaServiceDiscovery,
    discovery_class,
    from_java_instance,
    from_java_payload,
    java_serializer,
    to_java_instance,
    to_java_payload,
)
from ._ensemble import ZooKeeperEnsemble
from ._expire import expire_kazoo_session, expire_session
from ._fourletter import (
    assert_no_ephemerals,
    ephemerals_by_session,
    four_letter_word,
    parse_dump,
    paths_by_session,
    split_hosts,
)
from ._helpers import (
    SOON,
    STEADY_RECONNECT,
    ClientFactory,
    CuratorFactory,
    children,
    eventually,
)
from ._java import (
    CURATOR_LEADER,
    CURATOR_LOCKS,
    JavaLatch,
    JavaLease,
    JavaMultiLock,
    JavaMutex,
    JavaReadLock,
    JavaReadWriteLock,
    JavaSelector,
    JavaSemaphore,
    JavaSemaphoreMutex,
    JavaWriteLock,
    java_revocation_listener,
    leader_class,
    lock_class,
    own_node,
)
from ._java_barriers import JavaDistributedBarrier, JavaDistributedDoubleBarrier
from ._java_calls import PeerClosedError, java_local_address
from ._java_counters import (
    JavaAtomicStats,
    JavaAtomicValue,
    JavaDistributedAtomicInteger,
    JavaDistributedAtomicLong,
    JavaDistributedAtomicValue,
    JavaPromotedToLock,
    JavaSharedCount,
    JavaSharedValue,
    JavaVersionedValue,
    java_retry_policy,
)
from ._java_nodes import (
    CacheEvent,
    JavaChildData,
    JavaCuratorCache,
    JavaGroupMember,
    JavaPersistentNode,
    JavaPersistentTtlNode,
)
from ._proxy import FaultProxy
from ._server import ZooKeeperServer, ZooKeeperServerError, free_port, free_ports
from ._systems import (
    JavaReentrantZkLock,
    JavaReentrantZkReadWriteLock,
    JavaSystems,
    JavaZkLocker,
    JavaZkSemaphore,
)
from ._txnlog import Creation, created_modes, creations
from ._worker import Event, WorkerProcess, emit
from ._zkrecipes import JavaLeaderElection
from ._zkrecipes import JavaWriteLock as JavaZkRecipesWriteLock

__all__ = [
    "CURATOR",
    "CURATOR_DISCOVERY",
    "CURATOR_LEADER",
    "CURATOR_LOCKS",
    "SEED_SYSTEMS_ENV",
    "SOON",
    "STEADY_RECONNECT",
    "CacheEvent",
    "ClientFactory",
    "Creation",
    "CuratorFactory",
    "Event",
    "FaultProxy",
    "JavaAtomicStats",
    "JavaAtomicValue",
    "JavaChildData",
    "JavaCuratorCache",
    "JavaDistributedAtomicInteger",
    "JavaDistributedAtomicLong",
    "JavaDistributedAtomicValue",
    "JavaDistributedBarrier",
    "JavaDistributedDoubleBarrier",
    "JavaGroupMember",
    "JavaLatch",
    "JavaLeaderElection",
    "JavaLease",
    "JavaMultiLock",
    "JavaMutex",
    "JavaPersistentNode",
    "JavaPersistentTtlNode",
    "JavaPromotedToLock",
    "JavaReadLock",
    "JavaReadWriteLock",
    "JavaReentrantZkLock",
    "JavaReentrantZkReadWriteLock",
    "JavaSelector",
    "JavaSemaphore",
    "JavaSemaphoreMutex",
    "JavaServiceCache",
    "JavaServiceDiscovery",
    "JavaSharedCount",
    "JavaSharedValue",
    "JavaSystems",
    "JavaVersionedValue",
    "JavaWriteLock",
    "JavaZkLocker",
    "JavaZkRecipesWriteLock",
    "JavaZkSemaphore",
    "PeerClosedError",
    "WorkerProcess",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
    "ZooKeeperServerError",
    "add_classpath",
    "assert_no_ephemerals",
    "children",
    "classpath_curator_version",
    "created_modes",
    "creations",
    "curator_at_least",
    "curator_classpath",
    "curator_client",
    "curator_version",
    "discovery_class",
    "emit",
    "ephemerals_by_session",
    "eventually",
    "expire_kazoo_session",
    "expire_session",
    "four_letter_word",
    "free_port",
    "free_ports",
    "from_java_instance",
    "from_java_payload",
    "java_acquire",
    "java_local_address",
    "java_nano_time",
    "java_retry_policy",
    "java_revocation_listener",
    "java_serializer",
    "jclass",
    "leader_class",
    "lock_class",
    "new_curator",
    "own_node",
    "parse_dump",
    "paths_by_session",
    "seed_systems_dir",
    "session_of",
    "split_hosts",
    "start_jvm",
    "systems_classpath",
    "to_java_instance",
    "to_java_payload",
]
