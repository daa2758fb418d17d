"""Scenarios of the nodes' recipes across languages at their edges, each written from what
Curator does and run against it (5.4 and 5.9 alike): the adapters of a built listener with
``after_initialized()``, on a tree and on a node made later, on both front ends; gzip that
Curator's ``COMPRESSED_DATA`` cannot unzip (garbage after it, two members, not gzip at all) left
out by both caches; a member id read from a path, a bad path refused; and the ``pycurator``
command on Java's recipes: ``inspect`` of a Java group and a Java PersistentTtlNode, ``watch
--json`` beside a Java cache."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    CacheOption,
    CompressedDataError,
    CuratorCache,
    CuratorCacheListener,
    GroupMember,
    aio,
)
from pycurator._protocol.cache import compress
from pycurator.testing import (
    SOON,
    ClientFactory,
    JavaCuratorCache,
    JavaGroupMember,
    JavaPersistentTtlNode,
    eventually,
    java_local_address,
    session_of,
)
from pycurator.testing._helpers import steady
from pycurator.testing._java_calls import (
    CURATOR_RECIPES,
    java_bytes,
    proxy,
    python_bytes,
    recipe_class,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.cli_support import run_cli, start_cli
from tests.test_cli_ttl import inspected_ttl_node
from tests.test_cli_views import Lines

from .conftest import CuratorFactory
from .test_cache_interop import server_tree
from .test_recipe_scenarios import Heard, _event_of, hold_the_root
from .test_recipe_scenarios import closing as closing  # the fixture
from .test_recipe_scenarios_more import settle

pytestmark = pytest.mark.usefixtures("no_orphans")

_CACHE = f"{CURATOR_RECIPES}.cache"


# -- the adapters of a built listener, after_initialized ------------------------------------


def _node_of(data: Any) -> tuple[str, bytes | None] | None:
    return None if data is None else (data.path, data.data)


def _java_node_of(data: Any) -> tuple[str, bytes | None] | None:
    return None if data is None else (str(data.getPath()), python_bytes(data.getData()))


def _python_adapters(
    cache: CuratorCache | aio.CuratorCache, root: str, client: Any, heard: Heard, *, awaits: bool
) -> None:
    """A listener built of two PathChildrenCache adapters (of ``root`` and of ``root/a``), a
    TreeCache and a NodeCache adapter, after_initialized; each records into ``heard``. With
    ``awaits``, each adapted listener is a coroutine function (the asyncio front end)."""

    def children_of(tag: str) -> Callable[[Any, Any], Any]:
        def child(given: Any, event: Any) -> None:
            assert given is client
            heard.add((tag, event.type.name, _node_of(event.data)))

        return _awaited(child) if awaits else child

    def tree(given: Any, event: Any) -> None:
        assert given is client
        heard.add(("tree", event.type.name, _node_of(event.data), _node_of(event.old_data)))

    def node() -> None:
        heard.add(("node",))

    cache.add_listener(
        CuratorCacheListener.builder()
        .for_path_children_cache(root, client, children_of("children"))
        .for_path_children_cache(f"{root}/a", client, children_of("children of a"))
        .for_tree_cache(client, _awaited(tree) if awaits else tree)
        .for_node_cache(_awaited(node) if awaits else node)
        .after_initialized()
        .build()
    )


def _awaited(function: Callable[..., None]) -> Callable[..., Any]:
    async def call(*args: Any) -> None:
        function(*args)

    return call


def _java_adapters(cache: JavaCuratorCache, root: str, curator: Any, heard: Heard) -> Any:
    """Curator's builder, the same parts as :func:`_python_adapters`; what the JVM must keep."""

    def children_of(tag: str) -> Any:
        def child(_client: Any, event: Any) -> None:
            heard.add((tag, str(event.getType().name()), _java_node_of(event.getData())))

        return proxy(f"{_CACHE}.PathChildrenCacheListener", {"childEvent": child})

    def tree(_client: Any, event: Any) -> None:
        heard.add(
            (
                "tree",
                str(event.getType().name()),
                _java_node_of(event.getData()),
                _java_node_of(event.getOldData()),
            )
        )

    parts = [
        children_of("children"),
        children_of("children of a"),
        proxy(f"{_CACHE}.TreeCacheListener", {"childEvent": tree}),
        proxy(f"{_CACHE}.NodeCacheListener", {"nodeChanged": lambda: heard.add(("node",))}),
    ]
    built = (
        recipe_class("cache.CuratorCacheListener")
        .builder()
        .forPathChildrenCache(root, curator, parts[0])
        .forPathChildrenCache(f"{root}/a", curator, parts[1])
        .forTreeCache(curator, parts[2])
        .forNodeCache(parts[3])
        .afterInitialized()
        .build()
    )
    cache.java.listenable().addListener(built)
    return parts, built


