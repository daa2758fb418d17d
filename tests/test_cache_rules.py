"""The cache's rules on plain data: its nodes, the events a tree's reads make, gzip as Curator
writes it, and the listeners Curator's builder makes (with the adapters of its older caches)."""

from __future__ import annotations

import gzip
import pickle
from typing import Any

import pytest
from kazoo.protocol.states import ZnodeStat

from pycurator import (
    CacheEvent,
    CacheEventType,
    ChildData,
    CompressedDataError,
    CuratorCacheListener,
    PathChildrenCacheEvent,
    TreeCacheEvent,
)
from pycurator._cores.cache import check_options
from pycurator._cores.cache_listeners import as_listener
from pycurator._protocol.cache import CacheOption, CacheTree, compress, deletions_first

CREATED, CHANGED, DELETED = (
    CacheEventType.NODE_CREATED,
    CacheEventType.NODE_CHANGED,
    CacheEventType.NODE_DELETED,
)


def stat(czxid: int, version: int = 0, children: int = 0, cversion: int = 0) -> ZnodeStat:
    big = 0x1_0000_0000_0000 + czxid  # zxids past 32 bits, times past 32 bits
    return ZnodeStat(big, big + 1, 1_700_000_000_000, 1_700_000_000_001, version, cversion, 0,
                     0x7FFF_0000_0000_0001, 3, children, big + 2)  # fmt: skip


def test_a_child_data_keeps_its_stat_whole_and_compares_as_curators() -> None:
    node = ChildData("/a", stat(1, version=3, children=2), b"x")
    assert node.stat == stat(1, version=3, children=2)
    assert node.version == 3 and node.has_children
    assert node == ChildData("/a", stat(1, version=3, children=2), b"x")
    assert node != ChildData("/a", stat(1, version=4, children=2), b"x")
    assert hash(node) == hash(ChildData("/a", stat(1, version=3, children=2), b"x"))
    assert sorted([ChildData("/b", stat(1), None), node])[0] is node
    assert "path='/a'" in repr(node) and "version=3" in repr(node)


def test_a_tree_tells_creations_changes_by_version_deletions_and_a_node_made_anew() -> None:
    tree = CacheTree("/r", recursive=True)
    assert [e.type for e in tree.read("/r/a", stat(1), b"1")] == [CREATED]
    assert tree.read("/r/a", stat(1), b"1") == []  # the version held: nothing
    (changed,) = tree.read("/r/a", stat(1, version=1), b"1")
    assert changed.type is CHANGED and changed.old_data is not None
    assert changed.old_data.version == 0 and changed.data is not None
    made_again = tree.read("/r/a", stat(9, version=1), b"2")
    assert [(e.type, e.path) for e in made_again] == [(DELETED, "/r/a"), (CREATED, "/r/a")]
    (deleted,) = tree.gone("/r/a")
    assert deleted.type is DELETED and deleted.data is None and tree.gone("/r/a") == []
    assert len(tree) == 0


def test_a_tree_lists_the_children_of_new_parents_and_of_those_whose_children_changed() -> None:
    tree = CacheTree("/r", recursive=True)
    leaf, parent = ChildData("/r", stat(1), None), ChildData("/r", stat(1, children=2), None)
    assert not tree.must_list(None, leaf) and tree.must_list(None, parent)
    same = ChildData("/r", stat(1, version=5, children=2), None)
    assert not tree.must_list(parent, same)
    changed = ChildData("/r", stat(1, children=2, cversion=4), None)
    assert tree.must_list(parent, changed)
    assert tree.must_list(parent, ChildData("/r", stat(7, children=2), None))  # made anew
    assert not CacheTree("/r", recursive=False).must_list(None, parent)
    tree.read("/r/a", stat(2), None)
    assert tree.unknown("/r", ["a", "b"]) == ["/r/b"]
    assert CacheTree("/", recursive=True).unknown("/", ["x"]) == ["/x"]


