"""``pycurator count`` and ``pycurator inspect`` on counters and double barriers: the value as
Java reads it, added to atomically from a shell, and a barrier's members."""

from __future__ import annotations

import json

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import DistributedAtomicLong, DistributedDoubleBarrier, SharedCount
from pycurator._client.transport import default_node_data
from pycurator.cli import EXIT_ERROR, EXIT_USAGE
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli
from .support import SOON, ClientFactory


def test_count_reads_and_adds_to_an_atomic_long_and_a_shared_count(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    hits, tickets = f"{zk_path}/hits", f"{zk_path}/tickets"
    hosts = ("--hosts", zk_server.hosts)
    made = run_cli("count", *hosts, hits, "--add", "5", "--long")
    assert (made.returncode, made.stdout) == (0, "5\n"), made.stderr
    assert zk.get(hits)[0] == (5).to_bytes(8, "big")  # an atomic long's bytes, Java's
    assert DistributedAtomicLong(zk, hits, KazooRetry()).get().pre_value == 5
    with SharedCount(zk, tickets, 7) as count:
        added = run_cli("count", *hosts, tickets, "--add", "-10", "--json")  # 4 bytes: an int
        assert json.loads(added.stdout) == {"path": tickets, "type": "int", "value": -3}
        assert zk.get(tickets)[0] == bytes.fromhex("fffffffd")
        read = run_cli("count", *hosts, tickets)
        assert (read.returncode, read.stdout) == (0, "-3\n")
        assert count.get_versioned_value().version >= 1  # its watch read the new count


def test_count_refuses_what_is_no_counter_naming_it(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    hosts = ("--hosts", zk_server.hosts)
    zk.create(f"{zk_path}/text", b"abc", makepath=True)
    odd = run_cli("count", *hosts, f"{zk_path}/text", "--add", "1")
    assert odd.returncode == EXIT_ERROR
    assert "3 bytes (616263), neither an int's 4 nor a long's 8: say --int or --long" in odd.stderr
    missing = run_cli("count", *hosts, f"{zk_path}/none")
    assert (missing.returncode, missing.stderr) == (
        EXIT_ERROR,
        f"pycurator: error: no such node: {zk_path}/none\n",
    )
    too_big = run_cli("count", *hosts, f"{zk_path}/text", "--int", "--add", str(2**31))
    assert too_big.returncode == EXIT_ERROR and "--add must fit a Java int" in too_big.stderr
    both = run_cli("count", *hosts, f"{zk_path}/text", "--int", "--long")
    assert both.returncode == EXIT_USAGE
    huge = run_cli("count", *hosts, f"{zk_path}/text", "--add", str(2**63))
    assert huge.returncode == EXIT_USAGE
    assert "argument --add: must be a whole number that fits a Java long" in huge.stderr
    assert zk.get(f"{zk_path}/text")[0] == b"abc"


def test_inspect_shows_a_counter_as_each_java_recipe_reads_it(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/hits"
    zk.create(path, (42).to_bytes(8, "big"), makepath=True)
    shown = run_cli("inspect", "--hosts", zk_server.hosts, path)
    assert shown.stdout.splitlines() == [
        f"{path}: counter, 8 bytes (000000000000002a), version 0",
        "SharedCount               0 (its first bytes)",
        "DistributedAtomicInteger  0 (its first bytes)",
        "DistributedAtomicLong     42",
    ]
    document = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, path).stdout)
    assert document["layout"] == "counter"
    assert document["readings"] == {
        "SharedCount": 0,
        "DistributedAtomicInteger": 0,
        "DistributedAtomicLong": 42,
    }


def test_inspect_shows_a_double_barriers_members(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/double"
    member = DistributedDoubleBarrier(zk_client_factory(), path, 2)
    assert member.enter(0.1) is False  # out of time: its node gone
    other = DistributedDoubleBarrier(zk_client_factory(), path, 1)
    assert other.enter(SOON)  # one is enough for it: ready made
    document = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, path).stdout)
    assert (document["layout"], document["ready"], document["member_count"]) == (
        "double-barrier",
        True,
        1,
    )
    (shown,) = document["members"]
    assert shown["node"] == other.our_path
    assert shown["data"] == default_node_data().decode()
    table = run_cli("inspect", "--hosts", zk_server.hosts, path).stdout.splitlines()
    assert table[0] == f"{path}: double barrier, 1 member(s), ready (the members entered)"
    assert table[2].endswith(other.our_path.rsplit("/", 1)[1])
