"""``pycurator lock`` on a terminal: a progress line while it waits, updated in place; quiet
when stderr is not a terminal or with ``--quiet``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.cli import EXIT_TIMEOUT, EXIT_UNAVAILABLE
from pycurator.testing import ZooKeeperServer, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env, python_command, run_cli
from .support import SOON
from .test_cli import one_error_line


class OnTerminal:
    """``python -m pycurator ARGS`` with stdout and stderr on a pseudo-terminal, read as it
    writes."""

    def __init__(self, *args: str) -> None:
        master, slave = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pycurator", *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            env=cli_env(),
        )
        os.close(slave)
        self._master = master
        self._text = ""
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO once the last writer has gone
                chunk = b""
            with self._changed:
                if not chunk:
                    self._changed.notify_all()
                    return
                self._text += chunk.decode("utf-8", "replace")
                self._changed.notify_all()

    def wait_for(self, pattern: str, count: int = 1) -> list[re.Match[str]]:
        """The first ``count`` matches of ``pattern`` in what was written, waiting up to SOON
        for them."""
        deadline = time.monotonic() + SOON
        with self._changed:
            while True:
                found = list(re.finditer(pattern, self._text))
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                assert left > 0, f"{pattern!r} never shown; got {self._text!r}"
                self._changed.wait(left)

    def finish(self) -> tuple[int, str]:
        """The exit status and everything written, once the process has ended."""
        status = self.process.wait(3 * SOON)
        self._reader.join(SOON)
        os.close(self._master)
        return status, self._text


def test_lock_on_a_terminal_shows_whom_it_waits_behind_then_clears_the_line(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    holder = InterProcessMutex(zk, zk_path, node_data=b"billing-7")
    assert holder.acquire(SOON)
    held = True
    terminal = OnTerminal(
        "lock", "--hosts", zk_server.hosts, zk_path, "--", *python_command("print('ran')")
    )
    try:
        line = (
            rf"\r\x1b\[Kpycurator: waiting for {re.escape(zk_path)}: "
            r"1 ahead, held by billing-7 since (\d+) s"
        )
        # redrawn in place (back to the line's start, erased) at least a second apart
        first, second = (int(m.group(1)) for m in terminal.wait_for(line, 2))
        assert second > first
        holder.release()
        held = False
        status, text = terminal.finish()
    finally:
        if held:
            holder.release()
        if terminal.process.poll() is None:
            terminal.process.kill()
            terminal.finish()
    assert status == 0, text
    assert "ran" in text
    # the last progress line is erased before the command prints
    assert text.rindex("\r\x1b[K") < text.index("ran")


def test_lock_on_a_terminal_shows_the_connection_it_waits_for_within_the_timeout() -> None:
    hosts = f"127.0.0.1:{free_port()}"
    terminal = OnTerminal("lock", "--hosts", hosts, "--timeout", "3", "/locks/x", "--", "true")
    terminal.wait_for(rf"connecting to {re.escape(hosts)} \(\d+ s\)")
    status, text = terminal.finish()
    assert status == EXIT_UNAVAILABLE, text
    assert f"cannot connect to ZooKeeper at {hosts} within 3s" in text


def test_lock_quiet_on_a_terminal_prints_only_the_outcome(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    with InterProcessMutex(zk, zk_path, node_data=b"billing-7"):
        terminal = OnTerminal(
            "lock", "--quiet", "--hosts", zk_server.hosts, "--timeout", "2.5", zk_path, "--", "true"
        )
        status, text = terminal.finish()
    assert status == EXIT_TIMEOUT, text
    assert "\x1b" not in text
    assert "ahead" not in text
    assert text.strip().splitlines() == [
        f"pycurator: error: timed out after 2.5s waiting for the lock {zk_path}"
    ]


def test_lock_not_on_a_terminal_prints_no_progress(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    with InterProcessMutex(zk, zk_path):
        result = run_cli(
            "lock", "--hosts", zk_server.hosts, "--timeout", "2.5", zk_path, "--", "true"
        )
    assert result.returncode == EXIT_TIMEOUT
    assert "timed out" in one_error_line(result.stderr)
    assert "\x1b" not in result.stderr


def test_lock_on_a_terminal_exits_on_time_when_the_server_goes_while_it_waits() -> None:
    """The progress line's last redraw may be waiting for the server, gone: the exit does not
    wait for it."""
    with ZooKeeperServer() as server:
        holder_client = KazooClient(hosts=server.hosts)
        holder_client.start(SOON)
        try:
            assert InterProcessMutex(holder_client, "/locks/x").acquire(SOON)
            terminal = OnTerminal("lock", "--hosts", server.hosts, "--timeout", "4", "/locks/x",
                                  "--", "true")  # fmt: skip
            terminal.wait_for("1 ahead, held by")
            server.kill()
            killed = time.monotonic()
            status, text = terminal.finish()
            assert time.monotonic() - killed < 4 + 10
        finally:
            holder_client.stop()
            holder_client.close()
    assert status == EXIT_TIMEOUT, text
    assert "timed out after 4s waiting for the lock /locks/x: the connection to ZooKeeper" in text
