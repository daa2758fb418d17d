"""One chaos run: a 3-node ensemble behind fault proxies, contender threads and worker
processes of both languages, the SIGSTOP scenario, the fault driver with its quiet moments;
then the history, the logs, the quiet moments' audits and the tree, handed to the pure
:func:`~pycurator.testing.chaos.checker.check`."""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence

from kazoo.client import KazooClient

from pycurator.testing import (
    FaultProxy,
    ZooKeeperEnsemble,
    children,
    ephemerals_by_session,
    start_jvm,
)

from .async_contenders import ASYNC_KINDS
from .checker import Report, check
from .contenders import (
    HANDLERS,
    SESSION_S,
    WORKER_SESSION_S,
    Contender,
)
from .faults import FAULTS, FaultDriver
from .history import (
    ELECTIONS,
    EXCLUSIVE,
    KINDS,
    LOCK_PATHS,
    ROOT,
    Faults,
    Hold,
    LogEntry,
    Orphans,
    Pause,
    QuietCheck,
    counter_path,
    log_path,
)
from .quiet import Gate, Quiet
from .roster import CONTENDERS
from .workers import ChaosWorker

#: The languages of the worker processes, and of the contenders unless told otherwise.
WORKER_LANGUAGES = ("python", "java")

#: The longest a thread's hold lasts, by kind (a hold lasts between half of it and all of it).
HOLD_S = {
    "mutex": 0.004,
    "write": 0.004,
    "read": 0.004,
    "lease": 0.02,
    "latch": 0.01,
    "selector": 0.01,
    "zk-write": 0.004,
    "menagerie": 0.004,
}


