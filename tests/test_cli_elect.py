"""``pycurator elect``: a command that runs only while this process leads, against a real server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pycurator import LeaderLatch, LeaderSelector, Leadership
from pycurator.cli import EXIT_LOCK_LOST, EXIT_TIMEOUT, EXIT_USAGE
from pycurator.testing import ClientFactory, ZooKeeperServer, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import ends_within, python_command, run_cli, start_cli
from .support import SOON, children, eventually

LINUX = sys.platform.startswith("linux")

#: However slow the machine, ``elect`` exits this soon after what ends it.
EXIT_BOUND = 20.0

#: The elected command: logs its start (with what it was given) to argv[1], then runs until the
#: file argv[2]-ID appears, and exits with the number written in it (0 if none).
LEADER = """
import os, pathlib, sys, time
e = os.environ
me = e["PYCURATOR_ELECT_ID"]
fields = [me, e["PYCURATOR_ELECT_PATH"], e["PYCURATOR_ELECT_NODE"], e["PYCURATOR_ELECT_TOKEN"],
          e["PYCURATOR_ELECT_HOSTS"], str(os.getpid())]
log = pathlib.Path(sys.argv[1])
with log.open("a") as f:
    f.write("start " + " ".join(fields) + "\\n")
print("ready", flush=True)
stop = pathlib.Path(sys.argv[2] + "-" + me)
for _ in range(1200):
    if stop.exists():
        break
    time.sleep(0.1)
with log.open("a") as f:
    f.write("end " + me + "\\n")
sys.exit(int(stop.read_text() or 0) if stop.exists() else 9)
"""


@dataclass(frozen=True)
class Start:
    id: str
    path: str
    node: str
    token: int
    hosts: str
    pid: int


class Run:
    """Elected commands of one test: what they logged, and how to stop one."""

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "log"
        self.log.touch()
        self.stop_base = str(tmp_path / "stop")

    def command(self) -> list[str]:
        return [*python_command(LEADER), str(self.log), self.stop_base]

    def lines(self) -> list[list[str]]:
        return [line.split() for line in self.log.read_text().splitlines()]

    def starts(self) -> list[Start]:
        return [
            Start(f[1], f[2], f[3], int(f[4]), f[5], int(f[6]))
            for f in self.lines()
            if f[0] == "start"
        ]

    def stop(self, participant_id: str, status: int = 0) -> None:
        Path(f"{self.stop_base}-{participant_id}").write_text(str(status))

    def kill_all(self) -> None:
        """Kill the commands still running (after a test that failed half-way)."""
        for start in self.starts():
            with contextlib.suppress(ProcessLookupError):
                os.kill(start.pid, signal.SIGKILL)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    result = Run(tmp_path)
    yield result
    result.kill_all()


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    """A server of this test's own, which the test may stop."""
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.close()


def elect(
    hosts: str, path: str, participant_id: str, *options: str, command: list[str]
) -> list[str]:
    return ["elect", "--hosts", hosts, "--id", participant_id, *options, path, "--", *command]


def test_two_elect_processes_take_turns_and_the_command_gets_the_election(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    run: Run,
    processes: list[subprocess.Popen[str]],
) -> None:
    path = f"{zk_path}/election"
    first = start_cli(*elect(zk_server.hosts, path, "a", command=run.command()))
    processes.append(first)
    eventually(lambda: len(run.starts()) == 1, what="the first process leads")
    second = start_cli(*elect(zk_server.hosts, path, "b", command=run.command()))
    processes.append(second)
    eventually(lambda: len(children(zk, path)) == 2, what="the second process queued")

    leader = run.starts()[0]
    assert (leader.id, leader.path, leader.hosts) == ("a", path, zk_server.hosts)
    stat = zk.exists(leader.node)
    assert stat is not None and stat.ephemeralOwner != 0
    assert leader.token == stat.czxid
    assert len(run.starts()) == 1  # queued, not running

    run.stop("a", 3)
    first.communicate(timeout=SOON)
    assert first.returncode == 3  # the command's own status
    eventually(lambda: len(run.starts()) == 2, what="the second process leads")
    assert [f[:2] for f in run.lines()] == [["start", "a"], ["end", "a"], ["start", "b"]]
    follower = run.starts()[1]
    assert follower.token > leader.token
    assert zk.exists(leader.node) is None

    run.stop("b")
    second.communicate(timeout=SOON)
    assert second.returncode == 0
    eventually(lambda: children(zk, path) == [], what="both latch nodes deleted")


@pytest.mark.skipif(not LINUX, reason="no parent-death signal outside Linux")
def test_a_killed_leaders_command_dies_with_it_before_the_next_leader_starts(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
    run: Run,  # after processes: a command left running is killed before their pipes are read
) -> None:
    path = f"{zk_path}/election"
    short = ("--session-timeout", "2")
    first = start_cli(*elect(zk_server.hosts, path, "a", *short, command=run.command()))
    processes.append(first)
    eventually(lambda: len(run.starts()) == 1, what="the first process leads")
    second = start_cli(*elect(zk_server.hosts, path, "b", *short, command=run.command()))
    processes.append(second)
    eventually(lambda: len(children(zk, path)) == 2, what="the second process queued")

    first.kill()  # as the OOM killer would: no chance to stop its command
    assert ends_within(run.starts()[0].pid, 1.0), "the command outlived its elect process"
    assert len(run.starts()) == 1  # the next leader waits for the first session's end
    first.wait(SOON)
    eventually(lambda: len(run.starts()) == 2, what="the second process leads")
    assert run.starts()[1].id == "b"
    assert [f[:2] for f in run.lines()] == [["start", "a"], ["start", "b"]]
    assert children(zk, path) == [Path(run.starts()[1].node).name]
    run.stop("b")
    second.communicate(timeout=SOON)
    assert second.returncode == 0


