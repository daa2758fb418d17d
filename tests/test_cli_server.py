"""``pycurator server``: a ZooKeeper to try the command on, in one command, that leaves nothing
behind once stopped. Run as a user would: a subprocess, stopped by a signal."""

from __future__ import annotations

import getpass
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pycurator.cli import EXIT_UNAVAILABLE, EXIT_USAGE
from pycurator.testing import ZooKeeperServer, free_port

from .cli_support import cli_env, ends_within, run_cli
from .support import SOON, Worker
from .test_cli import one_error_line

#: How long a JVM may take to start ZooKeeper on a busy machine.
START_BOUND = 90.0


def perf_data(pid: int) -> Path:
    """The performance data file a JVM keeps by default (on Linux, always under /tmp)."""
    return Path("/tmp") / f"hsperfdata_{getpass.getuser()}" / str(pid)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_server_serves_its_printed_connect_string_and_leaves_nothing_once_stopped(
    stop: signal.Signals, tmp_path: Path
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "pycurator", "server", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cli_env(TMPDIR=str(scratch)),
    )
    try:
        assert process.stdout is not None
        reader = Worker(process.stdout.readline)
        reader.start()
        hosts = reader.outcome(START_BOUND).strip()
        assert re.fullmatch(r"127\.0\.0\.1:[0-9]+", hosts), hosts
        assert list(scratch.iterdir()), "the server keeps its data in a temporary folder"
        held = run_cli("lock", "--hosts", hosts, "/try/it", "--", "true")
        assert held.returncode == 0, held.stderr
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=SOON)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=SOON)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert f"export PYCURATOR_ZK_HOSTS={hosts}" in stderr
    assert f"stopped ZooKeeper on {hosts}" in stderr
    java = re.search(r"\(pid ([0-9]+)\)", stderr)
    assert java is not None, stderr
    assert ends_within(int(java.group(1)), 0), "the java process outlived the command"
    assert not perf_data(int(java.group(1))).exists(), "the JVM left its perf data file"
    assert list(scratch.iterdir()) == [], "the server's folder outlived the command"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", int(hosts.rsplit(":", 1)[1]))) != 0


def test_server_on_a_port_in_use_is_one_error_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("server", "--port", str(port))
    assert result.returncode == EXIT_UNAVAILABLE
    line = one_error_line(result.stderr)
    assert f"port {port} is in use on 127.0.0.1 by a program that is no ZooKeeper" in line
    assert "--port 0" in line


@pytest.mark.parametrize("port", ["-1", "65536", "x"])
def test_server_refuses_a_port_that_is_not_one(port: str) -> None:
    result = run_cli("server", "--port", port)
    assert result.returncode == EXIT_USAGE
    assert "argument --port: must be a whole number >= 0 and at most 65535" in result.stderr


def test_server_without_zookeepers_jars_says_what_to_install_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    env = cli_env(TMPDIR=str(tmp_path), PYCURATOR_ZK_CLASSPATH=str(tmp_path / "none.jar"))
    result = run_cli("server", "--port", "0", env=env)
    assert result.returncode == EXIT_UNAVAILABLE
    error = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(error) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "ClassNotFoundException" in error[0] and "apt-get install zookeeper" in error[0]
    assert list(tmp_path.iterdir()) == []


def start_server(port: int, scratch: Path) -> tuple[subprocess.Popen[str], str]:
    """``pycurator server --port PORT`` and the connect string it printed once serving."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pycurator", "server", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cli_env(TMPDIR=str(scratch)),
    )
    assert process.stdout is not None
    reader = Worker(process.stdout.readline)
    reader.start()
    try:
        hosts: str = reader.outcome(START_BOUND).strip()
    except BaseException:
        process.kill()
        process.communicate(timeout=SOON)
        raise
    return process, hosts


def stop_server(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == 0, stderr
    return stderr


def test_server_starts_again_at_once_on_the_port_it_left(tmp_path: Path) -> None:
    """The first server's readiness checks and the command's session leave connections in
    TIME-WAIT on its port, for a minute: the second binds all the same, as ZooKeeper does."""
    port = free_port()
    first, hosts = start_server(port, tmp_path)
    try:
        assert hosts == f"127.0.0.1:{port}"
        held = run_cli("lock", "--hosts", hosts, "/try/again", "--", "true")
        assert held.returncode == 0, held.stderr
    finally:
        stop_server(first)
    second, again = start_server(port, tmp_path)
    try:
        assert again == hosts
        held = run_cli("lock", "--hosts", hosts, "/try/again", "--", "true")
        assert held.returncode == 0, held.stderr
    finally:
        stop_server(second)


def test_server_on_a_port_a_zookeeper_serves_says_so(tmp_path: Path) -> None:
    with ZooKeeperServer() as running:
        result = run_cli("server", "--port", str(running.port))
    assert result.returncode == EXIT_UNAVAILABLE
    line = one_error_line(result.stderr)
    assert f"port {running.port} is in use on 127.0.0.1: a ZooKeeper serves it already" in line
    assert f"--hosts {running.hosts}" in line and "--port 0" in line
