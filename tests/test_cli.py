"""The ``pycurator`` command end to end: subprocesses against the test server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import (
    EXIT_LOCK_LOST,
    EXIT_NOT_FOUND,
    EXIT_REVOKED,
    EXIT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
)
from pycurator.cli._common import Interrupter
from pycurator.testing import ClientFactory, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env, python_command, run_cli, start_cli
from .support import SOON, Worker, children, eventually

PRINT_ENV = (
    "import os; print(*(os.environ[k] for k in ('PYCURATOR_LOCK_PATH', 'PYCURATOR_LOCK_NODE', "
    "'PYCURATOR_LOCK_TOKEN')))"
)
READY_THEN_SLEEP = "import time; print('ready', flush=True); time.sleep(60)"
IGNORE_TERM_THEN_SLEEP = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def wait_ready(process: subprocess.Popen[str]) -> None:
    """Block until the locked command printed its first line."""
    assert process.stdout is not None
    stdout = process.stdout
    reader = Worker(stdout.readline)
    reader.start()
    assert reader.outcome(SOON) == "ready\n"


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("pycurator: error: ")
    return lines[0]


# -- demo ------------------------------------------------------------------------------------


def test_demo_on_an_embedded_server_reports_exclusion_across_languages() -> None:
    result = run_cli(
        "demo", "--python-threads", "2", "--java-threads", "2", "--rounds", "2", "--hold-ms", "1"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(embedded)" in result.stdout
    assert "holds: 8 (Java 4, Python 4)" in result.stdout
    assert "overlapping holds: 0" in result.stdout
    assert "final counter: 8 (expected 8" in result.stdout
    assert "one holder at a time across both languages" in result.stdout
    timeline = [line for line in result.stdout.splitlines() if re.search(r"-lock-\d{10}", line)]
    assert len(timeline) == 8
    assert {line.split()[2] for line in timeline} == {"Python", "Java"}


def test_demo_without_the_lock_shows_the_violation_and_exits_1(
    zk_server: ZooKeeperTarget,
) -> None:
    result = run_cli(
        "demo",
        "--hosts",
        zk_server.hosts,
        "--python-threads",
        "3",
        "--java-threads",
        "0",
        "--rounds",
        "3",
        "--hold-ms",
        "50",
        "--unlocked",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "verdict: EXCLUSION VIOLATED" in result.stdout
    overlaps = int(re.search(r"overlapping holds: (\d+)", result.stdout).group(1))  # type: ignore[union-attr]
    assert overlaps > 0


def test_demo_cleans_up_its_nodes(zk_server: ZooKeeperTarget, zk: KazooClient) -> None:
    result = run_cli("demo", "--hosts", zk_server.hosts, "--java-threads", "0", "--rounds", "1")
    assert "verdict: OK: one holder at a time among its threads" in result.stdout
    assert "both languages" not in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    base = re.search(r"lock (/pycurator-demo/\w+)/lock", result.stdout).group(1)  # type: ignore[union-attr]
    assert zk.exists(base) is None


def test_demo_with_an_unreachable_ensemble_is_one_error_line() -> None:
    result = run_cli("demo", "--hosts", f"127.0.0.1:{free_port()}", "--connect-timeout", "1")
    assert result.returncode == EXIT_UNAVAILABLE
    assert "cannot connect to ZooKeeper" in one_error_line(result.stderr)


# -- lock ------------------------------------------------------------------------------------


def test_lock_gives_the_command_the_node_and_fencing_token(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    result = run_cli("lock", "--hosts", zk_server.hosts, path, "--", *python_command(PRINT_ENV))
    assert result.returncode == 0, result.stderr
    lock_path, node, token = result.stdout.split()
    assert lock_path == path
    assert re.fullmatch(rf"{path}/_c_[0-9a-f-]{{36}}-lock-\d{{10}}", node)
    assert int(token) > 0
    assert children(zk, path) == []


def test_lock_exits_with_the_commands_status(zk_server: ZooKeeperTarget, zk_path: str) -> None:
    result = run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "sh", "-c", "exit 7")
    assert result.returncode == 7


def test_lock_waits_for_a_python_holder_then_runs(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    observer = zk_client_factory()
    assert holder.acquire()
    waiter = Worker(lambda: run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "true"))
    waiter.start()
    eventually(lambda: len(children(observer, zk_path)) == 2, what="the CLI queued")
    assert not waiter.done.is_set()
    holder.release()
    assert waiter.outcome(3 * SOON).returncode == 0


def test_lock_timeout_has_its_own_status_and_leaves_no_node(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    with holder:
        result = run_cli(
            "lock", "--hosts", zk_server.hosts, "--timeout", "0.5", zk_path, "--", "true"
        )
        assert result.returncode == EXIT_TIMEOUT
        assert "timed out after 0.5s" in one_error_line(result.stderr)
        assert len(children(zk_client_factory(), zk_path)) == 1


def test_lost_lock_terminates_the_command(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    process = start_cli(
        "lock", "--hosts", zk_server.hosts, zk_path, "--", *python_command(READY_THEN_SLEEP)
    )
    processes.append(process)
    wait_ready(process)
    (node,) = children(zk, zk_path)
    zk.delete(f"{zk_path}/{node}")
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == EXIT_LOCK_LOST
    assert "lock lost" in stderr


def test_a_command_ignoring_sigterm_is_killed_after_the_grace_period(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    process = start_cli(
        "lock",
        "--hosts",
        zk_server.hosts,
        "--grace",
        "0.5",
        zk_path,
        "--",
        *python_command(IGNORE_TERM_THEN_SLEEP),
    )
    processes.append(process)
    wait_ready(process)
    (node,) = children(zk, zk_path)
    zk.delete(f"{zk_path}/{node}")
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == EXIT_LOCK_LOST
    assert "SIGKILL" in stderr


def test_revoke_stops_a_revocable_lock_command(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    process = start_cli(
        "lock",
        "--hosts",
        zk_server.hosts,
        "--revocable",
        zk_path,
        "--",
        *python_command(READY_THEN_SLEEP),
    )
    processes.append(process)
    wait_ready(process)
    (node,) = children(zk, zk_path)
    result = run_cli("revoke", "--hosts", zk_server.hosts, f"{zk_path}/{node}")
    assert result.returncode == 0, result.stderr
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == EXIT_REVOKED
    assert "revoked" in stderr
    assert children(zk, zk_path) == []


def test_terminating_a_waiting_lock_command_leaves_no_node(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    observer = zk_client_factory()
    with InterProcessMutex(zk_client_factory(), zk_path):
        process = start_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "true")
        processes.append(process)
        eventually(lambda: len(children(observer, zk_path)) == 2, what="the CLI queued")
        process.terminate()
        process.communicate(timeout=SOON)
        assert process.returncode == 128 + signal.SIGTERM
        eventually(lambda: len(children(observer, zk_path)) == 1, what="its node was deleted")


def test_lock_with_an_unknown_command_exits_127_without_taking_the_lock(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    result = run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "no-such-command-xyz")
    assert result.returncode == EXIT_NOT_FOUND
    assert "command not found: no-such-command-xyz" in one_error_line(result.stderr)
    assert zk.exists(zk_path) is None


@pytest.mark.parametrize("option", [["--read"], ["--write"], ["--semaphore", "2"]])
def test_lock_runs_the_command_with_every_recipe(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, option: list[str]
) -> None:
    result = run_cli(
        "lock", "--hosts", zk_server.hosts, *option, zk_path, "--", *python_command(PRINT_ENV)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == zk_path


# -- inspect ---------------------------------------------------------------------------------


def test_inspect_json_shows_holder_and_waiter_of_a_pycurator_mutex(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, zk_path, node_data=b"billing-7")
    waiter = InterProcessMutex(zk_client_factory(), zk_path)
    assert holder.acquire()
    try:

        def acquire_and_release() -> bool:
            if not waiter.acquire(timeout=3 * SOON):
                return False
            waiter.release()
            return True

        waiting = Worker(acquire_and_release)
        waiting.start()
        eventually(lambda: len(holder.participant_nodes()) == 2, what="the waiter queued")
        result = run_cli("inspect", "--hosts", zk_server.hosts, "--json", zk_path)
        assert result.returncode == 0, result.stderr
        view = json.loads(result.stdout)
        assert view["layout"] == "mutex" and view["exists"] is True
        first, second = view["participants"]
        assert first["node"] == holder.lock_path
        assert (first["kind"], first["state"], first["position"]) == ("mutex", "holder", 0)
        assert first["data"] == "billing-7"
        assert first["session"] == f"0x{holder_client.client_id[0]:x}"
        assert first["age_seconds"] >= 0
        assert (second["state"], second["position"]) == ("waiting", 1)
    finally:
        holder.release()
    assert waiting.outcome() is True


def test_inspect_prints_a_table_by_default(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessMutex(zk, zk_path)
    with lock:
        node = lock.lock_path
        result = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
    assert result.returncode == 0, result.stderr
    header, columns, row = result.stdout.splitlines()
    assert header == f"{zk_path}: mutex, 1 holder(s), 0 waiting"
    assert columns.split() == ["POS", "STATE", "KIND", "SESSION", "AGE", "DATA", "NODE"]
    assert row.split()[:3] == ["0", "holder", "mutex"]
    assert node is not None and row.endswith(node.rsplit("/", 1)[1])


def test_inspect_of_a_missing_path_says_so(zk_server: ZooKeeperTarget, zk_path: str) -> None:
    result = run_cli("inspect", "--hosts", zk_server.hosts, zk_path)
    assert result.returncode == 0
    assert "no such node" in result.stdout


# -- revoke and errors -----------------------------------------------------------------------


def test_revoke_writes_curators_message_to_the_node(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessMutex(zk, zk_path)
    with lock:
        assert lock.lock_path is not None
        result = run_cli("revoke", "--hosts", zk_server.hosts, lock.lock_path)
        assert result.returncode == 0, result.stderr
        assert zk.get(lock.lock_path)[0] == b"__REVOKE__"


def test_revoke_of_a_lock_path_rather_than_a_node_points_to_inspect(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    lock = InterProcessMutex(zk, zk_path)
    with lock:
        result = run_cli("revoke", "--hosts", zk_server.hosts, zk_path)
        assert result.returncode == 1
        assert one_error_line(result.stderr) == (
            f"pycurator: error: refused: {zk_path} is a lock's path, not one of its nodes; "
            f"'pycurator inspect {zk_path}' lists them"
        )
        assert lock.lock_path is not None
        assert zk.get(lock.lock_path)[0] != b"__REVOKE__"


@pytest.mark.parametrize(
    "args",
    [
        ["lock", "locks/no-slash", "--", "true"],
        ["inspect", "/trailing/"],
        ["revoke", "/a//b"],
    ],
)
def test_a_bad_path_is_one_usage_error_line(args: list[str]) -> None:
    result = run_cli(*args)
    assert result.returncode == EXIT_USAGE
    assert "bad " in one_error_line(result.stderr)


@pytest.mark.parametrize(
    ("command", "path"), [("inspect", "/locks/x"), ("revoke", "/locks/x/lock-0000000001")]
)
def test_an_unreachable_ensemble_is_one_error_line(command: str, path: str) -> None:
    hosts = f"127.0.0.1:{free_port()}"
    result = run_cli(command, "--hosts", hosts, "--connect-timeout", "1", path)
    assert result.returncode == EXIT_UNAVAILABLE
    assert f"cannot connect to ZooKeeper at {hosts} within 1s" in one_error_line(result.stderr)


def test_hosts_come_from_the_environment_when_not_given(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    env = cli_env(PYCURATOR_ZK_HOSTS=zk_server.hosts)
    result = run_cli("inspect", zk_path, env=env)
    assert result.returncode == 0, result.stderr


def test_the_command_and_the_demo_module_load_no_jvm() -> None:
    code = "import sys, pycurator, pycurator.cli, pycurator.demo; sys.exit('jpype' in sys.modules)"
    assert subprocess.run(python_command(code), timeout=SOON).returncode == 0


def test_a_signal_within_a_wait_raises_nothing_and_ends_it_from_another_thread() -> None:
    """A handler that raised would land wherever the main thread is, kazoo's insides included,
    and could leave one of their locks taken for good (kazoo's callback worker, and the exit
    that joins it, then wait forever: seen about once in 60 terminated ``lock`` commands).
    Within ``ending`` the first signal is remembered and ends the wait from another thread;
    later ones are ignored; nothing is raised in the main thread, and the handlers and the
    wakeup fd are given back afterwards."""
    interrupt = Interrupter()
    ended = threading.Event()
    enders: list[threading.Thread] = []
    sigint = signal.getsignal(signal.SIGINT)
    wakeup_fd = signal.set_wakeup_fd(-1)  # read it, and put it back
    signal.set_wakeup_fd(wakeup_fd)

    def end() -> None:
        enders.append(threading.current_thread())
        ended.set()

    with interrupt.ending(end):
        os.kill(os.getpid(), signal.SIGTERM)
        assert ended.wait(SOON)  # the main thread waited here, and nothing was raised in it
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt either
        os.kill(os.getpid(), signal.SIGHUP)
    assert interrupt.signum == signal.SIGTERM
    assert enders != [] and threading.main_thread() not in enders
    assert len(enders) == 1
    assert signal.getsignal(signal.SIGINT) is sigint
    assert signal.set_wakeup_fd(wakeup_fd) == wakeup_fd


#: Makes the parent-death hook in this process, then runs it in a child (whose parent made it)
#: and in a grandchild (whose parent did not: as a command whose ``pycurator`` died before the
#: hook ran, adopted by another process); prints how each ended.
HOOK_IN_CHILD_AND_GRANDCHILD = """
import os
from pycurator.cli._guard import dies_with_this_process
hook = dies_with_this_process()
assert hook is not None

def run_hook_in_a_child():
    child = os.fork()
    if child == 0:
        hook()
        os._exit(0)
    _, status = os.waitpid(child, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)

print(run_hook_in_a_child(), flush=True)
if os.fork() == 0:
    print(run_hook_in_a_child(), flush=True)
    os._exit(0)
os.wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="no parent-death signal")
def test_a_command_whose_guard_died_before_it_started_kills_itself() -> None:
    result = subprocess.run(
        python_command(HOOK_IN_CHILD_AND_GRANDCHILD), capture_output=True, text=True, timeout=SOON
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", str(int(signal.SIGKILL))]