def test_elect_exits_76_soon_after_the_server_goes_while_the_command_runs(
    own_server: ZooKeeperServer,
    run: Run,
    processes: list[subprocess.Popen[str]],
) -> None:
    process = start_cli(
        *elect(own_server.hosts, "/election/outage", "a", "--grace", "1", command=run.command())
    )
    processes.append(process)
    eventually(lambda: len(run.starts()) == 1, what="the process leads")
    own_server.stop()
    lost_at = time.monotonic()
    _, stderr = process.communicate(timeout=EXIT_BOUND)
    assert process.returncode == EXIT_LOCK_LOST, stderr
    assert "leadership lost" in stderr
    assert time.monotonic() - lost_at < EXIT_BOUND
    # the command was stopped: SIGTERM ended it before it logged its end
    with pytest.raises(ProcessLookupError):
        os.kill(run.starts()[0].pid, 0)


def test_elect_with_a_timeout_and_another_leader_exits_75_and_leaves_no_node(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    with LeaderLatch(zk_client_factory(), zk_path, id="java-or-not") as latch:
        assert latch.wait(SOON)
        started = time.monotonic()
        result = run_cli(
            *elect(zk_server.hosts, zk_path, "late", "--timeout", "1", command=["true"])
        )
        assert result.returncode == EXIT_TIMEOUT, result.stderr
        assert f"timed out after 1s waiting for leadership of {zk_path}" in result.stderr
        assert time.monotonic() - started < 1 + EXIT_BOUND
        assert children(zk, zk_path) == [Path(latch.our_path or "").name]
        assert latch.has_leadership()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--id", "a", "--timeout", "nan", "/e", "--", "true"], "--timeout"),
        (["--id", "a", "--timeout", "0", "/e", "--", "true"], "--timeout"),
        (["--id", "a", "--grace", "-1", "/e", "--", "true"], "--grace"),
        (["--id", "a", "--session-timeout", "inf", "/e", "--", "true"], "--session-timeout"),
        (["--id", "a", "election", "--", "true"], "bad path"),
        (["--id", "a", "/e/", "--", "true"], "bad path"),
        (["--id", "a", "/e"], "no command given"),
        (["/e", "--", "true"], "--id"),
        (["--id", "bad\udcff", "/e", "--", "true"], "bad --id"),
    ],
)
def test_bad_input_is_one_usage_error_line_before_connecting(args: list[str], message: str) -> None:
    result = run_cli("elect", "--hosts", f"127.0.0.1:{free_port()}", *args)
    assert result.returncode == EXIT_USAGE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert message in lines[-1]


def test_elect_with_a_missing_command_exits_127_without_joining(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    result = run_cli(*elect(zk_server.hosts, zk_path, "a", command=["no-such-command-xyz"]))
    assert result.returncode == 127
    assert zk.exists(zk_path) is None


# -- inspect ---------------------------------------------------------------------------------


def inspect_json(hosts: str, path: str) -> dict[str, object]:
    result = run_cli("inspect", "--hosts", hosts, "--json", path)
    assert result.returncode == 0, result.stderr
    view: dict[str, object] = json.loads(result.stdout)
    return view


def ids_and_states(view: dict[str, object]) -> list[tuple[str, str, str]]:
    participants = view["participants"]
    assert isinstance(participants, list)
    return [(p["data"], p["state"], p["kind"]) for p in participants]


def test_inspect_shows_a_latchs_participants_in_queue_order_leader_first(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    with LeaderLatch(zk_client_factory(), zk_path, id="first") as first:
        assert first.wait(SOON)
        with LeaderLatch(zk_client_factory(), zk_path, id="second") as second:
            eventually(lambda: len(second.participants()) == 2, what="the second latch queued")
            view = inspect_json(zk_server.hosts, zk_path)
            assert view["layout"] == "latch"
            assert ids_and_states(view) == [
                ("first", "leader", "latch"),
                ("second", "waiting", "latch"),
            ]
            table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
            assert table.returncode == 0, table.stderr
            assert f"{zk_path}: latch, leader 'first', 1 waiting" in table.stdout
            assert "leader " in table.stdout.splitlines()[2]


def test_inspect_shows_a_selectors_ids_with_the_leader_as_the_holder(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    leading = threading.Event()
    done = threading.Event()

    def lead(leadership: Leadership) -> None:
        leading.set()
        done.wait(SOON)

    selectors = [
        LeaderSelector(zk_client_factory(), zk_path, lead, id=name) for name in ("one", "two")
    ]
    selectors[0].start()
    try:
        assert leading.wait(SOON)
        selectors[1].start()
        eventually(lambda: len(selectors[0].participants()) == 2, what="the second queued")
        view = inspect_json(zk_server.hosts, zk_path)
        assert view["layout"] == "mutex"
        assert ids_and_states(view) == [("one", "holder", "mutex"), ("two", "waiting", "mutex")]
    finally:
        done.set()
        for selector in selectors:
            selector.close()
