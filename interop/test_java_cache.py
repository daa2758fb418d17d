"""Java's CuratorCache as the oracle of pycurator's: the events its listener is told for
scripted writes, through a dropped connection and through an expiry, on Curator 5.4 and 5.9
alike.

Each script waits after every write until the cache holds what the server holds, so the
sequence does not depend on timing. Within one write, events come in the order Curator asks
the server (a parent before its child). After a reconnection Curator reads every node again
and tells only the differences, comparing versions; the order of that rebuild follows its
storage's hash order, so those events are compared as a set.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator.testing import (
    SOON,
    CacheEvent,
    FaultProxy,
    JavaCuratorCache,
    curator_at_least,
    curator_client,
    eventually,
    expire_session,
    jclass,
    session_of,
)
from pycurator.testing._helpers import steady
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

CREATED, CHANGED, DELETED = "NODE_CREATED", "NODE_CHANGED", "NODE_DELETED"


def server_tree(zk: KazooClient, root: str) -> dict[str, tuple[bytes | None, int]]:
    """Every node at or below ``root``, with its data and version (nothing if it is gone)."""
    found: dict[str, tuple[bytes | None, int]] = {}
    try:
        data, stat = zk.get(root)
        names = zk.get_children(root)
    except NoNodeError:
        return found
    found[root] = (data, stat.version)
    for name in names:
        found.update(server_tree(zk, f"{root}/{name}"))
    return found


def settle(cache: JavaCuratorCache, zk: KazooClient, root: str) -> None:
    """Wait until the cache holds every node the server has at or below ``root``, as it is,
    and what its listener was told stays the same (Curator tells after it stores)."""
    eventually(
        lambda: {c.path: (c.data, c.stat.version) for c in cache} == server_tree(zk, root),
        what=f"{cache!r} holds what the server holds",
    )
    steady(lambda: len(cache.events))


@pytest.fixture
def caches() -> Iterator[list[JavaCuratorCache]]:
    made: list[JavaCuratorCache] = []
    yield made
    for cache in made:
        cache.close()


def started(
    caches: list[JavaCuratorCache], curator: Any, root: str, *options: str
) -> JavaCuratorCache:
    cache = JavaCuratorCache(curator, root, options)
    caches.append(cache)
    cache.start()
    assert cache.initialized.wait(SOON)
    return cache


def test_the_events_of_scripted_writes(
    curator: Any, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    """Creates, changes (a write of the same bytes too: versions are compared, not data),
    nested creates, deletes (a subtree: leaves first), the cached root itself deleted and made
    again; nothing before ``initialized()`` on a path that does not exist yet."""
    root = f"{zk_path}/cache"
    cache = started(caches, curator, root)
    assert cache.initialized_after == 0 and cache.size() == 0
    zk.ensure_path(zk_path)
    steps: list[Callable[[], object]] = [
        lambda: zk.create(root, b"r"),
        lambda: zk.create(f"{root}/a", b"1"),
        lambda: zk.set(f"{root}/a", b"2"),
        lambda: zk.set(f"{root}/a", b"2"),
        lambda: zk.create(f"{root}/a/b/c", b"c", makepath=True),
        lambda: zk.set(f"{root}/a/b/c", b"c2"),
        lambda: zk.delete(f"{root}/a/b/c"),
        lambda: zk.delete(f"{root}/a", recursive=True),
        lambda: zk.set(root, b"r2"),
        lambda: zk.delete(root),
        lambda: zk.create(root, b"again"),
    ]
    for step in steps:
        step()
        settle(cache, zk, root)
    # Curator's cache holds a change before its listeners are told (on another thread)
    eventually(lambda: len(cache.events) >= 13, what="every event told")
    assert cache.events == [
        (CREATED, root, None, b"r"),
        (CREATED, f"{root}/a", None, b"1"),
        (CHANGED, f"{root}/a", b"1", b"2"),
        (CHANGED, f"{root}/a", b"2", b"2"),
        (CREATED, f"{root}/a/b", None, b""),
        (CREATED, f"{root}/a/b/c", None, b"c"),
        (CHANGED, f"{root}/a/b/c", b"c", b"c2"),
        (DELETED, f"{root}/a/b/c", b"c2", None),
        (DELETED, f"{root}/a/b", b"", None),
        (DELETED, f"{root}/a", b"2", None),
        (CHANGED, root, b"r", b"r2"),
        (DELETED, root, b"r2", None),
        (CREATED, root, None, b"again"),
    ]
    assert cache.initialized_after == 0  # told once, never again


def test_the_initial_load_tells_each_node_created_parents_first_then_initialized(
    curator: Any, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    for path, data in [
        (root, b"r"),
        (f"{root}/x", b"x"),
        (f"{root}/x/z", b"z"),
        (f"{root}/y", b""),
    ]:
        zk.create(path, data, makepath=True)
    cache = started(caches, curator, root)
    events = cache.events
    assert cache.initialized_after == 4 == len(events)
    assert set(events) == {
        (CREATED, root, None, b"r"),
        (CREATED, f"{root}/x", None, b"x"),
        (CREATED, f"{root}/x/z", None, b"z"),
        (CREATED, f"{root}/y", None, b""),
    }
    paths = [event.path for event in events]
    assert paths[0] == root and paths.index(f"{root}/x") < paths.index(f"{root}/x/z")
    assert cache.size() == 4
    found = cache.get(f"{root}/x/z")
    assert found is not None and found.data == b"z" and found.stat == zk.exists(f"{root}/x/z")
    assert cache.get(f"{root}/none") is None


def test_after_a_dropped_connection_only_the_differences_are_told(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    """While the cache's client is away: a change, a delete, a new subtree, and a node deleted
    and made again at the same version with other data. Back, Curator tells the first three
    and nothing of the last (versions equal), though it then holds the new data."""
    root = f"{zk_path}/cache"
    for path, data in [
        (root, b"r"),
        (f"{root}/a", b"1"),
        (f"{root}/gone", b"g"),
        (f"{root}/same", b"s"),
    ]:
        zk.create(path, data, makepath=True)
    with (
        FaultProxy(zk_server.hosts.split(",")[0]) as proxy,
        curator_client(proxy.hosts, session_timeout_ms=30_000) as curator,
    ):
        cache = started(caches, curator, root)
        told = len(cache.events)
        proxy.blackhole()
        proxy.drop_connections()
        connected = curator.getZookeeperClient().isConnected
        eventually(lambda: not connected(), what="the cache's client disconnected")
        zk.set(f"{root}/a", b"2")
        zk.delete(f"{root}/gone")
        zk.create(f"{root}/new/kid", b"k", makepath=True)
        zk.delete(f"{root}/same")
        zk.create(f"{root}/same", b"s2")
        proxy.heal()
        settle(cache, zk, root)
        after = cache.events[told:]
        assert set(after) == {
            (CHANGED, f"{root}/a", b"1", b"2"),
            (DELETED, f"{root}/gone", b"g", None),
            (CREATED, f"{root}/new", None, b""),
            (CREATED, f"{root}/new/kid", None, b"k"),
        }
        assert len(after) == 4
        assert [e.path for e in after].index(f"{root}/new") < [e.path for e in after].index(
            f"{root}/new/kid"
        )
        same = cache.get(f"{root}/same")
        assert same is not None and same.data == b"s2"  # held, never told
        cache.close()


def test_after_an_expiry_the_sessions_own_ephemeral_is_told_deleted(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    """The cache's client expires while away: its own ephemeral node goes with its session,
    and a change made meanwhile is told, once each, when it is back on a new session."""
    root = f"{zk_path}/cache"
    zk.create(f"{root}/a", b"1", makepath=True)
    with (
        FaultProxy(zk_server.hosts.split(",")[0]) as proxy,
        curator_client(proxy.hosts, session_timeout_ms=30_000) as curator,
    ):
        curator.create().withMode(_ephemeral()).forPath(f"{root}/mine", b"m")
        cache = started(caches, curator, root)
        told = len(cache.events)
        session = session_of(curator)
        proxy.blackhole()
        proxy.drop_connections()
        expire_session(zk_server.hosts, *session)
        zk.set(f"{root}/a", b"2")
        proxy.heal()
        settle(cache, zk, root)
        assert session_of(curator)[0] != session[0]
        assert set(cache.events[told:]) == {
            (DELETED, f"{root}/mine", b"m", None),
            (CHANGED, f"{root}/a", b"1", b"2"),
        }
        assert len(cache.events) == told + 2
        cache.close()


def _ephemeral() -> Any:
    return jclass("org.apache.zookeeper.CreateMode").EPHEMERAL


def java_feature_version() -> int:
    return int(jclass("java.lang.Runtime").version().feature())


def test_a_single_node_cache_tells_only_its_node(
    curator: Any, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    zk.create(f"{root}/child", b"c", makepath=True)
    cache = started(caches, curator, root, "SINGLE_NODE_CACHE")
    zk.set(f"{root}/child", b"c2")
    zk.set(root, b"r")
    eventually(lambda: len(cache.events) == 2, what="the root's events")
    assert cache.events == [(CREATED, root, None, b""), (CHANGED, root, b"", b"r")]
    assert [c.path for c in cache] == [root]


def test_compressed_data_is_gzip_with_javas_header_and_told_unzipped(
    curator: Any, zk: KazooClient, zk_path: str, caches: list[JavaCuratorCache]
) -> None:
    """Curator's ``compressed()`` writes gzip with a zero MTIME and XFL and Java's OS byte:
    0 up to 5.5, and from 5.6 (CURATOR-672) 255 on a JDK 16 or later, as JDK 16's
    GZIPOutputStream; a COMPRESSED_DATA cache tells the data unzipped."""
    root = f"{zk_path}/cache"
    zk.ensure_path(root)
    cache = started(caches, curator, root, "COMPRESSED_DATA")
    curator.create().compressed().forPath(f"{root}/z", b"hello " * 20)
    eventually(lambda: len(cache.events) == 1, what="the compressed node's event")
    assert cache.events == [CacheEvent(CREATED, f"{root}/z", None, b"hello " * 20)]
    raw = zk.get(f"{root}/z")[0]
    os_byte = "ff" if curator_at_least("5.6") and java_feature_version() >= 16 else "00"
    assert raw[:10] == bytes.fromhex("1f8b08000000000000" + os_byte)
    assert gzip.decompress(raw) == b"hello " * 20
