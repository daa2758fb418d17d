"""The chaos run's faults: session expiry, dropped connections, latency, a member restarted,
the leader restarted, a worker process killed with SIGKILL, and (chosen on demand) short cuts of
every connection; every kind once in a random order, then at random, with quiet moments between
(after the first round, then every so often)."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Sequence
from typing import Protocol

from pycurator.testing import FaultProxy, ZooKeeperEnsemble, expire_session

from .contenders import Contender
from .history import Faults
from .workers import ChaosWorker

#: The faults of a run unless told otherwise.
FAULTS = ("expire", "drop", "latency", "restart", "leader", "kill")
#: Every kind of fault: :data:`FAULTS`, and ``cut``: every connection through every member
#: closed, and none let through for 10 to 300 ms.
FAULT_KINDS = (*FAULTS, "cut")
#: Short cuts about 200 times a minute (a cut every 0.05 to 0.55 s): the faults of ``--cuts``.
CUTS = ("cut",)
CUT_GAPS = (0.05, 0.55)


class Run(Protocol):
    """What the faults need of a run (:class:`~pycurator.testing.chaos.run.Chaos` has it)."""

    random: random.Random
    faults: Faults
    contenders: list[Contender]
    ensemble: ZooKeeperEnsemble
    proxies: list[FaultProxy]

    def live_workers(self) -> list[ChaosWorker]: ...

    def start_worker(self, language: str) -> ChaosWorker: ...

    def quiet_check(self, when: str) -> None:
        """Stop every fault, reach a quiet moment and audit the lock nodes there."""
        ...


class FaultDriver:
    """Applies faults of ``kinds`` (of :data:`FAULT_KINDS`) to a run's ensemble, proxies,
    contenders and workers, between ``gaps[0]`` and ``gaps[1]`` seconds apart, counting them
    in the run's ``faults``."""

    def __init__(
        self, run: Run, kinds: Sequence[str] = FAULTS, gaps: tuple[float, float] = (0.3, 1.0)
    ) -> None:
        unknown = sorted(set(kinds) - set(FAULT_KINDS))
        if unknown or not kinds:
            raise ValueError(f"unknown fault kinds {unknown}; choose from {list(FAULT_KINDS)}")
        self.run = run
        self.kinds = tuple(kinds)
        self.gaps = gaps

    def drive(self, end: float, quiet_every: float | None = None) -> None:
        """Faults until ``end`` (monotonic), and at least one of each kind; a quiet moment
        after that first round, and then after every ``quiet_every`` seconds of faults (before
        ``end``)."""
        kinds = list(self.kinds)
        self.run.random.shuffle(kinds)  # every kind once, in a random order, then at random
        next_quiet = float("inf")  # until the first round is over
        done = 0
        while kinds or time.monotonic() < end:
            kind = kinds.pop() if kinds else self.run.random.choice(self.kinds)
            getattr(self, f"_fault_{kind}")()
            self.run.faults.counts[kind] += 1
            done += 1
            now = time.monotonic()
            if done == len(self.kinds) or next_quiet <= now < end:
                self.run.quiet_check(f"after {done} fault{'' if done == 1 else 's'}")
                next_quiet = time.monotonic() + quiet_every if quiet_every else float("inf")
            time.sleep(self.run.random.uniform(*self.gaps))

    def _fault_expire(self) -> None:
        contender = self.run.random.choice(self.run.contenders)
        with contextlib.suppress(Exception):
            session_id, password = contender.session()
            expire_session(self.run.ensemble.hosts, session_id, password)
            self.run.faults.notes.append(f"expire: {contender.who}")

    def _fault_cut(self) -> None:
        seconds = self.run.random.uniform(0.01, 0.3)
        for proxy in self.run.proxies:
            # closed first, so that what was forwarded is read before the end of the stream
            proxy.drop_connections()
            proxy.blackhole(seconds)  # healed by a timer: the next fault need not wait

    def _fault_drop(self) -> None:
        self.run.random.choice(self.run.proxies).drop_connections()

    def _fault_latency(self) -> None:
        latency = self.run.random.uniform(0.005, 0.03)
        for proxy in self.run.proxies:
            proxy.latency = latency
        time.sleep(self.run.random.uniform(0.5, 1.5))
        for proxy in self.run.proxies:
            proxy.latency = 0.0

    def _restart(self, member: int) -> None:
        self.run.ensemble.kill(member)
        time.sleep(self.run.random.uniform(0.3, 1.5))
        self.run.ensemble.start(member)
        self.run.ensemble.wait_serving(list(self.run.ensemble.members), timeout=90)

    def _fault_restart(self) -> None:
        self._restart(self.run.random.choice(list(self.run.ensemble.members)))

    def _fault_leader(self) -> None:
        leader = self.run.ensemble.leader()
        if leader is not None:
            self._restart(leader)
            self.run.faults.notes.append(f"leader: member {leader} killed and restarted")

    def _fault_kill(self) -> None:
        live = self.run.live_workers()
        if not live:
            return
        worker = self.run.random.choice(live)
        worker.kill()
        worker.finish()
        self.run.faults.notes.append(f"kill: {worker.who} (SIGKILL)")
        self.run.start_worker(worker.language)
