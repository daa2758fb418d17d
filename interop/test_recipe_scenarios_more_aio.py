"""The asyncio front end (``pycurator.aio``) in scenarios across languages, against what Curator
does (5.4 and 5.9 alike): a cache's ``async for`` stream told what Java's cache is told for
writes of both sides, transactions among them; group members of both sides seen alike; kept
nodes deleted by Java made again under their names; an asyncio PersistentTtlNode's pair read
by Java and kept by Java's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import CreateMode, aio
from pycurator.testing import (
    SOON,
    ClientFactory,
    JavaCuratorCache,
    JavaGroupMember,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    eventually,
    java_local_address,
)
from pycurator.testing._java_calls import java_bytes

from .conftest import CuratorFactory
from .test_recipe_scenarios import _event_of
from .test_recipe_scenarios_more import JavaTransaction, settle
from .test_recipe_scenarios_more_nodes import PROTECTED_UUID, made_again_with

pytestmark = pytest.mark.usefixtures("no_orphans")


def in_java(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` on a thread of the running loop's executor (Java calls block)."""
    return asyncio.get_running_loop().run_in_executor(None, call, *args)


def test_a_stream_tells_what_javas_cache_tells_for_both_sides_writes(
    zk: KazooClient, curator: Any, zk_path: str
) -> None:
    """Writes of both sides, each awaited in both caches, transactions among them (one that
    makes and sets a node, one that deletes a node and makes it again with the same data):
    the ``async for`` stream tells Java's events, in Java's order, and ends once the cache is
    closed."""
    root = f"{zk_path}/tree"
    zk.ensure_path(root)
    java = JavaCuratorCache(curator, root)

    def made_and_set() -> None:
        ops = JavaTransaction(curator)
        ops.create(f"{root}/tx", b"1")
        ops.set_data(f"{root}/tx", b"2")
        ops.commit()

    def made_again() -> None:
        ops = zk.transaction()
        ops.delete(f"{root}/a/b")
        ops.create(f"{root}/a/b", b"b")
        ops.commit()

    writes: list[Callable[[], object]] = [
        lambda: curator.create().forPath(f"{root}/a", java_bytes(b"a")),
        lambda: zk.create(f"{root}/a/b", b"b"),
        lambda: curator.setData().forPath(f"{root}/a/b", java_bytes(b"b")),
        made_and_set,
        made_again,
        lambda: zk.delete(f"{root}/tx"),
        lambda: curator.delete().deletingChildrenIfNeeded().forPath(f"{root}/a"),
    ]

    async def main() -> list[tuple[str, str, bytes | None, bytes | None]]:
        cache = aio.CuratorCache(zk, root)
        stream = cache.events()
        await cache.start()
        await in_java(java.start)
        assert await cache.wait_initialized(SOON)
        assert await in_java(java.initialized.wait, SOON)
        told = []
        try:
            for write in writes:
                await in_java(write)
                await in_java(settle, zk, root, cache, java)
        finally:
            await cache.close()

        async def to_the_end() -> None:
            async for event in stream:
                told.append(_event_of(*event))

        await asyncio.wait_for(to_the_end(), SOON)
        return told

    with java:
        ours = asyncio.run(main())
        theirs = java.wait_for_events(len(ours), SOON)
        assert ours == [(e.type, e.path, e.old_data, e.data) for e in theirs]
        assert len(ours) == 10, ours


