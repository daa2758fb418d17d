"""pycurator's CuratorCache beside Java Curator's, on the same tree: for the same writes, made
by either side, both tell the same events in the same order; through a dropped connection and
an expiry, the same differences (rebuilds are compared as sets: Java's follows its storage's
hash order), but for the one case Curator misses by comparing versions alone; and gzip data
either side wrote is read by the other. On Curator 5.4 and 5.9 alike."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator import CacheOption, CuratorCache
from pycurator._protocol.cache import compress
from pycurator.testing import (
    SOON,
    CacheEvent,
    ClientFactory,
    FaultProxy,
    JavaCuratorCache,
    curator_at_least,
    curator_client,
    eventually,
    expire_kazoo_session,
    expire_session,
    jclass,
    session_of,
)
from pycurator.testing._helpers import steady
from pycurator.testing._java_calls import java_bytes
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

CREATED, CHANGED, DELETED = "NODE_CREATED", "NODE_CHANGED", "NODE_DELETED"


class PythonCache:
    """A pycurator cache whose listener records events as the Java peer records them."""

    def __init__(self, client: KazooClient, path: str, *options: Any) -> None:
        self.cache = CuratorCache(client, path, options)
        self.events: list[CacheEvent] = []
        self.cache.add_listener(self._on_event)

    def _on_event(self, kind: Any, old: Any, new: Any) -> None:
        node = new if new is not None else old
        self.events.append(CacheEvent(kind.name, node.path, old and old.data, new and new.data))

    def held(self) -> dict[str, tuple[bytes | None, int]]:
        return {node.path: (node.data, node.stat.version) for node in self.cache}


def java_held(cache: JavaCuratorCache) -> dict[str, tuple[bytes | None, int]]:
    return {node.path: (node.data, node.stat.version) for node in cache}


def server_tree(zk: KazooClient, root: str) -> dict[str, tuple[bytes | None, int]]:
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


def settle(python: PythonCache, java: JavaCuratorCache, zk: KazooClient, root: str) -> None:
    """Wait until both caches hold what the server holds at or below ``root``, and what each
    listener was told stays the same (each cache tells after it stores)."""

    def same() -> bool:
        tree = server_tree(zk, root)
        return python.held() == tree and java_held(java) == tree

    eventually(same, what="both caches hold what the server holds")
    steady(lambda: (len(python.events), len(java.events)))


@pytest.fixture
def pair() -> Iterator[Callable[..., tuple[PythonCache, JavaCuratorCache]]]:
    """Makes a started Python and Java cache of one path, each on its own client; closes
    them."""
    made: list[Any] = []

    def make(
        client: KazooClient, curator: Any, root: str, *options: Any
    ) -> tuple[PythonCache, JavaCuratorCache]:
        python = PythonCache(client, root, *options)
        java = JavaCuratorCache(curator, root, options)
        made.extend([python.cache, java])
        python.cache.start()
        java.start()
        assert python.cache.wait_initialized(SOON) and java.initialized.wait(SOON)
        return python, java

    yield make
    for cache in made:
        cache.close()


def _writes(write: Any, root: str) -> list[Callable[[], object]]:
    """The writes of Java's pinned sequence (interop/test_java_cache.py), through ``write``:
    ``create(path, data)``, ``set(path, data)``, ``delete(path)``."""
    return [
        lambda: write.create(root, b"r"),
        lambda: write.create(f"{root}/a", b"1"),
        lambda: write.set(f"{root}/a", b"2"),
        lambda: write.set(f"{root}/a", b"2"),
        lambda: write.create(f"{root}/a/b", b""),
        lambda: write.create(f"{root}/a/b/c", b"c"),
        lambda: write.set(f"{root}/a/b/c", b"c2"),
        lambda: write.delete(f"{root}/a/b/c"),
        lambda: write.delete(f"{root}/a/b"),
        lambda: write.delete(f"{root}/a"),
        lambda: write.set(root, b"r2"),
        lambda: write.delete(root),
        lambda: write.create(root, b"again"),
    ]


class KazooWrites:
    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk

    def create(self, path: str, data: bytes) -> None:
        self.zk.create(path, data)

    def set(self, path: str, data: bytes) -> None:
        self.zk.set(path, data)

    def delete(self, path: str) -> None:
        self.zk.delete(path)


class CuratorWrites:
    def __init__(self, curator: Any) -> None:
        self.curator = curator

    def create(self, path: str, data: bytes) -> None:
        self.curator.create().forPath(path, java_bytes(data))

    def set(self, path: str, data: bytes) -> None:
        self.curator.setData().forPath(path, java_bytes(data))

    def delete(self, path: str) -> None:
        self.curator.delete().forPath(path)


@pytest.mark.parametrize("writer", ["python", "java"])
def test_for_the_same_writes_both_caches_tell_the_same_events_in_the_same_order(
    writer: str,
    zk: KazooClient,
    curator: Any,
    zk_path: str,
    pair: Callable[..., tuple[PythonCache, JavaCuratorCache]],
) -> None:
    root = f"{zk_path}/cache"
    zk.ensure_path(zk_path)
    python, java = pair(zk, curator, root)
    write = KazooWrites(zk) if writer == "python" else CuratorWrites(curator)
    for step in _writes(write, root):
        step()
        settle(python, java, zk, root)
    # Curator's cache holds a change before its listeners are told (on another thread)
    eventually(lambda: len(java.events) >= 13 and len(python.events) >= 13, what="all told")
    assert python.events == java.events
    assert len(python.events) == 13


def test_the_first_load_tells_the_same_nodes_on_both_sides(
    zk: KazooClient,
    curator: Any,
    zk_path: str,
    pair: Callable[..., tuple[PythonCache, JavaCuratorCache]],
) -> None:
    root = f"{zk_path}/cache"
    for path in (root, f"{root}/x", f"{root}/x/z", f"{root}/y"):
        zk.create(path, path.encode(), makepath=True)
    python, java = pair(zk, curator, root)
    assert set(python.events) == set(java.events) and len(python.events) == 4
    assert java.initialized_after == 4
    for side in (python.events, java.events):
        paths = [event.path for event in side]
        assert paths[0] == root and paths.index(f"{root}/x") < paths.index(f"{root}/x/z")
    mine, theirs = python.cache.get(f"{root}/x/z"), java.get(f"{root}/x/z")
    assert mine is not None and theirs is not None
    assert (mine.path, mine.stat, mine.data) == (theirs.path, theirs.stat, theirs.data)


def test_after_a_dropped_connection_both_tell_the_same_differences_but_one(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    pair: Callable[..., tuple[PythonCache, JavaCuratorCache]],
) -> None:
    """While both caches are away: a change, a delete, a new subtree, a node deleted and made
    again at the same version. Back, both tell the first three alike; the last, pycurator
    tells as deleted and created, and Curator not at all (it compares versions alone, and
    keeps telling the old node as the node's state)."""
    root = f"{zk_path}/cache"
    for path, data in [(root, b"r"), (f"{root}/a", b"1"), (f"{root}/gone", b"g"),
                       (f"{root}/same", b"s")]:  # fmt: skip
        zk.create(path, data, makepath=True)
    with (
        FaultProxy(zk_server.hosts.split(",")[0]) as proxy,
        curator_client(proxy.hosts, session_timeout_ms=30_000) as curator,
    ):
        client = zk_client_factory(hosts=proxy.hosts, timeout=30.0)
        python, java = pair(client, curator, root)
        told = (len(python.events), len(java.events))
        proxy.blackhole()
        proxy.drop_connections()
        connected = curator.getZookeeperClient().isConnected
        eventually(lambda: not connected() and not client.connected, what="both away")
        zk.set(f"{root}/a", b"2")
        zk.delete(f"{root}/gone")
        zk.create(f"{root}/new/kid", b"k", makepath=True)
        zk.delete(f"{root}/same")
        zk.create(f"{root}/same", b"s2")
        proxy.heal()
        settle(python, java, zk, root)
        mine, theirs = python.events[told[0] :], java.events[told[1] :]
        missed = {CacheEvent(DELETED, f"{root}/same", b"s", None),
                  CacheEvent(CREATED, f"{root}/same", None, b"s2")}  # fmt: skip
        assert set(mine) == set(theirs) | missed
        assert len(mine) == len(theirs) + 2 == 6
        for side in (mine, theirs):
            paths = [event.path for event in side]
            assert paths.index(f"{root}/new") < paths.index(f"{root}/new/kid")


def test_after_an_expiry_both_tell_the_same_differences(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    pair: Callable[..., tuple[PythonCache, JavaCuratorCache]],
) -> None:
    """Both caches' sessions expire, each with an ephemeral node of its own, and a node
    changes meanwhile: each cache tells both ephemerals deleted and the change, once each."""
    root = f"{zk_path}/cache"
    zk.create(f"{root}/a", b"1", makepath=True)
    with curator_client(zk_server.hosts, session_timeout_ms=30_000) as curator:
        client = zk_client_factory(timeout=30.0)
        client.create(f"{root}/python", b"p", ephemeral=True)
        ephemeral = jclass("org.apache.zookeeper.CreateMode").EPHEMERAL
        curator.create().withMode(ephemeral).forPath(f"{root}/java", java_bytes(b"j"))
        python, java = pair(client, curator, root)
        told = (len(python.events), len(java.events))
        expire_session(zk_server.hosts, *session_of(curator))
        expire_kazoo_session(client)
        zk.set(f"{root}/a", b"2")
        settle(python, java, zk, root)
        expected = {
            CacheEvent(DELETED, f"{root}/python", b"p", None),
            CacheEvent(DELETED, f"{root}/java", b"j", None),
            CacheEvent(CHANGED, f"{root}/a", b"1", b"2"),
        }
        assert set(python.events[told[0] :]) == set(java.events[told[1] :]) == expected
        assert len(python.events) - told[0] == len(java.events) - told[1] == 3


def test_gzip_either_side_wrote_is_read_by_the_other(
    zk: KazooClient,
    curator: Any,
    zk_path: str,
    pair: Callable[..., tuple[PythonCache, JavaCuratorCache]],
) -> None:
    """Curator's ``compressed()`` and pycurator's gzip: the same deflate stream and trailer,
    a header that differs at most in its OS byte (Curator before 5.6, or on a JDK before 16,
    writes 0; pycurator writes 255, as Curator 5.6 on JDK 16 and later), and each side's
    COMPRESSED_DATA cache tells the other's data unzipped."""
    root = f"{zk_path}/cache"
    zk.ensure_path(root)
    python, java = pair(zk, curator, root, CacheOption.COMPRESSED_DATA.name)
    data = b"hello, compressed world " * 10
    curator.create().compressed().forPath(f"{root}/java", java_bytes(data))
    zk.create(f"{root}/python", compress(data))
    expected = {CacheEvent(CREATED, f"{root}/java", None, data),
                CacheEvent(CREATED, f"{root}/python", None, data)}  # fmt: skip
    eventually(lambda: set(python.events) == set(java.events) == expected, what="both told")
    javas, ours = zk.get(f"{root}/java")[0], zk.get(f"{root}/python")[0]
    assert javas[:9] == ours[:9] and javas[10:] == ours[10:]
    assert ours[9] == 0xFF and javas[9] in (0x00, 0xFF)
    if curator_at_least("5.6") and int(jclass("java.lang.Runtime").version().feature()) >= 16:
        assert javas == ours
    assert gzip.decompress(ours) == data
