"""More scenarios of nodes that stay across languages, each written from what Curator does and
run against it (Curator 5.4 and 5.9 alike): ``GroupMember`` views of members of both sides
joining, changing, leaving, sharing an id, and of what else a group holds; ``PersistentNode`` of
every mode beside Java's, through deletes by the other side, a dropped connection, an ephemeral
parent; ``PersistentTtlNode`` deleted by the other side."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoChildrenForEphemeralsError

from pycurator import CreateMode, GroupMember, PersistentNode, PersistentTtlNode
from pycurator.testing import (
    SOON,
    ClientFactory,
    FaultProxy,
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
from pycurator.testing._java_calls import java_bytes, java_mode, recipe_class
from pycurator.testing._txnlog import creations
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .conftest import CuratorFactory
from .test_recipe_scenarios_more import JavaTransaction

pytestmark = pytest.mark.usefixtures("no_orphans")


# The scenarios that delete nodes under a kept node's parents make those parents lasting
# first. Left to the keepers, they are containers, and an emptied one is reaped by the server
# (every 100 ms on the test servers) while the keepers make them again: Curator 5.4's background
# create then meets NoNode in its making of the parents, which it does not retry, and never makes
# its node again (ours makes them again: tests/test_persistent_node_protocol.py). These scenarios
# are about the deletes they make, not about that race.

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
    zk.ensure_path(zk_path)  # lasting, see below
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
    for side in ("java", "python"):
        zk.ensure_path(f"{zk_path}/{side}")  # lasting, see below
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
    zk.ensure_path(zk_path)  # lasting, see below
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


def test_before_start_and_after_close_a_node_answers_as_javas_does(
    curator: Any, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """Waiting for the first create before start, or after close, is refused on both sides
    (Curator: "Not started"); once closed, the node's path is None and its data the last set.
    Data given before the first create: Curator refuses it ("initial create has not been
    processed"), ours makes the node with it."""
    java = JavaPersistentNode(curator, f"{zk_path}/java", "EPHEMERAL", b"j")
    python = PersistentNode(zk_client_factory(), f"{zk_path}/python", CreateMode.EPHEMERAL, b"p")
    with pytest.raises(Exception, match="Not started"):
        java.wait_for_initial_create(0)
    with pytest.raises(RuntimeError, match="Not started"):
        python.wait_for_initial_create(0)
    with pytest.raises(Exception, match="initial create has not been processed"):
        java.set_data(b"j0")
    python.set_data(b"p0")
    with java:
        java.start()
        python.start()
        assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
        assert zk.get(f"{zk_path}/python")[0] == b"p0"
        java.set_data(b"j1")
        python.set_data(b"p1")
        java.close()
        python.close()
        for node, data in ((java, b"j1"), (python, b"p1")):
            assert node.actual_path is None
            assert node.get_data() == data
        with pytest.raises(Exception, match="Not started"):
            java.java.waitForInitialCreate(0, jclass("java.util.concurrent.TimeUnit").SECONDS)
        with pytest.raises(RuntimeError, match="Not started"):
            python.wait_for_initial_create(0)
    assert children(zk, zk_path) == []
