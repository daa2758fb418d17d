"""``pycurator inspect --tree`` (every lock below a path) and ``--watch`` (one lock, live)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2
from pycurator.testing import ClientFactory
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env, run_cli
from .support import SOON, Worker


def waiter_node(zk: KazooClient, path: str, token: str = "lock-", data: bytes = b"w") -> str:
    """A node as a waiting Curator client leaves it: protected, ephemeral, sequential."""
    node = f"{path}/_c_{uuid.uuid4()}-{token}"
    # makepath: the parent may be an empty container the server reaped a moment ago
    return str(zk.create(node, data, ephemeral=True, sequence=True, makepath=True))


def test_tree_lists_every_lock_below_a_path_with_holder_and_queue(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    zk, other = zk_client_factory(), zk_client_factory()
    zk.create(f"{zk_path}/config/settings", b"x", makepath=True)
    mutex = InterProcessMutex(zk, f"{zk_path}/jobs/billing", node_data=b"billing-host")
    rw = InterProcessReadWriteLock(zk, f"{zk_path}/jobs/rw", node_data=b"writer-host")
    semaphore = InterProcessSemaphoreV2(zk, f"{zk_path}/pool", 2, node_data=b"lease-host")
    with mutex, rw.write_lock():
        lease = semaphore.acquire(SOON)
        assert lease is not None
        try:
            waiter_node(other, f"{zk_path}/jobs/billing")
            waiter_node(other, f"{zk_path}/jobs/billing")
            waiter_node(other, f"{zk_path}/jobs/rw", "__READ__")
            result = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
            table = run_cli("inspect", "--tree", "--hosts", zk_server.hosts, zk_path)
        finally:
            lease.close()
    assert result.returncode == 0, result.stderr
    rows = {row["path"]: row for row in json.loads(result.stdout)}
    assert list(rows) == [f"{zk_path}/jobs/billing", f"{zk_path}/jobs/rw", f"{zk_path}/pool"]
    billing, rw_row, pool = rows.values()
    assert (billing["layout"], billing["waiting"]) == ("mutex", 2)
    assert [h["data"] for h in billing["holders"]] == ["billing-host"]
    assert (rw_row["layout"], rw_row["waiting"]) == ("read-write", 1)
    assert [h["kind"] for h in rw_row["holders"]] == ["write"]
    assert (pool["layout"], pool["waiting"]) == ("semaphore", 0)
    assert [h["data"] for h in pool["holders"]] == ["lease-host"]
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["LAYOUT", "HOLDERS", "WAITING", "HELD", "BY", "SINCE", "PATH"]
    assert lines[1].split()[:4] == ["mutex", "1", "2", "billing-host"]
    assert lines[1].endswith(f"{zk_path}/jobs/billing")
    assert len(lines) == 4


def test_json_counts_holders_waiters_and_the_oldest_holders_age_for_dashboards(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    zk, other = zk_client_factory(), zk_client_factory()
    pool = InterProcessSemaphoreV2(zk, f"{zk_path}/pool", 2)
    first = pool.acquire(SOON)
    time.sleep(0.2)  # the first lease is the older holder
    second = pool.acquire(SOON)
    assert first is not None and second is not None
    try:
        waiter_node(other, f"{zk_path}/pool/locks")
        one = run_cli("inspect", "--json", "--hosts", zk_server.hosts, f"{zk_path}/pool")
        tree = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
        idle = run_cli("inspect", "--json", "--hosts", zk_server.hosts, f"{zk_path}/none")
    finally:
        pool.return_all([first, second])
    assert one.returncode == tree.returncode == idle.returncode == 0, one.stderr + tree.stderr
    view, (row,) = json.loads(one.stdout), json.loads(tree.stdout)
    for document in (view, row):
        assert (document["holder_count"], document["waiting"]) == (2, 1)
        assert document["oldest_holder_age_seconds"] >= 0.2
    ages = [p["age_seconds"] for p in view["participants"] if p["state"] == "holder"]
    assert view["oldest_holder_age_seconds"] == max(ages)
    assert json.loads(idle.stdout)["oldest_holder_age_seconds"] is None


def test_tree_of_a_path_without_locks_says_so(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/a/b", b"", makepath=True)
    result = run_cli("inspect", "--tree", "--hosts", zk_server.hosts, zk_path)
    assert (result.returncode, result.stdout) == (0, "no locks\n")
    result = run_cli("inspect", "--tree", "--json", "--hosts", zk_server.hosts, zk_path)
    assert json.loads(result.stdout) == []


class Lines:
    """The lines a process prints, as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def read() -> None:
            for line in stdout:
                self._lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        self.seen: list[str] = []

    def until(self, predicate: Callable[[str], bool]) -> str:
        deadline = time.monotonic() + SOON
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"never printed; got {self.seen}"
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if predicate(line):
                return line


def start_watch(hosts: str, path: str, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pycurator", "inspect", "--watch", *options, "--hosts", hosts, path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
    )


def stop_watch(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == 0, stderr
    return stderr


def test_watch_follows_holders_waiters_and_hand_offs(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    first = InterProcessMutex(zk_client_factory(), zk_path, node_data=b"first")
    second = InterProcessMutex(zk_client_factory(), zk_path, node_data=b"second")
    done = threading.Event()
    watching = start_watch(zk_server.hosts, zk_path)
    lines = Lines(watching)
    try:
        lines.until(lambda line: "no such node" in line)
        assert first.acquire(SOON)
        lines.until(lambda line: " holds: mutex " in line and "(first," in line)

        def hold_until_done() -> bool:
            held = second.acquire(SOON)
            if held:
                done.wait(SOON)
                second.release()
            return held

        waiter = Worker(hold_until_done)
        waiter.start()
        lines.until(lambda line: " waits: mutex " in line and "(second," in line)
        first.release()
        handoff = lines.until(lambda line: " hand-off: " in line)
        assert handoff.index("(first,") < handoff.index("->") < handoff.index("(second,")
        done.set()
        assert waiter.outcome(SOON) is True
        lines.until(lambda line: " released: " in line and "(second," in line)
    finally:
        done.set()
        stderr = stop_watch(watching)
    assert stderr == ""


def test_watch_json_prints_one_document_per_change(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    watching = start_watch(zk_server.hosts, zk_path, "--json")
    lines = Lines(watching)
    try:
        documents: list[dict[str, Any]] = []

        def document(line: str) -> bool:
            documents.append(json.loads(line))
            return True

        lines.until(document)
        assert documents[-1]["exists"] is False
        with InterProcessMutex(zk, zk_path, node_data=b"only"):
            lines.until(lambda line: document(line) and bool(documents[-1]["participants"]))
        lines.until(lambda line: document(line) and not documents[-1]["participants"])
    finally:
        stop_watch(watching)
    held = [d for d in documents if d["participants"]]
    assert held[0]["participants"][0]["data"] == "only"
    assert held[0]["participants"][0]["state"] == "holder"
