"""Running the ``pycurator`` command as a user would: a subprocess of this interpreter."""

from __future__ import annotations

import os
import select
import subprocess
import sys

from .support import SOON


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``PYCURATOR_ZK_HOSTS``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "PYCURATOR_ZK_HOSTS"}
    env.update(extra)
    return env


def run_cli(
    *args: str, timeout: float = 3 * SOON, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pycurator ARGS`` to its end and return what it printed."""
    return subprocess.run(
        [sys.executable, "-m", "pycurator", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else cli_env(),
        stdin=subprocess.DEVNULL,
    )


def start_cli(*args: str) -> subprocess.Popen[str]:
    """Start ``python -m pycurator ARGS``; stdout and stderr are pipes. The caller waits."""
    return subprocess.Popen(
        [sys.executable, "-m", "pycurator", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
    )


def python_command(code: str) -> list[str]:
    """A command line that runs ``code`` with this interpreter."""
    return [sys.executable, "-c", code]


def ends_within(pid: int, seconds: float) -> bool:
    """Whether the process ``pid``, a child of ours or not, has ended or ends within ``seconds``:
    its pidfd becomes readable once it has exited, reaped or not (Linux)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(fd)
