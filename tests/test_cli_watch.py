"""``pycurator watch PATH``: a subtree's changes as they happen (lines, or JSON documents), the
changes made while the connection was away told once it is back, and its end: quietly on a
closed pipe and on every signal, outage or not. And ``pycurator inspect`` of a group's path."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from pycurator.testing import ZooKeeperServer
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli, start_cli
from .support import SOON, Worker
from .test_cli_pipes import CLOSED, NOTICE_BOUND
from .test_cli_views import Lines

#: However slow the machine, a watch ends this soon after the signal.
SIGNAL_BOUND = 5.0


def started(hosts: str, path: str, *options: str) -> tuple[subprocess.Popen[str], Lines]:
    process = start_cli("watch", *options, "--hosts", hosts, path)
    lines = Lines(process)
    lines.until(lambda line: "watching" in line or '"initialized"' in line)
    return process, lines


def stopped(process: subprocess.Popen[str], how: int = signal.SIGTERM) -> None:
    process.send_signal(how)
    sent = time.monotonic()
    _, stderr = process.communicate(timeout=SOON)
    assert time.monotonic() - sent < SIGNAL_BOUND, how
    assert (process.returncode, stderr) == (0, "")


def test_watch_prints_each_change_below_the_path_as_it_happens(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    zk.create(f"{zk_path}/old", b"there before", makepath=True)
    process, lines = started(zk_server.hosts, zk_path)
    processes.append(process)
    assert "watching" in lines.seen[0] and "2 node(s)" in lines.seen[0]
    zk.create(f"{zk_path}/a/b", b"one", makepath=True)
    assert lines.until(lambda line: "/a/b" in line).split(" ", 1)[1] == (
        f"created {zk_path}/a/b one\n"
    )
    zk.set(f"{zk_path}/a/b", b"\x1b[31mtwo")  # escaped for the terminal
    changed = lines.until(lambda line: "changed" in line)
    assert changed.split(" ", 1)[1] == f"changed {zk_path}/a/b \\x1b[31mtwo (was one)\n"
    zk.delete(f"{zk_path}/a", recursive=True)
    lines.until(lambda line: f"deleted {zk_path}/a (was )" in line)
    assert not any("there before" in line for line in lines.seen)  # not without --initial
    stopped(process)


def test_watch_json_prints_one_document_per_event_and_initial_nodes_with_initial(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    zk.create(f"{zk_path}/old", b"\xff\xfe", makepath=True)
    process = start_cli("watch", "--json", "--initial", "--hosts", zk_server.hosts, zk_path)
    processes.append(process)
    lines = Lines(process)
    initialized = json.loads(lines.until(lambda line: '"initialized"' in line))
    assert initialized == {"initialized": True, "path": zk_path, "nodes": 2}
    documents = [json.loads(line) for line in lines.seen[:-1]]
    old = next(d for d in documents if d["path"] == f"{zk_path}/old")
    assert (old["event"], old["data"], old["data_encoding"]) == ("created", "//4=", "base64")
    zk.set(f"{zk_path}/old", b"new")
    changed = json.loads(lines.until(lambda line: '"changed"' in line))
    assert (changed["data"], changed["version"], changed["old_version"]) == ("new", 1, 0)
    assert changed["old_data"] == "//4=" and changed["old_data_encoding"] == "base64"
    stopped(process, signal.SIGINT)


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_watch_tells_an_outage_at_once_then_what_changed_meanwhile_and_ends_on_signals(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]], as_json: bool
) -> None:
    # each write by a client of its own, made for it: the test does not hang on a writer's
    # session outliving the restart (under load, one did not, even at 60 s)
    write(own_server.hosts, lambda writer: writer.create("/watched/a", b"1", makepath=True))
    options = ["--json"] if as_json else []
    process, lines = started(own_server.hosts, "/watched", *options)
    processes.append(process)
    own_server.stop()
    suspended = lines.until(lambda line: "suspended" in line)
    if as_json:
        assert json.loads(suspended) == {"connection": "suspended"}
    else:
        assert "connection to ZooKeeper suspended: what was told may be stale" in suspended
    own_server.start()
    lines.until(lambda line: "back" in line or '"connected"' in line)
    write(own_server.hosts, lambda writer: writer.set("/watched/a", b"2"))
    lines.until(lambda line: "changed" in line and "/watched/a" in line)
    own_server.stop()
    lines.until(lambda line: "suspended" in line)
    stopped(process, signal.SIGHUP)  # in the outage


def write(hosts: str, change: Callable[[KazooClient], object]) -> None:
    """Make ``change`` with a client of its own, stopped after."""
    writer = KazooClient(hosts=hosts, timeout=SOON)
    writer.start(SOON)
    try:
        change(writer)
    finally:
        writer.stop()
        writer.close()


def test_watch_whose_reader_has_gone_ends_quietly(
    zk_server: ZooKeeperTarget, zk_path: str, processes: list[subprocess.Popen[str]]
) -> None:
    process = start_cli("watch", "--hosts", zk_server.hosts, zk_path)
    processes.append(process)
    assert process.stdout is not None
    first = Worker(process.stdout.readline)
    first.start()
    assert "watching" in first.outcome(SOON)
    process.stdout.close()
    closed = time.monotonic()
    _, stderr = process.communicate(timeout=SOON)
    assert time.monotonic() - closed < NOTICE_BOUND
    assert (process.returncode, stderr) == (CLOSED, "")


def test_watch_refuses_a_bad_path_by_name() -> None:
    done = run_cli("watch", "--hosts", "127.0.0.1:1", "no-slash")
    assert done.returncode == 2 and "no-slash" in done.stderr


def test_inspect_shows_a_groups_members_their_sessions_and_data(
    zk_server: ZooKeeperTarget, zk_client_factory: object, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/beta", b"10.0.0.2", ephemeral=True, makepath=True)
    zk.create(f"{zk_path}/alpha", b"10.0.0.1", ephemeral=True)
    table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == f"{zk_path}: group, 2 member(s)"
    assert lines[1].split() == ["MEMBER", "SESSION", "AGE", "DATA"]
    assert [line.split()[0] for line in lines[2:]] == ["alpha", "beta"]
    assert lines[2].split()[1] == f"0x{zk.client_id[0]:x}" and lines[2].endswith("10.0.0.1")
    document = json.loads(run_cli("inspect", "--json", "--hosts", zk_server.hosts, zk_path).stdout)
    assert (document["layout"], document["member_count"]) == ("group", 2)
    assert [(p["node"], p["kind"], p["data"]) for p in document["participants"]] == [
        (f"{zk_path}/alpha", "member", "10.0.0.1"),
        (f"{zk_path}/beta", "member", "10.0.0.2"),
    ]
    tree = run_cli("inspect", "--tree", "--hosts", zk_server.hosts, zk_path)
    assert tree.stdout.splitlines()[1].split()[:4] == ["group", "-", "-", "2"]
