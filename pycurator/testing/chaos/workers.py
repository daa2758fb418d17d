"""The chaos run's worker processes: a mutex contender of either language in a process of its
own, on :class:`pycurator.testing.WorkerProcess`'s protocol (events ``started``, ``enter``,
``hold`` and ``errors``), that the run can SIGKILL, or SIGSTOP right after it enters."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

from pycurator.testing import Event, WorkerProcess, emit, start_jvm

from .contenders import CONTENDERS, WORKER_SESSION_S, quiet_logs
from .history import Hold


def worker_main(language: str, hosts: str, who: str) -> None:
    """A mutex contender in a process of its own (``python -m pycurator.testing.chaos
    worker``); stops when its standard input closes."""
    quiet_logs()
    if language == "java":
        start_jvm()
    stop = threading.Event()
    contender = CONTENDERS[language](
        who,
        "mutex",
        hosts,
        stop,
        lambda hold: emit("hold", hold=dataclasses.asdict(hold)),
        session_s=WORKER_SESSION_S,
        hold_s=0.05,
        on_enter=lambda hold: emit("enter", hold_id=hold.hold_id, node=hold.node),
    )
    thread = threading.Thread(target=contender.run, daemon=True)
    thread.start()
    emit("started", who=who)
    sys.stdin.read()
    stop.set()
    thread.join(60)
    emit("errors", errors=dict(contender.errors))


class ChaosWorker:
    """A worker process whose holds go to ``record``; can pause itself right after an enter."""

    def __init__(self, language: str, hosts: str, who: str, record: Callable[[Hold], None]):
        self.language = language
        self.who = who
        self.record = record
        self.errors: Counter[str] = Counter()
        self.entered: set[str] = set()  # holds entered and not yet recorded
        self.pause_next = threading.Event()
        self.paused = threading.Event()
        self.paused_hold = ""
        self.paused_node = ""
        self.paused_ns = 0
        self.started = threading.Event()
        self.process = WorkerProcess(
            [sys.executable, "-m", "pycurator.testing.chaos", "worker", language, hosts, who],
            on_event=self._on_event,
        )

    def _on_event(self, event: Event) -> None:
        kind = event["event"]
        if kind == "enter":
            if self.pause_next.is_set():
                self.process.pause()
                self.paused_ns = time.monotonic_ns()
                self.pause_next.clear()
                self.paused_hold, self.paused_node = event["hold_id"], event["node"]
                self.paused.set()
            self.entered.add(event["hold_id"])
        elif kind == "hold":
            hold = Hold(**event["hold"])
            self.entered.discard(hold.hold_id)
            self.record(hold)
        elif kind == "started":
            self.started.set()
        elif kind == "errors":
            self.errors.update(event["errors"])

    def alive(self) -> bool:
        return self.process.alive()

    def resume(self) -> None:
        self.process.resume()

    def kill(self) -> None:
        self.process.kill()

    def finish(self, timeout: float = 90) -> None:
        """Stop after the current hold (or kill), and wait for the last lines."""
        self.process.finish(timeout)
