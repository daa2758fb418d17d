"""``pycurator lock --system``: the command takes each other Java lock system's lock, queued with
that system's Java peer on the same path, in both directions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.cli import EXIT_USAGE
from pycurator.testing import JavaSystems
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.cli_support import python_command, run_cli, start_cli
from tests.support import SOON, eventually

#: Prints the node the command holds, then waits (at most a minute) until the file named by its
#: argument exists: the test says when the command may end.
HOLD_UNTIL = (
    "import os, sys, time\n"
    "print(os.environ['PYCURATOR_LOCK_NODE'], flush=True)\n"
    "end = time.monotonic() + 60\n"
    "while not os.path.exists(sys.argv[1]) and time.monotonic() < end:\n"
    "    time.sleep(0.05)\n"
)

Peer = Callable[[JavaSystems, str], Any]

CASES: dict[str, tuple[list[str], Peer, str]] = {
    "zookeeper": (
        ["--system", "zookeeper"],
        lambda java, path: java.write_lock(path),
        r"x-[0-9]+-[0-9]{10}",
    ),
    "menagerie": (
        ["--system", "menagerie"],
        lambda java, path: java.reentrant_lock(path),
        r"lock-[0-9]{10}",
    ),
    "menagerie-write": (
        ["--system", "menagerie", "--write"],
        lambda java, path: java.read_write_lock(path).write_lock(),
        r"writeLock-[0-9]{10}",
    ),
    "menagerie-semaphore": (
        ["--system", "menagerie", "--semaphore", "1"],
        lambda java, path: java.semaphore(path, 1),
        r"permit-[0-9]{10}",
    ),
    "zklocker": (
        ["--system", "zklocker", "--key", "cli"],
        lambda java, path: java.zk_locker("cli"),
        r"dlk-cli-[0-9]+-[0-9]{10}",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_command_and_the_java_peer_exclude_each_other(
    case: str,
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    java_systems: JavaSystems,
    tmp_path: Path,
) -> None:
    options, make_peer, node_name = CASES[case]
    path = "/parent" if case == "zklocker" else f"{zk_path}/lock"
    zk.ensure_path(path)  # the Java systems make only the last level of their path
    before = set(zk.get_children(path))
    java = make_peer(java_systems, path)
    assert java.acquire(SOON)
    done = tmp_path / "done"
    command = python_command(HOLD_UNTIL)
    cli = start_cli(
        "lock", *options, "--timeout", str(3 * SOON), "--hosts", zk_server.hosts, path,
        "--", *command, str(done),
    )  # fmt: skip
    try:
        # the command queues behind the Java holder, with one node of its own
        eventually(
            lambda: len(set(zk.get_children(path)) - before) == 2,
            what="the command's node queued behind the Java holder's",
        )
        java.release()
        assert cli.stdout is not None
        node = cli.stdout.readline().strip()
        # a lock's node as a path, a lease's by its name (as for Curator's semaphore)
        assert re.fullmatch(f"(?:{re.escape(path)}/)?{node_name}", node), node
        assert not java.acquire(0)  # the command holds: Java is kept out
    finally:
        done.touch()
        _, err = cli.communicate(timeout=3 * SOON)
    assert cli.returncode == 0, err
    assert java.acquire(SOON)  # released as the command ended
    java.release()


def test_options_the_system_does_not_take_are_refused_before_connecting() -> None:
    hosts = ["--hosts", "127.0.0.1:1"]
    command = ["--", "true"]
    for options, refused in (
        (["--key", "k"], "--key is ZkLocker's"),
        (["--system", "zookeeper", "--data", "x"], "--data does not go with --system zookeeper"),
        (["--system", "zklocker", "--read"], "--read does not go with --system zklocker"),
        (["--system", "menagerie", "--revocable"], "--revocable does not go with"),
    ):
        result = run_cli("lock", *options, *hosts, "/p", *command)
        assert result.returncode == EXIT_USAGE, (options, result.stderr)
        assert refused in result.stderr, result.stderr


def test_inspect_tells_each_java_systems_holder(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    write_path, rw_path = f"{zk_path}/zk/write", f"{zk_path}/men/rw"
    for path in (write_path, rw_path, "/parent"):
        zk.ensure_path(path)
    write_lock = java_systems.write_lock(write_path)
    rw_write = java_systems.read_write_lock(rw_path).write_lock()
    locker = java_systems.zk_locker("inspect")
    for peer in (write_lock, rw_write, locker):
        assert peer.acquire(SOON)
    try:
        tree = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
        parent = run_cli("inspect", "--json", "--hosts", zk_server.hosts, "/parent")
    finally:
        for peer in (write_lock, rw_write, locker):
            peer.release()
    assert tree.returncode == 0, tree.stderr
    rows = {row["path"]: row for row in json.loads(tree.stdout)}
    assert (rows[write_path]["system"], rows[write_path]["layout"]) == (
        "zookeeper",
        "zookeeper-write-lock",
    )
    (holder,) = rows[write_path]["holders"]
    assert holder["name_session"] == holder["session"] == f"0x{write_lock.session_id:x}"
    assert rows[rw_path]["layout"] == "menagerie-read-write"
    assert [h["kind"] for h in rows[rw_path]["holders"]] == ["write"]
    assert parent.returncode == 0, parent.stderr
    view = json.loads(parent.stdout)
    assert (view["system"], view["layout"]) == ("zklocker", "zklocker")
    held = [p for p in view["participants"] if p["state"] == "holder"]
    assert [p["kind"] for p in held] == ["key inspect"]
    assert held[0]["session"] == f"0x{locker.session_id:x}"
