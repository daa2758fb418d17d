"""The command with the server gone: ``lock``'s exit never waits on the network, ``--timeout``
bounds the wait for the first connection as well as for the lock, and ``inspect --watch`` tells
the outage at once, tells its end, and ends on every signal within it."""

from __future__ import annotations

import json
import signal
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
from .support import SOON, STEADY_RECONNECT, Worker, children, eventually
from .test_cli import READY_THEN_SLEEP, wait_ready
from .test_cli_views import Lines

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


# -- inspect --watch in an outage -------------------------------------------------------------

#: However slow the machine, a watch ends this soon after the signal (it ends at once: the bound
#: is for a loaded machine).
SIGNAL_BOUND = 5.0


def watch_lines(process: subprocess.Popen[str]) -> Lines:
    lines = Lines(process)
    lines.until(lambda line: " holder(s)" in line)
    return lines


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_watch_tells_a_suspension_at_once_and_ends_on_every_signal_in_the_outage(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]], as_json: bool
) -> None:
    holder_client = KazooClient(hosts=own_server.hosts)
    holder_client.start(SOON)
    try:
        assert InterProcessMutex(holder_client, "/locks/watched").acquire(SOON)
        stops = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
        options = ["--json"] if as_json else []
        watches = [
            start_cli("inspect", "--watch", *options, "--hosts", own_server.hosts, "/locks/watched")
            for _ in stops
        ]
        processes.extend(watches)
        if as_json:
            readers = [Lines(watch) for watch in watches]
            for lines in readers:
                lines.until(lambda line: json.loads(line)["holder_count"] == 1)
        else:
            readers = [watch_lines(watch) for watch in watches]
        own_server.kill()
        for lines in readers:
            if as_json:
                told = json.loads(lines.until(lambda line: '"suspended"' in line))
                assert (told["connection"], told["stale"], told["holder_count"]) == (
                    "suspended",
                    True,
                    1,
                )
            else:
                told = lines.until(lambda line: "suspended" in line)
                assert "connection to ZooKeeper suspended: what is shown may be stale" in told
        for watch, stop in zip(watches, stops, strict=True):
            watch.send_signal(stop)
            sent = time.monotonic()
            _, stderr = watch.communicate(timeout=SOON)
            assert time.monotonic() - sent < SIGNAL_BOUND, stop
            assert watch.returncode == 0, (stop, stderr)
            assert stderr == "", stderr
    finally:
        holder_client.stop()
        holder_client.close()


def test_watch_tells_when_the_connection_is_back_and_shows_the_lock_again(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]]
) -> None:
    # the holder's session outlives the server's restart (which took 11 s once on a loaded
    # machine, past a 10 s session), and it reconnects as soon as the server is back
    holder_client = KazooClient(
        hosts=own_server.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT.copy()
    )
    holder_client.start(SOON)
    try:
        assert InterProcessMutex(holder_client, "/locks/back").acquire(SOON)
        watch = start_cli("inspect", "--watch", "--hosts", own_server.hosts, "/locks/back")
        processes.append(watch)
        lines = watch_lines(watch)
        own_server.stop()
        lines.until(lambda line: "suspended" in line)
        own_server.start()
        lines.until(lambda line: "connection to ZooKeeper back: reading /locks/back again" in line)
        again = lines.until(lambda line: " holder(s)" in line)
        assert "/locks/back: mutex, 1 holder(s), 0 waiting" in again
        watch.send_signal(signal.SIGTERM)
        _, stderr = watch.communicate(timeout=SOON)
        assert watch.returncode == 0, stderr
    finally:
        holder_client.stop()
        holder_client.close()


# -- lock with ZooKeeper gone after connecting -----------------------------------------------

#: Each way through the proxy below, so that the outage begins in a window this wide either
#: way: after the session's answer, before the first read's.
LATENCY = 1.0


def once_connected(proxy: FaultProxy, latencies: int) -> None:
    """Return ``latencies`` * LATENCY after the command's connection reached the proxy. Its
    session's request reaches the server after 1, the answer the command after 2; the first
    read's request reaches the server after 3, its answer the command after 4: a server killed
    at 3 takes that answer with it (the answers still on their way go with the connection)."""
    deadline = time.monotonic() + SOON
    while proxy.connections == 0:
        assert time.monotonic() < deadline, "the command never connected"
        time.sleep(0.01)
    time.sleep(latencies * LATENCY)


def test_one_try_that_zookeeper_does_not_answer_names_it_as_the_cause(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    """A node blocks the queue, so ``lock`` warns once it has read the path, right before its
    try; replies are dropped from then on. Its try ends either way (unanswered, or answered
    before the drop: the node blocks it), then ZooKeeper does not answer what blocks it."""
    zk.create(f"{zk_path}/lock-0000000001", b"", makepath=True)
    proxy = FaultProxy(zk_server.hosts, latency=0.3)
    try:
        process = start_cli("lock", "--timeout", "0", "--hosts", proxy.hosts, zk_path, "--", "true")
        processes.append(process)
        assert process.stderr is not None
        first_line = Worker(process.stderr.readline)
        first_line.start()
        first = first_line.outcome(SOON)  # the warning, or on a slow machine the error itself
        proxy.drop_replies()
        started = time.monotonic()
        _, rest = process.communicate(timeout=SOON)
        assert time.monotonic() - started < EXIT_BOUND
    finally:
        proxy.close()
    stderr = first + rest
    assert process.returncode == EXIT_TIMEOUT, stderr
    assert (
        f"timed out after 0s waiting for the lock {zk_path}: ZooKeeper at {proxy.hosts} does "
        "not answer" in stderr
    )


def test_lock_with_a_timeout_and_zookeeper_gone_after_connecting_keeps_its_timeout(
    own_server: ZooKeeperServer, processes: list[subprocess.Popen[str]]
) -> None:
    """Gone before the reads that come before the wait: they would wait for its return."""
    proxy = FaultProxy(own_server.hosts, latency=LATENCY)
    try:
        process = start_cli(
            "lock", "--timeout", "5", "--hosts", proxy.hosts, "/locks/gone", "--", "true"
        )
        processes.append(process)
        started = time.monotonic()
        once_connected(proxy, 3)
        own_server.kill()
        _, stderr = process.communicate(timeout=SOON)
        assert time.monotonic() - started < 5 + EXIT_BOUND
    finally:
        proxy.close()
    assert process.returncode == EXIT_TIMEOUT, stderr
    assert (
        f"timed out after 5s waiting for the lock /locks/gone: the connection to ZooKeeper at "
        f"{proxy.hosts} is down" in stderr
    )