def test_a_tree_covers_its_root_and_below_and_rebuilds_from_the_root() -> None:
    tree = CacheTree("/r", recursive=True)
    assert tree.covers("/r") and tree.covers("/r/a/b") and not tree.covers("/rx")
    assert CacheTree("/", recursive=True).covers("/anything")
    single = CacheTree("/r", recursive=False)
    assert single.covers("/r") and not single.covers("/r/a")
    tree.read("/r/a", stat(2), None)
    tree.read("/r", stat(1), None)
    assert tree.rebuild_paths() == ["/r", "/r/a"]


def test_a_rebuild_tells_nodes_found_gone_first_deepest_first() -> None:
    tree = CacheTree("/r", recursive=True)
    for path in ("/r", "/r/a", "/r/a/b", "/r/c"):
        tree.read(path, stat(len(path)), None)
    events = tree.read("/r/c", stat(4, version=1), None) + tree.gone("/r/a") + tree.gone("/r/a/b")
    assert [(e.type, e.path) for e in deletions_first(events)] == [
        (DELETED, "/r/a/b"),
        (DELETED, "/r/a"),
        (CHANGED, "/r/c"),
    ]


def test_compressed_data_is_gzip_as_curator_writes_it() -> None:
    """Curator 5.6 and later on JDK 16 and later: MTIME 0, XFL 0, OS 255 (checked against
    Java's bytes in interop/test_cache_interop.py); empty data is Curator's constant."""
    data = b"hello " * 20
    written = compress(data)
    assert written[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert gzip.decompress(written) == data
    assert compress(b"") == bytes.fromhex("1f8b08000000000000ff03000000000000000000")


def test_a_compressed_data_error_names_the_node_and_pickles() -> None:
    error = CompressedDataError("/n", "empty")
    assert str(error) == "Compressed data that does not unzip: /n: empty"
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.reason, str(again)) == ("/n", "empty", str(error))
    assert isinstance(error, ValueError)


def test_options_are_members_or_names_and_anything_else_is_named() -> None:
    assert check_options(["SINGLE_NODE_CACHE", CacheOption.COMPRESSED_DATA]) == {
        CacheOption.SINGLE_NODE_CACHE,
        CacheOption.COMPRESSED_DATA,
    }
    assert check_options(None) == frozenset() and check_options("COMPRESSED_DATA")
    with pytest.raises(ValueError, match="not an option of CuratorCache: 'SINGLE'"):
        check_options(["SINGLE"])
    with pytest.raises(TypeError, match=r"options must be CuratorCache\.Options, not 3"):
        check_options([3])


# -- listeners -----------------------------------------------------------------------------------

A0 = ChildData("/r/a", stat(2), b"0")
A1 = ChildData("/r/a", stat(2, version=1), b"1")
ROOT = ChildData("/r", stat(1), b"r")


def play(listener: Any) -> None:
    """What a cache tells: the root and ``a`` created, ``a`` changed, initialized, ``a``
    deleted."""
    target = as_listener(listener)
    target.event(CREATED, None, ROOT)
    target.event(CREATED, None, A0)
    target.event(CHANGED, A0, A1)
    target.initialized()
    target.event(DELETED, A1, None)


def test_any_callable_is_a_listener_and_anything_else_is_refused_by_name() -> None:
    told: list[tuple[Any, ...]] = []
    play(lambda *args: told.append(args))
    assert told == [(CREATED, None, ROOT), (CREATED, None, A0), (CHANGED, A0, A1),
                    (DELETED, A1, None)]  # fmt: skip
    with pytest.raises(TypeError, match="a cache listener must have event"):
        as_listener(3)

    class EventOnly:
        def event(self, *args: Any) -> None:
            told.append(args)

    play(EventOnly())  # no initialized(): fine
    assert len(told) == 8


def test_the_builder_makes_a_listener_of_parts_told_in_order() -> None:
    told: list[tuple[Any, ...]] = []
    listener = (
        CuratorCacheListener.builder()
        .for_creates(lambda node: told.append(("create", node.path)))
        .for_changes(lambda old, new: told.append(("change", old.data, new.data)))
        .for_creates_and_changes(lambda old, new: told.append(("c&c", old, new.path)))
        .for_deletes(lambda old: told.append(("delete", old.data)))
        .for_all(lambda kind, old, new: told.append(("all", kind.name)))
        .for_initialized(lambda: told.append(("initialized",)))
        .build()
    )
    assert isinstance(listener, CuratorCacheListener)
    play(listener)
    assert told == [
        ("create", "/r"), ("c&c", None, "/r"), ("all", "NODE_CREATED"),
        ("create", "/r/a"), ("c&c", None, "/r/a"), ("all", "NODE_CREATED"),
        ("change", b"0", b"1"), ("c&c", A0, "/r/a"), ("all", "NODE_CHANGED"),
        ("initialized",),
        ("delete", b"1"), ("all", "NODE_DELETED"),
    ]  # fmt: skip


