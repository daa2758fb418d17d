"""The command line beside the Java peers of a mixed fleet (issue 41's scenarios): one try on a
Java holder's lock, a path of one system refused to another, Curator's queue behind menagerie's
nodes, a queue blocked for Java and Python alike by a node that is no lock, a menagerie
semaphore whose holders the tree cannot tell, ZooKeeper's election, Java's node data escaped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.cli import EXIT_REFUSED, EXIT_TIMEOUT
from pycurator.testing import JavaSystems, java_acquire
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.cli_support import python_command, run_cli, start_cli
from tests.support import SOON, Worker, eventually

from ..conftest import java_class
from .test_cli_systems import CASES


def inspect_json(hosts: str, *args: str) -> Any:
    result = run_cli("inspect", "--json", "--hosts", hosts, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", list(CASES))
def test_timeout_zero_is_one_try_beside_each_java_peer(
    case: str, zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    options, make_peer, _ = CASES[case]
    path = "/parent" if case == "zklocker" else f"{zk_path}/lock"
    zk.ensure_path(path)
    java = make_peer(java_systems, path)
    assert java.acquire(SOON)
    command = ["lock", *options, "--timeout", "0", "--hosts", zk_server.hosts, path, "--", "true"]
    try:
        held = run_cli(*command)
    finally:
        java.release()
    assert held.returncode == EXIT_TIMEOUT, held.stderr
    assert "timed out after 0s" in held.stderr
    free = run_cli(*command)
    assert free.returncode == 0, free.stderr


def test_a_menagerie_lock_is_refused_on_a_path_a_java_writelock_holds(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    zk.ensure_path(zk_path)
    java = java_systems.write_lock(f"{zk_path}/lock")
    assert java.acquire(SOON)
    lock = ["lock", "--system", "menagerie", "--hosts", zk_server.hosts, f"{zk_path}/lock"]
    try:
        refused = run_cli(*lock, "--", "true")
        forced = run_cli(*lock, "--force", "--timeout", "0", "--", "true")
        assert java.is_held()
    finally:
        java.release()
    assert refused.returncode == EXIT_REFUSED, refused.stderr
    assert "is ZooKeeper's WriteLock's (1 holder(s), 0 waiting)" in refused.stderr
    assert forced.returncode == 0, forced.stderr  # what --force risks: both hold


def test_curators_lock_waits_behind_a_java_menagerie_holder_but_not_the_reverse(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    java_systems: JavaSystems,
    curator: Any,
) -> None:
    path = f"{zk_path}/lock"
    zk.ensure_path(zk_path)
    menagerie = java_systems.reentrant_lock(path)
    assert menagerie.acquire(SOON)
    try:
        python = run_cli(
            "lock", "--force", "--timeout", "1", "--hosts", zk_server.hosts, path, "--", "true"
        )
        java_curator = java_class("InterProcessMutex")(curator, path)
        assert java_acquire(java_curator, 0.5) is False  # Java Curator waits behind it too
    finally:
        menagerie.release()
    assert python.returncode == EXIT_TIMEOUT, python.stderr
    holder = start_cli(
        "lock", "--hosts", zk_server.hosts, path,
        "--", *python_command("import time; print('held', flush=True); time.sleep(60)"),
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        reader = Worker(holder.stdout.readline)
        reader.start()
        assert reader.outcome(SOON) == "held\n"
        assert menagerie.acquire(SOON)  # menagerie does not see Curator's node
        menagerie.release()
    finally:
        holder.terminate()
        holder.communicate(timeout=SOON)


def test_a_persistent_child_blocks_java_and_the_command_alike_and_both_say_so(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    path = f"{zk_path}/lock"
    zk.create(f"{path}/providers-0000000001", b"dubbo://10.0.0.7", makepath=True)
    java = java_systems.write_lock(path)
    assert java.acquire(0.5) is False  # Java's WriteLock waits behind it
    waiting = java_systems.write_lock(path)
    queued = Worker(lambda: waiting.acquire(3 * SOON))
    queued.start()
    try:
        result = run_cli(
            "lock", "--system", "zookeeper", "--timeout", "1", "--hosts", zk_server.hosts, path,
            "--", "true",
        )  # fmt: skip
        view = inspect_json(zk_server.hosts, path)
    finally:
        zk.delete(f"{path}/providers-0000000001")
    assert queued.outcome(SOON) is True  # the Java waiter gets it once the node is gone
    waiting.release()
    assert result.returncode == EXIT_TIMEOUT, result.stderr
    assert "blocked by providers-0000000001 (a persistent node" in result.stderr.splitlines()[-1]
    assert view["blocked_by"] == [f"{path}/providers-0000000001"]
    assert [p["state"] for p in view["participants"]] == ["blocking", "waiting"]


def test_inspect_of_a_java_menagerie_semaphore_does_not_count_its_holder_as_waiting(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    path = f"{zk_path}/pool"
    zk.ensure_path(zk_path)
    java = java_systems.semaphore(path, 1)
    assert java.acquire(SOON)
    try:
        unknown = inspect_json(zk_server.hosts, path)
        told = inspect_json(zk_server.hosts, "--permits", "1", path)
    finally:
        java.release()
    assert (unknown["holder_count"], unknown["waiting"]) == (None, None)
    assert [p["state"] for p in unknown["participants"]] == ["unknown"]
    assert (told["holder_count"], told["waiting"]) == (1, 0)


def test_elect_takes_part_in_a_java_leader_election_support_election(
    zk_server: ZooKeeperTarget, zk_path: str, java_systems: JavaSystems
) -> None:
    root = f"{zk_path}/election"
    java = java_systems.leader_election(root, "java-host")
    java.start()
    assert java.wait(SOON)
    elect = ["elect", "--system", "zookeeper", "--hosts", zk_server.hosts, root]
    timed_out = run_cli(*elect, "--id", "py-host", "--timeout", "1", "--", "true")
    assert timed_out.returncode == EXIT_TIMEOUT, timed_out.stderr
    process = start_cli(
        *elect, "--id", "py-host",
        "--", *python_command("import time; print('leading', flush=True); time.sleep(60)"),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        reader = Worker(process.stdout.readline)
        reader.start()
        eventually(
            lambda: len(inspect_json(zk_server.hosts, root)["participants"]) == 2,
            what="elect's offer queued behind Java's",
        )
        table = run_cli("inspect", "--hosts", zk_server.hosts, root).stdout
        assert table.startswith(f"{root}: zookeeper-election, leader 'java-host', 1 waiting")
        java.close()
        assert reader.outcome(SOON) == "leading\n"
        assert inspect_json(zk_server.hosts, root)["participants"][0]["data"] == "py-host"
    finally:
        process.terminate()
        process.communicate(timeout=SOON)


def test_inspect_shows_java_writelocks_data_escaped(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    zk.ensure_path(zk_path)
    java = java_systems.write_lock(f"{zk_path}/lock")
    assert java.acquire(SOON)
    try:
        table = run_cli("inspect", "--hosts", zk_server.hosts, f"{zk_path}/lock").stdout
        tree = run_cli("inspect", "--tree", "--hosts", zk_server.hosts, zk_path).stdout
    finally:
        java.release()
    for shown in (table, tree):
        assert "\\x124" in shown and "\x12" not in shown, shown
