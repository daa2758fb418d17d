"""``pycurator inspect`` on the other Java lock systems' paths: nodes made on a real server as
each Java system names them (with the Java peers: ``interop/systems/test_cli_systems.py``)."""

from __future__ import annotations

import json

from kazoo.client import KazooClient

from pycurator.testing import ClientFactory
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli


def session_of(zk: KazooClient) -> int:
    client_id = zk.client_id
    assert client_id is not None
    return int(client_id[0])


def queue_node(zk: KazooClient, parent: str, head: str, data: bytes = b"") -> str:
    """An ephemeral sequential node named ``head<seq>``, as the Java systems make theirs."""
    return str(zk.create(f"{parent}/{head}", data, ephemeral=True, sequence=True, makepath=True))


def test_tree_tells_each_systems_layout_holder_and_queue(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    first, second = zk_client_factory(), zk_client_factory()
    s1, s2 = session_of(first), session_of(second)
    write_lock, election = f"{zk_path}/zk/write", f"{zk_path}/zk/election"
    menagerie_rw, permits = f"{zk_path}/men/rw", f"{zk_path}/men/permits"
    zklocker = f"{zk_path}/parent"
    first.create(f"{zklocker}/config", b"unrelated", makepath=True)
    holder = queue_node(first, write_lock, f"x-{s1}-", b"\x12\x34")
    queue_node(second, write_lock, f"x-{s2}-", b"\x12\x34")
    queue_node(first, election, "n_", b"host-a")
    queue_node(second, election, "n_", b"host-b")
    queue_node(first, menagerie_rw, "readLock-")
    queue_node(second, menagerie_rw, "writeLock-")
    for _ in range(3):
        queue_node(first, permits, "permit-")
    queue_node(first, zklocker, f"dlk-orders-{s1}-")
    queue_node(second, zklocker, f"dlk-orders-{s2}-")

    result = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
    assert result.returncode == 0, result.stderr
    rows = {row["path"]: row for row in json.loads(result.stdout)}
    assert list(rows) == [permits, menagerie_rw, zklocker, election, write_lock]
    got = {
        path: (r["system"], r["layout"], r["holder_count"], r["waiting"])
        for path, r in rows.items()
    }
    assert got == {
        write_lock: ("zookeeper", "zookeeper-write-lock", 1, 1),
        election: ("zookeeper", "zookeeper-election", 1, 1),
        menagerie_rw: ("menagerie", "menagerie-read-write", 1, 1),
        permits: ("menagerie", "menagerie-semaphore", None, None),  # permits unknown
        zklocker: ("zklocker", "zklocker", 1, 1),
    }
    assert [h["node"] for h in rows[write_lock]["holders"]] == [holder]
    assert rows[write_lock]["holders"][0]["name_session"] == f"0x{s1:x}"
    assert rows[election]["holders"][0]["data"] == "host-a"

    told = run_cli("inspect", "--permits", "2", "--json", "--hosts", zk_server.hosts, permits)
    assert told.returncode == 0, told.stderr
    view = json.loads(told.stdout)
    assert [p["state"] for p in view["participants"]] == ["holder", "holder", "waiting"]

    table = run_cli("inspect", "--hosts", zk_server.hosts, election)
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith(f"{election}: zookeeper-election, leader 'host-a', 1 waiting")


def test_permits_below_one_are_refused() -> None:
    result = run_cli("inspect", "--permits", "0", "--hosts", "127.0.0.1:1", "/p")
    assert result.returncode != 0
    assert "--permits must be 1 or more" in result.stderr