class Chaos:
    """One run: ensemble, proxies, contenders, fault driver; then the history and the tree.

    ``kinds`` chooses the contender threads (any of :data:`KINDS`: ``mutex``, ``write``,
    ``read``, ``lease``, ``latch``, ``selector``, ``zk-write``, ``menagerie``); a mutex worker
    process of each language always runs, as the SIGSTOP and SIGKILL faults need one. A quiet
    moment's audit of the lock nodes (:mod:`~pycurator.testing.chaos.quiet`) follows the first
    round of faults, then every ``quiet_every`` seconds of faults (None: no more), and comes
    once more before the end. ``languages`` chooses the contenders of :data:`CONTENDERS`
    (``asyncio`` ones only for :data:`ASYNC_KINDS`), ``handler`` their kazoo clients' handler
    (:data:`~pycurator.testing.chaos.contenders.HANDLERS`); ``faults`` and ``gaps`` choose the
    faults and the seconds between two (:class:`~pycurator.testing.chaos.faults.FaultDriver`).
    :meth:`run` returns the :class:`~pycurator.testing.chaos.checker.Report`.
    """

    def __init__(
        self,
        seconds: float,
        seed: int,
        threads_per_kind: int = 1,
        kinds: Sequence[str] = tuple(KINDS),
        *,
        quiet_every: float | None = 30.0,
        faults: Sequence[str] = FAULTS,
        gaps: tuple[float, float] = (0.3, 1.0),
        languages: Sequence[str] = WORKER_LANGUAGES,
        handler: str = "threading",
    ) -> None:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown contender kinds {unknown}; choose from {sorted(KINDS)}")
        unknown = sorted(set(languages) - set(CONTENDERS))
        if unknown:
            raise ValueError(f"unknown languages {unknown}; choose from {sorted(CONTENDERS)}")
        if handler not in HANDLERS:
            raise ValueError(f"unknown handler {handler!r}; choose from {list(HANDLERS)}")
        self.languages = tuple(languages)
        self.handler = handler
        self.kinds = tuple(kinds)
        self.driver = FaultDriver(self, faults, gaps)
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
        self.workers: list[ChaosWorker] = []
        self.pauses: list[Pause] = []
        self.gate = Gate()
        self.quiet_every = quiet_every
        self.quiet_checks: list[QuietCheck] = []

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
            self.quiet = Quiet(
                self.observer,
                self.gate,
                self.contenders,
                self.live_workers,
                session_s=3 * SESSION_S + 10,
                ephemerals=lambda: ephemerals_by_session(self.ensemble.hosts, under=ROOT),
            )
            try:
                self._start_contenders()
                self._pause_scenario()
                self.driver.drive(time.monotonic() + self.seconds, self.quiet_every)
                self.quiet_check("before the end")
            finally:
                self._finish()
                self.observer.stop()
                self.observer.close()
            return self._report()

    def _prepare(self) -> None:
        client = KazooClient(hosts=self.ensemble.hosts, timeout=10)
        client.start(timeout=60)
        try:
            prepare(client)
        finally:
            client.stop()
            client.close()

    def _start_contenders(self) -> None:
        for language, kind in itertools.product(self.languages, self.kinds):
            if language == "asyncio" and kind not in ASYNC_KINDS:
                continue
            for n in range(self.threads_per_kind * (2 if kind == "lease" else 1)):
                who = f"{language[:2]}-{kind}-{n}"
                contender = CONTENDERS[language](
                    who,
                    kind,
                    self.hosts,
                    self.stop,
                    self.record,
                    hold_s=HOLD_S[kind],
                    gate=self.gate,
                    handler=self.handler,
                )
                thread = threading.Thread(target=contender.run, name=who)
                self.contenders.append(contender)
                self.threads.append(thread)
                thread.start()
        for language in WORKER_LANGUAGES:
            self.start_worker(language)

    def start_worker(self, language: str) -> ChaosWorker:
        who = f"{language[:2]}-process-{len(self.workers)}"
        worker = ChaosWorker(language, self.hosts, who, self.record)
        self.workers.append(worker)
        worker.started.wait(60)
        return worker

    def live_workers(self) -> list[ChaosWorker]:
        return [w for w in self.workers if w.alive() and not w.paused.is_set()]

    def quiet_check(self, when: str) -> None:
        """Stop every fault (heal the proxies, every member serving), then reach a quiet moment
        and audit the lock nodes there."""
        for proxy in self.proxies:
            proxy.latency = 0.0
            proxy.heal()
        self.ensemble.wait_serving(list(self.ensemble.members), timeout=90)
        self.quiet_checks.append(self.quiet.check(when))

    def _pause_scenario(self) -> None:
        """SIGSTOP each worker process (one per language) right after it enters the mutex, and
        let it go on only once its session has expired (its node gone) and others have held:
        each stale holder's fence must then be rejected."""
        workers = self.live_workers()
        for worker in workers:
            worker.pause_next.set()
        gone: set[ChaosWorker] = set()
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
                        Pause(worker.who, worker.paused_hold, worker.paused_ns, time.monotonic_ns())
                    )
            time.sleep(0.05)
        for worker in workers:
            worker.pause_next.clear()
            if worker.paused.is_set():
                worker.resume()
                worker.paused.clear()
            self.faults.notes.append(f"pause: {worker.who} not paused and expired within 60 s")
        end = time.monotonic() + 60  # the stale holders' fences, before other faults begin
        while not all(self._recorded(p.hold_id) for p in self.pauses):
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

    def _finish(self) -> None:
        self.stop.set()
        self.gate.open()
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
                        outcome="killed",
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
            quiet=self.quiet_checks,
            seconds=self.seconds,
            seed=self.seed,
        )


def prepare(client: KazooClient) -> None:
    """Make what contenders need before they start: each exclusive lock's counter and log, and
    the elections' paths."""
    for lock in EXCLUSIVE:
        client.create(counter_path(lock), b"0", makepath=True)
        client.ensure_path(f"{ROOT}/log/{lock}")
    for path in ELECTIONS:
        client.ensure_path(path)


def _read_log(client: KazooClient, lock: str) -> dict[str, LogEntry]:
    """hold id -> the counter value its committed fence wrote, and that fence's attempt."""
    names = client.get_children(f"{ROOT}/log/{lock}")
    replies = [(name, client.get_async(log_path(lock, name))) for name in names]
    entries = {}
    for name, reply in replies:
        value, _, attempt = reply.get(timeout=60)[0].decode().partition(":")
        entries[name] = LogEntry(int(value), int(attempt))
    return entries


def _orphans(client: KazooClient, ensemble: ZooKeeperEnsemble) -> Orphans:
    """Lock nodes left once every contender's session is closed or expired: in the tree, and in
    the servers' ``dump`` of ephemeral nodes by session."""
    end = time.monotonic() + WORKER_SESSION_S * 3 + 20
    while True:
        tree = [f"{path}/{name}" for path in LOCK_PATHS for name in children(client, path)]
        if not tree or time.monotonic() > end:
            break
        time.sleep(0.2)  # a killed worker's session ends only with its timeout
    return Orphans(tree, ephemerals_by_session(ensemble.hosts, under=ROOT))