def _writes(zk: KazooClient, curator: Any, root: str) -> list[Callable[[], object]]:
    """Writes of both sides at and below ``root``, which exists with a child ``a``."""
    return [
        lambda: curator.create().forPath(f"{root}/a/b", java_bytes(b"b")),
        lambda: zk.set(f"{root}/a", b"a2"),
        lambda: zk.set(root, b"r2"),
        lambda: zk.create(f"{root}/c", b"c"),
        lambda: curator.delete().forPath(f"{root}/a/b"),
        lambda: curator.setData().forPath(f"{root}/a", java_bytes(b"a3")),
        lambda: zk.delete(f"{root}/a"),
        lambda: curator.delete().deletingChildrenIfNeeded().forPath(root),
        lambda: zk.create(root, b"again"),
    ]


@pytest.mark.parametrize("single", [False, True], ids=["tree", "single-node-made-later"])
def test_adapters_after_initialized_tell_what_javas_tell(
    single: bool, zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """A listener built of PathChildrenCache adapters (of the cache's root, and of a child of
    it: that one is told the root's own events as a child's, as Curator's), a TreeCache and a
    NodeCache adapter, ``after_initialized()``: nothing of the first load but INITIALIZED (the
    NodeCache adapter hears no INITIALIZED), then the same events as Curator's, in the same
    order, for writes of both sides, the root deleted and made again. On a
    SINGLE_NODE_CACHE whose node is made after the start, the same holds of the node alone."""
    root = f"{zk_path}/adapted"
    options = (CacheOption.SINGLE_NODE_CACHE,) if single else ()
    if single:
        zk.ensure_path(zk_path)
    else:
        zk.create(f"{root}/a", b"a", makepath=True)
    python = CuratorCache(zk, root, options)
    java = JavaCuratorCache(curator, root, [option.name for option in options])
    closing += [python, java]
    ours, theirs = Heard(), Heard()
    _python_adapters(python, root, zk, ours, awaits=False)
    kept = _java_adapters(java, root, curator, theirs)
    python.start()
    java.start()
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    writes = _writes(zk, curator, root)
    if single:
        writes = [lambda: zk.create(f"{root}/a", b"a", makepath=True), *writes]
    for write in writes:
        write()
        if single:
            hold_the_root(zk, root, python, java)
        else:
            settle(zk, root, python, java)
        steady(lambda: (len(ours.items), len(theirs.items)))
    assert ours.items == theirs.items
    initialized = [("children", "INITIALIZED", None), ("children of a", "INITIALIZED", None),
                   ("tree", "INITIALIZED", None, None)]  # fmt: skip
    assert ours.items[:3] == initialized
    assert ("tree", "NODE_ADDED", (root, b"again"), None) in ours.items
    assert ("children of a", "CHILD_ADDED", (root, b"again")) in ours.items
    assert ("children", "CHILD_ADDED", (root, b"again")) not in ours.items
    assert kept is not None


def test_an_asyncio_caches_adapted_coroutines_are_told_what_javas_listeners_are(
    zk: KazooClient, curator: Any, zk_path: str
) -> None:
    """The same built listener on a ``pycurator.aio`` cache, each adapted listener a
    coroutine function: run on the loop, in order, told what Curator's are."""
    root = f"{zk_path}/adapted"
    zk.create(f"{root}/a", b"a", makepath=True)
    java = JavaCuratorCache(curator, root)
    theirs = Heard()
    kept = _java_adapters(java, root, curator, theirs)
    ours = Heard()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cache = aio.CuratorCache(zk, root)
        _python_adapters(cache, root, zk, ours, awaits=True)
        await cache.start()
        try:
            await loop.run_in_executor(None, java.start)
            assert await cache.wait_initialized(SOON)
            assert await loop.run_in_executor(None, java.initialized.wait, SOON)
            for write in _writes(zk, curator, root):
                await loop.run_in_executor(None, write)
                await loop.run_in_executor(None, settle, zk, root, cache, java)
            await loop.run_in_executor(None, steady, lambda: (len(ours.items), len(theirs.items)))
        finally:
            await cache.close()

    with java:
        asyncio.run(main())
    assert ours.items == theirs.items
    assert len(ours.items) > 20 and kept is not None


# -- COMPRESSED_DATA: gzip Curator cannot unzip ---------------------------------------------


def _named_gzip(data: bytes) -> bytes:
    """``data`` as Python's gzip module writes it with a file name and a time (header
    fields Curator's writer leaves out and its reader skips)."""
    out = io.BytesIO()
    with gzip.GzipFile(filename="data.txt", mode="wb", fileobj=out, mtime=1_700_000_000) as file:
        file.write(data)
    return out.getvalue()


def test_gzip_curator_cannot_unzip_is_left_out_by_both_and_told_once_it_unzips(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """COMPRESSED_DATA caches of both sides: data Curator's gzip reader refuses (raw bytes,
    gzip with garbage after it, two gzip members one after the other: "Expected just one
    GZip block, without garbage in the end") is not held by either and told by neither (a
    node held keeps its data, unchanged); ours tells each to its exception handler as a
    CompressedDataError naming the node. Gzip with a file name and a time is read by both.
    Once each node holds gzip Curator writes, both tell it, alike."""
    root = f"{zk_path}/gz"
    zk.create(root, compress(b"r"), makepath=True)
    zk.create(f"{root}/held", compress(b"h"))
    errors: list[Exception] = []
    python = CuratorCache(zk, root, [CacheOption.COMPRESSED_DATA], exception_handler=errors.append)
    heard = Heard()
    python.add_listener(lambda *event: heard.add(_event_of(*event)))
    java = JavaCuratorCache(curator, root, ["COMPRESSED_DATA"])
    closing += [python, java]
    python.start()
    java.start()
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    first = (len(heard.items), len(java.events))
    bad = {
        "raw": b"plain",
        "garbage": compress(b"g") + b"junk",
        "members": compress(b"one") + compress(b"two"),
    }
    zk.create(f"{root}/raw", bad["raw"])
    curator.create().forPath(f"{root}/garbage", java_bytes(bad["garbage"]))
    zk.create(f"{root}/members", bad["members"])
    zk.set(f"{root}/held", bad["garbage"])
    curator.setData().forPath(f"{root}/held", java_bytes(bad["members"]))
    zk.create(f"{root}/named", _named_gzip(b"named"))
    zk.create(f"{root}/marker", compress(b"m"))  # read after all the above, on both sides
    for cache in (python, java):
        eventually(lambda cache=cache: cache.get(f"{root}/marker") is not None)  # type: ignore[misc]
    steady(lambda: (len(heard.items), len(java.events)))
    for cache in (python, java):
        held = {node.path: node.data for node in cache}
        assert held == {root: b"r", f"{root}/held": b"h", f"{root}/named": b"named",
                        f"{root}/marker": b"m"}, cache  # fmt: skip
    refused = {error.path for error in errors if isinstance(error, CompressedDataError)}
    assert refused == {f"{root}/{name}" for name in bad} | {f"{root}/held"}
    for name in ("raw", "garbage", "members", "held"):
        zk.set(f"{root}/{name}", compress(name.encode()))
    versions = {path: version for path, (_, version) in server_tree(zk, root).items()}
    for cache in (python, java):
        eventually(
            lambda cache=cache: {node.path: node.stat.version for node in cache} == versions,  # type: ignore[misc]
            what=f"{cache!r} holds every node at its version",
        )
    steady(lambda: (len(heard.items), len(java.events)))
    ours = heard.items[first[0] :]
    theirs = [(e.type, e.path, e.old_data, e.data) for e in java.events[first[1] :]]
    assert ours == theirs
    assert ours == [
        ("NODE_CREATED", f"{root}/named", None, b"named"),
        ("NODE_CREATED", f"{root}/marker", None, b"m"),
        ("NODE_CREATED", f"{root}/raw", None, b"raw"),
        ("NODE_CREATED", f"{root}/garbage", None, b"garbage"),
        ("NODE_CREATED", f"{root}/members", None, b"members"),
        ("NODE_CHANGED", f"{root}/held", b"h", b"held"),
    ]


def test_the_children_of_a_node_that_does_not_unzip_are_held_by_ours_not_by_curators_load(
    zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """A node whose data does not unzip, with a child, in COMPRESSED_DATA caches: neither
    holds the node. Curator's first load lists no children of a node it could not read, so
    its cache misses that child (until it changes), though it holds a child made there later;
    ours holds every node it can read, the first child too: a cache equals the server's tree
    but for what does not unzip (docs/cache.md)."""
    root = f"{zk_path}/gz"
    zk.create(root, compress(b"r"), makepath=True)
    zk.create(f"{root}/bad", b"not gzip")
    zk.create(f"{root}/bad/first", compress(b"1"))
    errors: list[Exception] = []
    python = CuratorCache(zk, root, [CacheOption.COMPRESSED_DATA], exception_handler=errors.append)
    java = JavaCuratorCache(curator, root, ["COMPRESSED_DATA"])
    closing += [python, java]
    python.start()
    java.start()
    assert python.wait_initialized(SOON) and java.initialized.wait(SOON)
    zk.create(f"{root}/bad/later", compress(b"2"))
    for cache in (python, java):
        eventually(lambda cache=cache: cache.get(f"{root}/bad/later") is not None)  # type: ignore[misc]
    assert {node.path: node.data for node in python} == {
        root: b"r",
        f"{root}/bad/first": b"1",
        f"{root}/bad/later": b"2",
    }
    assert {node.path: node.data for node in java} == {root: b"r", f"{root}/bad/later": b"2"}
    assert [(type(error), error.path) for error in errors[:1]] == [  # type: ignore[attr-defined]
        (CompressedDataError, f"{root}/bad")
    ]


# -- GroupMember ----------------------------------------------------------------------------


def test_a_members_id_is_read_from_a_path_as_curators_and_a_bad_path_is_refused_alike(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """``id_from_path``: the last segment of the path, whatever group it names, as Curator's
    ``ZKPaths.getNodeFromPath``; a path that is none (no leading '/', a trailing '/') is
    refused by both, naming what is wrong. Nothing is made either way."""
    group = f"{zk_path}/group"
    client = zk_client_factory()
    pythons: list[GroupMember | aio.GroupMember] = [
        GroupMember(client, group, "python"),
        aio.GroupMember(client, group, "aio"),
    ]
    with JavaGroupMember(curator, group, "java", b"j") as java:
        for python in pythons:
            for path in (f"{group}/m1", f"{group}/m1/deeper", "/elsewhere/x", "/", f"{group}/a b"):
                assert python.id_from_path(path) == java.id_from_path(path), path
            for path, words in (
                ("m1", "Path must start with / character"),
                (f"{group}/", "Path must not end with / character"),
            ):
                with pytest.raises(Exception, match=words):
                    java.id_from_path(path)
                with pytest.raises(ValueError, match=words):
                    python.id_from_path(path)
    assert client.exists(group) is None


# -- the pycurator command on Java's recipes ------------------------------------------------


def test_inspect_shows_a_java_groups_members_with_their_sessions_and_curators_default_data(
    zk_server: ZooKeeperTarget, curator_factory: CuratorFactory, zk_path: str
) -> None:
    """Two Java GroupMembers, one with Curator's default payload (the host's address): the
    table and the JSON name each member, its Java session and its data."""
    group = f"{zk_path}/group"
    clients = [curator_factory(), curator_factory()]
    members = [
        JavaGroupMember(clients[0], group, "java-a"),
        JavaGroupMember(clients[1], group, "java-b", b"10.1.2.3:8080"),
    ]
    with members[0], members[1]:
        for member in members:
            member.start()
        everyone = {"java-a": java_local_address(), "java-b": b"10.1.2.3:8080"}
        eventually(lambda: members[0].get_current_members() == everyone, what="both members")
        table = run_cli("inspect", "--hosts", zk_server.hosts, group)
        shown = run_cli("inspect", "--json", "--hosts", zk_server.hosts, group)
    assert table.returncode == 0 and shown.returncode == 0, table.stderr + shown.stderr
    sessions = [f"0x{session_of(client)[0]:x}" for client in clients]
    lines = table.stdout.splitlines()
    assert lines[0] == f"{group}: group, 2 member(s)"
    assert [line.split()[:2] for line in lines[2:]] == [
        ["java-a", sessions[0]],
        ["java-b", sessions[1]],
    ]
    assert lines[2].endswith(java_local_address().decode()) and lines[3].endswith("10.1.2.3:8080")
    document = json.loads(shown.stdout)
    assert (document["layout"], document["member_count"]) == ("group", 2)
    assert [(p["node"], p["kind"], p["session"], p["data"]) for p in document["participants"]] == [
        (f"{group}/java-a", "member", sessions[0], java_local_address().decode()),
        (f"{group}/java-b", "member", sessions[1], "10.1.2.3:8080"),
    ]


def test_inspect_tells_when_a_java_ttl_node_expires(
    zk_server: ZooKeeperTarget, curator: Any, zk: KazooClient, zk_path: str
) -> None:
    """A Java PersistentTtlNode (its parent a container on 5.4, a TTL node on 5.9), touched
    a few times: ``inspect`` reads it as kept by a PersistentTtlNode, with its TTL and when it
    expires, as of a Python one; the pair is reaped once the Java node is closed."""
    path = f"{zk_path}/java"
    with JavaPersistentTtlNode(curator, path, 2.0, b"java") as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        inspected_ttl_node(zk_server.hosts, zk, path)
    eventually(lambda: zk.exists(path) is None, what="the pair reaped")


def _decoded(document: dict[str, Any], key: str) -> bytes | None:
    value = document[key]
    if value is None:
        return None
    if document[f"{key}_encoding"] == "base64":
        return base64.b64decode(value)
    return str(value).encode()


def test_watch_json_tells_what_a_java_cache_tells_for_both_sides_writes(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    curator: Any,
    zk_path: str,
    closing: list[Any],
) -> None:
    """``pycurator watch --json --initial PATH`` beside a Java CuratorCache of PATH: the nodes
    there first, as created, then for writes of both sides (Java's null data, bytes that are
    not UTF-8, a node made again) one document per event, each the event Java's cache tells,
    in its order, with the data before and after."""
    root = f"{zk_path}/watched"
    zk.create(f"{root}/old/deep", b"\xff\x00", makepath=True)
    java = JavaCuratorCache(curator, root)
    closing.append(java)
    java.start()
    assert java.initialized.wait(SOON)
    process = start_cli("watch", "--json", "--initial", "--hosts", zk_server.hosts, root)
    try:
        lines = Lines(process)
        initialized = json.loads(lines.until(lambda line: '"initialized"' in line))
        assert initialized == {"initialized": True, "path": root, "nodes": 3}
        first = [d for d in map(json.loads, lines.seen[:-1]) if "event" in d]
        assert {(d["event"], d["path"], _decoded(d, "data")) for d in first} == {
            ("created", e.path, e.data) for e in java.events
        }
        mark = len(java.events)
        writes: list[Callable[[], object]] = [
            lambda: curator.create().forPath(f"{root}/null", None),
            lambda: zk.set(f"{root}/null", "é".encode()),
            lambda: curator.setData().forPath(f"{root}/old/deep", java_bytes(b"\x00\x01")),
            lambda: zk.delete(f"{root}/old/deep"),
            lambda: curator.create().forPath(f"{root}/old/deep", java_bytes(b"\xff\x00")),
            lambda: curator.delete().deletingChildrenIfNeeded().forPath(f"{root}/old"),
        ]
        for write in writes:
            write()
            settle(zk, root, java)
        theirs = java.wait_for_events(mark + 7, SOON)[mark:]
        assert len(theirs) == 7, theirs
        told = len(lines.seen)
        lines.until(lambda _line: len(lines.seen) >= told + len(theirs))
        documents = [json.loads(line) for line in lines.seen[told:]]
        ours = [
            (d["event"], d["path"], _decoded(d, "old_data"), _decoded(d, "data")) for d in documents
        ]
        kinds = {"NODE_CREATED": "created", "NODE_CHANGED": "changed", "NODE_DELETED": "deleted"}
        assert ours == [(kinds[e.type], e.path, e.old_data, e.data) for e in theirs]
    finally:
        process.kill()
        process.communicate(timeout=SOON)
