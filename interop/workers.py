"""Lock holders and leaders in processes of their own, to be killed with SIGKILL while they hold.

``python -m interop.workers {python|java} HOSTS PATH SESSION_MS [mutex|latch]`` takes the mutex
at PATH (the default role), or joins a ``LeaderLatch`` there with id ``<language>-worker`` and
waits to lead, with pycurator or with Java Curator (through JPype); it prints ``held``, then
holds until killed or until its standard input closes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO

from kazoo.client import KazooClient

from pycurator import InterProcessMutex, LeaderLatch
from pycurator.testing import java_acquire, jclass, new_curator


def hold_with_python(hosts: str, path: str, session_ms: int) -> None:
    client = KazooClient(hosts=hosts, timeout=session_ms / 1000)
    client.start(timeout=30)
    lock = InterProcessMutex(client, path)
    lock.acquire()
    print("held", flush=True)
    sys.stdin.read()


def hold_with_java(hosts: str, path: str, session_ms: int) -> None:
    client = new_curator(hosts, session_timeout_ms=session_ms)
    lock = jclass("org.apache.curator.framework.recipes.locks.InterProcessMutex")(client, path)
    java_acquire(lock)
    print("held", flush=True)
    sys.stdin.read()


def lead_with_python(hosts: str, path: str, session_ms: int) -> None:
    client = KazooClient(hosts=hosts, timeout=session_ms / 1000)
    client.start(timeout=30)
    latch = LeaderLatch(client, path, "python-worker")
    latch.start()
    latch.wait()
    print("held", flush=True)
    sys.stdin.read()


def lead_with_java(hosts: str, path: str, session_ms: int) -> None:
    client = new_curator(hosts, session_timeout_ms=session_ms)
    latch = jclass("org.apache.curator.framework.recipes.leader.LeaderLatch")(
        client, path, "java-worker"
    )
    latch.start()
    latch.await_()
    print("held", flush=True)
    sys.stdin.read()


ROLES = {
    ("python", "mutex"): hold_with_python,
    ("java", "mutex"): hold_with_java,
    ("python", "latch"): lead_with_python,
    ("java", "latch"): lead_with_java,
}


def start_worker(
    language: str, hosts: str, path: str, session_ms: int, role: str = "mutex"
) -> subprocess.Popen[str]:
    """Start a worker process; read its ``held`` line from ``stdout`` before killing it."""
    return subprocess.Popen(
        [sys.executable, "-m", "interop.workers", language, hosts, path, str(session_ms), role],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )


def read_line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline().strip()


if __name__ == "__main__":
    language, hosts, path, session_ms = sys.argv[1:5]
    role = sys.argv[5] if len(sys.argv) > 5 else "mutex"
    ROLES[language, role](hosts, path, int(session_ms))
