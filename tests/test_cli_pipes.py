"""The command's output read by a program that stops reading (``pycurator inspect --watch PATH
| head -1``): the command ends quietly, as ``cat`` and ``git`` end, with the status a shell
gives them (128 + SIGPIPE); ``lock``, whose only output is its messages, goes on without them.
Real pipes, closed by the reader."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import EXIT_TIMEOUT
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env
from .support import SOON, Worker

#: What a shell reports for a command ended by its closed output.
CLOSED = 128 + signal.SIGPIPE
#: However slow the machine, a watch notices its reader has gone this soon (it looks every
#: --interval, 1 s).
NOTICE_BOUND = 10.0


def start(*args: str, stderr: int = subprocess.PIPE) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pycurator", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
    )


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_watch_whose_reader_has_its_line_ends_quietly_and_soon(
    zk_server: ZooKeeperTarget,
    zk_path: str,
    as_json: bool,
    processes: list[subprocess.Popen[str]],
) -> None:
    """As ``| head -1``: one line read, then the pipe closed, and nothing changes on the lock
    after that: the watch notices all the same."""
    process = start("inspect", "--watch", *(["--json"] if as_json else []), "--hosts",
                    zk_server.hosts, zk_path)  # fmt: skip
    processes.append(process)
    assert process.stdout is not None
    first = Worker(process.stdout.readline)
    first.start()
    assert first.outcome(SOON)
    process.stdout.close()
    closed = time.monotonic()
    _, stderr = process.communicate(timeout=SOON)
    assert time.monotonic() - closed < NOTICE_BOUND
    assert (process.returncode, stderr) == (CLOSED, "")


@pytest.mark.parametrize(
    "args",
    [
        ["inspect"],
        ["inspect", "--json"],
        ["inspect", "--tree"],
        ["inspect", "--tree", "--json"],
        ["--help"],
        ["--version"],
        ["lock", "--help"],
    ],
    ids=lambda args: " ".join(args),
)
def test_a_command_whose_output_is_closed_ends_quietly(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, args: list[str]
) -> None:
    with InterProcessMutex(zk, zk_path, node_data=b"holder"):
        process = start(*args, "--hosts", zk_server.hosts, zk_path)
        assert process.stdout is not None
        process.stdout.close()  # before it writes: it takes a while to start
        _, stderr = process.communicate(timeout=SOON)
    assert (process.returncode, stderr) == (CLOSED, "")


def test_lock_with_its_messages_unread_still_says_what_happened_with_its_status(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    with InterProcessMutex(zk, zk_path):
        process = start("lock", "--timeout", "0", "--hosts", zk_server.hosts, zk_path, "--",
                        "true")  # fmt: skip
        assert process.stderr is not None
        process.stderr.close()
        stdout, _ = process.communicate(timeout=SOON)
    assert (process.returncode, stdout) == (EXIT_TIMEOUT, "")
