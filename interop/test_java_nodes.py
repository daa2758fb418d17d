"""Curator's node recipes on the wire, as the kit's Java peers make them and kazoo reads them:
the facts a Python PersistentNode, PersistentTtlNode and GroupMember must match, on Curator 5.4
and 5.9 alike unless a test says otherwise. TTL nodes need the kit's own server (TTL nodes on,
its transaction log readable: a client's stat shows container and TTL nodes as persistent)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jpype
import pytest
from kazoo.client import KazooClient

from pycurator.testing import (
    SOON,
    JavaGroupMember,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    children,
    created_modes,
    curator_at_least,
    eventually,
    expire_session,
    java_local_address,
    jclass,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

#: Curator's protected name: ``_c_``, a random (version 4) UUID, ``-``, then the name asked for.
PROTECTED = re.compile(
    r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-(?P<name>.+)"
)


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    """The data folder of the kit's local server, whose transaction log tells each node's mode."""
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def modes(log: Path, under: str) -> dict[str, str]:
    return {path: creation.mode for path, creation in created_modes(log, under).items()}


def curator_default_data() -> bytes:
    """What a Python recipe must write where Curator writes its default data: the host's
    address as Java's ``InetAddress.getLocalHost()`` resolves it, empty if it does not."""
    try:
        return socket.gethostbyname(socket.gethostname()).encode()
    except OSError:
        return b""


def test_curators_default_data_is_the_host_address_python_resolves_too() -> None:
    assert java_local_address() == curator_default_data()