def test_asyncio_and_java_members_see_each_other_join_change_and_leave(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """Two asyncio members and a Java one: each join, payload and leave seen alike by every
    member open; a closed asyncio member sees itself alone, as Curator's."""
    group = f"{zk_path}/group"
    java = JavaGroupMember(curator_factory(), group, "java", b"j")

    async def main() -> None:
        first = aio.GroupMember(zk_client_factory(), group, "first", b"1")
        second = aio.GroupMember(zk_client_factory(), group, "second")  # the host's address
        pythons = [first, second]
        expected = {"java": b"j", "first": b"1", "second": java_local_address()}

        async def all_see(what: str) -> None:
            def seen() -> bool:
                views = [member.get_current_members() for member in pythons]
                return all(view == expected for view in [*views, java.get_current_members()])

            await in_java(eventually, seen, SOON, what)

        await first.start()
        await in_java(java.start)
        await second.start()
        try:
            await all_see("every member")
            first.set_this_data(b"1b")
            await in_java(java.set_this_data, b"j2")
            expected.update({"first": b"1b", "java": b"j2"})
            await all_see("the new payloads")
            await first.close()
            pythons.remove(first)
            del expected["first"]
            await all_see("the first gone")
            assert first.get_current_members() == {"first": b"1b"}
            await in_java(java.close)
            del expected["java"]
            await in_java(eventually, lambda: second.get_current_members() == expected)
        finally:
            await first.close()
            await second.close()

    with java:
        asyncio.run(main())


@pytest.mark.parametrize(
    ("mode", "protected"),
    [(CreateMode.EPHEMERAL_SEQUENTIAL, True), (CreateMode.PERSISTENT_SEQUENTIAL, False)],
    ids=["ephemeral-sequential-protected", "persistent-sequential"],
)
def test_asyncio_and_java_sequential_nodes_are_made_again_under_their_names(
    mode: CreateMode,
    protected: bool,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """An asyncio and a Java sequential PersistentNode of one base path, each deleted by the
    other side: each made again under its name (its sequence, and UUID, kept) with its latest
    data; the same shape of name on both sides; both gone once closed."""
    base = f"{zk_path}/seq/node-"
    java = JavaPersistentNode(curator, base, mode.name, b"j", protected)

    async def main() -> None:
        node = aio.PersistentNode(zk_client_factory(), base, mode, b"p", protected)
        with pytest.raises(RuntimeError):
            await node.wait_for_initial_create(0)  # not started, as Curator's
        await node.start()
        await in_java(java.start)
        try:
            assert await node.wait_for_initial_create(SOON)
            assert await in_java(java.wait_for_initial_create, SOON)
            ours, theirs = str(node.actual_path), str(java.actual_path)
            shapes = {PROTECTED_UUID.sub("_c_UUID-", path)[:-10] for path in (ours, theirs)}
            assert len(shapes) == 1 and ours != theirs, (ours, theirs)
            node.set_data(b"p2")
            await in_java(java.set_data, b"j2")
            for _ in range(2):
                await in_java(curator.delete().forPath, ours)
                await in_java(zk.delete, theirs)
                for path, data in ((ours, b"p2"), (theirs, b"j2")):
                    await in_java(made_again_with, zk, path, data)
            assert sorted(zk.get_children(f"{zk_path}/seq")) == sorted(
                path.rsplit("/", 1)[1] for path in (ours, theirs)
            )
        finally:
            await node.close()
        assert node.actual_path is None
        with pytest.raises(RuntimeError):
            await node.wait_for_initial_create(0)  # closed, as Curator's

    with java:
        asyncio.run(main())
    eventually(lambda: zk.get_children(f"{zk_path}/seq") == [], what="both deleted on close")


def test_an_asyncio_ttl_nodes_pair_is_read_by_java_and_kept_by_javas_after_it_closes(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """Java reads an asyncio PersistentTtlNode's data (as set last) and its touch child (the
    host's address, as Curator writes it); a Java PersistentTtlNode of the path keeps the pair
    once the asyncio one closes, past the TTL; once both are closed, the server reaps it."""
    path, ttl = f"{zk_path}/node", 1.0
    java = JavaPersistentTtlNode(curator, path, ttl, b"java")

    async def main() -> None:
        node = aio.PersistentTtlNode(zk_client_factory(), path, ttl, b"python")
        await node.start()
        try:
            assert await node.wait_for_initial_create(SOON)
            node.set_data(b"python 2")
            await in_java(eventually, lambda: bytes(curator.getData().forPath(path)) == b"python 2")
            touch = f"{path}/touch"
            await in_java(eventually, lambda: curator.checkExists().forPath(touch) is not None)
            assert bytes(curator.getData().forPath(touch)) == java_local_address()
            await in_java(java.start)
            assert await in_java(java.wait_for_initial_create, SOON)
        finally:
            await node.close()

    with java:
        asyncio.run(main())
        first = zk.exists(f"{path}/touch")
        assert first is not None
        eventually(
            lambda: (
                (stat := zk.exists(f"{path}/touch")) is not None
                and stat.mtime > first.mtime
                and stat.mtime - first.mtime > ttl * 1000
            ),
            what="touched by Java past the TTL",
        )
        assert zk.get(path)[0] == b"java"  # Java's node found there: given its data
    eventually(lambda: zk.exists(path) is None, what="the pair reaped once both are closed")
