"""One protocol for contenders in processes of their own, either language, that a test can
SIGKILL, SIGSTOP and resume.

A worker writes one JSON object per line on its standard output, each with an ``event`` key
(:func:`emit`), and stops once its standard input closes. :class:`WorkerProcess` starts one,
reads its lines on a thread (each goes to ``on_event`` and to :meth:`WorkerProcess.wait_for`),
and signals it. :meth:`WorkerProcess.hold` starts the kit's own worker
(``python -m pycurator.testing.worker``), which takes one recipe once and holds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

#: An event as a worker wrote it: a JSON object with an ``event`` key.
Event = dict[str, Any]

_emit_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    """Write one event line to standard output (thread-safe, flushed at once)."""
    line = json.dumps({"event": event, **fields})
    with _emit_lock:
        print(line, flush=True)


class WorkerProcess:
    """A worker process and the thread that reads its events.

    ``finish()`` closes the worker's standard input (asking it to stop), waits for it, and kills
    it if it does not end in time; ``close()`` is ``finish()``; both are safe to call again.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        on_event: Callable[[Event], None] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self._on_event = on_event
        self._events: queue.Queue[Event] = queue.Queue()
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd
        )
        self._reader = threading.Thread(target=self._read, name=f"worker-{self.pid}", daemon=True)
        self._reader.start()

    @classmethod
    def hold(
        cls,
        language: str,
        role: str,
        hosts: str,
        path: str,
        *,
        session_ms: int = 2000,
        id: str | None = None,
        max_leases: int = 1,
    ) -> WorkerProcess:
        """The kit's worker: takes ``role`` (see :data:`pycurator.testing.worker.ROLES`) at
        ``path`` with pycurator (``language="python"``) or Java Curator (``"java"``), sends
        ``held`` with its ``node``, and holds until killed or finished. A latch's id defaults
        to ``<language>-worker``."""
        argv = [sys.executable, "-m", "pycurator.testing.worker", language, role, hosts, path]
        argv += ["--session-ms", str(session_ms), "--max-leases", str(max_leases)]
        if id is not None:
            argv += ["--id", id]
        return cls(argv)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a library's stray print is not an event
            if not isinstance(event, dict) or "event" not in event:
                continue
            if self._on_event is not None:
                self._on_event(event)
            self._events.put(event)
        self._events.put({"event": "exited"})

    def wait_for(self, event: str, timeout: float) -> Event:
        """The next event named ``event`` (earlier ones of other names are dropped); raises
        ``TimeoutError`` after ``timeout`` seconds, or ``RuntimeError`` if the worker ends."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if got["event"] == event:
                return got
            if got["event"] == "exited":
                raise RuntimeError(f"worker {self.argv[3:]} exited before {event!r}")
        raise TimeoutError(f"worker {self.argv[3:]} sent no {event!r} within {timeout:g}s")

    def kill(self) -> None:
        """SIGKILL: the worker's sessions end only with their timeouts."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP: the worker stops answering, its sessions expire unless resumed in time."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        os.kill(self.pid, signal.SIGCONT)

    def finish(self, timeout: float = 60.0) -> None:
        """Ask the worker to stop (close its input), wait ``timeout`` seconds, then kill it."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)  # a paused worker cannot read its input
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait(10)
        self._reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    close = finish

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def __repr__(self) -> str:
        return f"WorkerProcess(pid={self.pid}, {self.argv[3:]})"
