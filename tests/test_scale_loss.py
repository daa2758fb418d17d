"""A session that ends under 1,000 holds of every recipe costs a constant number of threads:
expired by the server on demand, or lost behind a connection that does not come back within
the session. Every hold is reported lost (``is_held()`` False, ``lost_event`` set, each
``on_lost`` callback run once), a latch leads again in the new session, releasing afterwards
raises nothing, and nothing is left on the server."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    ConnectionPolicy,
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    aio,
)
from pycurator.testing import (
    ClientFactory,
    FaultProxy,
    assert_no_ephemerals,
    eventually,
    expire_kazoo_session,
)
from pycurator.testing._proxy import THREAD_NAME
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, STEADY_RECONNECT
from .test_scale import THREADS_ALLOWED, N, not_held_below, peak_threads, threads

#: The holds, N in all: a mutex in two under the ``session`` connection policy (lost only when
#: the session ends), the rest under ``standard`` (lost once the connection is suspended).
MUTEXES = 300
READS = WRITES = LEASES = SEMAPHORE_MUTEXES = 100
MULTI_LOCKS = 50  # of two mutexes each
AIO_MUTEXES = 150  # held by one task on an event loop of their own
LATCHES = 46
#: ``lead`` runs on a thread per leading selector by contract: these few are counted apart.
SELECTORS = 4
HOLDS = (
    MUTEXES
    + READS
    + WRITES
    + LEASES
    + SEMAPHORE_MUTEXES
    + 2 * MULTI_LOCKS
    + AIO_MUTEXES
    + LATCHES
    + SELECTORS
)
#: Threads a loss of every hold may start, whatever N: the pool's workers, the timer and the
#: deferred-watch worker come and go (each ends when idle, 3 to 5 starts in all here), while a
#: thread per hold, per latch or per callback, however short its life, starts dozens or more.
STARTS_ALLOWED = 2 * THREADS_ALLOWED


class Crowd:
    """HOLDS holds of every recipe on ``client`` under ``path``, and what each has told of its
    loss. Its event loop runs on a thread of its own from construction (count it in)."""

    def __init__(self, client: KazooClient, path: str) -> None:
        self.client = client
        self.path = path
        self.heard: Counter[int] = Counter()  # on_lost calls, by id() of their subject
        self._guard = threading.Lock()
        self.subjects: list[Any] = []  # every object whose on_lost must run once
        self.locks: list[tuple[str, Any]] = []  # the threaded holds: (kind, lock or lease)
        self.events: list[tuple[Any, Any]] = []  # (threaded hold, a lost_event of it)
        self.patient: set[int] = set()  # id() of the holds under the session policy
        self.latches: list[LeaderLatch] = []
        self.selectors: list[LeaderSelector] = []
        self.terms: list[Leadership] = []  # leaderships whose ``lead`` has returned
        self.aio_locks: list[aio.InterProcessMutex] = []
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._loop_thread.start()
        self._aio_holder: Future[list[str]] | None = None
        self._aio_release: asyncio.Event | None = None

    def _heard(self, subject: object, reason: str) -> None:
        with self._guard:
            self.heard[id(subject)] += 1

    def _follow(self, kind: str, hold: Any, events: list[Any]) -> None:
        hold.on_lost(self._heard)
        self.locks.append((kind, hold))
        self.events.extend((hold, event) for event in events)

    def hold(self) -> None:
        client, path = self.client, self.path
        for n in range(MUTEXES):
            policy: ConnectionPolicy = "session" if n % 2 else "standard"
            mutex = InterProcessMutex(client, f"{path}/mutex/{n}", connection_policy=policy)
            assert mutex.acquire(SOON)
            self._follow("mutex", mutex, [mutex.lost_event])
            self.subjects.append(mutex)
            if policy == "session":
                self.patient.add(id(mutex))
        for n in range(READS):
            read = InterProcessReadWriteLock(client, f"{path}/rw/{n}").read_lock()
            assert read.acquire(SOON)
            self._follow("read", read, [read.lost_event])
            self.subjects.append(read)
        for n in range(WRITES):
            write = InterProcessReadWriteLock(client, f"{path}/rw-w/{n}").write_lock()
            assert write.acquire(SOON)
            self._follow("write", write, [write.lost_event])
            self.subjects.append(write)
        for n in range(LEASES):
            lease = InterProcessSemaphoreV2(client, f"{path}/semaphore/{n}", 2).acquire(SOON)
            assert lease is not None
            self._follow("lease", lease, [lease.lost_event])
            self.subjects.append(lease)
        for n in range(SEMAPHORE_MUTEXES):
            semaphore_mutex = InterProcessSemaphoreMutex(client, f"{path}/semaphore-mutex/{n}")
            assert semaphore_mutex.acquire(SOON)
            self._follow("semaphore mutex", semaphore_mutex, [semaphore_mutex.lost_event])
            self.subjects.append(semaphore_mutex)
        for n in range(MULTI_LOCKS):
            multi = InterProcessMultiLock(client, [f"{path}/multi/{n}/a", f"{path}/multi/{n}/b"])
            assert multi.acquire(SOON)
            members: list[Any] = multi.locks  # each reports its own loss
            self._follow("multi-lock", multi, [member.lost_event for member in members])
            self.subjects.extend(members)
        self._hold_aio()
        for n in range(LATCHES):
            latch = LeaderLatch(client, f"{path}/latch/{n}", f"latch-{n}")
            latch.on_lost(self._heard)
            latch.start()
            self.latches.append(latch)
            self.subjects.append(latch)
        assert all(latch.wait(SOON) for latch in self.latches)
        for n in range(SELECTORS):
            selector = LeaderSelector(client, f"{path}/selector/{n}", self._lead, f"selector-{n}")
            selector.start()
            self.selectors.append(selector)
        eventually(lambda: all(s.has_leadership() for s in self.selectors), what="selectors lead")
        assert len(self.subjects) + len(self.selectors) == HOLDS == N
        assert all(hold.is_held() for _, hold in self.locks)  # each watched now

    def _lead(self, leadership: Leadership) -> None:
        leadership.lost_event.wait(4 * SOON)
        with self._guard:
            self.terms.append(leadership)

    def _hold_aio(self) -> None:
        ready = threading.Event()
        holder = self._aio_holder = asyncio.run_coroutine_threadsafe(
            self._aio_holds(ready), self.loop
        )
        eventually(lambda: ready.is_set() or holder.done(), what="the asyncio holds")
        if holder.done():
            holder.result()  # raises what went wrong

    async def _aio_holds(self, ready: threading.Event) -> list[str]:
        """Hold AIO_MUTEXES asyncio mutexes in this one task (their owner) until
        :meth:`release`; then the ones still held after all, each released."""
        release = self._aio_release = asyncio.Event()
        locks = [
            aio.InterProcessMutex(self.client, f"{self.path}/aio/{n}") for n in range(AIO_MUTEXES)
        ]
        for lock in locks:
            assert await lock.acquire(SOON)
            lock.on_lost(self._heard)
        self.aio_locks = locks
        self.subjects.extend(locks)
        ready.set()
        await release.wait()
        still = [lock.path for lock in locks if await lock.is_held()]
        for lock in locks:
            await lock.release()
        return still

    def unheard(self, patient: bool = True) -> list[str]:
        """What has not been reported lost yet: empty once every hold has. Without the
        ``patient`` holds (``session`` policy), still held while the session may live on."""
        skip = set() if patient else self.patient
        with self._guard:
            heard = Counter(self.heard)
            terms = len(self.terms)
        missing = [repr(s) for s in self.subjects if id(s) not in skip and heard[id(s)] == 0]
        missing += [
            f"{kind} {hold!r} held"
            for kind, hold in self.locks
            if id(hold) not in skip and hold.is_held()
        ]
        missing += [
            f"{hold!r}: lost_event"
            for hold, event in self.events
            if id(hold) not in skip and not event.is_set()
        ]
        missing += [
            f"{lock!r}: lost_event" for lock in self.aio_locks if not lock.lost_event.is_set()
        ]
        if terms < SELECTORS:
            missing.append(f"{SELECTORS - terms} selectors still lead")
        return missing

    def patient_lost(self) -> list[str]:
        """The ``session`` policy's holds that count as lost already."""
        with self._guard:
            heard = Counter(self.heard)
        return [
            repr(hold)
            for _, hold in self.locks
            if id(hold) in self.patient
            and (heard[id(hold)] or hold.lost_event.is_set() or not hold.is_held())
        ]

    def heard_twice(self) -> list[str]:
        with self._guard:
            return [f"{s!r}: {self.heard[id(s)]}" for s in self.subjects if self.heard[id(s)] > 1]

    def release(self) -> None:
        """Release every hold (raising whatever a release raises) and close every election."""
        for kind, hold in self.locks:
            if kind == "lease":
                hold.close()
            else:
                hold.release()
        assert self._aio_holder is not None and self._aio_release is not None
        self.loop.call_soon_threadsafe(self._aio_release.set)
        assert self._aio_holder.result(SOON) == [], "asyncio holds not reported lost"
        for latch in self.latches:
            latch.close()
        for selector in self.selectors:
            assert selector.close(SOON)

    def __enter__(self) -> Crowd:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._aio_release is not None:
            self.loop.call_soon_threadsafe(self._aio_release.set)
        if self._aio_holder is not None:
            self._aio_holder.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(SOON)
        if not self._loop_thread.is_alive():
            self.loop.close()


