"""More scenarios across languages, each written from what Curator does and run against it (Curator
5.4 and 5.9 alike): a Java and a Python ``CuratorCache`` of one tree told the same events for
writes of either side (data of every size, identical data, nodes made again, transactions,
sessions that end), their state after close; ``GroupMember`` views of members of both sides;
``PersistentNode`` of every mode beside Java's; ``PersistentTtlNode`` as Java's children read
it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoChildrenForEphemeralsError

from pycurator import (
    CacheOption,
    CreateMode,
    CuratorCache,
    CuratorCacheListener,
    GroupMember,
    PersistentNode,
    PersistentTtlNode,
)
from pycurator._protocol.cache import compress
from pycurator.testing import (
    SOON,
    ClientFactory,
    FaultProxy,
    JavaCuratorCache,
    JavaGroupMember,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    children,
    created_modes,
    curator_client,
    eventually,
    jclass,
    session_of,
)
from pycurator.testing._java_calls import (
    CURATOR_RECIPES,
    java_bytes,
    java_mode,
    proxy,
    python_bytes,
    recipe_class,
)
from pycurator.testing._txnlog import creations
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .conftest import CuratorFactory
from .test_cache_interop import server_tree
from .test_recipe_scenarios import Heard, _event_of
from .test_recipe_scenarios import closing as closing  # the fixture

pytestmark = pytest.mark.usefixtures("no_orphans")

Event = tuple[str, str, bytes | None, bytes | None]


# -- CuratorCache -------------------------------------------------------------------------------


def settle(zk: KazooClient, root: str, *caches: Iterable[Any]) -> None:
    """Wait until each cache (Python's or Java's) holds what the server holds at or below
    ``root`` (each node's data and version): every write made so far has been told."""

    def same() -> bool:
        tree = server_tree(zk, root)
        return all({node.path: (node.data, node.stat.version) for node in cache} == tree
                   for cache in caches)  # fmt: skip

    eventually(same, what="the caches hold what the server holds")


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
        """Wait until both hold what the server holds."""
        settle(self.zk, self.root, self.python, self.java)

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
def test_a_transaction_that_makes_one_node_and_deletes_another_is_told_in_curators_order(
    writer: str, zk: KazooClient, curator: Any, zk_path: str, closing: list[Any]
) -> None:
    """A node made and another deleted in one transaction (a rename, or a member replaced):
    Curator tells the deletion first (told as its watch hears it, where a creation waits for
    its read), so that a listener never sees both nodes at once; so must a Python cache."""
    root = f"{zk_path}/tx"
    zk.create(f"{root}/old", b"o", makepath=True)
    caches = Caches(zk, curator, root, closing)
    _commit(
        _transaction(writer, zk, curator), root, [("create", "new", b"n"), ("delete", "old", b"")]
    )
    caches.settle()
    ours, theirs = caches.told(2)
    assert theirs == [
        ("NODE_DELETED", f"{root}/old", b"o", None),
        ("NODE_CREATED", f"{root}/new", None, b"n"),
    ]
    assert ours == theirs


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


# -- GroupMember --------------------------------------------------------------------------------


def test_members_of_both_sides_joining_changing_and_leaving_are_seen_alike(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """Two Java and two Python members, each on its own client, join, change their payloads
    and leave in turn, and one joins again under its old id: after each step every member
    open sees the same members as the server holds; a member not started, or closed, sees
    itself alone, with its last payload, as Curator's does."""
    group = f"{zk_path}/group"
    members: dict[str, Any] = {
        "j1": JavaGroupMember(curator_factory(), group, "j1", b"j1"),
        "p1": GroupMember(zk_client_factory(), group, "p1", b"p1"),
        "j2": JavaGroupMember(curator_factory(), group, "j2", b"j2"),
        "p2": GroupMember(zk_client_factory(), group, "p2", b"p2"),
    }
    assert {name: m.get_current_members() for name, m in members.items()} == {
        name: {name: name.encode()} for name in members
    }
    expected: dict[str, bytes] = {}
    started: list[str] = []

    def all_see(what: str) -> None:
        eventually(
            lambda: all(members[name].get_current_members() == expected for name in started),
            what=f"every member sees {what}: {expected}",
        )

    try:
        for name in members:
            members[name].start()
            started.append(name)
            expected[name] = name.encode()
            all_see(f"{name} join")
        for name in ("p2", "j1", "p1", "j2"):
            members[name].set_this_data(b"new " + name.encode())
            expected[name] = b"new " + name.encode()
            all_see(f"{name}'s payload")
        for name in ("j1", "p1"):
            members[name].close()
            started.remove(name)
            del expected[name]
            all_see(f"{name} leave")
            assert members[name].get_current_members() == {name: b"new " + name.encode()}
        again = GroupMember(zk_client_factory(), group, "j1", b"back")
        members["j1"] = again
        again.start()
        started.append("j1")
        expected["j1"] = b"back"
        all_see("j1 back, now Python")
    finally:
        for member in members.values():
            member.close()


def test_what_else_the_group_holds_is_read_alike(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """Nodes in the group that no member keeps: a persistent child is a member with its data,
    its own child is not; the group's own data is not. A child with no data at all (Java's
    null) is a member with empty data, where Curator's ``getCurrentMembers`` fails (a
    NullPointerException)."""
    group = f"{zk_path}/group"
    zk.create(f"{group}/stray/child", b"c", makepath=True)
    zk.set(f"{group}/stray", b"s")
    zk.set(group, b"the group's")
    java = JavaGroupMember(curator, group, "java", b"j")
    python = GroupMember(zk_client_factory(), group, "python", b"p")
    with java, python:
        java.start()
        expected = {"java": b"j", "python": b"p", "stray": b"s"}
        eventually(lambda: java.get_current_members() == expected, what="Java sees all")
        eventually(lambda: python.get_current_members() == expected, what="Python sees all")
        zk.delete(f"{group}/stray", recursive=True)
        del expected["stray"]
        eventually(lambda: java.get_current_members() == expected, what="Java sees it gone")
        eventually(lambda: python.get_current_members() == expected, what="Python sees it gone")
        curator.create().forPath(f"{group}/null", None)
        expected["null"] = b""
        eventually(lambda: python.get_current_members() == expected, what="Python sees null")


def test_a_group_deleted_whole_is_made_again_with_its_members(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """The group's node and its members deleted in one transaction: each side's member makes
    its node again (and the group's), and both see both again."""
    group = f"{zk_path}/group"
    java = JavaGroupMember(curator, group, "java", b"j")
    python = GroupMember(zk_client_factory(), group, "python", b"p")
    with java, python:
        java.start()
        everyone = {"java": b"j", "python": b"p"}
        eventually(
            lambda: java.get_current_members() == python.get_current_members() == everyone,
            what="both see both",
        )
        transaction = zk.transaction()
        for path in (f"{group}/java", f"{group}/python", group):
            transaction.delete(path)
        assert transaction.commit() == [True, True, True]
        eventually(
            lambda: sorted(children(zk, group)) == ["java", "python"], what="both made again"
        )
        eventually(
            lambda: java.get_current_members() == python.get_current_members() == everyone,
            what="both see both again",
        )


@pytest.mark.parametrize("first", ["java", "python"])
def test_a_java_and_a_python_member_of_one_id_share_its_node_and_keep_it(
    first: str, curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """Two members of one id (a misconfigured fleet): the second to start takes the node as
    its own and gives it its payload, both see that one member; when the first closes (and
    deletes the node), the other makes it again with its payload, in its session."""
    client = zk_client_factory()
    group = f"{zk_path}/group"
    members: dict[str, Any] = {
        "java": JavaGroupMember(curator, group, "same", b"java"),
        "python": GroupMember(client, group, "same", b"python"),
    }
    second = "python" if first == "java" else "java"
    sessions = {"java": session_of(curator)[0], "python": client.client_id[0]}
    node = f"{group}/same"
    try:
        members[first].start()
        eventually(lambda: zk.exists(node) is not None, what="the first's node")
        members[second].start()
        eventually(lambda: zk.get(node)[0] == second.encode(), what="the second's data")
        eventually(
            lambda: all(
                member.get_current_members() == {"same": second.encode()}
                for member in members.values()
            ),
            what="both see the second's payload",
        )
        members[first].close()
        eventually(
            lambda: (
                (stat := zk.exists(node)) is not None and stat.ephemeralOwner == sessions[second]
            ),
            what="made again by the second",
        )
        assert zk.get(node)[0] == second.encode()
    finally:
        for member in members.values():
            member.close()


# -- PersistentNode -----------------------------------------------------------------------------

#: A protected name's UUID, as Curator writes it.
PROTECTED_UUID = re.compile(
    r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-"
)
NODE_TTL = 30.0


def java_node(curator: Any, path: str, mode: CreateMode, data: bytes, protected: bool) -> Any:
    """A Java ``PersistentNode`` in ``mode`` (a TTL mode with :data:`NODE_TTL`)."""
    node = JavaPersistentNode(curator, path, mode.name, data, protected)
    if mode.is_ttl:  # Curator's longest constructor (the kit's peer has no ttl)
        node.java = recipe_class("nodes.PersistentNode")(
            curator,
            java_mode(mode.name),
            protected,
            path,
            java_bytes(data),
            int(NODE_TTL * 1000),
            True,
        )
    return node


def _made_under(server_log: Path, parent: str) -> list[tuple[str, str, float | None]]:
    """Every creation below ``parent`` (oldest first): its name (a protected name's UUID as
    ``_c_UUID-``), mode and ttl."""
    return [
        (PROTECTED_UUID.sub("_c_UUID-", made.path[len(parent) + 1 :]), made.mode, made.ttl)
        for made in creations(server_log)
        if made.path.startswith(parent + "/")
    ]


def made_again_with(zk: KazooClient, path: object, data: bytes) -> None:
    """Wait until the node at ``path`` exists with ``data``."""
    eventually(
        lambda: zk.exists(str(path)) is not None and zk.get(str(path))[0] == data,
        what=f"{path} made again with {data!r}",
    )


MODES = [
    (CreateMode.EPHEMERAL, False),
    (CreateMode.EPHEMERAL, True),
    (CreateMode.EPHEMERAL_SEQUENTIAL, False),
    (CreateMode.EPHEMERAL_SEQUENTIAL, True),
    (CreateMode.PERSISTENT, False),
    (CreateMode.PERSISTENT, True),
    (CreateMode.PERSISTENT_SEQUENTIAL, False),
    (CreateMode.PERSISTENT_SEQUENTIAL, True),
    (CreateMode.CONTAINER, False),
    (CreateMode.PERSISTENT_WITH_TTL, False),
    (CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, True),
]


@pytest.mark.parametrize(
    ("mode", "protected"),
    MODES,
    ids=[f"{mode.name.lower()}{'-protected' if protected else ''}" for mode, protected in MODES],
)
def test_a_node_of_each_mode_lives_as_javas_does(
    mode: CreateMode,
    protected: bool,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    zk_server: ZooKeeperTarget,
) -> None:
    """A Java and a Python PersistentNode of one mode, each under a parent of its own: the same
    name, the same creations (mode and ttl, the parent a container); data each sets read by
    the other; data the other side writes over is not written back, but a node the other side
    deletes comes back, twice, under its name with its keeper's latest data; gone once
    closed."""
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    client = zk_client_factory()
    java = java_node(curator, f"{zk_path}/java/node", mode, b"j", protected)
    ttl = NODE_TTL if mode.is_ttl else None
    python = PersistentNode(client, f"{zk_path}/python/node", mode, b"p", protected, ttl=ttl)
    with java, python:
        java.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        paths = {"java": java.actual_path, "python": python.actual_path}
        names = {
            side: PROTECTED_UUID.sub("_c_UUID-", str(path).rsplit("/", 1)[1])
            for side, path in paths.items()
        }
        assert names["java"] == names["python"], names
        java.set_data(b"j2")
        python.set_data(b"p2")
        eventually(lambda: zk.get(str(paths["java"]))[0] == b"j2", what="Java's data read")
        eventually(
            lambda: bytes(curator.getData().forPath(paths["python"])) == b"p2",
            what="Python's data read by Java",
        )
        zk.set(str(paths["java"]), b"theirs")
        curator.setData().forPath(paths["python"], java_bytes(b"theirs"))
        assert (java.get_data(), python.get_data()) == (b"j2", b"p2")
        for _ in range(2):
            zk.delete(str(paths["java"]))
            curator.delete().forPath(paths["python"])
            made_again_with(zk, paths["java"], b"j2")
            made_again_with(zk, paths["python"], b"p2")
        assert {"java": java.actual_path, "python": python.actual_path} == paths
        assert zk.get_children(f"{zk_path}/java") == [str(paths["java"]).rsplit("/", 1)[1]]
        assert zk.get_children(f"{zk_path}/python") == [str(paths["python"]).rsplit("/", 1)[1]]
        made = {
            side: _made_under(zk_server.local.data_dir, f"{zk_path}/{side}")
            for side in ("java", "python")
        }
        assert made["java"] == made["python"]
        parents = created_modes(zk_server.local.data_dir, zk_path)
        assert parents[f"{zk_path}/java"].mode == parents[f"{zk_path}/python"].mode == "CONTAINER"
    for side in ("java", "python"):
        eventually(
            lambda side=side: children(zk, f"{zk_path}/{side}") == [],  # type: ignore[misc]
            what=f"{side}'s node deleted on close",
        )


def test_a_node_under_an_ephemeral_parent_is_made_once_the_parent_goes(
    curator: Any,
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """A node whose parent is ephemeral cannot be made (ZooKeeper refuses children of an
    ephemeral node): Curator's wait gives False, ours raises the server's refusal. Once that
    parent's session ends, Curator's node is made (it keeps trying), and so must ours be: a
    kept node exists while started and connected once nothing stands in its way."""
    owner = curator_factory()
    ephemeral = jclass("org.apache.zookeeper.CreateMode").EPHEMERAL
    zk.ensure_path(zk_path)
    for side in ("java", "python"):
        owner.create().withMode(ephemeral).forPath(f"{zk_path}/{side}", java_bytes(b""))
    java = JavaPersistentNode(curator, f"{zk_path}/java/node", "EPHEMERAL", b"j")
    client = zk_client_factory()
    python = PersistentNode(client, f"{zk_path}/python/node", CreateMode.EPHEMERAL, b"p")
    with java, python:
        java.start()
        assert not java.wait_for_initial_create(1.0)
        with pytest.raises(NoChildrenForEphemeralsError):
            python.wait_for_initial_create(SOON)
        owner.close()
        assert java.wait_for_initial_create(SOON)
        eventually(lambda: zk.exists(f"{zk_path}/python/node") is not None, what="ours made")
        assert python.wait_for_initial_create(SOON)


def test_after_a_reconnect_both_give_their_node_their_data_again(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """Data written over a kept node by someone else stays until the keeper's connection is
    dropped: back, Curator's node (on RECONNECTED) and ours find their node there and write
    their data again."""
    with (
        FaultProxy(zk_server.hosts.split(",")[0]) as fault,
        curator_client(fault.hosts, session_timeout_ms=30_000) as curator,
    ):
        client = zk_client_factory(hosts=fault.hosts, timeout=30.0)
        java = JavaPersistentNode(curator, f"{zk_path}/java", "EPHEMERAL", b"j")
        python = PersistentNode(client, f"{zk_path}/python", CreateMode.EPHEMERAL, b"p")
        with java, python:
            java.start()
            assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
            for side in ("java", "python"):
                zk.set(f"{zk_path}/{side}", b"theirs")
            sessions = (session_of(curator)[0], client.client_id[0])
            fault.drop_connections()
            for side, data in (("java", b"j"), ("python", b"p")):
                eventually(
                    lambda side=side, data=data: zk.get(f"{zk_path}/{side}")[0] == data,  # type: ignore[misc]
                    what=f"{side}'s data written again",
                )
            assert (session_of(curator)[0], client.client_id[0]) == sessions


@pytest.mark.parametrize(
    ("mode", "protected"),
    [(CreateMode.EPHEMERAL, False), (CreateMode.PERSISTENT_SEQUENTIAL, True)],
    ids=["ephemeral", "persistent-sequential-protected"],
)
def test_a_node_whose_parents_the_other_side_deletes_comes_back_with_them(
    mode: CreateMode,
    protected: bool,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """The other side deletes the subtree a kept node is in (in one transaction): its parents
    are made again and the node under its name, by Java's and by ours alike."""
    java = java_node(curator, f"{zk_path}/java/a/b/node", mode, b"j", protected)
    python = PersistentNode(
        zk_client_factory(), f"{zk_path}/python/a/b/node", mode, b"p", protected
    )
    with java, python:
        java.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        paths = {"java": str(java.actual_path), "python": str(python.actual_path)}
        for side, transaction in (("python", JavaTransaction(curator)), ("java", zk.transaction())):
            for path in (paths[side], f"{zk_path}/{side}/a/b", f"{zk_path}/{side}/a"):
                transaction.delete(path)  # at once: a keeper makes its node again at once
            transaction.commit()
        made_again_with(zk, paths["java"], b"j")
        made_again_with(zk, paths["python"], b"p")
        assert {"java": java.actual_path, "python": python.actual_path} == paths


# -- PersistentTtlNode --------------------------------------------------------------------------


def test_a_ttl_node_the_other_side_deletes_comes_back_with_its_touch(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """A Java and a Python PersistentTtlNode, each deleted (with its touch child) by the other
    side: each makes its node again with its latest data, and its touch child again within a
    touch period."""
    ttl = 1.0
    java = JavaPersistentTtlNode(curator, f"{zk_path}/java", ttl, b"j")
    python = PersistentTtlNode(zk_client_factory(), f"{zk_path}/python", ttl, b"p")
    with java, python:
        java.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        java.set_data(b"j2")
        python.set_data(b"p2")
        for side in ("java", "python"):
            eventually(
                lambda side=side: zk.exists(f"{zk_path}/{side}/touch") is not None,  # type: ignore[misc]
                what=f"{side} touched",
            )
        for side, transaction in (("python", JavaTransaction(curator)), ("java", zk.transaction())):
            transaction.delete(f"{zk_path}/{side}/touch")  # at once: a touch may come between
            transaction.delete(f"{zk_path}/{side}")
            transaction.commit()
        for side, data in (("java", b"j2"), ("python", b"p2")):
            eventually(
                lambda side=side, data=data: (  # type: ignore[misc]
                    zk.exists(f"{zk_path}/{side}/touch") is not None
                    and zk.get(f"{zk_path}/{side}")[0] == data
                ),
                what=f"{side}'s node and touch made again",
            )
            assert zk.get_children(f"{zk_path}/{side}") == ["touch"]


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
