"""Scenarios across languages, as a user who knows Curator would write them: Java and Python
recipes on one path, each side's changes heard, refused and kept as the other side's are, on
Curator 5.4 and 5.9 alike: CuratorCache and its listener adapters, GroupMember, PersistentNode
and PersistentTtlNode (the counters, barriers and asyncio front end: the ``_counters`` file)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    CacheOption,
    CreateMode,
    CuratorCache,
    CuratorCacheListener,
    GroupMember,
    PersistentNode,
    PersistentTtlNode,
    SharedCount,
)
from pycurator.testing import (
    SOON,
    ClientFactory,
    FaultProxy,
    JavaCuratorCache,
    JavaGroupMember,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    JavaSharedCount,
    children,
    created_modes,
    curator_at_least,
    eventually,
    expire_kazoo_session,
    java_local_address,
)
from pycurator.testing._helpers import steady
from pycurator.testing._java_calls import java_bytes, proxy, python_bytes, recipe_class

from .conftest import CuratorFactory
from .test_cache_interop import server_tree

pytestmark = pytest.mark.usefixtures("no_orphans")


# -- helpers ------------------------------------------------------------------------------------


class Heard:
    """What a listener was told, in order, with a bounded wait on it."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = threading.Condition()

    def add(self, item: Any) -> None:
        with self._changed:
            self.items.append(item)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[Any]], bool], what: str) -> list[Any]:
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(self.items), SOON):
                raise AssertionError(f"not heard within {SOON}s: {what}; heard {self.items}")
            return list(self.items)


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    """Things to close at the end of a test, last made first."""
    made: list[Any] = []
    yield made
    for thing in reversed(made):
        thing.close()


class CountHeard(Heard):
    def count_has_changed(self, _shared: Any, count: int) -> None:
        self.add(count)


# -- CuratorCache -------------------------------------------------------------------------------


def _event_of(kind: Any, old: Any, new: Any) -> tuple[str, str, bytes | None, bytes | None]:
    node = new if new is not None else old
    return (kind.name, node.path, old and old.data, new and new.data)


def _java_event_of(kind: Any, old: Any, new: Any) -> tuple[str, str, bytes | None, bytes | None]:
    node = new if new is not None else old
    return (
        str(kind.name()),
        str(node.getPath()),
        None if old is None else python_bytes(old.getData()),
        None if new is None else python_bytes(new.getData()),
    )


def _both_caches(
    zk: KazooClient, curator: Any, root: str, closing: list[Any], *options: CacheOption
) -> tuple[CuratorCache, Heard, JavaCuratorCache]:
    python = CuratorCache(zk, root, options)
    heard = Heard()
    python.add_listener(lambda *event: heard.add(_event_of(*event)))
    java = JavaCuratorCache(curator, root, [option.name for option in options])
    closing += [python, java]
    python.start()
    java.start()
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    return python, heard, java


def hold_the_root(zk: KazooClient, root: str, python: CuratorCache, java: JavaCuratorCache) -> None:
    """Wait until two single-node caches hold ``root`` as the server has it (or nothing)."""
    eventually(
        lambda: (
            {n.path: n.data for n in python}
            == {n.path: n.data for n in java}
            == ({root: zk.get(root)[0]} if zk.exists(root) else {})
        ),
        what="both hold the root as the server has it",
    )


def _settle(python: CuratorCache, java: JavaCuratorCache, zk: KazooClient, root: str) -> None:
    def same() -> bool:
        tree = server_tree(zk, root)
        held = {node.path: (node.data, node.stat.version) for node in python}
        theirs = {node.path: (node.data, node.stat.version) for node in java}
        return tree == held == theirs

    eventually(same, what="both caches hold what the server holds")
    steady(lambda: len(java.events))  # Curator tells after it stores (ours: heard.wait_for)