def settle(problems: Callable[[], list[str]], what: str) -> None:
    """Wait until ``problems()`` is empty; fail naming the first few after SOON seconds."""
    left: list[str] = []

    def none_left() -> bool:
        left[:] = problems()
        return not left

    try:
        eventually(none_left, what=what)
    except AssertionError:
        raise AssertionError(f"{what}: {len(left)} left, e.g. {left[:5]}") from None


@pytest.fixture
def thread_starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the threads started from now (the fault proxy's left out): ``[count]``."""
    started = [0]
    guard = threading.Lock()
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name != THREAD_NAME:
            with guard:
                started[0] += 1
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield started


def lost_and_released(crowd: Crowd, observer: KazooClient, hosts: str, session: int) -> None:
    """Once the session has ended: every hold reported lost once, the latches leading again
    in the new session, everything released and closed, and nothing left on the server."""
    settle(crowd.unheard, "every hold reported lost")
    eventually(lambda: crowd.client.connected, what="reconnected")
    assert crowd.client.client_id[0] != session
    eventually(lambda: all(latch.has_leadership() for latch in crowd.latches), what="re-elected")
    assert crowd.heard_twice() == []
    assert all(term.reason for term in crowd.terms)  # each term ended for a reason
    crowd.release()
    eventually(lambda: not_held_below(observer, crowd.path), what="nothing left")
    assert_no_ephemerals(hosts, crowd.path, SOON)


def test_a_session_expiry_under_1000_holds_of_every_recipe_costs_a_constant_number_of_threads(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    thread_starts: list[int],
) -> None:
    """The connection drops first (the ``standard`` policy's holds count as lost), then the
    session ends (the ``session`` policy's too)."""
    client, observer = zk_client_factory(connection_retry=STEADY_RECONNECT), zk_client_factory()
    with Crowd(client, zk_path) as crowd:
        before = threads()
        crowd.hold()
        session = client.client_id[0]
        started = thread_starts[0]
        with peak_threads() as peak:
            expire_kazoo_session(client)
            lost_and_released(crowd, observer, zk_server.hosts, session)
        starts = thread_starts[0] - started
    assert peak[0] - before - SELECTORS <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
    assert starts <= STARTS_ALLOWED, f"{starts} threads started"
    eventually(lambda: threads() - before <= THREADS_ALLOWED, what="the lead threads ended")


def test_a_connection_lost_past_the_session_under_1000_holds_costs_a_constant_number_of_threads(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    thread_starts: list[int],
) -> None:
    """The server expires the session while the connection is blackholed; the client takes it
    as expired once the session timeout has passed since the suspension, before the connection
    is back (Curator's ``ConnectionStateManager``), with one timer whatever the number of holds."""
    observer = zk_client_factory()
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = zk_client_factory(
            hosts=proxy.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT
        )
        with Crowd(client, zk_path) as crowd:
            before = threads()
            crowd.hold()
            session = client.client_id[0]
            started = thread_starts[0]
            with peak_threads() as peak:
                proxy.blackhole()
                proxy.drop_connections()
                eventually(lambda: not client.connected, what="disconnected")
                settle(lambda: crowd.unheard(patient=False), "the standard policy's losses")
                assert crowd.patient_lost() == []  # kept through the suspension, for now
                # the session timeout passes while suspended: the session policy's holds too
                settle(crowd.unheard, "every hold reported lost while still disconnected")
                assert not client.connected
                # the server ends the session, and its ephemeral nodes with it
                eventually(lambda: not_held_below(observer, zk_path), what="session ended")
                proxy.heal()
                lost_and_released(crowd, observer, zk_server.hosts, session)
            starts = thread_starts[0] - started
    assert peak[0] - before - SELECTORS <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
    assert starts <= STARTS_ALLOWED, f"{starts} threads started"
    eventually(lambda: threads() - before <= THREADS_ALLOWED, what="the lead threads ended")
