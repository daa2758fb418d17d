"""PersistentNode and PersistentTtlNode with Java Curator's beside them, on the same server, both
ways (run on Debian's Curator 5.4 and on the newest, 5.9): a Python node deleted by Java comes
back and a Java one deleted by Python does too; protected names are Curator's; Java and Python
nodes of one path keep one node; a Python PersistentTtlNode's layout is the one Java's keeps,
whichever starts first."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import CreateMode, PersistentNode, PersistentTtlNode
from pycurator.testing import (
    SOON,
    JavaPersistentNode,
    JavaPersistentTtlNode,
    children,
    created_modes,
    curator_at_least,
    eventually,
    jclass,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")

#: Curator's protected name: ``_c_``, a random (version 4) UUID, ``-``, then the name asked for.
PROTECTED = re.compile(
    r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-(?P<name>.+)"
)
TTL = 1.0


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    """The data folder of the kit's local server, whose transaction log tells each node's mode."""
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def java_delete(curator: Any, path: str) -> None:
    """Delete ``path`` with Java Curator."""
    curator.delete().forPath(path)


def made_again(zk: KazooClient, path: str, owner: int | None = None) -> None:
    """Wait until ``path`` exists again (in session ``owner``, when given)."""
    eventually(
        lambda: (
            (stat := zk.exists(path)) is not None
            and (owner is None or stat.ephemeralOwner == owner)
        ),
        what=f"{path} made again",
    )


@pytest.mark.parametrize(
    ("mode", "protected"),
    [
        (CreateMode.EPHEMERAL, False),
        (CreateMode.EPHEMERAL, True),
        (CreateMode.EPHEMERAL_SEQUENTIAL, True),
        (CreateMode.PERSISTENT, False),
    ],
    ids=["ephemeral", "protected", "protected-sequential", "persistent"],
)
def test_a_python_node_deleted_by_java_comes_back_under_its_name_with_its_data(
    curator: Any,
    zk_client_factory: Any,
    zk: KazooClient,
    zk_path: str,
    mode: CreateMode,
    protected: bool,
) -> None:
    client = zk_client_factory()
    with PersistentNode(client, f"{zk_path}/svc/node", mode, b"py", protected) as node:
        assert node.wait_for_initial_create(SOON)
        made = node.actual_path
        assert made is not None
        node.set_data(b"latest")
        eventually(lambda: zk.get(made)[0] == b"latest", what="the data written")
        for _ in range(2):
            java_delete(curator, made)
            made_again(zk, made, client.client_id[0] if mode.is_ephemeral else 0)
            assert zk.get(made)[0] == b"latest"
        assert zk.get_children(f"{zk_path}/svc") == [made.rsplit("/", 1)[1]]
    assert children(zk, f"{zk_path}/svc") == []  # (its container may be reaped by now)


@pytest.mark.parametrize(
    ("mode", "protected"),
    [("EPHEMERAL", False), ("EPHEMERAL", True), ("EPHEMERAL_SEQUENTIAL", True)],
    ids=["ephemeral", "protected", "protected-sequential"],
)
def test_a_java_node_deleted_by_python_comes_back(
    curator: Any, zk: KazooClient, zk_path: str, mode: str, protected: bool
) -> None:
    with JavaPersistentNode(curator, f"{zk_path}/svc/node", mode, b"java", protected) as java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        made = java.actual_path
        assert made is not None
        zk.delete(made)
        made_again(zk, made, session_of(curator)[0])
        assert zk.get(made)[0] == b"java"
        assert zk.get_children(f"{zk_path}/svc") == [made.rsplit("/", 1)[1]]


def test_protected_names_are_curators_whichever_side_makes_them(
    curator: Any, zk_client_factory: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """Both ``_c_<uuid>-<name>`` (a version 4 UUID, lower case), the sequential ones with the
    sequence after the name; the same modes and container parents."""
    client = zk_client_factory()
    names = {}
    for mode in ("EPHEMERAL", "EPHEMERAL_SEQUENTIAL"):
        java = JavaPersistentNode(curator, f"{zk_path}/java/{mode.lower()}", mode, b"", True)
        python = PersistentNode(
            client, f"{zk_path}/python/{mode.lower()}", CreateMode[mode], b"", True
        )
        with java, python:  # (Python's starts as its block begins)
            java.start()
            assert java.wait_for_initial_create(SOON) and python.wait_for_initial_create(SOON)
            for side, path in (("java", java.actual_path), ("python", python.actual_path)):
                assert path is not None
                match = PROTECTED.fullmatch(path.rsplit("/", 1)[1])
                assert match is not None, path
                names[side, mode] = match["name"]
            made = {path: made.mode for path, made in created_modes(server_log, zk_path).items()}
            for side in ("java", "python"):
                assert made[f"{zk_path}/{side}"] == "CONTAINER"
                path = java.actual_path if side == "java" else python.actual_path
                assert made[str(path)] == "EPHEMERAL"
    assert names["java", "EPHEMERAL"] == names["python", "EPHEMERAL"] == "ephemeral"
    assert re.fullmatch(r"ephemeral_sequential\d{10}", names["java", "EPHEMERAL_SEQUENTIAL"])
    assert re.fullmatch(r"ephemeral_sequential\d{10}", names["python", "EPHEMERAL_SEQUENTIAL"])


def test_java_and_python_nodes_of_one_path_keep_one_node_each_adopting_it(
    curator: Any, zk_client_factory: Any, zk: KazooClient, zk_path: str
) -> None:
    """Each takes the node it finds there as its own (and gives it its data); when one closes
    and deletes it, the other makes it again."""
    path = f"{zk_path}/shared"
    client = zk_client_factory()
    java = JavaPersistentNode(curator, path, "PERSISTENT", b"java")
    python = PersistentNode(client, path, CreateMode.PERSISTENT, b"python")
    with java:
        java.start()
        assert java.wait_for_initial_create(SOON)
        with python:
            assert python.wait_for_initial_create(SOON)
            assert zk.get(path)[0] == b"python"  # found there, and given our data
            java.close()  # deletes it: Python makes it again
            made_again(zk, path)
            eventually(lambda: zk.get(path)[0] == b"python", what="Python's data")
        assert zk.exists(path) is None


def test_a_python_ttl_nodes_layout_is_the_one_java_keeps_whichever_starts_first(
    curator: Any, zk_client_factory: Any, zk: KazooClient, zk_path: str, server_log: Path
) -> None:
    """One pair, the node and its ``touch`` child, kept by both; the node
    PERSISTENT_WITH_TTL when Python or Curator 5.9 made it, a CONTAINER when 5.4 did, adopted
    either way; left to its TTL once both are closed."""
    client = zk_client_factory()
    for first in ("python", "java"):
        path = f"{zk_path}/{first}-first/node"
        java = JavaPersistentTtlNode(curator, path, TTL, b"java")
        python = PersistentTtlNode(client, path, TTL, b"python")
        starts = [java.start, python.start] if first == "java" else [python.start, java.start]
        with java:
            try:
                starts[0]()
                eventually(functools.partial(exists, zk, path), what="the first made")
                starts[1]()
                assert java.wait_for_initial_create(SOON)
                assert python.wait_for_initial_create(SOON)
                eventually(functools.partial(exists, zk, f"{path}/touch"), what="touched")
                assert zk.get_children(path) == ["touch"]
                made = created_modes(server_log, path)
                container = first == "java" and not curator_at_least("5.9")
                assert made[path].mode == ("CONTAINER" if container else "PERSISTENT_WITH_TTL")
                touch = made[f"{path}/touch"]
                assert (touch.mode, touch.ttl) == ("PERSISTENT_WITH_TTL", TTL)
            finally:
                python.close()
        eventually(functools.partial(gone, zk, path), what="the pair reaped")


def exists(client: KazooClient, path: str) -> bool:
    return client.exists(path) is not None


def gone(client: KazooClient, path: str) -> bool:
    return client.exists(path) is None


def test_a_java_client_reads_a_python_ttl_node_as_its_own_layout(
    curator: Any, zk_client_factory: Any, zk_path: str
) -> None:
    """Java sees the node with its data and the touch child with the host's address, as a Java
    PersistentTtlNode writes them."""
    path = f"{zk_path}/node"
    with PersistentTtlNode(zk_client_factory(), path, TTL, b"python") as node:
        assert node.wait_for_initial_create(SOON)
        touch = f"{path}/touch"
        eventually(lambda: curator.checkExists().forPath(touch) is not None, what="touched")
        assert bytes(curator.getData().forPath(path)) == b"python"
        local = jclass("java.net.InetAddress").getLocalHost().getHostAddress()
        assert bytes(curator.getData().forPath(touch)) == str(local).encode()
