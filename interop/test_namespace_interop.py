"""A Curator namespace and a kazoo chroot on the same path are one lock space: whichever side
comes first makes the missing namespace, and the two exclude each other on one lock; so is
``connect()``'s namespace."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.security import OPEN_ACL_UNSAFE

from pycurator import InterProcessMutex, connect
from pycurator.testing import ClientFactory, java_acquire
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON, children, eventually

from .conftest import java_class


def assert_open_parents(zk: KazooClient, zk_path: str, chroot: str) -> None:
    """Every level down to the lock is empty, not ephemeral, and open to anyone (the ACL of a
    client without an ACL provider or default ACL)."""
    for path in (zk_path, chroot, f"{chroot}/locks", f"{chroot}/locks/one"):
        stat = zk.exists(path)
        assert stat is not None and (stat.ephemeralOwner, stat.dataLength) == (0, 0), path
        assert list(zk.get_acls(path)[0]) == OPEN_ACL_UNSAFE, path


def assert_one_lock(
    python: InterProcessMutex, java: Any, zk: KazooClient, server_path: str
) -> None:
    """``python`` (on ``/locks/one`` in its chroot) and ``java`` (the same in its namespace)
    exclude each other, on the node at ``server_path`` as the server names it."""
    with python:
        assert java_acquire(java, 0.3) is False
        (name,) = children(zk, server_path)
        assert python.lock_path == f"/locks/one/{name}"
    assert java_acquire(java, SOON)
    try:
        assert python.acquire(timeout=0.3) is False
    finally:
        java.release()


@pytest.mark.parametrize("first", ["java", "python"])
def test_a_namespace_and_a_chroot_share_one_lock_whoever_makes_it(
    first: str,
    curator: Any,
    zk: KazooClient,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    chroot = f"{zk_path}/app"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # kazoo warns that the chroot is missing
        python_client = zk_client_factory(hosts=zk_server.hosts + chroot)
    python = InterProcessMutex(python_client, "/locks/one")
    # A facade's namespace is made lazily, as a builder's namespace("...") is.
    java = java_class("InterProcessMutex")(curator.usingNamespace(chroot[1:]), "/locks/one")
    assert zk.exists(zk_path) is None
    if first == "java":
        assert java_acquire(java, SOON)
        try:
            assert_open_parents(zk, zk_path, chroot)
            assert python.acquire(timeout=0.3) is False
        finally:
            java.release()
    else:
        with python:
            assert_open_parents(zk, zk_path, chroot)
            assert java_acquire(java, 0.3) is False
    assert_one_lock(python, java, zk, f"{chroot}/locks/one")
    # Both sides made containers, up to and including the namespace: the server reaps them all.
    eventually(lambda: zk.exists(zk_path) is None, what="namespace containers reaped")


@pytest.mark.parametrize("handler", ["fast", "kazoo"])
def test_connect_s_namespace_is_curator_s_namespace(
    handler: str, curator: Any, zk: KazooClient, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    namespace = f"{zk_path[1:]}/app"
    client = connect(
        zk_server.hosts,
        namespace=namespace,
        handler=SequentialThreadingHandler() if handler == "kazoo" else None,
    )
    try:
        java_side = curator.usingNamespace(namespace)
        # a node each side makes is the other's, at the same path
        client.create("/from-python", b"py")
        java_side.create().forPath("/from-java", b"java")
        assert sorted(str(name) for name in java_side.getChildren().forPath("/")) == [
            "from-java",
            "from-python",
        ]
        assert bytes(java_side.getData().forPath("/from-python")) == b"py"
        assert client.get("/from-java")[0] == b"java"
        # and one lock: each side excludes the other
        python = InterProcessMutex(client, "/locks/one")
        java = java_class("InterProcessMutex")(java_side, "/locks/one")
        assert_one_lock(python, java, zk, f"/{namespace}/locks/one")
        client.delete("/from-python")
        client.delete("/from-java")
    finally:
        client.stop()
        client.close()
