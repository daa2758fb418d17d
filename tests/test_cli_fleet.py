"""The command line as an operator uses it on a fleet that mixes lock systems: one try with
``--timeout 0``, every argument checked before connecting, what the tree holds shown without
letting it drive the terminal, semaphores whose holders the tree cannot tell, queues blocked by
a node that is no lock, crossing systems refused, one meaning of ``PYCURATOR_LOCK_NODE``, and
messages that say what happened once. Subprocesses against the test server; the same with the
Java peers is in ``interop/systems/test_cli_fleet_java.py``."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import EXIT_REFUSED, EXIT_TIMEOUT, EXIT_USAGE
from pycurator.cli._progress import describe
from pycurator.menagerie import ReentrantZkLock, ZkSemaphore
from pycurator.testing import ClientFactory, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from pycurator.zkrecipes import WriteLock

from .cli_support import python_command, run_cli, start_cli
from .support import SOON, Worker
from .test_cli import one_error_line
from .test_cli_views import waiter_node

#: A port nothing listens on: a command that got as far as connecting would exit 69, not 2.
NOWHERE = ["--hosts", f"127.0.0.1:{free_port()}", "--connect-timeout", "1"]
#: Node data that would recolour the terminal and ring its bell, printed raw.
HOSTILE = b"\x1b[31mRED\x1b[0m\x07"
PRINT_NODE = "import os; print(os.environ['PYCURATOR_LOCK_NODE'], flush=True)"


# -- 1: --timeout 0 is one try, whatever the system -------------------------------------------

SYSTEM_OPTIONS = {
    "curator": [],
    "curator-read": ["--read"],
    "curator-semaphore": ["--semaphore", "1"],
    "zookeeper": ["--system", "zookeeper"],
    "menagerie": ["--system", "menagerie"],
    "menagerie-write": ["--system", "menagerie", "--write"],
    "menagerie-semaphore": ["--system", "menagerie", "--semaphore", "1"],
    "zklocker": ["--system", "zklocker", "--key", "one-try"],
}


@pytest.mark.parametrize("system", list(SYSTEM_OPTIONS))
def test_timeout_zero_takes_a_free_lock_in_one_try(
    system: str, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    options = SYSTEM_OPTIONS[system]
    result = run_cli(
        "lock", *options, "--timeout", "0", "--hosts", zk_server.hosts, f"{zk_path}/lock",
        "--", *python_command(PRINT_NODE),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{zk_path}/lock/"), result.stdout


def test_timeout_zero_on_a_held_lock_gives_up_at_once_and_leaves_no_node(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    holder = WriteLock(client, zk_path)
    assert holder.acquire(SOON)
    try:
        result = run_cli(
            "lock", "--system", "zookeeper", "--timeout", "0", "--hosts", zk_server.hosts,
            zk_path, "--", "true",
        )  # fmt: skip
        assert result.returncode == EXIT_TIMEOUT, result.stderr
        assert "timed out after 0s" in one_error_line(result.stderr)
        assert client.get_children(zk_path) == [str(holder.lock_path).rsplit("/", 1)[1]]
    finally:
        holder.release()


# -- 2: every argument is checked before connecting -------------------------------------------


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "must not be empty"),
        ("a/b", "contains '/'"),
        ("a-", "ends with '-'"),
        ("a\x01b", "cannot be part of a node name"),
        ("a\nb", "cannot be part of a node name"),
    ],
    ids=["empty", "slash", "dash", "control", "newline"],
)
def test_a_bad_key_is_one_usage_line_before_connecting(key: str, problem: str) -> None:
    result = run_cli(
        "lock", "--system", "zklocker", "--key", key, *NOWHERE, "/parent", "--", "true"
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    line = one_error_line(result.stderr)
    assert line.startswith("pycurator: error: bad --key: ") and problem in line, line
    assert "\n" not in line and "\x01" not in line


def test_zklockers_parent_must_not_be_the_root() -> None:
    result = run_cli("lock", "--system", "zklocker", "--key", "k", *NOWHERE, "/", "--", "true")
    assert result.returncode == EXIT_USAGE
    assert "needs a parent other than /" in one_error_line(result.stderr)


def test_data_that_is_not_utf8_is_written_as_given(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    code = "import os, sys; sys.stdout.write(os.environ['PYCURATOR_LOCK_NODE'])"
    show_data = python_command(
        code + "; from kazoo.client import KazooClient; c = KazooClient(os.environ["
        "'PYCURATOR_LOCK_HOSTS']); c.start(); sys.stdout.write(' ' + c.get(os.environ["
        "'PYCURATOR_LOCK_NODE'])[0].hex()); c.stop()"
    )
    data = os.fsdecode(b"\xffhost\x1b")
    result = run_cli("lock", "--data", data, "--hosts", zk_server.hosts, zk_path, "--", *show_data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[1] == b"\xffhost\x1b".hex()


# -- 3: what the tree holds never drives the terminal -----------------------------------------


def test_inspect_escapes_node_data_and_json_keeps_it_exact(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path, node_data=HOSTILE)
    assert holder.acquire(SOON)
    try:
        table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
        tree = run_cli("inspect", "--tree", "--hosts", zk_server.hosts, zk_path)
        document = run_cli("inspect", "--json", "--hosts", zk_server.hosts, zk_path)
    finally:
        holder.release()
    for result in (table, tree):
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
        assert "\\x1b[31mRED" in result.stdout
    assert "\\x1b[31mRED\\x1b[0m\\x07" in table.stdout
    (row,) = json.loads(document.stdout)["participants"]
    assert row["data"] == HOSTILE.decode()


def test_json_gives_data_that_is_not_utf8_exactly_in_base64(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    raw = b"\xff\x00host\xc3"
    first = InterProcessMutex(zk_client_factory(), f"{zk_path}/raw", node_data=raw)
    second = InterProcessMutex(zk_client_factory(), f"{zk_path}/text", node_data="hôte".encode())
    assert first.acquire(SOON) and second.acquire(SOON)
    try:
        one = run_cli("inspect", "--json", "--hosts", zk_server.hosts, f"{zk_path}/raw")
        tree = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
    finally:
        first.release()
        second.release()
    assert one.returncode == tree.returncode == 0, one.stderr + tree.stderr
    (row,) = json.loads(one.stdout)["participants"]
    assert (row["data_encoding"], base64.b64decode(row["data"])) == ("base64", raw)
    raw_row, text_row = json.loads(tree.stdout)
    assert raw_row["holders"][0]["data"] == row["data"]
    assert (text_row["holders"][0]["data"], text_row["holders"][0]["data_encoding"]) == (
        "hôte",
        "utf-8",
    )


def test_inspect_shows_writelocks_data_escaped(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = WriteLock(zk_client_factory(), zk_path)
    assert holder.acquire(SOON)
    try:
        table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
    finally:
        holder.release()
    assert table.returncode == 0, table.stderr
    assert "\\x124" in table.stdout and "\x12" not in table.stdout


def test_watch_escapes_what_it_prints(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    from .test_cli_views import Lines, start_watch, stop_watch

    zk.ensure_path(zk_path)
    watching = start_watch(zk_server.hosts, zk_path)
    try:
        lines = Lines(watching)
        lines.until(lambda line: "no holders" in line or "mutex" in line or "empty" in line)
        waiter_node(zk, zk_path, data=HOSTILE)
        line = lines.until(lambda line: "holds:" in line)
    finally:
        stop_watch(watching)
    assert "\\x1b[31mRED\\x1b[0m\\x07" in line and "\x1b" not in line


def test_the_progress_line_escapes_the_holders_data(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    from pycurator._threads.inspection import inspect_lock

    client = zk_client_factory()
    holder = InterProcessMutex(client, zk_path, node_data=HOSTILE)
    assert holder.acquire(SOON)
    try:
        line = describe(inspect_lock(client, zk_path), 0, 0)
    finally:
        holder.release()
    assert "held by \\x1b[31mRED\\x1b[0m\\x07" in line and "\x1b" not in line


def test_the_progress_line_shortens_long_data_without_cutting_an_escape(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    from pycurator._threads.inspection import inspect_lock

    client = zk_client_factory()
    holder = InterProcessMutex(client, zk_path, node_data=b"x" * 37 + HOSTILE)
    assert holder.acquire(SOON)
    try:
        line = describe(inspect_lock(client, zk_path), 0, 0)
        table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
    finally:
        holder.release()
    assert f"held by {'x' * 37}… since" in line, line
    assert f" {'x' * 23}… " in table.stdout, table.stdout


def test_the_progress_line_names_what_blocks_the_queue(zk: KazooClient, zk_path: str) -> None:
    from pycurator._threads.inspection import inspect_lock

    zk.create(f"{zk_path}/providers-0000000001", b"dubbo", makepath=True)
    line = describe(inspect_lock(zk, zk_path, layout="zookeeper-write-lock"), 0, 0)
    assert line == f"{zk_path}: 1 ahead, blocked by providers-0000000001"


def test_an_error_naming_what_the_user_gave_is_escaped() -> None:
    result = run_cli("lock", *NOWHERE, "/locks/x", "--", "\x1b]0;owned\x07")
    assert result.returncode == 127
    assert one_error_line(result.stderr) == (
        "pycurator: error: command not found: \\x1b]0;owned\\x07"
    )


# -- 4: a menagerie semaphore's holders are unknown until --permits ---------------------------


def test_a_menagerie_semaphore_without_permits_says_unknown(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    pool = f"{zk_path}/pool"
    leases = [ZkSemaphore(zk_client_factory(), pool, 4).acquire(SOON) for _ in range(3)]
    try:
        table = run_cli("inspect", "--hosts", zk_server.hosts, pool)
        document = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, pool).stdout)
        tree = json.loads(
            run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path).stdout
        )
        told = json.loads(
            run_cli(
                "inspect", "--tree", "--permits", "2", "--json", "--hosts", zk_server.hosts,
                zk_path,
            ).stdout
        )  # fmt: skip
    finally:
        for lease in leases:
            assert lease is not None
            lease.close()
    assert f"{pool}: menagerie-semaphore, holders unknown, 3 node(s) in line" in table.stdout
    assert "holder(s)" not in table.stdout and " waiting" not in table.stdout
    assert (document["holder_count"], document["waiting"]) == (None, None)
    assert {(p["state"], p["position"]) for p in document["participants"]} == {("unknown", None)}
    assert (tree[0]["holder_count"], tree[0]["waiting"]) == (None, None)
    assert (told[0]["holder_count"], told[0]["waiting"]) == (2, 1)


# -- 5: a node that is not a lock but blocks the queue is named -------------------------------


def test_a_persistent_numbered_child_blocking_a_writelock_is_named_by_lock_and_inspect(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/providers-", b"dubbo", sequence=True, makepath=True)
    result = run_cli(
        "lock", "--system", "zookeeper", "--timeout", "1", "--hosts", zk_server.hosts, zk_path,
        "--", "true",
    )  # fmt: skip
    assert result.returncode == EXIT_TIMEOUT, result.stderr
    warning, error = result.stderr.strip().splitlines()
    assert warning.startswith(f"pycurator: warning: {zk_path}: the queue is blocked by ")
    assert error.startswith(f"pycurator: error: timed out after 1s waiting for the lock {zk_path}")
    for line in (warning, error):
        assert "providers-0000000000 (a persistent node no session will ever delete)" in line
        assert "ZooKeeper's WriteLock counts every child" in line and "Java's included" in line
    assert zk.get_children(zk_path) == ["providers-0000000000"]  # the command's node is gone
    client_id = zk.client_id
    assert client_id is not None
    zk.create(f"{zk_path}/x-{client_id[0]}-", b"\x12\x34", ephemeral=True, sequence=True)
    view = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, zk_path).stdout)
    table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path).stdout
    assert [(p["kind"], p["state"]) for p in view["participants"]] == [
        ("other", "blocking"),
        ("write", "waiting"),
    ]
    assert view["blocked_by"] == [f"{zk_path}/providers-0000000000"]
    assert (view["holder_count"], view["waiting"]) == (0, 1)
    assert "the queue is blocked by providers-0000000000" in table
    assert "blocking" in table


# -- 6: crossing systems is refused -----------------------------------------------------------


def test_lock_refuses_a_path_held_by_another_system_unless_forced(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = WriteLock(zk_client_factory(), zk_path)
    assert holder.acquire(SOON)
    try:
        refused = run_cli(
            "lock", "--system", "menagerie", "--hosts", zk_server.hosts, zk_path, "--", "true"
        )
        forced = run_cli(
            "lock", "--system", "menagerie", "--force", "--timeout", "5",
            "--hosts", zk_server.hosts, zk_path, "--", "true",
        )  # fmt: skip
        curator = run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "true")
    finally:
        holder.release()
    assert refused.returncode == EXIT_REFUSED
    line = one_error_line(refused.stderr)
    assert f"refused: {zk_path} is ZooKeeper's WriteLock's (1 holder(s), 0 waiting)" in line
    assert "'pycurator lock --system zookeeper'" in line and "--force" in line
    assert forced.returncode == 0, forced.stderr  # the two do not exclude each other
    assert curator.returncode == EXIT_REFUSED
    assert "Curator's InterProcessMutex (or LeaderSelector) there would not exclude" in (
        curator.stderr
    )


def test_lock_refuses_a_curator_lock_of_another_kind(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    waiter_node(zk, zk_path, token="__WRIT__")
    result = run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "true")
    assert result.returncode == EXIT_REFUSED
    assert "is Curator's InterProcessReadWriteLock's" in one_error_line(result.stderr)
    assert "'pycurator lock --read or --write'" in result.stderr


# -- 7: PYCURATOR_LOCK_NODE is the node's full path, for every recipe --------------------------


@pytest.mark.parametrize("system", list(SYSTEM_OPTIONS))
def test_the_lock_node_variable_is_a_full_path_that_exists_while_held(
    system: str, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    check = (
        "import os; from kazoo.client import KazooClient; "
        "c = KazooClient(os.environ['PYCURATOR_LOCK_HOSTS']); c.start(); "
        "node = os.environ['PYCURATOR_LOCK_NODE']; "
        "print(node, c.exists(node) is not None and c.exists(node).ephemeralOwner != 0); c.stop()"
    )
    path = f"{zk_path}/{system}"
    result = run_cli(
        "lock", *SYSTEM_OPTIONS[system], "--hosts", zk_server.hosts, path,
        "--", *python_command(check),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    node, exists = result.stdout.split()
    assert node.startswith(f"{path}/") and exists == "True", result.stdout


# -- 10: messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_a_lost_lock_is_told_once_with_one_prefix(
    verbose: bool,
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    process = start_cli(
        *(["-v"] if verbose else []), "lock", "--grace", "1", "--hosts", zk_server.hosts,
        zk_path, "--", *python_command(PRINT_NODE + "; import time; time.sleep(60)"),
    )  # fmt: skip
    processes.append(process)
    assert process.stdout is not None
    reader = Worker(process.stdout.readline)
    reader.start()
    node = reader.outcome(SOON).strip()
    zk.delete(node)
    _, stderr = process.communicate(timeout=3 * SOON)
    assert process.returncode == 76, stderr
    assert "pycurator: pycurator:" not in stderr
    lost = [line for line in stderr.splitlines() if "lost" in line.replace(zk_path, "")]
    told = f"pycurator: lock lost (lock node deleted): {node}; terminating "
    if verbose:
        assert len(lost) == 2 and lost[1].startswith(told), stderr
        assert lost[0].startswith(f"pycurator: lock {node} lost: lock node deleted"), stderr
    else:
        assert len(lost) == 1 and lost[0].startswith(told), stderr


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["--system", "zookeeper", "--read"], "ZooKeeper's WriteLock has no read/write lock"),
        (["--system", "zklocker", "--semaphore", "2"], "ZkLocker has no read/write lock or sema"),
        (["--system", "menagerie", "--data", "x"], "menagerie writes its own node data"),
        (["--system", "zookeeper", "--revocable"], "ZooKeeper's WriteLock has no revocation"),
    ],
)
def test_an_option_the_system_does_not_take_is_refused_with_its_own_reason(
    options: list[str], reason: str
) -> None:
    result = run_cli("lock", *options, *NOWHERE, "/p", "--", "true")
    assert result.returncode == EXIT_USAGE
    line = one_error_line(result.stderr)
    assert f"{options[2]} does not go with --system {options[1]}: {reason}" in line, line


def test_elect_joins_zookeepers_leader_election(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    leader = start_cli(
        "elect", "--system", "zookeeper", "--id", "host-a", "--hosts", zk_server.hosts, zk_path,
        "--", *python_command("import os, time; print(os.environ['PYCURATOR_ELECT_NODE'], "
                              "flush=True); time.sleep(60)"),
    )  # fmt: skip
    processes.append(leader)
    assert leader.stdout is not None
    reader = Worker(leader.stdout.readline)
    reader.start()
    node = reader.outcome(SOON).strip()
    assert node.startswith(f"{zk_path}/n_") and zk.get(node)[0] == b"host-a"
    second = run_cli(
        "elect", "--system", "zookeeper", "--id", "host-b", "--timeout", "1",
        "--hosts", zk_server.hosts, zk_path, "--", "true",
    )  # fmt: skip
    assert second.returncode == EXIT_TIMEOUT, second.stderr
    table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path).stdout
    assert table.startswith(f"{zk_path}: zookeeper-election, leader 'host-a', 0 waiting")
    refused = run_cli("elect", "--id", "c", "--hosts", zk_server.hosts, zk_path, "--", "true")
    assert refused.returncode == EXIT_REFUSED
    assert "is ZooKeeper's LeaderElectionSupport's" in refused.stderr
    leader.terminate()
    leader.communicate(timeout=SOON)


def test_inspect_of_a_menagerie_lock_blocked_by_a_persistent_node(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/lock-", b"", sequence=True, makepath=True)
    lock = ReentrantZkLock(zk_client_factory(), zk_path)
    assert not lock.acquire(0.2)  # menagerie counts it: it is first for good
    zk.create(f"{zk_path}/lock-", b"", ephemeral=True, sequence=True)  # a waiter's node
    view = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, zk_path).stdout)
    assert view["layout"] == "menagerie-lock"
    assert [(p["kind"], p["state"]) for p in view["participants"]] == [
        ("other", "blocking"),
        ("lock", "waiting"),
    ]
    assert "menagerie counts every child whose name starts with lock" in view["note"]


def test_a_usage_error_naming_what_the_user_typed_is_escaped_once() -> None:
    stray = run_cli("lock", *NOWHERE, "/locks/x", "\x1b[31mred")
    assert stray.returncode == EXIT_USAGE
    assert "unrecognized arguments: \\x1b[31mred;" in stray.stderr
    assert "\x1b" not in stray.stderr
    path = run_cli("inspect", *NOWHERE, "/a\x1b")  # a repr in the message: escaped once
    assert path.returncode == EXIT_USAGE
    assert one_error_line(path.stderr) == (
        "pycurator: error: bad path: Invalid path string '/a\\x1b' caused by invalid character @2"
    )
