"""The ``pycurator`` command against Java Curator's own recipes on the same paths."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

from pycurator import InterProcessMutex
from pycurator._client.transport import default_node_data
from pycurator.cli import EXIT_TIMEOUT
from pycurator.testing import (
    java_acquire,
    java_revocation_listener,
    jclass,
    leader_class,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.cli_support import ends_within, python_command, run_cli, start_cli
from tests.support import SOON, Worker, children, eventually

from .conftest import CuratorFactory, java_class

READY_THEN_SLEEP = "import time; print('ready', flush=True); time.sleep(60)"
PID_THEN_SLEEP = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"


class JavaHolder(threading.Thread):
    """A thread (attached to the JVM) that acquires a Java lock, holds it until told, releases.

    Java's locks are owned per thread, so acquire and release happen on this one thread.
    """

    def __init__(self, lock: Any, timeout: float = 3 * SOON) -> None:
        super().__init__(daemon=True)
        self.lock = lock
        self.timeout = timeout
        self.acquired = threading.Event()
        self.done = threading.Event()
        self._release = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            if java_acquire(self.lock, self.timeout):
                self.acquired.set()
                self._release.wait(3 * SOON)
                self.lock.release()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def let_go(self) -> None:
        """Release as soon as held (at once if held now)."""
        self._release.set()

    def release(self) -> None:
        self.let_go()
        self.join(SOON)
        assert not self.is_alive() and self.error is None, self.error


@pytest.fixture
def java_holders() -> Iterator[list[JavaHolder]]:
    holders: list[JavaHolder] = []
    yield holders
    for holder in holders:  # waiters release as soon as the ones before them have
        holder.let_go()
    for holder in holders:
        holder.release()


def inspect_json(hosts: str, path: str) -> dict[str, Any]:
    result = run_cli("inspect", "--hosts", hosts, "--json", path)
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    return view


def rows(view: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(p["kind"], p["state"], p["position"]) for p in view["participants"]]


def hold(holders: list[JavaHolder], lock: Any) -> JavaHolder:
    holder = JavaHolder(lock)
    holders.append(holder)
    holder.start()
    return holder


def test_inspect_shows_a_java_holder_and_a_python_waiter(
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk_client_factory: Callable[..., KazooClient],
    zk_path: str,
    java_holders: list[JavaHolder],
) -> None:
    java_lock = java_class("InterProcessMutex")(curator, zk_path)
    assert hold(java_holders, java_lock).acquired.wait(SOON)
    waiter = InterProcessMutex(zk_client_factory(), zk_path, node_data=b"python-waiter")
    waiting = Worker(lambda: waiter.acquire(timeout=1.5 * SOON))
    waiting.start()
    eventually(lambda: len(java_lock.getParticipantNodes()) == 2, what="the Python waiter queued")
    view = inspect_json(zk_server.hosts, zk_path)
    java_row, python_row = view["participants"]
    assert java_row["node"] == str(next(iter(java_lock.getParticipantNodes())))
    assert (java_row["kind"], java_row["state"], java_row["position"]) == ("mutex", "holder", 0)
    assert java_row["session"] == f"0x{session_of(curator)[0]:x}"
    assert java_row["data"] == default_node_data().decode()
    assert (python_row["state"], python_row["data"]) == ("waiting", "python-waiter")
    java_holders.pop().release()
    assert waiting.outcome(SOON) is True


def test_lock_command_is_excluded_by_a_java_holder_until_it_releases(
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk: KazooClient,
    zk_path: str,
    java_holders: list[JavaHolder],
) -> None:
    holder = hold(java_holders, java_class("InterProcessMutex")(curator, zk_path))
    assert holder.acquired.wait(SOON)
    timed_out = run_cli(
        "lock", "--hosts", zk_server.hosts, "--timeout", "0.5", zk_path, "--", "true"
    )
    assert timed_out.returncode == EXIT_TIMEOUT
    waiting = Worker(lambda: run_cli("lock", "--hosts", zk_server.hosts, zk_path, "--", "true"))
    waiting.start()
    eventually(lambda: len(children(zk, zk_path)) == 2, what="the lock command queued")
    assert not waiting.done.is_set()
    java_holders.pop().release()
    assert waiting.outcome(3 * SOON).returncode == 0


def test_java_is_excluded_while_the_lock_command_runs(
    zk_server: ZooKeeperTarget, curator: Any, zk_path: str
) -> None:
    process = start_cli(
        "lock", "--hosts", zk_server.hosts, zk_path, "--", *python_command(READY_THEN_SLEEP)
    )
    try:
        assert process.stdout is not None
        stdout = process.stdout
        reader = Worker(stdout.readline)
        reader.start()
        assert reader.outcome(SOON) == "ready\n"
        java_lock = java_class("InterProcessMutex")(curator, zk_path)
        assert java_acquire(java_lock, 0.5) is False
        process.terminate()  # forwarded to the command, which dies of it
        process.communicate(timeout=SOON)
        assert process.returncode == 128 + 15
        assert java_acquire(java_lock, SOON) is True
        java_lock.release()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=SOON)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="no parent-death signal")
def test_a_killed_lock_commands_command_dies_with_it_before_java_takes_the_lock(
    zk_server: ZooKeeperTarget, curator: Any, zk: KazooClient, zk_path: str
) -> None:
    options = ["--hosts", zk_server.hosts, "--session-timeout", "2"]
    process = start_cli("lock", *options, zk_path, "--", *python_command(PID_THEN_SLEEP))
    java_holder: JavaHolder | None = None
    pid = None
    try:
        assert process.stdout is not None
        reader = Worker(process.stdout.readline)
        reader.start()
        pid = int(reader.outcome(SOON))
        java_holder = JavaHolder(java_class("InterProcessMutex")(curator, zk_path))
        java_holder.start()
        eventually(lambda: len(children(zk, zk_path)) == 2, what="Java queued")
        process.kill()  # as the OOM killer would: no chance to stop its command
        assert ends_within(pid, 1.0), "the command outlived its lock process"
        assert not java_holder.acquired.is_set()  # Java waits for the session's end
        assert java_holder.acquired.wait(3 * SOON)
    finally:
        if java_holder is not None:
            java_holder.release()
        if process.poll() is None:
            process.kill()
        if pid is not None and not ends_within(pid, 0):
            os.kill(pid, signal.SIGKILL)  # a command left running keeps the pipe open
        process.communicate(timeout=SOON)


def test_inspect_reads_a_java_read_write_lock(
    zk_server: ZooKeeperTarget,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
    java_holders: list[JavaHolder],
) -> None:
    rw_class = java_class("InterProcessReadWriteLock")
    reader = hold(java_holders, rw_class(curator_factory(), zk_path).readLock())
    assert reader.acquired.wait(SOON)
    hold(java_holders, rw_class(curator_factory(), zk_path).writeLock())
    eventually(lambda: len(children(zk, zk_path)) == 2, what="the writer queued")
    hold(java_holders, rw_class(curator_factory(), zk_path).readLock())
    eventually(lambda: len(children(zk, zk_path)) == 3, what="the second reader queued")
    view = inspect_json(zk_server.hosts, zk_path)
    assert view["layout"] == "read-write"
    assert rows(view) == [("read", "holder", 0), ("write", "waiting", 1), ("read", "waiting", 2)]
    java_holders.pop(0).release()  # the writer gets it, then the late reader
    eventually(lambda: java_holders[0].acquired.is_set(), what="the writer took over")


def test_inspect_reads_a_java_semaphore(
    zk_server: ZooKeeperTarget,
    curator_factory: CuratorFactory,
    zk_path: str,
) -> None:
    semaphore_class = java_class("InterProcessSemaphoreV2")
    first = semaphore_class(curator_factory(), zk_path, 1)
    lease = first.acquire()
    second = semaphore_class(curator_factory(), zk_path, 1)
    waiting = Worker(lambda: java_acquire_lease(second, 1.5 * SOON))
    waiting.start()
    try:
        eventually(
            lambda: len(inspect_json(zk_server.hosts, zk_path)["participants"]) == 3,
            what="the second client waits for a lease",
        )
        view = inspect_json(zk_server.hosts, zk_path)
        assert view["layout"] == "semaphore"
        assert rows(view) == [
            ("lease", "holder", 0),
            ("lease", "waiting", 1),
            ("lock", "waiting", 1),
        ]
        assert view["participants"][0]["node"].startswith(f"{zk_path}/leases/_c_")
    finally:
        lease.close()
    second_lease = waiting.outcome(SOON)
    assert second_lease is not None
    second_lease.close()


def java_acquire_lease(semaphore: Any, timeout: float) -> Any:
    """``acquire(ms, MILLISECONDS)`` of a Java semaphore: a Lease, or None on timeout."""
    unit = jclass("java.util.concurrent.TimeUnit")
    return semaphore.acquire(int(timeout * 1000), unit.MILLISECONDS)


def test_revoke_reaches_a_revocable_java_holder(
    zk_server: ZooKeeperTarget, curator: Any, zk_path: str, java_holders: list[JavaHolder]
) -> None:
    asked = threading.Event()
    listener = java_revocation_listener(lambda lock: asked.set())
    java_lock = java_class("InterProcessMutex")(curator, zk_path)
    java_lock.makeRevocable(listener)
    assert hold(java_holders, java_lock).acquired.wait(SOON)
    node = str(next(iter(java_lock.getParticipantNodes())))
    result = run_cli("revoke", "--hosts", zk_server.hosts, node)
    assert result.returncode == 0, result.stderr
    assert asked.wait(SOON)


def test_a_java_leader_latch_keeps_elect_waiting_and_inspect_shows_both_ids(
    zk_server: ZooKeeperTarget, curator: Any, zk: KazooClient, zk_path: str
) -> None:
    # a plain parent: a container reaped between Curator's check and its create would leave the
    # Java latch out of the election (see test_latch_interop.stable_parent)
    zk.ensure_path(zk_path)
    java_latch = leader_class("LeaderLatch")(curator, zk_path, "java-1")
    java_latch.start()
    process = None
    try:
        unit = jclass("java.util.concurrent.TimeUnit")
        assert java_latch.await_(int(SOON * 1000), unit.MILLISECONDS)
        timed_out = run_cli(
            "elect", "--hosts", zk_server.hosts, "--id", "py-1", "--timeout", "0.5", zk_path,
            "--", "true",
        )  # fmt: skip
        assert timed_out.returncode == EXIT_TIMEOUT, timed_out.stderr
        process = start_cli(
            "elect", "--hosts", zk_server.hosts, "--id", "py-1", zk_path,
            "--", *python_command(READY_THEN_SLEEP),
        )  # fmt: skip
        eventually(lambda: len(children(zk, zk_path)) == 2, what="elect queued")
        view = inspect_json(zk_server.hosts, zk_path)
        assert view["layout"] == "latch"
        assert [(p["data"], p["state"]) for p in view["participants"]] == [
            ("java-1", "leader"),
            ("py-1", "waiting"),
        ]
        assert [(str(p.getId()), bool(p.isLeader())) for p in java_latch.getParticipants()] == [
            ("java-1", True),
            ("py-1", False),
        ]
        assert process.poll() is None
        java_latch.close()
        java_latch = None
        assert process.stdout is not None
        stdout = process.stdout
        reader = Worker(stdout.readline)
        reader.start()
        assert reader.outcome(SOON) == "ready\n"  # elect leads now and runs its command
        process.terminate()  # forwarded to the command, which dies of it
        process.communicate(timeout=SOON)
        assert process.returncode == 128 + 15
        eventually(lambda: not children(zk, zk_path), what="elect's node deleted")
    finally:
        if java_latch is not None:
            java_latch.close()
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=SOON)
        with contextlib.suppress(NoNodeError, NotEmptyError):
            zk.delete(zk_path)
