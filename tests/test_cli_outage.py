"""``pycurator lock`` with the server gone: its exit never waits on the network, and
``--timeout`` bounds the wait for the first connection as well as for the lock."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import EXIT_LOCK_LOST, EXIT_TIMEOUT, EXIT_UNAVAILABLE
from pycurator.testing import FaultProxy, ZooKeeperServer, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import python_command, start_cli
from .support import SOON, children, eventually
from .test_cli import READY_THEN_SLEEP, wait_ready

#: However slow the machine, the command exits this soon after what ends it.
EXIT_BOUND = 20.0


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    """A server of this test's own, which the test may stop."""
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.close()


def test_lock_exits_76_soon_after_the_server_goes_while_the_command_runs(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]]
) -> None:
    process = start_cli(
        "lock", "--hosts", own_server.hosts, "--grace", "1", "/locks/outage",
        "--", *python_command(READY_THEN_SLEEP),
    )  # fmt: skip
    processes.append(process)
    wait_ready(process)
    own_server.stop()
    lost_at = time.monotonic()
    _, stderr = process.communicate(timeout=EXIT_BOUND)
    assert process.returncode == EXIT_LOCK_LOST, stderr
    assert "lock lost" in stderr
    assert time.monotonic() - lost_at < EXIT_BOUND
    assert not own_server.running


def test_lock_exits_76_soon_after_the_server_falls_silent_while_the_command_runs(
    zk_server: ZooKeeperTarget, processes: list[subprocess.Popen[str]]
) -> None:
    proxy = FaultProxy(zk_server.hosts)
    try:
        process = start_cli(
            "lock", "--hosts", proxy.hosts, "--grace", "1", "--session-timeout", "4",
            f"/locks/silent-{free_port()}", "--", *python_command(READY_THEN_SLEEP),
        )  # fmt: skip
        processes.append(process)
        wait_ready(process)
        proxy.blackhole()
        lost_at = time.monotonic()
        _, stderr = process.communicate(timeout=EXIT_BOUND)
        assert process.returncode == EXIT_LOCK_LOST, stderr
        assert "lock lost" in stderr
        assert time.monotonic() - lost_at < EXIT_BOUND
    finally:
        proxy.close()


def test_lock_timeout_bounds_the_first_connection(
    processes: list[subprocess.Popen[str]],
) -> None:
    hosts = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    process = start_cli("lock", "--hosts", hosts, "--timeout", "5", "/locks/x", "--", "true")
    processes.append(process)
    _, stderr = process.communicate(timeout=5 + 10)
    assert time.monotonic() - started < 5 + 10
    assert process.returncode == EXIT_UNAVAILABLE
    assert f"cannot connect to ZooKeeper at {hosts} within 5s" in stderr


def test_lock_waiting_with_a_timeout_exits_on_time_when_the_server_goes(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]]
) -> None:
    holder_client = KazooClient(hosts=own_server.hosts)
    holder_client.start(SOON)
    try:
        holder = InterProcessMutex(holder_client, "/locks/waiting")
        assert holder.acquire()
        started = time.monotonic()
        process = start_cli(
            "lock", "--hosts", own_server.hosts, "--timeout", "5", "/locks/waiting", "--", "true"
        )
        processes.append(process)
        eventually(
            lambda: len(children(holder_client, "/locks/waiting")) == 2, what="the CLI queued"
        )
        own_server.kill()
        _, stderr = process.communicate(timeout=5 + 10)
        assert time.monotonic() - started < 5 + 10
        assert process.returncode == EXIT_TIMEOUT, stderr
        assert "timed out after 5s" in stderr
    finally:
        holder_client.stop()
        holder_client.close()
