"""The chaos run's worker processes: a mutex contender of either language in a process of its
own, on :class:`pycurator.testing.WorkerProcess`'s protocol (events ``started``, ``enter``,
``hold``, ``parked`` and ``errors``), that the run can SIGKILL, SIGSTOP right after it enters,
or park for a quiet moment (a ``park`` line on its input, then ``go``)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pycurator.testing import Event, WorkerProcess, emit, start_jvm

from .contenders import WORKER_SESSION_S, quiet_logs
from .history import Hold
from .quiet import Gate
from .roster import CONTENDERS

#: How long a worker waits for its contender to park and its client to connect.
PARK_S = 60.0


def worker_main(language: str, hosts: str, who: str) -> None:
    """A mutex contender in a process of its own (``python -m pycurator.testing.chaos
    worker``); stops when its standard input closes. A ``park`` line parks the contender
    between two cycles and answers ``parked`` once its client is connected (or ``PARK_S``
    has passed), with its sessions; ``go`` lets it go on."""
    quiet_logs()
    if language == "java":
        start_jvm()
    stop = threading.Event()
    gate = Gate()
    contender = CONTENDERS[language](
        who,
        "mutex",
        hosts,
        stop,
        lambda hold: emit("hold", hold=dataclasses.asdict(hold)),
        session_s=WORKER_SESSION_S,
        hold_s=0.05,
        on_enter=lambda hold: emit("enter", hold_id=hold.hold_id, node=hold.node),
        gate=gate,
    )
    thread = threading.Thread(target=contender.run, daemon=True)
    thread.start()
    emit("started", who=who)
    for line in sys.stdin:
        if line.strip() == "park":
            gate.close()
            deadline = time.monotonic() + PARK_S
            parked = not gate.wait_parked([who], deadline)
            while parked and not contender.connected() and time.monotonic() < deadline:
                time.sleep(0.05)
            emit(
                "parked",
                parked=parked,
                connected=parked and contender.connected(),
                sessions={str(s): client for s, client in contender.clients().items()},
                owned=sorted(contender.owned()),
            )
        elif line.strip() == "go":
            gate.open()
    stop.set()
    gate.open()
    thread.join(60)
    emit("errors", errors=dict(contender.errors))


@dataclass
class Parked:
    """A worker's answer to ``park``: parked (or not) and connected (or not), its sessions."""

    who: str
    parked: bool
    is_connected: bool
    sessions: dict[int, str] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)

    def connected(self) -> bool:
        return self.is_connected

    def clients(self) -> dict[int, str]:
        return self.sessions

    def owned(self) -> set[str]:
        return self.nodes


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
        self.answer: Parked | None = None
        self.answered = threading.Event()
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
        elif kind == "parked":
            sessions = {int(s): client for s, client in event["sessions"].items()}
            parked = Parked(self.who, event["parked"], event["connected"], sessions)
            parked.nodes = set(event["owned"])
            self.answer = parked
            self.answered.set()

    def alive(self) -> bool:
        return self.process.alive()

    def _tell(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a killed worker reads nothing
            stdin = self.process.process.stdin
            assert stdin is not None
            stdin.write(line + "\n")
            stdin.flush()

    def park(self) -> None:
        """Ask the worker to park between two cycles; :meth:`parked` has its answer."""
        self.answered.clear()
        self.answer = None
        self._tell("park")

    def parked(self, deadline: float) -> Parked | None:
        """The worker, parked, once it says so (by ``deadline``, monotonic); else None."""
        self.answered.wait(max(0.0, deadline - time.monotonic()))
        answer = self.answer
        return answer if answer is not None and answer.parked else None

    def go(self) -> None:
        """Let a parked worker go on."""
        self._tell("go")

    def resume(self) -> None:
        self.process.resume()

    def kill(self) -> None:
        self.process.kill()

    def finish(self, timeout: float = 90) -> None:
        """Stop after the current hold (or kill), and wait for the last lines."""
        self.process.finish(timeout)
