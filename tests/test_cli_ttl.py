"""``pycurator inspect`` of a node a ``PersistentTtlNode`` keeps: when it expires, as its
``touch`` child's touching tells (ZooKeeper shows no client a TTL); and the rule, on numbers."""

from __future__ import annotations

import json

from kazoo.client import KazooClient

from pycurator import PersistentTtlNode
from pycurator._protocol.ttl import TtlExpiry, ttl_expiry
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli
from .support import SOON, eventually


def test_the_ttl_is_twice_the_mean_time_between_touches_and_expires_a_ttl_after_the_last() -> None:
    # Curator's: made ttl/2 after the node, then set every ttl/2 (10 s TTL, 4 touches)
    told = ttl_expiry(created_ms=1_000, touched_ms=16_000, version=3)
    assert told == TtlExpiry(touched_ms=16_000, touches=4, ttl=10.0)
    assert told.expires_ms == 26_000
    # touched once: nothing tells the TTL yet
    once = ttl_expiry(created_ms=1_000, touched_ms=1_000, version=0)
    assert once.ttl is None and once.expires_ms is None and once.touches == 1
    # two touchers on one path: touches twice as often, an expiry told early, never late
    assert ttl_expiry(1_000, 16_000, 6).ttl == 5.0


def test_inspect_tells_when_a_kept_ttl_node_expires(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/owner"
    with PersistentTtlNode(zk, path, 2.0, b"me") as node:
        assert node.wait_for_initial_create(SOON)
        inspected_ttl_node(zk_server.hosts, zk, path)


def inspected_ttl_node(hosts: str, zk: KazooClient, path: str) -> None:
    """Once the ``touch`` child of a node kept with a 2 s TTL was touched three times,
    ``inspect`` tells (as a table and as JSON) that a PersistentTtlNode keeps it, its TTL and
    when it expires."""
    eventually(
        lambda: (stat := zk.exists(f"{path}/touch")) is not None and stat.version >= 2,
        what="touched three times",
    )
    table = run_cli("inspect", "--hosts", hosts, path)
    shown = run_cli("inspect", "--json", "--hosts", hosts, path)
    assert table.returncode == 0 and shown.returncode == 0, table.stderr + shown.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"{path}: not a lock") and lines[0].endswith("child(ren): touch")
    assert lines[1].startswith("kept by a PersistentTtlNode: its touch child touched ")
    assert "TTL about 2." in lines[1] and "expires in about " in lines[1]
    told = json.loads(shown.stdout)["ttl_node"]
    assert told["touches"] >= 3
    assert 1.5 <= told["ttl_seconds"] <= 3.0
    assert 0 < told["expires_in_seconds"] <= told["ttl_seconds"] + 0.5


def test_a_touch_child_set_once_tells_no_ttl_yet(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/node/touch", b"127.0.0.1", makepath=True)
    table = run_cli("inspect", "--hosts", zk_server.hosts, f"{zk_path}/node")
    assert table.stdout.splitlines()[1].endswith("once: its TTL is told by the next touch")
    shown = json.loads(
        run_cli("inspect", "--json", "--hosts", zk_server.hosts, f"{zk_path}/node").stdout
    )
    assert shown["ttl_node"]["ttl_seconds"] is None
    assert shown["ttl_node"]["expires_in_seconds"] is None


def test_a_lock_or_a_plain_node_tells_no_ttl(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/plain/child", makepath=True)
    shown = json.loads(
        run_cli("inspect", "--json", "--hosts", zk_server.hosts, f"{zk_path}/plain").stdout
    )
    assert "ttl_node" not in shown