def test_a_listener_built_after_initialized_hears_nothing_of_the_first_load() -> None:
    told: list[str] = []
    listener = (
        CuratorCacheListener.builder()
        .for_all(lambda kind, old, new: told.append(kind.name))
        .after_initialized()
        .build()
    )
    play(listener)
    assert told == ["NODE_DELETED"]


def test_a_path_children_cache_listener_hears_of_the_children_not_of_the_root() -> None:
    told: list[PathChildrenCacheEvent] = []
    client = object()

    class Listener:
        def child_event(self, given: object, event: PathChildrenCacheEvent) -> None:
            assert given is client
            told.append(event)

    play(CuratorCacheListener.builder().for_path_children_cache("/r", client, Listener()).build())
    assert [(e.type.name, e.data and e.data.data) for e in told] == [
        ("CHILD_ADDED", b"0"),
        ("CHILD_UPDATED", b"1"),
        ("INITIALIZED", None),
        ("CHILD_REMOVED", b"1"),
    ]
    assert told[0].type is PathChildrenCacheEvent.Type.CHILD_ADDED


def test_a_tree_cache_listener_hears_every_node_with_the_old_data_of_an_update() -> None:
    told: list[TreeCacheEvent] = []
    listener = (
        CuratorCacheListener.builder()
        .for_tree_cache("client", lambda client, event: told.append(event))
        .build()
    )
    play(listener)
    assert [(e.type.name, e.data and e.data.path, e.old_data) for e in told] == [
        ("NODE_ADDED", "/r", None),
        ("NODE_ADDED", "/r/a", None),
        ("NODE_UPDATED", "/r/a", A0),
        ("INITIALIZED", None, None),
        ("NODE_REMOVED", "/r/a", None),
    ]


def test_a_node_cache_listener_hears_each_event_as_node_changed() -> None:
    told: list[str] = []

    class Listener:
        def node_changed(self) -> None:
            told.append("changed")

    play(CuratorCacheListener.builder().for_node_cache(Listener()).build())
    play(CuratorCacheListener.builder().for_node_cache(lambda: told.append("call")).build())
    assert told == ["changed"] * 4 + ["call"] * 4


@pytest.mark.parametrize(
    "part",
    ["for_creates", "for_changes", "for_creates_and_changes", "for_deletes", "for_initialized",
     "for_node_cache", "for_all"],
)  # fmt: skip
def test_a_builder_refuses_a_part_that_is_not_callable_by_name(part: str) -> None:
    with pytest.raises(TypeError, match="listener must"):
        getattr(CuratorCacheListener.builder(), part)(3)


def test_a_built_listener_returns_what_awaits_its_parts_awaitables_in_order() -> None:
    import asyncio

    told: list[str] = []

    async def note(what: str) -> None:
        told.append(what)

    listener = (
        CuratorCacheListener.builder()
        .for_creates(lambda node: note(f"first {node.path}"))
        .for_all(lambda kind, old, new: note(f"second {kind.name}"))
        .for_creates(lambda node: None)
        .build()
    )
    awaitable = listener.event(CREATED, None, ROOT)
    assert told == []
    asyncio.run(awaitable)
    assert told == ["first /r", "second NODE_CREATED"]
    assert CuratorCacheListener.builder().build().event(CREATED, None, ROOT) is None


def test_a_cache_event_unpacks_as_a_listener_is_called() -> None:
    event = CacheEvent(CHANGED, A0, A1)
    kind, old, new = event
    assert (kind, old, new, event.path) == (CHANGED, A0, A1, "/r/a")
    assert event == CacheEvent(CHANGED, A0, A1) and "NODE_CHANGED" in repr(event)
