"""More cache scenarios across languages, each written from what Curator does and run against it
(Curator 5.4 and 5.9 alike): a Java and a Python ``CuratorCache`` of one tree told the same
events for writes of either side (data of every size, empty, null and compressed, identical data,
nodes made again, transactions, sessions that end), built listeners, their state after close
(the kept nodes and group members: the ``_nodes`` file)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import CacheOption, CuratorCache, CuratorCacheListener
from pycurator._protocol.cache import compress
from pycurator.testing import SOON, ClientFactory, JavaCuratorCache, eventually, jclass
from pycurator.testing._helpers import steady
from pycurator.testing._java_calls import (
    CURATOR_RECIPES,
    java_bytes,
    proxy,
    python_bytes,
    recipe_class,
)

from .conftest import CuratorFactory
from .test_cache_interop import server_tree
from .test_recipe_scenarios import Heard, _event_of
from .test_recipe_scenarios import closing as closing  # the fixture

pytestmark = pytest.mark.usefixtures("no_orphans")

Event = tuple[str, str, bytes | None, bytes | None]


# -- CuratorCache -------------------------------------------------------------------------------


def settle(zk: KazooClient, root: str, *caches: Iterable[Any]) -> None:
    """Wait until each cache (Python's or Java's) holds what the server holds at or below
    ``root`` (each node's data and version), and each Java cache's record of events stays the
    same (Curator tells after it stores): every write made so far has been told."""

    def same() -> bool:
        tree = server_tree(zk, root)
        return all({node.path: (node.data, node.stat.version) for node in cache} == tree
                   for cache in caches)  # fmt: skip

    eventually(same, what="the caches hold what the server holds")
    steady(lambda: [len(cache.events) for cache in caches if isinstance(cache, JavaCuratorCache)])


class Caches:
    """A started Python and Java cache of one tree, each recording what its listener is told."""

    def __init__(
        self, zk: KazooClient, curator: Any, root: str, closing: list[Any], *options: CacheOption
    ) -> None:
        self.zk, self.root = zk, root
        self.python = CuratorCache(zk, root, options)
        self.heard = Heard()
        self.python.add_listener(lambda *event: self.heard.add(_event_of(*event)))
        self.java = JavaCuratorCache(curator, root, [option.name for option in options])
        closing += [self.python, self.java]
        self.python.start()
        self.java.start()
        assert self.python.wait_initialized(SOON) and self.java.initialized.wait(SOON)
        self.mark()

    def mark(self) -> None:
        """Compare from here on."""
        self._from = (len(self.heard.items), len(self.java.events))

    def settle(self) -> None:
        """Wait until both hold what the server holds, and what each was told stays the same
        (each tells after it stores)."""
        settle(self.zk, self.root, self.python, self.java)
        steady(lambda: len(self.heard.items))

    def told(self, count: int) -> tuple[list[Event], list[Event]]:
        """The events each side told since :meth:`mark`, once each told ``count``."""
        start, java_start = self._from
        self.heard.wait_for(lambda told: len(told) >= start + count, f"{count} events")
        self.java.wait_for_events(java_start + count, SOON)
        return self.since_mark()

    def since_mark(self) -> tuple[list[Event], list[Event]]:
        """The events each side told since :meth:`mark`, now."""
        start, java_start = self._from
        theirs = [(e.type, e.path, e.old_data, e.data) for e in self.java.events[java_start:]]
        return self.heard.items[start:], theirs


class JavaTransaction:
    """Curator's transaction (``transactionOp()``), the calls of kazoo's."""

    def __init__(self, curator: Any) -> None:
        self.curator = curator
        self.ops: list[Any] = []

    def create(self, path: str, data: bytes) -> None:
        self.ops.append(self.curator.transactionOp().create().forPath(path, java_bytes(data)))

    def set_data(self, path: str, data: bytes) -> None:
        self.ops.append(self.curator.transactionOp().setData().forPath(path, java_bytes(data)))

    def delete(self, path: str) -> None:
        self.ops.append(self.curator.transactionOp().delete().forPath(path))

    def commit(self) -> None:
        self.curator.transaction().forOperations(self.ops)


def _transaction(writer: str, zk: KazooClient, curator: Any) -> Any:
    return zk.transaction() if writer == "python" else JavaTransaction(curator)


def _commit(ops: Any, root: str, script: list[tuple[str, str, bytes]]) -> None:
    for op, name, data in script:
        if op == "delete":
            ops.delete(f"{root}/{name}")
        else:
            getattr(ops, op)(f"{root}/{name}", data)
    ops.commit()


@pytest.mark.parametrize("writer", ["python", "java"])
def test_transactions_on_one_node_are_told_alike(
    writer: str, zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """Each transaction's events, as one write: a node made and deleted in one is never told;
    made then set, told made with its last data; set twice, told changed once; deleted and
    made again with the same data (at the same version), told deleted and created."""
    root = f"{zk_path}/tx"
    for path, data in ((f"{root}/held", b"h"), (f"{root}/again", b"same")):
        zk.create(path, data, makepath=True)
    caches = Caches(zk, curator, root, closing)
    scripts: list[list[tuple[str, str, bytes]]] = [
        [("create", "brief", b"b"), ("delete", "brief", b"")],
        [("create", "made", b"1"), ("set_data", "made", b"2")],
        [("set_data", "held", b"h2"), ("set_data", "held", b"h3")],
        [("delete", "again", b""), ("create", "again", b"same")],
    ]
    for script in scripts:
        _commit(_transaction(writer, zk, curator), root, script)
        caches.settle()
    ours, theirs = caches.told(4)
    assert ours == theirs
    assert ours == [
        ("NODE_CREATED", f"{root}/made", None, b"2"),
        ("NODE_CHANGED", f"{root}/held", b"h", b"h3"),
        ("NODE_DELETED", f"{root}/again", b"same", None),
        ("NODE_CREATED", f"{root}/again", None, b"same"),
    ]


@pytest.mark.parametrize("writer", ["python", "java"])
def test_a_transaction_that_makes_one_node_and_deletes_another_is_told_in_the_servers_order(
    writer: str, zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """A node made and another deleted in one transaction (a rename, or a member replaced):
    a Python cache tells them in the transaction's order, as every other change; Curator tells
    the deletion first (told as its watch hears it, where a creation waits for its read). Both
    end holding the server's tree. A documented difference (docs/cache.md)."""
    root = f"{zk_path}/tx"
    zk.create(f"{root}/old", b"o", makepath=True)
    caches = Caches(zk, curator, root, closing)
    _commit(
        _transaction(writer, zk, curator), root, [("create", "new", b"n"), ("delete", "old", b"")]
    )
    caches.settle()
    ours, theirs = caches.told(2)
    deleted = ("NODE_DELETED", f"{root}/old", b"o", None)
    created = ("NODE_CREATED", f"{root}/new", None, b"n")
    assert theirs == [deleted, created]
    assert ours == [created, deleted]


#: Data near ZooKeeper's limit (its jute.maxbuffer, 1 MiB less a little for the request).
BIG = bytes(range(256)) * 3900


def test_a_script_of_writes_by_both_sides_is_told_alike_with_the_same_stats(
    zk: KazooClient,
    curator: Any,
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk_path: str,
    closing: list[Any],
) -> None:
    """Java and Python write in turn, each write awaited in both caches: nodes made at several
    depths (missing parents made by either side), data of 1 MB, empty, and Java's null, the
    same bytes set again (a change: its version moves), a node deleted and made again with
    the same data, subtrees deleted by Java (child by child) and by Python, ephemeral nodes of
    a Java and a Python session that close. Both tell the same events, and hold the same
    stats."""
    root = f"{zk_path}/script"
    zk.ensure_path(zk_path)
    caches = Caches(zk, curator, root, closing)
    java_client = curator_factory()
    python_client = zk_client_factory()
    ephemeral = jclass("org.apache.zookeeper.CreateMode").EPHEMERAL

    def java_create(path: str, data: bytes | None, *, parents: bool = False) -> None:
        builder = curator.create().creatingParentsIfNeeded() if parents else curator.create()
        builder.forPath(path, None if data is None else java_bytes(data))

    writes: list[Callable[[], object]] = [
        lambda: zk.create(root, b""),
        lambda: java_create(f"{root}/j/deep/er", b"jd", parents=True),
        lambda: zk.create(f"{root}/p/deep/er", b"pd", makepath=True),
        lambda: curator.setData().forPath(f"{root}/j", java_bytes(BIG)),
        lambda: zk.set(f"{root}/p", BIG),
        lambda: zk.set(f"{root}/j", BIG),  # the same bytes: a new version
        lambda: curator.setData().forPath(f"{root}/p", java_bytes(BIG)),
        lambda: java_create(f"{root}/null", None),
        lambda: zk.set(f"{root}/null", b""),
        lambda: curator.setData().forPath(f"{root}/null", java_bytes(b"")),
        lambda: zk.delete(f"{root}/j/deep/er"),
        lambda: zk.create(f"{root}/j/deep/er", b"jd"),  # the same data, at version 0 again
        lambda: curator.delete().forPath(f"{root}/p/deep/er"),
        lambda: java_create(f"{root}/p/deep/er", b"pd"),
        lambda: curator.delete().deletingChildrenIfNeeded().forPath(f"{root}/p"),
        lambda: zk.delete(f"{root}/j", recursive=True),
        lambda: java_client.create().withMode(ephemeral).forPath(f"{root}/je", java_bytes(b"e")),
        lambda: python_client.create(f"{root}/pe", b"e", ephemeral=True),
        lambda: java_client.close(),
        lambda: python_client.stop(),
        lambda: curator.setData().forPath(root, java_bytes(b"end")),
    ]
    for write in writes:
        write()
        caches.settle()
    ours, theirs = caches.told(29)
    assert ours == theirs
    assert len(ours) == 29, ours
    assert ("NODE_CREATED", f"{root}/null", None, None) in ours  # Java's null: None, not b""
    for path in server_tree(zk, root):
        mine, javas = caches.python.get(path), caches.java.get(path)
        assert mine is not None and javas is not None
        assert (mine.path, mine.stat, mine.data) == (javas.path, javas.stat, javas.data)


def _python_parts(cache: CuratorCache, heard: Heard) -> None:
    def node(data: Any) -> tuple[str, bytes | None] | None:
        return None if data is None else (data.path, data.data)

    cache.add_listener(
        CuratorCacheListener.builder()
        .for_creates(lambda new: heard.add(("creates", node(new))))
        .for_changes(lambda old, new: heard.add(("changes", node(old), node(new))))
        .for_creates_and_changes(lambda old, new: heard.add(("both", node(old), node(new))))
        .for_deletes(lambda old: heard.add(("deletes", node(old))))
        .for_initialized(lambda: heard.add(("initialized",)))
        .after_initialized()
        .build()
    )


def _java_parts(cache: JavaCuratorCache, heard: Heard) -> Any:
    def node(data: Any) -> tuple[str, bytes | None] | None:
        return None if data is None else (str(data.getPath()), python_bytes(data.getData()))

    builder = recipe_class("cache.CuratorCacheListener").builder()
    change = f"{CURATOR_RECIPES}.cache.CuratorCacheListenerBuilder$ChangeListener"
    parts = [
        proxy(
            "java.util.function.Consumer", {"accept": lambda new: heard.add(("creates", node(new)))}
        ),
        proxy(change, {"event": lambda old, new: heard.add(("changes", node(old), node(new)))}),
        proxy(change, {"event": lambda old, new: heard.add(("both", node(old), node(new)))}),
        proxy(
            "java.util.function.Consumer", {"accept": lambda old: heard.add(("deletes", node(old)))}
        ),
        proxy("java.lang.Runnable", {"run": lambda: heard.add(("initialized",))}),
    ]
    built = (
        builder.forCreates(parts[0])
        .forChanges(parts[1])
        .forCreatesAndChanges(parts[2])
        .forDeletes(parts[3])
        .forInitialized(parts[4])
        .afterInitialized()
        .build()
    )
    cache.java.listenable().addListener(built)
    return parts, built


def test_a_built_listener_of_each_kind_is_told_what_javas_is(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """``for_creates``, ``for_changes``, ``for_creates_and_changes``, ``for_deletes`` and
    ``for_initialized`` in one listener, ``after_initialized``: the first load untold but its
    end, then each part its own events, in the order of the parts, as Curator's."""
    root = f"{zk_path}/built"
    zk.create(f"{root}/a", b"a", makepath=True)
    python = CuratorCache(zk, root)
    java = JavaCuratorCache(curator, root)
    closing += [python, java]
    ours, theirs = Heard(), Heard()
    _python_parts(python, ours)
    kept = _java_parts(java, theirs)
    python.start()
    java.start()
    writes: list[Callable[[], object]] = [
        lambda: zk.create(f"{root}/b", b"b"),
        lambda: zk.set(f"{root}/a", b"a2"),
        lambda: zk.delete(f"{root}/b"),
    ]
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    for write in writes:
        write()
        settle(zk, root, python, java)
    expected = [
        ("initialized",),
        ("creates", (f"{root}/b", b"b")),
        ("both", None, (f"{root}/b", b"b")),
        ("changes", (f"{root}/a", b"a"), (f"{root}/a", b"a2")),
        ("both", (f"{root}/a", b"a"), (f"{root}/a", b"a2")),
        ("deletes", (f"{root}/b", b"b")),
    ]
    assert theirs.wait_for(lambda told: len(told) >= 6, "Java's six") == expected
    assert ours.wait_for(lambda told: len(told) >= 6, "six") == expected
    assert kept is not None


@pytest.mark.parametrize("keep", [False, True], ids=["cleared", "do-not-clear"])
def test_after_close_both_hold_the_same_and_tell_nothing_more(
    keep: bool, zk: KazooClient, curator: Any, zk_path: str
) -> None:
    """Closed, a cache holds nothing (or, with DO_NOT_CLEAR_ON_CLOSE, what it held) and its
    listeners hear no more writes, as Curator's."""
    root = f"{zk_path}/closed"
    zk.create(f"{root}/a", b"a", makepath=True)
    options = (CacheOption.DO_NOT_CLEAR_ON_CLOSE,) if keep else ()
    closing: list[Any] = []
    caches = Caches(zk, curator, root, closing, *options)
    for cache in closing:
        cache.close()
    zk.create(f"{root}/b", b"b")
    zk.set(f"{root}/a", b"a2")
    witness = JavaCuratorCache(curator, root)
    with witness:
        witness.start()
        eventually(lambda: witness.get(f"{root}/b") is not None, what="a later cache sees it")
        mine = {node.path: node.data for node in caches.python}
        theirs = {node.path: node.data for node in caches.java}
        assert mine == theirs == ({root: b"", f"{root}/a": b"a"} if keep else {})
        assert caches.python.size() == caches.java.size() == len(mine)
        held = caches.python.get(f"{root}/a"), caches.java.get(f"{root}/a")
        assert [node is None for node in held] == [not keep, not keep]
        assert caches.since_mark() == ([], [])


def test_compressed_empty_data_of_either_side_is_told_empty_by_both(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """COMPRESSED_DATA caches and empty data compressed by either side (Curator writes a gzip
    of its own for it): both tell b"" for each, and for each change to and from it."""
    root = f"{zk_path}/gz"
    zk.create(root, compress(b"r"), makepath=True)
    caches = Caches(zk, curator, root, closing, CacheOption.COMPRESSED_DATA)
    writes: list[Callable[[], object]] = [
        lambda: curator.create().compressed().forPath(f"{root}/java", java_bytes(b"")),
        lambda: zk.create(f"{root}/python", compress(b"")),
        lambda: curator.setData().compressed().forPath(f"{root}/python", java_bytes(b"x")),
        lambda: zk.set(f"{root}/java", compress(b"y")),
        lambda: zk.set(f"{root}/python", compress(b"")),
        lambda: curator.setData().compressed().forPath(f"{root}/java", java_bytes(b"")),
    ]
    for write in writes:
        write()
        eventually(
            lambda: all(
                {node.path: node.stat.version for node in cache}
                == {path: version for path, (_, version) in server_tree(zk, root).items()}
                for cache in (caches.python, caches.java)
            ),
            what="both caches hold every node at its version",
        )
    ours, theirs = caches.told(6)
    assert ours == theirs
    assert ours == [
        ("NODE_CREATED", f"{root}/java", None, b""),
        ("NODE_CREATED", f"{root}/python", None, b""),
        ("NODE_CHANGED", f"{root}/python", b"", b"x"),
        ("NODE_CHANGED", f"{root}/java", b"", b"y"),
        ("NODE_CHANGED", f"{root}/python", b"x", b""),
        ("NODE_CHANGED", f"{root}/java", b"y", b""),
    ]
