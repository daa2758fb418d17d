"""``lock`` under a supervisor: what it holds is released by the thread that took it (the log
says so, before the session closes), and SIGINT sent to the process is passed on to the command
as SIGTERM and SIGHUP are, while a Ctrl-C typed at its terminal reaches the command once. Real
signals to a real process."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import cli_env, python_command
from .support import SOON, Worker, children, eventually
from .test_cli_fleet import SYSTEM_OPTIONS

PRINT_NODE = "import os; print(os.environ['PYCURATOR_LOCK_NODE'], flush=True)"


@pytest.mark.parametrize("system", list(SYSTEM_OPTIONS))
def test_lock_releases_what_it_holds_and_says_so_before_the_session_closes(
    system: str, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pycurator", "-v", "lock", *SYSTEM_OPTIONS[system], "--hosts",
         zk_server.hosts, f"{zk_path}/lock", "--", *python_command(PRINT_NODE)],
        capture_output=True, text=True, timeout=3 * SOON, env=cli_env(),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    node = result.stdout.strip()
    lines = result.stderr.splitlines()
    released = [i for i, line in enumerate(lines) if re.search(f"{re.escape(node)} released", line)]
    closing = [i for i, line in enumerate(lines) if "Closing connection" in line]
    assert len(released) == 1 and closing, result.stderr
    assert released[0] < closing[0], result.stderr
    assert not [line for line in lines if " lost: " in line], result.stderr


#: The command: says it is ready, and exits 42 on SIGINT.
EXIT_ON_INT = (
    "import signal, sys, time; signal.signal(signal.SIGINT, lambda *_: sys.exit(42)); "
    "print('ready', flush=True); time.sleep(60)"
)


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda stop: stop.name
)
def test_a_signal_to_the_process_holding_the_lock_reaches_the_command(
    stop: signal.Signals,
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[subprocess.Popen[str]],
) -> None:
    """As a supervisor sends it: to ``pycurator`` alone, which has no terminal. The command
    passes its status on; the lock is released."""
    command = EXIT_ON_INT.replace("SIGINT", stop.name)
    process = subprocess.Popen(
        [sys.executable, "-m", "pycurator", "-v", "lock", "--hosts", zk_server.hosts, zk_path,
         "--", *python_command(command)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=cli_env(PYTHONFAULTHANDLER="1"), start_new_session=True,
    )  # fmt: skip
    processes.append(process)
    assert process.stdout is not None
    ready = Worker(process.stdout.readline)
    ready.start()
    assert ready.outcome(SOON) == "ready\n"
    process.send_signal(stop)
    try:
        _, stderr = process.communicate(timeout=SOON)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # the fault handler prints every thread's stack
        _, stderr = process.communicate(timeout=SOON)
        pytest.fail(f"still running {SOON:g}s after {stop.name}, aborted:\n{stderr}")
    assert process.returncode == 42, stderr
    eventually(lambda: not children(zk, zk_path), what="the lock node was deleted")


#: The command: says it is ready, counts the SIGINTs it gets for a second after the first, and
#: exits with that count.
COUNT_INTS = """
import signal, sys, threading, time
got = []
def count(*_):
    got.append(1)
    if len(got) == 1:
        threading.Timer(1.0, lambda: done.set()).start()
done = threading.Event()
signal.signal(signal.SIGINT, count)
print('ready', flush=True)
while not done.wait(0.05):
    pass
sys.exit(len(got))
"""


def test_ctrl_c_at_the_terminal_reaches_the_command_once(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    """``pycurator`` leads a session on a terminal of its own; ^C typed there signals the
    terminal's foreground group, the command included: it is not sent a second time."""
    master, slave = os.openpty()

    def own_terminal() -> None:  # after the new session: make the terminal its own
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [sys.executable, "-m", "pycurator", "lock", "--hosts", zk_server.hosts, zk_path, "--",
         *python_command(COUNT_INTS)],
        stdin=slave, stdout=slave, stderr=slave, env=cli_env(), start_new_session=True,
        preexec_fn=own_terminal,
    )  # fmt: skip
    os.close(slave)
    seen = bytearray()
    ready = threading.Event()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO once the last writer has gone
                return
            if not chunk:
                return
            seen.extend(chunk)
            if b"ready" in seen:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(SOON), bytes(seen)
        os.write(master, b"\x03")
        status = process.wait(SOON)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(SOON)
        reader.join(SOON)
        os.close(master)
    assert status == 1, bytes(seen)


@pytest.mark.parametrize("system", ["curator", "zookeeper"])
def test_elect_ends_its_leadership_before_the_session_closes(
    system: str, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pycurator", "-v", "elect", "--system", system, "--hosts",
         zk_server.hosts, zk_path, "--id", "me", "--", "true"],
        capture_output=True, text=True, timeout=3 * SOON, env=cli_env(),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    ended = [i for i, line in enumerate(lines) if re.search(r"leadership \S+ ended after", line)]
    closing = [i for i, line in enumerate(lines) if "Closing connection" in line]
    assert len(ended) == 1 and closing and ended[0] < closing[0], result.stderr
    assert not [line for line in lines if " lost: " in line], result.stderr


#: ``python -m pycurator`` with a signal sent to itself just as the wait for what it holds ends,
#: before the command is started: ``SIGNAL`` names it.
SIGNAL_AS_THE_WAIT_ENDS = """
import contextlib, os, signal, sys
from pycurator.cli import _common, main
waiting = _common.Interrupter.ending
@contextlib.contextmanager
def ending(self, end):
    with waiting(self, end):
        yield
    os.kill(os.getpid(), signal.SIGNAL)
_common.Interrupter.ending = ending
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda stop: stop.name
)
@pytest.mark.parametrize("verb", ["lock", "elect", "register"])
def test_a_signal_between_the_wait_and_the_command_ends_it_unstarted_and_releases(
    verb: str,
    stop: signal.Signals,
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    tmp_path: Path,
) -> None:
    """Held, but the command not yet started: the command never starts, what was taken is
    released, and the status is the signal's, as for a signal during the wait."""
    started = tmp_path / "started"
    command = python_command(f"open({str(started)!r}, 'w').close()")
    where = {
        "lock": [zk_path],
        "elect": [zk_path, "--id", "me"],
        "register": ["--base", zk_path, "billing", "--port", "8080"],
    }[verb]
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_AS_THE_WAIT_ENDS.replace("SIGNAL", stop.name), verb,
         "--hosts", zk_server.hosts, *where, "--", *command],
        capture_output=True, text=True, timeout=3 * SOON, env=cli_env(),
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    assert result.returncode == 128 + stop, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert not started.exists()
    held = f"{zk_path}/billing" if verb == "register" else zk_path
    eventually(lambda: not children(zk, held), what="what it held was released")