def test_a_ttl_node_can_be_made_on_the_kits_server_and_goes_once_its_ttl_passed(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """kazoo cannot send ``createTTL``; ZooKeeper's own Java client can, on the kit's server. A
    client's stat shows the node as persistent (``ephemeralOwner`` 0); the log shows its TTL."""
    zk.ensure_path(zk_path)
    node = f"{zk_path}/ttl"
    zookeeper = curator.getZookeeperClient().getZooKeeper()
    acl = jclass("org.apache.zookeeper.ZooDefs").Ids.OPEN_ACL_UNSAFE
    mode = jclass("org.apache.zookeeper.CreateMode").PERSISTENT_WITH_TTL
    stat = jclass("org.apache.zookeeper.data.Stat")()
    zookeeper.create(node, jpype.JArray(jpype.JByte)(b"x"), acl, mode, stat, 1000)
    data, seen = zk.get(node)
    assert data == b"x" and seen.ephemeralOwner == 0
    made = created_modes(server_log, node)[node]
    assert (made.mode, made.ttl) == ("PERSISTENT_WITH_TTL", 1.0)
    eventually(lambda: zk.exists(node) is None, what="the TTL node reaped")


def test_a_java_persistent_ttl_node_keeps_a_touch_child_and_goes_after_close(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """PersistentTtlNode: ``path`` with the data, a ``touch`` child (PERSISTENT_WITH_TTL, the
    same TTL, Curator's default data) first made ttl/2 after the start and set every ttl/2; the
    parent a CONTAINER up to 5.8 and PERSISTENT_WITH_TTL (the same TTL) from 5.9; its parents
    containers. After close(), nothing is deleted: the server reaps both within about a TTL."""
    node, touch = f"{zk_path}/svc/node", f"{zk_path}/svc/node/touch"
    with JavaPersistentTtlNode(curator, node, 2.0, b"payload") as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        assert java.get_data() == b"payload"
        eventually(lambda: zk.exists(touch) is not None, what="the first touch")
        (data, parent), (touch_data, first) = zk.get(node), zk.get(touch)
        assert data == b"payload" and touch_data == java_local_address()
        assert first.ctime - parent.ctime >= 900  # ttl/2 after the parent (server clock, ms)
        eventually(lambda: zk.exists(touch).version >= 1, what="a touch as a setData")
        zk.set(touch, b"")  # a touch of our own: the pair lives a TTL from now, closed or not
    assert zk.exists(node) is not None  # close() deletes nothing
    made = created_modes(server_log, zk_path)
    assert (made[touch].mode, made[touch].ttl) == ("PERSISTENT_WITH_TTL", 2.0)
    if curator_at_least("5.9"):
        assert (made[node].mode, made[node].ttl) == ("PERSISTENT_WITH_TTL", 2.0)
    else:
        assert made[node].mode == "CONTAINER"
    assert modes(server_log, zk_path)[f"{zk_path}/svc"] == "CONTAINER"
    eventually(lambda: zk.exists(node) is None, what="the TTL node and its touch reaped")


def test_a_protected_java_persistent_node_is_named_c_uuid_and_comes_back_under_that_name(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """Protection names the node ``_c_<uuid>-<name>``, one UUID for the node's life: deleted
    by anyone, it is made again under the same name, with the data set last; its parents are
    containers; close() deletes it."""
    with JavaPersistentNode(curator, f"{zk_path}/nodes/node", "EPHEMERAL", b"one", True) as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        first = java.actual_path
        assert first is not None and first.startswith(f"{zk_path}/nodes/")
        match = PROTECTED.fullmatch(first.rsplit("/", 1)[1])
        assert match is not None and match["name"] == "node"
        data, stat = zk.get(first)
        assert data == b"one" and stat.ephemeralOwner == session_of(curator)[0]
        java.set_data(b"two")
        eventually(lambda: zk.get(first)[0] == b"two", what="the data set")
        zk.delete(first)
        eventually(lambda: zk.exists(first) is not None, what="the node made again")
        assert java.actual_path == first and zk.get(first)[0] == b"two"
        assert java.created.wait_for(lambda paths: paths == [first, first], SOON)
        assert modes(server_log, zk_path) == {
            zk_path: "CONTAINER",
            f"{zk_path}/nodes": "CONTAINER",
            first: "EPHEMERAL",
        }
    assert children(zk, f"{zk_path}/nodes") == []  # a container: maybe reaped already


def test_a_protected_sequential_java_node_comes_back_at_its_sequence_number(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    """A protected EPHEMERAL_SEQUENTIAL node, ``_c_<uuid>-<name><10 digits>``, is made again
    as a plain ephemeral node of the same name, not at a new sequence number."""
    zk.ensure_path(zk_path)
    zk.create(f"{zk_path}/filler")  # the parent's counter no longer at 0
    with JavaPersistentNode(
        curator, f"{zk_path}/member-", "EPHEMERAL_SEQUENTIAL", b"s", True
    ) as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        first = java.actual_path
        assert first is not None
        match = PROTECTED.fullmatch(first.rsplit("/", 1)[1])
        assert match is not None and re.fullmatch(r"member-0000000001", match["name"])
        zk.delete(first)
        eventually(lambda: zk.exists(first) is not None, what="the node made again")
        assert sorted(zk.get_children(zk_path)) == sorted(["filler", first.rsplit("/", 1)[1]])


def test_an_unprotected_persistent_java_node_is_made_again_with_its_latest_data(
    curator: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    node = f"{zk_path}/config"
    with JavaPersistentNode(curator, node, "PERSISTENT", b"v1") as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        assert java.actual_path == node
        java.set_data(b"v2")
        eventually(lambda: zk.get(node)[0] == b"v2", what="the data set")
        zk.delete(node)
        eventually(lambda: zk.exists(node) is not None, what="the node made again")
        assert zk.get(node)[0] == b"v2" and zk.exists(node).ephemeralOwner == 0
    assert zk.exists(node) is None  # close() deletes a persistent node too
    made = modes(server_log, zk_path)
    assert made[node] == "PERSISTENT" and made[zk_path] == "CONTAINER"


def test_a_java_persistent_node_adopts_a_node_that_exists_and_sets_its_data(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    node = f"{zk_path}/there"
    zk.create(node, b"theirs", makepath=True)
    with JavaPersistentNode(curator, node, "PERSISTENT", b"ours") as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        assert zk.get(node)[0] == b"ours" and java.created.items() == []  # adopted, not created


@pytest.fixture
def members(curator_factory: Any) -> Iterator[list[JavaGroupMember]]:
    made: list[JavaGroupMember] = []
    yield made
    for member in made:
        member.close()


def test_a_java_group_member_is_an_ephemeral_node_named_by_its_id(
    curator_factory: Any,
    zk: KazooClient,
    zk_path: str,
    server_log: Path,
    members: list[JavaGroupMember],
) -> None:
    """``membership/thisId``, EPHEMERAL (the member's session), holding the payload, or the
    host's address without one; the membership path a container; every member sees the others
    (and kazoo's node of that shape) through its cache, itself always included."""
    group = f"{zk_path}/group"
    first_client, second_client = curator_factory(), curator_factory()
    members += [
        JavaGroupMember(first_client, group, "first", b"\x00payload"),
        JavaGroupMember(second_client, group, "second"),
    ]
    for member in members:
        member.start()
    eventually(lambda: zk.exists(f"{group}/first") is not None, what="a Java member's node")
    zk.create(f"{group}/kazoo", b"k", ephemeral=True)
    everyone = {"first": b"\x00payload", "second": java_local_address(), "kazoo": b"k"}
    eventually(lambda: members[0].get_current_members() == everyone, what="all members seen")
    eventually(lambda: members[1].get_current_members() == everyone, what="all members seen")
    for member, client in zip(members, (first_client, second_client), strict=True):
        data, stat = zk.get(f"{group}/{member.this_id}")
        assert data == everyone[member.this_id]
        assert stat.ephemeralOwner == session_of(client)[0]
    assert members[0].id_from_path(f"{group}/second") == "second"
    assert modes(server_log, group)[group] == "CONTAINER"
    members[1].set_this_data(b"new")
    eventually(lambda: members[0].get_current_members()["second"] == b"new", what="data seen")
    zk.delete(f"{group}/kazoo")
    members[1].close()
    eventually(lambda: set(members[0].get_current_members()) == {"first"}, what="members gone")


def test_a_java_group_member_is_back_after_its_session_expired(
    curator: Any, zk: KazooClient, zk_path: str, members: list[JavaGroupMember], zk_server: Any
) -> None:
    group = f"{zk_path}/group"
    members.append(JavaGroupMember(curator, group, "java", b"j"))
    members[0].start()
    eventually(lambda: zk.exists(f"{group}/java") is not None, what="the member's node")
    before = session_of(curator)
    expire_session(zk_server.hosts, *before)
    eventually(
        lambda: (
            (stat := zk.exists(f"{group}/java")) is not None
            and stat.ephemeralOwner not in (0, before[0])
        ),
        what="the member's node, made again by its new session",
    )
    assert zk.get(f"{group}/java")[0] == b"j"
    assert members[0].get_current_members() == {"java": b"j"}
