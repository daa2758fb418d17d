"""The chaos run's contenders: a thread that takes its lock again and again, each hold fenced
and recorded, with pycurator or with Java (Curator through :mod:`pycurator.testing`'s adapters;
ZooKeeper's WriteLock and menagerie's lock through its peers of those systems)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

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
    menagerie,
    zkrecipes,
)
from pycurator.handlers import FastThreadingHandler, use_lean_loop
from pycurator.testing import (
    STEADY_RECONNECT,
)

from .history import (
    KINDS,
    LATCH,
    MENAGERIE,
    MUTEX,
    RW,
    SELECTOR,
    SEMAPHORE,
    SEMAPHORE_MAX,
    ZKWRITE,
    Hold,
    Outcome,
    counter_path,
    log_entry,
    log_path,
)
from .quiet import Gate

T = TypeVar("T")

#: The kazoo handlers a Python contender's client can have: kazoo's own, or pycurator's
#: :class:`~pycurator.handlers.FastThreadingHandler` (``lean``: that one on pycurator's
#: connection loop, :func:`~pycurator.handlers.use_lean_loop`, as ``connect()`` serves it).
HANDLERS = ("threading", "fast", "lean")
RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
#: Session timeouts: contender threads, and worker processes (which are paused past theirs).
SESSION_S = 4.0
WORKER_SESSION_S = 2.0


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
        gate: Gate | None = None,
        handler: str = "threading",
    ) -> None:
        if handler not in HANDLERS:
            raise ValueError(f"unknown handler {handler!r}; choose from {HANDLERS}")
        self.who = who
        self.handler = handler
        self.gate = gate if gate is not None else Gate()
        self.running = False  # connected, and not yet closing
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
            self.running = True
            while not self.stop.is_set():
                self.gate.pass_through(self.who, self.stop)  # parks while a quiet moment lasts
                if self.stop.is_set():
                    break
                try:
                    self.cycle()
                except Exception as exc:  # a fault surfaced in acquire or release: go on
                    self.errors[type(exc).__name__] += 1
                    self.stop.wait(0.05)
        finally:
            self.running = False
            self.close()

    def cycle(self) -> None:
        held = self.acquire()
        if held is None:
            return
        hold = self.entered(held)
        try:
            if self.on_enter is not None:
                self.on_enter(hold)
            self.stop.wait(self.hold_time())
            self.fence(hold)
        finally:
            self.left(hold)
            self.release()

    def entered(self, held: tuple[str, int]) -> Hold:
        """The record of a hold just entered with ``held`` (our node and its token)."""
        node, token = held
        hold_id = f"{self.who}-{next(self._ids)}"
        return Hold(
            hold_id, self.who, self.language, self.lock, self.exclusive, node, token, self.now()
        )

    def hold_time(self) -> float:
        """How long the next hold lasts before its fence."""
        return self._random.uniform(self.hold_s / 2, self.hold_s)

    def left(self, hold: Hold) -> None:
        """Record ``hold`` as it ends."""
        hold.exit_ns = self.now()
        self.record(hold)

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

    def session(self) -> tuple[int, bytes]:
        """The id and password of the contender's ZooKeeper session."""
        raise NotImplementedError

    def connect(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def connected(self) -> bool:
        """Whether every client of the contender is connected."""
        raise NotImplementedError

    def clients(self) -> dict[int, str]:
        """The session id of each client of the contender, and what that client is."""
        raise NotImplementedError

    def owned(self) -> set[str]:
        """The lock nodes the contender owns between two cycles: its place in an election."""
        raise NotImplementedError

    def acquire(self) -> tuple[str, int] | None:
        """Our node and its czxid once held, or None after a timeout."""
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def read_counter(self) -> int:
        raise NotImplementedError

    def commit(self, hold: Hold, value: int | None) -> Outcome:
        raise NotImplementedError

    def logged(self, hold: Hold) -> bool:
        raise NotImplementedError


class PythonContender(Contender):
    language = "python"

    def start_client(self) -> None:
        self.client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_s,
            connection_retry=STEADY_RECONNECT,
            handler=FastThreadingHandler() if self.handler in ("fast", "lean") else None,
        )
        if self.handler == "lean" and not use_lean_loop(self.client):
            raise RuntimeError("pycurator's connection loop refused the contender's client")
        self.client.start(timeout=60)
        self.latch: LeaderLatch | None = None
        self.lease: Any = None

    def connect(self) -> None:
        self.start_client()
        if self.kind == "mutex":
            self.mutex: Any = InterProcessMutex(self.client, MUTEX)
        elif self.kind == "lease":
            self.semaphore = InterProcessSemaphoreV2(self.client, SEMAPHORE, SEMAPHORE_MAX)
        elif self.kind == "selector":
            self.selector = LeaderSelector(
                self.client, SELECTOR, self.lead, self.who, auto_requeue=True
            )
            self.selector.start()
        elif self.kind == "zk-write":
            self.mutex = zkrecipes.WriteLock(self.client, ZKWRITE)
        elif self.kind == "menagerie":
            self.mutex = menagerie.ReentrantZkLock(self.client, MENAGERIE)
        elif self.kind != "latch":
            rw = InterProcessReadWriteLock(self.client, RW)
            self.mutex = rw.write_lock() if self.kind == "write" else rw.read_lock()

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

    def connected(self) -> bool:
        return bool(self.client.connected)

    def clients(self) -> dict[int, str]:
        client_id = self.client.client_id
        return {} if client_id is None else {int(client_id[0]): "kazoo client"}

    def owned(self) -> set[str]:
        if self.kind == "latch":
            node = None if self.latch is None else self.latch.our_path
        elif self.kind == "selector":
            node = self.selector.our_path
        else:
            node = None
        return set() if node is None else {node}

    def session(self) -> tuple[int, bytes]:
        session_id, password = self.client.client_id
        return int(session_id), bytes(password)

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
        node = self.latch.our_path
        try:
            token = self.latch.fencing_token
        except LockLostError:  # lost again already
            return None
        if node is None or self.latch.our_path != node:
            return None  # lost, and queued again with a new node, as the path was read
        return node, token

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

    def commit(self, hold: Hold, value: int | None) -> Outcome:
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


def quiet_logs() -> None:
    """kazoo logs every dropped connection as a warning: faults are the point here."""
    logging.getLogger("kazoo").setLevel(logging.ERROR)