def test_single_node_caches_tell_the_node_alone_on_both_sides(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """SINGLE_NODE_CACHE: the root's creation, changes and deletion, never its children's,
    told alike by Java's and Python's; each holds the root alone."""
    root = f"{zk_path}/single"
    zk.ensure_path(zk_path)
    python, heard, java = _both_caches(zk, curator, root, closing, CacheOption.SINGLE_NODE_CACHE)
    writes: list[Callable[[], object]] = [
        lambda: zk.create(root, b"r"),
        lambda: zk.create(f"{root}/kid", b"k"),
        lambda: zk.set(f"{root}/kid", b"k2"),
        lambda: zk.set(root, b"r2"),
        lambda: zk.delete(f"{root}/kid"),
        lambda: zk.delete(root),
        lambda: zk.create(root, b"again"),
    ]
    for write in writes:
        write()
        hold_the_root(zk, root, python, java)
    expected = [
        ("NODE_CREATED", root, None, b"r"),
        ("NODE_CHANGED", root, b"r", b"r2"),
        ("NODE_DELETED", root, b"r2", None),
        ("NODE_CREATED", root, None, b"again"),
    ]
    java_told = [(e.type, e.path, e.old_data, e.data) for e in java.wait_for_events(4, SOON)]
    assert heard.wait_for(lambda told: len(told) >= 4, "four events") == expected == java_told


def test_a_subtree_deleted_at_once_and_a_node_made_again_are_told_alike(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """A subtree deleted in one transaction, leaves first, is told by both deepest first; a
    node deleted and made again in one transaction is told deleted then created by both."""
    root = f"{zk_path}/tree"
    for path in (f"{root}/a/b/c/d", f"{root}/a/b/e", f"{root}/x"):
        zk.create(path, path.encode(), makepath=True)
    python, heard, java = _both_caches(zk, curator, root, closing)
    first = (len(heard.items), len(java.events))
    transaction = zk.transaction()
    for path in (f"{root}/a/b/c/d", f"{root}/a/b/c", f"{root}/a/b/e", f"{root}/a/b", f"{root}/a"):
        transaction.delete(path)
    assert all(result is True for result in transaction.commit())
    _settle(python, java, zk, root)
    again = zk.transaction()
    again.delete(f"{root}/x")
    again.create(f"{root}/x", b"new")
    assert again.commit()[0] is True
    _settle(python, java, zk, root)
    ours = heard.wait_for(lambda told: len(told) >= first[0] + 7, "seven events")[first[0] :]
    theirs = [(e.type, e.path, e.old_data, e.data) for e in java.events[first[1] :]]
    assert ours == theirs
    assert [(kind, path) for kind, path, _, _ in ours] == [
        ("NODE_DELETED", f"{root}/a/b/c/d"),
        ("NODE_DELETED", f"{root}/a/b/c"),
        ("NODE_DELETED", f"{root}/a/b/e"),
        ("NODE_DELETED", f"{root}/a/b"),
        ("NODE_DELETED", f"{root}/a"),
        ("NODE_DELETED", f"{root}/x"),
        ("NODE_CREATED", f"{root}/x"),
    ]


class _Adapted:
    """What the three adapters of a listener builder tell, Python's or Java's, as tuples."""

    def __init__(self) -> None:
        self.children = Heard()
        self.tree = Heard()
        self.node = Heard()


def _python_adapted(cache: CuratorCache, root: str, client: Any) -> _Adapted:
    adapted = _Adapted()

    def child(given: Any, event: Any) -> None:
        assert given is client
        data = event.data
        adapted.children.add(
            (event.type.name, None if data is None else data.path, data and data.data)
        )

    def tree(given: Any, event: Any) -> None:
        assert given is client
        data, old = event.data, event.old_data
        adapted.tree.add(
            (event.type.name, data and data.path, data and data.data, old and old.data)
        )

    listener = (
        CuratorCacheListener.builder()
        .for_path_children_cache(root, client, child)
        .for_tree_cache(client, tree)
        .for_node_cache(lambda: adapted.node.add("changed"))
        .build()
    )
    cache.add_listener(listener)
    return adapted


def _java_adapted(cache: JavaCuratorCache, root: str, curator: Any) -> _Adapted:
    adapted = _Adapted()
    package = "org.apache.curator.framework.recipes.cache"

    def child(_client: Any, event: Any) -> None:
        data = event.getData()
        adapted.children.add(
            (
                str(event.getType().name()),
                None if data is None else str(data.getPath()),
                None if data is None else python_bytes(data.getData()),
            )
        )

    def tree(_client: Any, event: Any) -> None:
        data, old = event.getData(), event.getOldData()
        adapted.tree.add(
            (
                str(event.getType().name()),
                None if data is None else str(data.getPath()),
                None if data is None else python_bytes(data.getData()),
                None if old is None else python_bytes(old.getData()),
            )
        )

    builder = recipe_class("cache.CuratorCacheListener").builder()
    built = (
        builder.forPathChildrenCache(
            root, curator, proxy(f"{package}.PathChildrenCacheListener", {"childEvent": child})
        )
        .forTreeCache(curator, proxy(f"{package}.TreeCacheListener", {"childEvent": tree}))
        .forNodeCache(
            proxy(
                f"{package}.NodeCacheListener", {"nodeChanged": lambda: adapted.node.add("changed")}
            )
        )
        .build()
    )
    cache.java.listenable().addListener(built)
    adapted.keep = (child, tree, built)  # type: ignore[attr-defined]
    return adapted


def test_the_builders_adapters_tell_what_javas_tell(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """``for_path_children_cache``, ``for_tree_cache`` and ``for_node_cache`` on a cache of a
    tree with a grandchild: the same events, types, paths and data as Curator's adapters, the
    first load and INITIALIZED included."""
    root = f"{zk_path}/adapted"
    zk.create(f"{root}/a", b"a", makepath=True)
    python = CuratorCache(zk, root)
    java = JavaCuratorCache(curator, root)
    closing += [python, java]
    ours = _python_adapted(python, root, zk)
    theirs = _java_adapted(java, root, curator)
    python.start()
    java.start()
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    writes: list[Callable[[], object]] = [
        lambda: zk.create(f"{root}/a/b", b"b"),
        lambda: zk.set(f"{root}/a", b"a2"),
        lambda: zk.set(root, b"r2"),
        lambda: zk.delete(f"{root}/a/b"),
        lambda: zk.delete(f"{root}/a"),
    ]
    for write in writes:
        write()
        _settle(python, java, zk, root)
    for side in ("children", "tree"):
        mine = getattr(ours, side).wait_for(lambda told: len(told) >= 1, side)
        eventually(
            lambda side=side, mine=mine: getattr(theirs, side).items == getattr(ours, side).items,  # type: ignore[misc]
            what=f"{side}: the same as Java's",
        )
    assert ours.children.items == [
        ("CHILD_ADDED", f"{root}/a", b"a"),
        ("INITIALIZED", None, None),
        ("CHILD_ADDED", f"{root}/a/b", b"b"),
        ("CHILD_UPDATED", f"{root}/a", b"a2"),
        ("CHILD_REMOVED", f"{root}/a/b", b"b"),
        ("CHILD_REMOVED", f"{root}/a", b"a2"),
    ]
    assert ours.tree.items[-1] == ("NODE_REMOVED", f"{root}/a", b"a2", None)
    eventually(lambda: len(ours.node.items) == len(theirs.node.items) == 7, what="7 changes")


def test_a_python_cache_count_and_group_keep_hearing_java_after_a_reconnect_and_an_expiry(
    zk_server: Any,
    zk_client_factory: ClientFactory,
    curator: Any,
    zk: KazooClient,
    zk_path: str,
    closing: list[Any],
) -> None:
    """A cache, a shared count and a group member on one Python client: what Java changes
    while the client is away is heard once it is back, and what Java changes after the
    reconnect, and after the session's expiry, is heard too (the watches are set again)."""
    root, count_path, group = f"{zk_path}/tree", f"{zk_path}/count", f"{zk_path}/group"
    zk.create(f"{root}/a", b"1", makepath=True)
    java_count = JavaSharedCount(curator, count_path, 0)
    java_member = JavaGroupMember(curator, group, "java", b"j0")
    closing += [java_count, java_member]
    java_count.start()
    java_member.start()
    with FaultProxy(zk_server.hosts.split(",")[0]) as fault:
        client = zk_client_factory(hosts=fault.hosts, timeout=30.0)
        cache = CuratorCache(client, root)
        heard = Heard()
        cache.add_listener(lambda *event: heard.add(_event_of(*event)))
        counted = CountHeard()
        # (each closed while the proxy still carries its deletes)
        with (
            cache,
            SharedCount(client, count_path, 0) as count,
            GroupMember(client, group, "python", b"p") as member,
        ):
            count.add_listener(counted)
            assert cache.wait_initialized(SOON)

            def java_writes(step: int) -> None:
                curator.setData().forPath(f"{root}/a", java_bytes(str(step).encode()))
                curator.create().forPath(f"{root}/n{step}", java_bytes(b"n"))
                java_count.set_count(step)
                java_member.set_this_data(f"j{step}".encode())

            def python_hears(step: int) -> None:
                eventually(
                    lambda: (
                        (got := cache.get(f"{root}/a")) is not None
                        and got.data == str(step).encode()
                        and cache.get(f"{root}/n{step}") is not None
                    ),
                    what=f"the cache holds step {step}",
                )
                counted.wait_for(lambda told: told[-1:] == [step], f"count {step} told")
                members = {"java": f"j{step}".encode(), "python": b"p"}
                eventually(
                    lambda: member.get_current_members() == members,
                    what=f"the group holds step {step}",
                )
                before = str(step - 1).encode() if step > 2 else b"1"
                change = ("NODE_CHANGED", f"{root}/a", before, str(step).encode())
                # the cache holds a change before its listener is told it, on its worker
                heard.wait_for(lambda told: change in told, f"step {step}'s change told")

            fault.blackhole()
            fault.drop_connections()
            eventually(lambda: not client.connected, what="the client away")
            java_writes(2)
            fault.heal()
            python_hears(2)
            java_writes(3)  # after the reconnect, within the session
            python_hears(3)
            before = client.client_id[0]
            expire_kazoo_session(client)
            eventually(
                lambda: client.connected and client.client_id[0] != before, what="a new session"
            )
            java_writes(4)  # in the new session
            python_hears(4)
            eventually(
                lambda: java_member.get_current_members() == {"java": b"j4", "python": b"p"},
                what="Java sees the member again",
            )


# -- GroupMember --------------------------------------------------------------------------------


def test_members_with_odd_ids_and_payloads_are_seen_alike_and_one_leaves(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk_path: str,
    closing: list[Any],
) -> None:
    group = f"{zk_path}/group"
    java = JavaGroupMember(curator_factory(), group, "java:1 é", b"")
    python = GroupMember(zk_client_factory(), group, "py thon-1.0@host", b"\x00\xffbin")
    empty = GroupMember(zk_client_factory(), group, "empty", b"")
    closing += [java, python, empty]
    java.start()
    python.start()
    empty.start()
    everyone = {"java:1 é": b"", "py thon-1.0@host": b"\x00\xffbin", "empty": b""}
    eventually(lambda: python.get_current_members() == everyone, what="Python sees all")
    eventually(lambda: java.get_current_members() == everyone, what="Java sees all")
    assert python.id_from_path(f"{group}/java:1 é") == "java:1 é"
    empty.close()
    del everyone["empty"]
    eventually(lambda: python.get_current_members() == everyone, what="Python sees it gone")
    eventually(lambda: java.get_current_members() == everyone, what="Java sees it gone")


# -- PersistentNode -----------------------------------------------------------------------------


def test_data_set_while_away_is_what_java_reads_once_back(
    zk_server: Any,
    zk_client_factory: ClientFactory,
    curator: Any,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """A Python PersistentNode (protected, sequential) given new data while its client is
    disconnected writes it once back: Java reads it, on the node of the same name."""
    path = f"{zk_path}/away/node"
    with FaultProxy(zk_server.hosts.split(",")[0]) as fault:
        client = zk_client_factory(hosts=fault.hosts, timeout=30.0)
        with PersistentNode(client, path, CreateMode.EPHEMERAL_SEQUENTIAL, b"one", True) as node:
            assert node.wait_for_initial_create(SOON)
            made = node.actual_path
            assert made is not None
            fault.blackhole()
            fault.drop_connections()
            eventually(lambda: not client.connected, what="the client away")
            node.set_data(b"two")
            assert node.get_data() == b"two"
            fault.heal()
            eventually(
                lambda: bytes(curator.getData().forPath(made)) == b"two",
                what="Java reads the data set while away",
            )
            assert node.actual_path == made
            assert zk.get_children(f"{zk_path}/away") == [made.rsplit("/", 1)[1]]
        eventually(lambda: children(zk, f"{zk_path}/away") == [], what="deleted on close")


def test_java_and_python_sequential_protected_nodes_come_back_under_their_names(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """One Java and one Python EPHEMERAL_SEQUENTIAL protected node of one base path: two nodes,
    each made again under its own name (its UUID and sequence kept) when the other side
    deletes it, never a third."""
    base = f"{zk_path}/seq/member-"
    client = zk_client_factory()
    with (
        JavaPersistentNode(curator, base, "EPHEMERAL_SEQUENTIAL", b"j", True) as java,
        PersistentNode(client, base, CreateMode.EPHEMERAL_SEQUENTIAL, b"p", True) as python,
    ):
        java.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        names = {java.actual_path, python.actual_path}
        assert None not in names and len(names) == 2
        for _ in range(2):
            curator.delete().forPath(python.actual_path)
            zk.delete(str(java.actual_path))
            eventually(  # the emptied parent, a container, may be reaped and made again
                lambda: {f"{zk_path}/seq/{n}" for n in children(zk, f"{zk_path}/seq")} == names,
                what="both made again under their names",
            )
        assert {java.actual_path, python.actual_path} == names
        assert zk.get(str(python.actual_path))[0] == b"p"
        assert zk.get(str(java.actual_path))[0] == b"j"


# -- PersistentTtlNode --------------------------------------------------------------------------


def test_ttl_nodes_of_either_side_have_the_same_modes_ttls_and_data(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str, zk_server: Any
) -> None:
    """A Java and a Python PersistentTtlNode, each alone on a path: the node and its touch
    child made with the same TTL, the node holding its data, the touch the host's address; a
    node given new data holds it, read by the other side."""
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    ttl = 2.0
    java = JavaPersistentTtlNode(curator, f"{zk_path}/java", ttl, b"j")
    python = PersistentTtlNode(zk_client_factory(), f"{zk_path}/python", ttl, b"p")
    with java, python:
        java.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        for touch in (f"{zk_path}/java/touch", f"{zk_path}/python/touch"):
            eventually(functools.partial(_exists, zk, touch), what=f"{touch} made")
        python.set_data(b"p2")
        java.set_data(b"j2")
        eventually(lambda: bytes(curator.getData().forPath(f"{zk_path}/python")) == b"p2")
        eventually(lambda: zk.get(f"{zk_path}/java")[0] == b"j2")
        made = created_modes(zk_server.local.data_dir, zk_path)
        javas_parent = "PERSISTENT_WITH_TTL" if curator_at_least("5.9") else "CONTAINER"
        assert made[f"{zk_path}/python"].mode == "PERSISTENT_WITH_TTL"
        assert made[f"{zk_path}/java"].mode == javas_parent
        if javas_parent == "PERSISTENT_WITH_TTL":
            assert made[f"{zk_path}/java"].ttl == made[f"{zk_path}/python"].ttl == ttl
        for side in ("java", "python"):
            made_touch = made[f"{zk_path}/{side}/touch"]
            assert (made_touch.mode, made_touch.ttl) == ("PERSISTENT_WITH_TTL", ttl)
            assert zk.get(f"{zk_path}/{side}/touch")[0] == java_local_address()


def _exists(zk: KazooClient, path: str) -> bool:
    return zk.exists(path) is not None
