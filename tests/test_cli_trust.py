"""The command refuses what is not a lock: ``revoke`` writes only to lock nodes, ``inspect``
calls only Curator's ephemeral nodes holders or waiters."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import EXIT_REFUSED
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli
from .test_cli import one_error_line

SEQ = "0000000003"
PROTECTED = "_c_0f4e3b9e-8a51-4c1e-9d7a-31d3a1c0b7aa-"


@pytest.mark.parametrize(
    ("name", "ephemeral"),
    [
        ("counter", False),
        (f"{PROTECTED}lock-{SEQ}", False),
        ("worker-1", True),
    ],
)
def test_revoke_refuses_a_node_that_is_not_a_lock_node_and_leaves_it_unchanged(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, name: str, ephemeral: bool
) -> None:
    node = f"{zk_path}/app/{name}"
    zk.create(node, b"42", ephemeral=ephemeral, makepath=True)
    result = run_cli("revoke", "--hosts", zk_server.hosts, node)
    assert result.returncode == EXIT_REFUSED
    assert f"refused: {node} is not a lock node" in one_error_line(result.stderr)
    assert zk.get(node)[0] == b"42"


def test_revoke_refuses_zookeepers_quota_node(zk_server: ZooKeeperTarget, zk: KazooClient) -> None:
    before = zk.get("/zookeeper/quota")[0]
    result = run_cli("revoke", "--hosts", zk_server.hosts, "/zookeeper/quota")
    assert result.returncode == EXIT_REFUSED
    assert "is not a lock node" in one_error_line(result.stderr)
    assert zk.get("/zookeeper/quota")[0] == before


def test_revoke_still_reaches_a_real_lock_node(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessMutex(zk, zk_path)
    with lock:
        assert lock.lock_path is not None
        result = run_cli("revoke", "--hosts", zk_server.hosts, lock.lock_path)
        assert result.returncode == 0, result.stderr
        assert zk.get(lock.lock_path)[0] == b"__REVOKE__"
