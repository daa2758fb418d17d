"""The chaos checker: Java Curator and pycurator contenders (threads and processes) on one mutex,
one read/write lock and one semaphore, and leaders of one ``LeaderLatch`` and one
``LeaderSelector`` election, while random faults hit a 3-node ensemble; every hold (a leader's
term is a hold) is recorded on one monotonic clock and the merged history is checked.

``python -m interop.chaos --seconds 300 --seed 7`` runs it on an embedded ensemble and prints a
summary; ``interop/test_chaos.py`` runs a short one.

Every hold ends with a *fence*: one transaction that checks the holder's node exists and, for an
exclusive hold, increments the lock's counter and records the new value under the lock's log.
A committed fence proves the node existed when it landed, so no successor had entered: the
interval from entering to sending the fence must not overlap another exclusive hold's. A hold
whose node went away (session expired during a fault or a SIGSTOP) is *stale*: its fence must be
rejected by ZooKeeper, and its interval may overlap its successor's, as with any ZooKeeper lock
(Curator's Tech Note 10). A leader's term is an exclusive hold of its election: nodes only join
behind, so a node first when its term began and still there at its fence was first throughout;
two fenced terms that overlap are two non-stale leaders at once. Java's ``System.nanoTime()``
and Python's ``time.monotonic_ns()`` read the same clock on Linux, so one history merges both
languages.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)

from pycurator import (
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    LockLostError,
)
from pycurator.testing import (
    FaultProxy,
    ZooKeeperEnsemble,
    ephemerals_by_session,
    expire_session,
    java_acquire,
    java_nano_time,
    jclass,
    new_curator,
    session_of,
    start_jvm,
)
from tests.support import STEADY_RECONNECT, children

T = TypeVar("T")

ROOT = "/chaos"
MUTEX = f"{ROOT}/mutex"
RW = f"{ROOT}/rw"
SEMAPHORE = f"{ROOT}/semaphore"
SEMAPHORE_MAX = 2
LATCH = f"{ROOT}/latch"
SELECTOR = f"{ROOT}/selector"
LOCKS = "org.apache.curator.framework.recipes.locks"
LEADER = "org.apache.curator.framework.recipes.leader"
#: The lock each kind of contender takes, and whether its holds are exclusive.
KINDS = {
    "mutex": ("mutex", True),
    "write": ("rw", True),
    "read": ("rw", False),
    "lease": ("semaphore", False),
    "latch": ("latch", True),
    "selector": ("selector", True),
}
ELECTION_LOCKS = ("latch", "selector")
#: The locks (and elections) whose holds are exclusive: each has a counter and a log.
EXCLUSIVE = ("mutex", "rw", "latch", "selector")
#: The elections' paths are plain nodes, made before the run: Curator 5.4's latch gives up a
#: create whose container parent the server reaped meanwhile, and waits for a reconnect.
ELECTIONS = (LATCH, SELECTOR)
LOCK_PATHS = (MUTEX, RW, f"{SEMAPHORE}/leases", f"{SEMAPHORE}/locks", *ELECTIONS)
FAULTS = ("expire", "drop", "latency", "restart", "leader", "kill")
RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
#: The longest a thread's hold lasts, by kind (a hold lasts between half of it and all of it).
HOLD_S = {
    "mutex": 0.004,
    "write": 0.004,
    "read": 0.004,
    "lease": 0.02,
    "latch": 0.01,
    "selector": 0.01,
}
#: Session timeouts: contender threads, and worker processes (which are paused past theirs).
SESSION_S = 4.0
WORKER_SESSION_S = 2.0


def counter_path(lock: str) -> str:
    return f"{ROOT}/counters/{lock}"


def log_path(lock: str, hold_id: str) -> str:
    return f"{ROOT}/log/{lock}/{hold_id}"


def log_entry(hold: Hold, value: int) -> bytes:
    """A log entry's data: the value written, and which of the hold's fence attempts wrote it."""
    return f"{value}:{len(hold.fences) - 1}".encode()


@dataclass
class Hold:
    """One hold as its holder saw it: times in monotonic nanoseconds (either language)."""

    hold_id: str
    who: str
    language: str
    lock: str
    exclusive: bool
    node: str
    token: int
    enter_ns: int
    fence_ns: int = 0
    exit_ns: int = 0
    outcome: str = "unknown"  # fenced (committed), rejected (node gone), unknown, killed
    value: int | None = None  # the counter value an exclusive hold wrote
    fences: list[int] = field(default_factory=list)  # when each fence attempt was sent


# -- contenders -------------------------------------------------------------------------------


def retry(
    call: Callable[[], T], errors: type[BaseException] | tuple[type[BaseException], ...]
) -> T:
    """``call()``, again after ``errors`` (a fault's connection trouble) for up to a minute."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return call()
        except errors:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Contender:
    """Takes its lock again and again until ``stop``; each hold is fenced and recorded."""

    language = ""

    def __init__(
        self,
        who: str,
        kind: str,
        hosts: str,
        stop: threading.Event,
        record: Callable[[Hold], None],
        *,
        session_s: float = SESSION_S,
        hold_s: float = 0.004,
        on_enter: Callable[[Hold], None] | None = None,
    ) -> None:
        self.who = who
        self.session_s = session_s
        self.kind = kind
        self.lock, self.exclusive = KINDS[kind]
        self.hosts = hosts
        self.stop = stop
        self.record = record
        self.hold_s = hold_s
        self.on_enter = on_enter
        self.errors: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._random = random.Random(who)
        #: A selector's terms, as its ``lead`` offers them: the term, and the event that ends it.
        self.terms: queue.Queue[tuple[Any, threading.Event]] = queue.Queue()
        self.term_done = threading.Event()

    def lead(self, term: Any) -> None:
        """A selector's ``lead``: offer the term to :meth:`cycle`, and end it once released."""
        done = threading.Event()
        self.terms.put((term, done))
        while not done.wait(0.05) and not self.stop.is_set():
            pass

    def next_term(self) -> Any | None:
        """The selector's next term within 2 s, or None; :meth:`end_term` ends it."""
        try:
            term, self.term_done = self.terms.get(timeout=2)
        except queue.Empty:
            return None
        return term

    def end_term(self) -> None:
        self.term_done.set()

    def run(self) -> None:
        try:
            self.connect()
            while not self.stop.is_set():
                try:
                    self.cycle()
                except Exception as exc:  # a fault surfaced in acquire or release: go on
                    self.errors[type(exc).__name__] += 1
                    self.stop.wait(0.05)
        finally:
            self.close()

    def cycle(self) -> None:
        held = self.acquire()
        if held is None:
            return
        hold = Hold(
            f"{self.who}-{next(self._ids)}",
            self.who,
            self.language,
            self.lock,
            self.exclusive,
            *held,
            enter_ns=self.now(),
        )
        try:
            if self.on_enter is not None:
                self.on_enter(hold)
            self.stop.wait(self._random.uniform(self.hold_s / 2, self.hold_s))
            self.fence(hold)
        finally:
            hold.exit_ns = self.now()
            self.record(hold)
            self.release()

    def fence(self, hold: Hold) -> None:
        """Commit the hold's fence, or learn that ZooKeeper rejected it (or give up after a
        minute, the outcome left unknown: the log tells for a write)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            value = self.read_counter() + 1 if hold.exclusive else None
            hold.fence_ns = self.now()
            hold.fences.append(hold.fence_ns)
            outcome = self.commit(hold, value)
            if outcome == "unknown" and hold.exclusive and self.logged(hold):
                outcome = "fenced"  # the reply was lost, the write was not
            if outcome != "unknown":
                hold.outcome, hold.value = outcome, value if outcome == "fenced" else None
                return
            time.sleep(0.05)

    def now(self) -> int:
        raise NotImplementedError

    def connect(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def acquire(self) -> tuple[str, int] | None:
        """Our node and its czxid once held, or None after a timeout."""
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def read_counter(self) -> int:
        raise NotImplementedError

    def commit(self, hold: Hold, value: int | None) -> str:
        raise NotImplementedError

    def logged(self, hold: Hold) -> bool:
        raise NotImplementedError


class PythonContender(Contender):
    language = "python"

    def connect(self) -> None:
        self.client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_s,
            connection_retry=STEADY_RECONNECT,
        )
        self.client.start(timeout=60)
        self.latch: LeaderLatch | None = None
        if self.kind == "mutex":
            self.mutex: Any = InterProcessMutex(self.client, MUTEX)
        elif self.kind == "lease":
            self.semaphore = InterProcessSemaphoreV2(self.client, SEMAPHORE, SEMAPHORE_MAX)
        elif self.kind == "selector":
            self.selector = LeaderSelector(
                self.client, SELECTOR, self.lead, self.who, auto_requeue=True
            )
            self.selector.start()
        elif self.kind != "latch":
            rw = InterProcessReadWriteLock(self.client, RW)
            self.mutex = rw.write_lock() if self.kind == "write" else rw.read_lock()
        self.lease: Any = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.latch is not None:
                self.latch.close()
            if self.kind == "selector":
                self.selector.close()
        with contextlib.suppress(Exception):
            self.client.stop()
            self.client.close()

    def now(self) -> int:
        return time.monotonic_ns()

    def acquire(self) -> tuple[str, int] | None:
        if self.kind == "lease":
            self.lease = self.semaphore.acquire(timeout=2)
            if self.lease is None:
                return None
            return self.lease.path, self.lease.fencing_token
        if self.kind == "latch":
            return self._lead_latch()
        if self.kind == "selector":
            term: Leadership | None = self.next_term()
            return None if term is None else (term.node_path, term.fencing_token)
        if not self.mutex.acquire(timeout=2):
            return None
        return self.mutex.lock_path, self.mutex.fencing_token

    def _lead_latch(self) -> tuple[str, int] | None:
        """Join the election unless queued already; our node and token once leading."""
        if self.latch is None:
            self.latch = LeaderLatch(self.client, LATCH, self.who)
            self.latch.start()
        if not self.latch.wait(timeout=2):
            return None
        try:
            token = self.latch.fencing_token
        except LockLostError:  # lost again already
            return None
        return self.latch.our_path or f"{LATCH}/(gone)", token

    def release(self) -> None:
        if self.kind == "lease":
            self.lease.close()
        elif self.kind == "latch":
            latch, self.latch = self.latch, None  # a term ends by leaving; the next joins anew
            assert latch is not None
            latch.close()
        elif self.kind == "selector":
            self.end_term()
        else:
            self.mutex.release()

    def _connected(self) -> None:
        end = time.monotonic() + 30
        while not self.client.connected and time.monotonic() < end:
            time.sleep(0.05)

    def read_counter(self) -> int:
        return retry(lambda: int(self.client.get(counter_path(self.lock))[0]), RETRYABLE)

    def commit(self, hold: Hold, value: int | None) -> str:
        transaction = self.client.transaction()
        transaction.check(hold.node, -1)
        if value is not None:
            transaction.set_data(counter_path(self.lock), str(value).encode())
            transaction.create(log_path(self.lock, hold.hold_id), log_entry(hold, value))
        try:
            results = transaction.commit()
        except RETRYABLE:
            self._connected()
            return "unknown"
        except ConnectionClosedError:
            return "unknown"
        return "rejected" if any(isinstance(r, NoNodeError) for r in results) else "fenced"

    def logged(self, hold: Hold) -> bool:
        path = log_path(self.lock, hold.hold_id)
        return retry(lambda: self.client.exists(path) is not None, RETRYABLE)


class JavaContender(Contender):
    language = "java"

    def connect(self) -> None:
        self.curator = new_curator(
            self.hosts,
            session_timeout_ms=int(self.session_s * 1000),
            connection_timeout_ms=int(self.session_s * 1000),
        )
        self.latch: Any = None
        if self.kind == "mutex":
            self.mutex: Any = jclass(f"{LOCKS}.InterProcessMutex")(self.curator, MUTEX)
        elif self.kind == "lease":
            self.semaphore = jclass(f"{LOCKS}.InterProcessSemaphoreV2")(
                self.curator, SEMAPHORE, SEMAPHORE_MAX
            )
        elif self.kind == "selector":
            self.selector = self._java_selector()
            self.selector.start()
        elif self.kind != "latch":
            rw = jclass(f"{LOCKS}.InterProcessReadWriteLock")(self.curator, RW)
            self.mutex = rw.writeLock() if self.kind == "write" else rw.readLock()
        self.lease: Any = None
        self.unit = jclass("java.util.concurrent.TimeUnit").MILLISECONDS

    def _java_selector(self) -> Any:
        """Curator's auto-requeueing ``LeaderSelector`` whose ``takeLeadership`` is :meth:`lead`."""
        import jpype

        listener = jpype.JProxy(
            f"{LEADER}.LeaderSelectorListener",
            dict={"takeLeadership": self.lead, "stateChanged": lambda client, state: None},
        )
        selector = jclass(f"{LEADER}.LeaderSelector")(self.curator, SELECTOR, listener)
        selector.setId(self.who)
        selector.autoRequeue()
        return selector

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.latch is not None:
                self.latch.close()
            if self.kind == "selector":
                self.selector.close()
        with contextlib.suppress(Exception):
            self.curator.close()

    def now(self) -> int:
        return java_nano_time()

    def acquire(self) -> tuple[str, int] | None:
        if self.kind == "lease":
            self.lease = self.semaphore.acquire(2000, self.unit)
            if self.lease is None:
                return None
            node = f"{SEMAPHORE}/leases/{self.lease.getNodeName()}"
        elif self.kind == "latch":
            if self.latch is None:
                self.latch = jclass(f"{LEADER}.LeaderLatch")(self.curator, LATCH, self.who)
                self.latch.start()
            if not self.latch.await_(2000, self.unit):
                return None
            our_path = self.latch.getOurPath()
            node = f"{LATCH}/(gone)" if our_path is None else str(our_path)
        elif self.kind == "selector":
            if self.next_term() is None:
                return None
            node = self._own_node(SELECTOR)
        else:
            if not java_acquire(self.mutex, 2.0):
                return None
            node = self._own_node(RW if self.lock == "rw" else MUTEX)
        stat = self.curator.checkExists().forPath(node)
        return node, int(stat.getCzxid()) if stat is not None else 0

    def _own_node(self, path: str) -> str:
        """Curator keeps a lock's node to itself: ours is the one this session owns."""
        token = {"mutex": "lock-", "selector": "lock-", "write": "__WRIT__", "read": "__READ__"}[
            self.kind
        ]
        session = session_of(self.curator)[0]
        names = sorted(
            (str(name) for name in self.curator.getChildren().forPath(path) if token in str(name)),
            key=lambda name: name[-10:],
        )
        for name in names:
            stat = self.curator.checkExists().forPath(f"{path}/{name}")
            if stat is not None and int(stat.getEphemeralOwner()) == session:
                return f"{path}/{name}"
        return f"{path}/(gone)"  # the session ended in between: the fence will be rejected

    def release(self) -> None:
        if self.kind == "lease":
            self.semaphore.returnLease(self.lease)
        elif self.kind == "latch":
            latch, self.latch = self.latch, None  # a term ends by leaving; the next joins anew
            latch.close()
        elif self.kind == "selector":
            self.end_term()
        else:
            self.mutex.release()

    def read_counter(self) -> int:
        path = counter_path(self.lock)
        return retry(lambda: int(bytes(self.curator.getData().forPath(path))), Exception)

    def commit(self, hold: Hold, value: int | None) -> str:
        import jpype

        ops = self.curator.transactionOp()
        operations = [ops.check().forPath(hold.node)]
        if value is not None:
            data = jpype.JArray(jpype.JByte)(str(value).encode())
            entry = jpype.JArray(jpype.JByte)(log_entry(hold, value))
            operations.append(ops.setData().forPath(counter_path(self.lock), data))
            operations.append(ops.create().forPath(log_path(self.lock, hold.hold_id), entry))
        try:
            self.curator.transaction().forOperations(jclass("java.util.Arrays").asList(operations))
        except Exception as exc:
            name = type(exc).__name__
            if "NoNode" in name or "NoNode" in str(exc):
                return "rejected"
            return "unknown"
        return "fenced"

    def logged(self, hold: Hold) -> bool:
        path = log_path(self.lock, hold.hold_id)
        return retry(lambda: self.curator.checkExists().forPath(path) is not None, Exception)


CONTENDERS: dict[str, type[Contender]] = {"python": PythonContender, "java": JavaContender}


# -- worker processes -------------------------------------------------------------------------


def worker_main(language: str, hosts: str, who: str) -> None:
    """A mutex contender in a process of its own (``python -m interop.chaos worker``): prints
    ``enter`` and ``hold`` JSON lines, and stops when its standard input closes."""
    quiet_logs()
    if language == "java":
        start_jvm()
    stop = threading.Event()
    out = threading.Lock()

    def emit(line: dict[str, Any]) -> None:
        with out:
            print(json.dumps(line), flush=True)

    contender = CONTENDERS[language](
        who,
        "mutex",
        hosts,
        stop,
        lambda hold: emit({"hold": asdict(hold)}),
        session_s=WORKER_SESSION_S,
        hold_s=0.05,
        on_enter=lambda hold: emit({"enter": hold.hold_id, "node": hold.node}),
    )
    thread = threading.Thread(target=contender.run, daemon=True)
    thread.start()
    emit({"started": who})
    sys.stdin.read()
    stop.set()
    thread.join(60)
    emit({"errors": dict(contender.errors)})


class Worker:
    """A worker process, its output read by a thread; can pause itself right after an enter."""

    def __init__(self, language: str, hosts: str, who: str, record: Callable[[Hold], None]):
        self.language = language
        self.who = who
        self.record = record
        self.errors: Counter[str] = Counter()
        self.entered: dict[str, int] = {}  # holds entered and not yet recorded
        self.pause_next: threading.Event = threading.Event()
        self.paused = threading.Event()
        self.paused_hold = ""
        self.paused_node = ""
        self.paused_ns = 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "interop.chaos", "worker", language, hosts, who],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()

    def _read(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            message = json.loads(line)
            if "enter" in message:
                if self.pause_next.is_set():
                    os.kill(self.process.pid, signal.SIGSTOP)
                    self.paused_ns = time.monotonic_ns()
                    self.pause_next.clear()
                    self.paused_hold, self.paused_node = message["enter"], message["node"]
                    self.paused.set()
                self.entered[message["enter"]] = 1
            elif "hold" in message:
                hold = Hold(**message["hold"])
                self.entered.pop(hold.hold_id, None)
                self.record(hold)
            elif "started" in message:
                self.started.set()
            elif "errors" in message:
                self.errors.update(message["errors"])

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        self.process.kill()

    def finish(self, timeout: float = 90) -> None:
        """Stop after the current hold (or kill), and wait for the last lines."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Faults:
    """What the fault driver did, by kind, with notes on the notable ones."""

    counts: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


class Chaos:
    """One run: ensemble, proxies, contenders, fault driver; then the history and the tree."""

    def __init__(self, seconds: float, seed: int, threads_per_kind: int = 1) -> None:
        self.seconds = seconds
        self.random = random.Random(seed)
        self.seed = seed
        self.threads_per_kind = threads_per_kind
        self.holds: list[Hold] = []
        self._holds_lock = threading.Lock()
        self.faults = Faults()
        self.stop = threading.Event()
        self.contenders: list[Contender] = []
        self.threads: list[threading.Thread] = []
        self.workers: list[Worker] = []
        self.pauses: list[dict[str, Any]] = []

    def record(self, hold: Hold) -> None:
        with self._holds_lock:
            self.holds.append(hold)

    @contextlib.contextmanager
    def cluster(self) -> Iterator[None]:
        with ZooKeeperEnsemble(3) as ensemble, contextlib.ExitStack() as proxies:
            self.ensemble = ensemble
            self.proxies = [
                proxies.enter_context(FaultProxy(f"127.0.0.1:{ensemble.client_ports[member]}"))
                for member in ensemble.members
            ]
            self.hosts = ",".join(proxy.hosts for proxy in self.proxies)
            yield

    def run(self) -> Report:
        start_jvm()
        with self.cluster():
            self._prepare()
            self.observer = KazooClient(hosts=self.ensemble.hosts, timeout=10)
            self.observer.start(timeout=60)
            try:
                self._start_contenders()
                self._pause_scenario()
                self._drive(time.monotonic() + self.seconds)
            finally:
                self._finish()
                self.observer.stop()
                self.observer.close()
            return self._report()

    def _prepare(self) -> None:
        client = KazooClient(hosts=self.ensemble.hosts, timeout=10)
        client.start(timeout=60)
        try:
            for lock in EXCLUSIVE:
                client.create(counter_path(lock), b"0", makepath=True)
                client.ensure_path(f"{ROOT}/log/{lock}")
            for path in ELECTIONS:
                client.ensure_path(path)
        finally:
            client.stop()
            client.close()

    def _start_contenders(self) -> None:
        for language, kind in itertools.product(CONTENDERS, KINDS):
            for n in range(self.threads_per_kind * (2 if kind == "lease" else 1)):
                who = f"{language[:2]}-{kind}-{n}"
                contender = CONTENDERS[language](
                    who, kind, self.hosts, self.stop, self.record, hold_s=HOLD_S[kind]
                )
                thread = threading.Thread(target=contender.run, name=who)
                self.contenders.append(contender)
                self.threads.append(thread)
                thread.start()
        for language in CONTENDERS:
            self._start_worker(language)

    def _start_worker(self, language: str) -> Worker:
        who = f"{language[:2]}-process-{len(self.workers)}"
        worker = Worker(language, self.hosts, who, self.record)
        self.workers.append(worker)
        worker.started.wait(60)
        return worker

    def _live_workers(self) -> list[Worker]:
        return [w for w in self.workers if w.process.poll() is None and not w.paused.is_set()]

    def _pause_scenario(self) -> None:
        """SIGSTOP each worker process (one per language) right after it enters the mutex, and
        let it go on only once its session has expired (its node gone) and others have held:
        each stale holder's fence must then be rejected."""
        workers = self._live_workers()
        for worker in workers:
            worker.pause_next.set()
        gone: set[Worker] = set()
        deadline = time.monotonic() + 60
        while workers and time.monotonic() < deadline:
            for worker in list(workers):
                if not worker.paused.is_set():
                    continue
                if worker not in gone and self.observer.exists(worker.paused_node) is None:
                    gone.add(worker)
                if worker in gone and self._entered_since(worker.paused_ns):
                    worker.resume()
                    worker.paused.clear()
                    workers.remove(worker)
                    self.faults.counts["pause"] += 1
                    self.pauses.append(
                        {
                            "worker": worker.who,
                            "hold_id": worker.paused_hold,
                            "paused_ns": worker.paused_ns,
                            "resumed_ns": time.monotonic_ns(),
                        }
                    )
            time.sleep(0.05)
        for worker in workers:
            worker.pause_next.clear()
            if worker.paused.is_set():
                worker.resume()
                worker.paused.clear()
            self.faults.notes.append(f"pause: {worker.who} not paused and expired within 60 s")
        end = time.monotonic() + 60  # the stale holders' fences, before other faults begin
        while not all(self._recorded(p["hold_id"]) for p in self.pauses):
            if time.monotonic() > end:
                break
            time.sleep(0.05)

    def _entered_since(self, since_ns: int) -> bool:
        """Whether a hold of the mutex entered since ``since_ns`` has been recorded."""
        with self._holds_lock:
            return any(h.lock == "mutex" and h.enter_ns > since_ns for h in self.holds)

    def _recorded(self, hold_id: str) -> bool:
        with self._holds_lock:
            return any(h.hold_id == hold_id for h in self.holds)

    def _drive(self, end: float) -> None:
        kinds = list(FAULTS)
        self.random.shuffle(kinds)  # every kind once, in a random order, then at random
        while kinds or time.monotonic() < end:
            kind = kinds.pop() if kinds else self.random.choice(FAULTS)
            getattr(self, f"_fault_{kind}")()
            self.faults.counts[kind] += 1
            time.sleep(self.random.uniform(0.3, 1.0))

    def _fault_expire(self) -> None:
        contender = self.random.choice(self.contenders)
        with contextlib.suppress(Exception):
            if isinstance(contender, JavaContender):
                session_id, password = session_of(contender.curator)
            else:
                session_id, password = contender.client.client_id  # type: ignore[attr-defined]
            expire_session(self.ensemble.hosts, session_id, password)
            self.faults.notes.append(f"expire: {contender.who}")

    def _fault_drop(self) -> None:
        self.random.choice(self.proxies).drop_connections()

    def _fault_latency(self) -> None:
        latency = self.random.uniform(0.005, 0.03)
        for proxy in self.proxies:
            proxy.latency = latency
        time.sleep(self.random.uniform(0.5, 1.5))
        for proxy in self.proxies:
            proxy.latency = 0.0

    def _restart(self, member: int) -> None:
        self.ensemble.kill(member)
        time.sleep(self.random.uniform(0.3, 1.5))
        self.ensemble.start(member)
        self.ensemble.wait_serving(list(self.ensemble.members), timeout=90)

    def _fault_restart(self) -> None:
        self._restart(self.random.choice(list(self.ensemble.members)))

    def _fault_leader(self) -> None:
        leader = self.ensemble.leader()
        if leader is not None:
            self._restart(leader)
            self.faults.notes.append(f"leader: member {leader} killed and restarted")

    def _fault_kill(self) -> None:
        live = self._live_workers()
        if not live:
            return
        worker = self.random.choice(live)
        worker.kill()
        worker.finish()
        self.faults.notes.append(f"kill: {worker.who} (SIGKILL)")
        self._start_worker(worker.language)

    def _finish(self) -> None:
        self.stop.set()
        for proxy in self.proxies:
            proxy.latency = 0.0
            proxy.heal()
        for worker in self.workers:
            if worker.paused.is_set():
                worker.resume()
            worker.finish()
            for hold_id in worker.entered:  # entered, then killed before its record
                self.record(
                    Hold(
                        hold_id,
                        worker.who,
                        worker.language,
                        "mutex",
                        True,
                        "",
                        0,
                        0,
                        0,
                        0,
                        "killed",
                    )
                )
        for thread in self.threads:
            thread.join(90)

    # -- the checks ---------------------------------------------------------------------------

    def _report(self) -> Report:
        client = KazooClient(hosts=self.ensemble.hosts, timeout=10)
        client.start(timeout=60)
        try:
            logs = {lock: _read_log(client, lock) for lock in EXCLUSIVE}
            counters = {lock: int(client.get(counter_path(lock))[0]) for lock in logs}
            orphans = _orphans(client, self.ensemble)
        finally:
            client.stop()
            client.close()
        errors: Counter[str] = Counter()
        for contender in self.contenders:
            errors.update(contender.errors)
        for worker in self.workers:
            errors.update(worker.errors)
        return check(
            self.holds,
            logs,
            counters,
            orphans,
            faults=self.faults,
            errors=errors,
            pauses=self.pauses,
            seconds=self.seconds,
            seed=self.seed,
        )


def _read_log(client: KazooClient, lock: str) -> dict[str, tuple[int, int]]:
    """hold id -> the counter value its committed fence wrote, and that fence's attempt."""
    names = client.get_children(f"{ROOT}/log/{lock}")
    replies = [(name, client.get_async(log_path(lock, name))) for name in names]
    entries = {}
    for name, reply in replies:
        value, _, attempt = reply.get(timeout=60)[0].decode().partition(":")
        entries[name] = (int(value), int(attempt))
    return entries


def _orphans(client: KazooClient, ensemble: ZooKeeperEnsemble) -> dict[str, Any]:
    """Lock nodes left once every contender's session is closed or expired: in the tree, and in
    the servers' ``dump`` of ephemeral nodes by session."""
    end = time.monotonic() + WORKER_SESSION_S * 3 + 20
    while True:
        tree = [f"{path}/{name}" for path in LOCK_PATHS for name in children(client, path)]
        if not tree or time.monotonic() > end:
            break
        time.sleep(0.2)  # a killed worker's session ends only with its timeout
    return {"tree": tree, "dump": ephemerals_by_session(ensemble.hosts, under=ROOT)}


# -- the checker ------------------------------------------------------------------------------


@dataclass
class Report:
    """What the history shows; :attr:`ok` when nothing that must not happen did."""

    seconds: float
    seed: int
    holds: Counter[str]
    faults: Faults
    errors: Counter[str]
    stale: int
    stale_rejected: int
    overlaps: int
    overlaps_with_stale: int
    violations: list[str]
    semaphore_max: int
    counters: dict[str, dict[str, int]]
    counter_problems: list[str]
    orphans: dict[str, Any]
    pauses: list[dict[str, Any]]

    @property
    def ok(self) -> bool:
        return (
            not self.violations
            and self.semaphore_max <= SEMAPHORE_MAX
            and not self.counter_problems
            and self.stale == self.stale_rejected
            and not self.orphans["tree"]
            and not self.orphans["dump"]
        )

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON types."""
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        fields["holds"] = dict(self.holds)
        fields["errors"] = dict(self.errors)
        fields["faults"] = {"counts": dict(self.faults.counts), "notes": self.faults.notes}
        fields["ok"] = self.ok
        return fields

    def summary(self) -> str:
        faults = ", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.counts.items()))
        holds = ", ".join(f"{key} {n}" for key, n in sorted(self.holds.items()))
        errors = ", ".join(f"{key} {n}" for key, n in sorted(self.errors.items())) or "none"
        counters = "; ".join(
            f"{lock}: counter {c['counter']}, {c['committed']} committed writes"
            f" ({c['outcomes_learned_from_the_log']} known only from the log,"
            f" {c['committed_by_killed_holders']} by holders killed after)"
            for lock, c in self.counters.items()
        )
        lines = [
            f"chaos: {self.seconds:g} s, seed {self.seed}, a 3-node ensemble behind fault proxies",
            f"holds: {holds}",
            f"faults: {faults}",
            f"errors seen by contenders (and retried): {errors}",
            f"stale holds (node gone before the fence): {self.stale},"
            f" their fences rejected by ZooKeeper: {self.stale_rejected}",
            f"overlapping hold intervals: {self.overlaps}, each with a stale holder:"
            f" {self.overlaps_with_stale}",
            f"violations (fenced holds overlapping): {len(self.violations)}",
            f"semaphore: at most {self.semaphore_max} fenced leases at once (max {SEMAPHORE_MAX})",
            f"counters: {counters}; problems: {len(self.counter_problems)}",
            f"orphans: {len(self.orphans['tree'])} in the tree,"
            f" {sum(len(p) for p in self.orphans['dump'].values())} in the servers' dump",
        ]
        for pause in self.pauses:
            lines.append(
                f"SIGSTOP: {pause['worker']} paused in hold {pause['hold_id']} for"
                f" {(pause['resumed_ns'] - pause['paused_ns']) / 1e9:.1f} s, until its session"
                f" expired; mutex holds entered meanwhile: {pause['successors']};"
                f" its guarded write: {pause['outcome']}"
            )
        lines.extend(self.violations[:10])
        lines.extend(self.counter_problems[:10])
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)


def _overlap(a: Hold, b: Hold, end: Callable[[Hold], int]) -> bool:
    return a.enter_ns < end(b) and b.enter_ns < end(a)


def check(
    holds: Sequence[Hold],
    logs: dict[str, dict[str, tuple[int, int]]],
    counters: dict[str, int],
    orphans: dict[str, Any],
    *,
    faults: Faults,
    errors: Counter[str],
    pauses: list[dict[str, Any]],
    seconds: float,
    seed: int,
) -> Report:
    """Check a merged history; see the module doc for what is proved and how."""
    problems: list[str] = []
    killed = {hold.hold_id for hold in holds if hold.outcome == "killed"}
    holds = [hold for hold in holds if hold.outcome != "killed"]
    learned: Counter[str] = Counter()
    for hold in holds:  # a write's outcome is the log's: a lost reply can hide a landed write
        if not hold.exclusive:
            continue
        entry = logs[hold.lock].get(hold.hold_id)
        if entry is None and hold.outcome == "fenced":
            problems.append(f"{hold.hold_id}: its holder saw its write land; the log did not")
        elif entry is not None:
            learned[hold.lock] += hold.outcome != "fenced"
            hold.outcome, hold.value = "fenced", entry[0]
            hold.fence_ns = hold.fences[entry[1]]  # the attempt that landed
        elif hold.outcome == "unknown":
            hold.outcome = "rejected"
    fenced = [hold for hold in holds if hold.outcome == "fenced"]
    stale = [hold for hold in holds if hold.outcome != "fenced"]
    violations: list[str] = []
    overlaps = overlaps_with_stale = 0
    for lock in (*EXCLUSIVE, "semaphore"):
        mine = sorted((h for h in holds if h.lock == lock), key=lambda h: h.enter_ns)
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                if b.enter_ns >= a.exit_ns and b.enter_ns >= a.fence_ns:
                    break
                if not (a.exclusive or b.exclusive):
                    continue
                if _overlap(a, b, lambda h: h.exit_ns):
                    overlaps += 1
                    overlaps_with_stale += a.outcome != "fenced" or b.outcome != "fenced"
                both_fenced = a.outcome == b.outcome == "fenced"
                if both_fenced and _overlap(a, b, lambda h: h.fence_ns):
                    leaders = " (two non-stale leaders at once)" if lock in ELECTION_LOCKS else ""
                    violations.append(f"{lock}: {a.hold_id} and {b.hold_id} overlap{leaders}")
    semaphore_max = _most_at_once([h for h in fenced if h.lock == "semaphore"])
    counter_report: dict[str, dict[str, int]] = {}
    for lock, log in logs.items():
        values = sorted(value for value, _ in log.values())
        counter_report[lock] = {
            "counter": counters[lock],
            "committed": len(values),
            "outcomes_learned_from_the_log": learned[lock],
            "committed_by_killed_holders": len(killed & set(log)),
        }
        if values != list(range(1, counters[lock] + 1)):
            problems.append(f"{lock}: committed values are not 1..{counters[lock]} once each")
        recorded = {h.hold_id for h in holds if h.lock == lock} | killed
        if set(log) - recorded:
            problems.append(f"{lock}: {len(set(log) - recorded)} log entries of no hold")
    for pause in pauses:
        paused = next((h for h in holds if h.hold_id == pause["hold_id"]), None)
        pause["outcome"] = paused.outcome if paused else "not recorded"
        pause["successors"] = sum(
            1
            for h in holds
            if h.lock == "mutex" and pause["paused_ns"] < h.enter_ns < pause["resumed_ns"]
        )
    counts: Counter[str] = Counter()
    for hold in holds:
        mode = "" if hold.lock != "rw" else ("-write" if hold.exclusive else "-read")
        counts[f"{hold.lock}{mode} {hold.language}"] += 1
    return Report(
        seconds=seconds,
        seed=seed,
        holds=counts,
        faults=faults,
        errors=errors,
        stale=len(stale),
        stale_rejected=sum(1 for h in stale if h.outcome == "rejected"),
        overlaps=overlaps,
        overlaps_with_stale=overlaps_with_stale,
        violations=violations,
        semaphore_max=semaphore_max,
        counters=counter_report,
        counter_problems=problems,
        orphans=orphans,
        pauses=pauses,
    )


def _most_at_once(holds: Sequence[Hold]) -> int:
    """The most holds whose fenced intervals include one instant."""
    events = sorted(
        [(h.enter_ns, 1) for h in holds] + [(h.fence_ns, -1) for h in holds],
        key=lambda e: (e[0], e[1]),
    )
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def quiet_logs() -> None:
    """kazoo logs every dropped connection as a warning: faults are the point here."""
    logging.getLogger("kazoo").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["worker"]:
        worker_main(*args[1:4])
        return 0
    parser = argparse.ArgumentParser(prog="python -m interop.chaos", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long faults go on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="threads per kind and language")
    parser.add_argument("--json", type=Path, help="write the report here too")
    options = parser.parse_args(args)
    quiet_logs()
    report = Chaos(options.seconds, options.seed, options.threads).run()
    print(report.summary())
    if options.json:
        options.json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
