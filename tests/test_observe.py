"""Every lock tells its story: the events lock listeners hear, and the log records of the
``pycurator`` logger, for each recipe, threaded and asyncio, on a real server."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    LockEvent,
    LockEventKind,
    add_lock_listener,
    aio,
    remove_lock_listener,
)
from pycurator._protocol.events import LOCK_LISTENERS
from pycurator._recipes import reports as observe
from pycurator.testing import ClientFactory, expire_kazoo_session

from .aio_support import run
from .support import SOON, Worker, eventually

WAITING, ACQUIRED, RELEASED = LockEventKind.WAITING, LockEventKind.ACQUIRED, LockEventKind.RELEASED
LOST, TIMED_OUT = LockEventKind.LOST, LockEventKind.TIMED_OUT
CANCELLED = LockEventKind.CANCELLED


class Heard:
    """A lock listener that keeps the events of recipes under one path."""

    def __init__(self, under: str) -> None:
        self.under = under
        self._events: list[LockEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: LockEvent) -> None:
        if event.path.startswith(self.under):
            with self._lock:
                self._events.append(event)

    def events(self, path: str | None = None) -> list[LockEvent]:
        with self._lock:
            return [e for e in self._events if path is None or e.path == path]

    def kinds(self, path: str | None = None) -> list[LockEventKind]:
        return [event.kind for event in self.events(path)]

    def wait_for(self, kinds: list[LockEventKind], path: str | None = None) -> None:
        eventually(lambda: self.kinds(path) == kinds, what=f"{kinds}, heard {self.kinds(path)}")


@pytest.fixture
def heard(zk_path: str) -> Iterator[Heard]:
    listener = Heard(zk_path)
    add_lock_listener(listener)
    try:
        yield listener
    finally:
        remove_lock_listener(listener)


def records(caplog: pytest.LogCaptureFixture, under: str) -> list[logging.LogRecord]:
    """The ``pycurator`` records about recipes under ``under``."""
    return [
        r
        for r in caplog.records
        if r.name == "pycurator" and str(getattr(r, "path", "")).startswith(under)
    ]


THREADED: dict[str, Callable[[KazooClient, str], Any]] = {
    "mutex": InterProcessMutex,
    "read": lambda client, path: InterProcessReadWriteLock(client, path).read_lock(),
    "write": lambda client, path: InterProcessReadWriteLock(client, path).write_lock(),
    "semaphore-mutex": InterProcessSemaphoreMutex,
}


@pytest.mark.parametrize("recipe", list(THREADED))
def test_an_uncontended_cycle_tells_waiting_acquired_and_released(
    zk: KazooClient, zk_path: str, heard: Heard, recipe: str
) -> None:
    lock = THREADED[recipe](zk, zk_path)
    with lock:
        heard.wait_for([WAITING, ACQUIRED])
    heard.wait_for([WAITING, ACQUIRED, RELEASED])
    waiting, acquired, released = heard.events()
    assert {e.recipe for e in heard.events()} == {recipe}
    assert {e.path for e in heard.events()} == {zk_path}
    assert waiting.node is None and acquired.node == released.node
    assert acquired.node is not None and acquired.node.startswith(zk_path + "/")
    assert acquired.waited is not None and 0 <= acquired.waited < SOON
    assert released.held is not None and 0 <= released.held < SOON


def test_a_re_entered_lock_tells_one_wait_and_one_hold(
    zk: KazooClient, zk_path: str, heard: Heard
) -> None:
    lock = InterProcessMutex(zk, zk_path)
    with lock, lock, lock:
        pass
    heard.wait_for([WAITING, ACQUIRED, RELEASED])


def test_a_timed_out_acquire_tells_how_long_it_waited(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    with holder:
        assert not InterProcessMutex(zk_client_factory(), zk_path).acquire(0.3)
    heard.wait_for([WAITING, ACQUIRED, WAITING, TIMED_OUT, RELEASED])
    timed_out = heard.events()[3]
    assert timed_out.node is None and timed_out.waited is not None and timed_out.waited >= 0.3


def test_a_wait_ended_by_an_error_tells_failed_with_the_error(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    waiter_client = zk_client_factory()
    with holder:
        waiting = Worker(lambda: InterProcessMutex(waiter_client, zk_path).acquire())
        waiting.start()
        heard.wait_for([WAITING, ACQUIRED, WAITING])
        waiter_client.stop()
        with pytest.raises(ConnectionClosedError):
            waiting.outcome()
    failed = heard.events()[3]
    assert failed.kind is LockEventKind.FAILED
    assert failed.reason.startswith("ConnectionClosedError")


def test_each_lease_is_a_wait_and_a_hold_and_leases_given_back_are_released(
    zk: KazooClient, zk_path: str, heard: Heard
) -> None:
    semaphore = InterProcessSemaphoreV2(zk, zk_path, 2)
    kept = semaphore.acquire(SOON)
    assert kept is not None
    assert semaphore.acquire_many(2, 0.3) is None  # one lease taken, the second times out
    heard.wait_for([WAITING, ACQUIRED, WAITING, ACQUIRED, WAITING, TIMED_OUT, RELEASED])
    events = heard.events()
    assert {e.recipe for e in events} == {"semaphore"}
    assert events[6].node == events[3].node and events[6].reason.startswith("returned")
    kept.close()
    assert heard.events()[-1].node == kept.path and heard.kinds()[-1] is RELEASED


def test_a_multi_locks_members_tell_their_own_stories(
    zk: KazooClient, zk_path: str, heard: Heard
) -> None:
    paths = [f"{zk_path}/one", f"{zk_path}/two"]
    with InterProcessMultiLock(zk, paths):
        pass
    for path in paths:
        heard.wait_for([WAITING, ACQUIRED, RELEASED], path)
        assert {e.recipe for e in heard.events(path)} == {"mutex"}


def test_an_asyncio_lock_tells_the_same_story_and_a_cancelled_wait(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard
) -> None:
    holder = InterProcessReadWriteLock(zk_client_factory(), zk_path).write_lock()
    lock = aio.InterProcessReadWriteLock(zk_client_factory(), zk_path).write_lock()

    async def cycle() -> None:
        async with lock:
            pass

    async def cancelled() -> None:
        task = asyncio.create_task(lock.acquire())
        while heard.kinds()[-1:] != [WAITING]:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cycle())
    heard.wait_for([WAITING, ACQUIRED, RELEASED])
    with holder:
        run(cancelled())
    heard.wait_for([WAITING, ACQUIRED, RELEASED, WAITING, ACQUIRED, WAITING, CANCELLED, RELEASED])
    assert {e.recipe for e in heard.events()} == {"write"}
    assert heard.events()[6].reason == "CancelledError"


def test_a_lost_lock_tells_each_loss_and_logs_them_as_warnings(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard, caplog: pytest.LogCaptureFixture
) -> None:
    client = zk_client_factory()
    lock = InterProcessMutex(client, zk_path)
    with caplog.at_level(logging.DEBUG, logger="pycurator"):
        assert lock.acquire(SOON)
        node = lock.lock_path
        expire_kazoo_session(client)  # the connection drops first, then the session ends
        heard.wait_for([WAITING, ACQUIRED, LOST, LOST])
        lock.release()
        heard.wait_for([WAITING, ACQUIRED, LOST, LOST, RELEASED])
    losses = heard.events()[2:4]
    assert [e.reason for e in losses] == ["connection suspended", "session expired"]
    assert all(e.node == node and e.held is not None and e.held >= 0 for e in losses)
    logged = records(caplog, zk_path)
    assert [r.event for r in logged] == ["waiting", "acquired", "lost", "lost", "released"]  # type: ignore[attr-defined]
    assert [r.levelno for r in logged] == [logging.DEBUG] * 2 + [logging.WARNING] * 2 + [
        logging.DEBUG  # the end of a hold already lost
    ]
    warning = logged[3]
    assert warning.getMessage().startswith(f"lock {node} lost: session expired (held ")
    assert (warning.path, warning.node, warning.recipe) == (zk_path, node, "mutex")  # type: ignore[attr-defined]


def take_and_release(lock: InterProcessMutex) -> bool:
    """Acquire ``lock`` and release it at once (a short hold)."""
    if not lock.acquire(SOON):
        return False
    lock.release()
    return True


def test_a_lock_acquired_after_a_long_wait_and_held_long_logs_at_info(
    zk_client_factory: ClientFactory,
    zk_path: str,
    heard: Heard,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(observe, "SLOW_WAIT", 0.2)
    monkeypatch.setattr(observe, "LONG_HOLD", 0.2)
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    waiter = InterProcessMutex(zk_client_factory(), zk_path)
    with caplog.at_level(logging.INFO, logger="pycurator"):
        with holder:
            waiting = Worker(lambda: take_and_release(waiter))
            waiting.start()
            heard.wait_for([WAITING, ACQUIRED, WAITING])
            threading.Event().wait(0.3)  # held and waited for longer than both thresholds
        assert waiting.outcome() is True
        heard.wait_for([WAITING, ACQUIRED, WAITING, RELEASED, ACQUIRED, RELEASED])
    logged = [(r.event, r.node) for r in records(caplog, zk_path)]  # type: ignore[attr-defined]
    acquired = heard.events()[4]
    assert logged == [("released", heard.events()[1].node), ("acquired", acquired.node)]
    assert acquired.waited is not None and acquired.waited >= 0.3


def test_a_latch_tells_each_term_and_each_turn_in_the_queue(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard, caplog: pytest.LogCaptureFixture
) -> None:
    client = zk_client_factory()
    latch = LeaderLatch(client, zk_path, "a")
    with caplog.at_level(logging.INFO, logger="pycurator"):
        latch.start()
        assert latch.wait(SOON)
        first = latch.our_path
        expire_kazoo_session(client)
        # the term ends on the suspension, and the latch queues again in its new session
        eventually(lambda: latch.has_leadership() and latch.our_path != first, what="re-elected")
        second = latch.our_path
        latch.close()
        eventually(lambda: heard.kinds().count(RELEASED) == 2, what="both terms ended")
    events = heard.events()
    assert {e.recipe for e in events} == {"latch"}
    assert [e.kind for e in events if e.kind is not LOST] == [
        *(WAITING, ACQUIRED, RELEASED),
        *(WAITING, ACQUIRED, RELEASED),
    ]
    losses = [e for e in events if e.kind is LOST]
    assert losses[0].reason == "connection suspended"  # the expiry may come after the end
    assert {e.node for e in losses} == {first}
    ended, closed = [e for e in events if e.kind is RELEASED]
    assert (ended.node, ended.reason) == (first, "connection suspended")
    assert (closed.node, closed.reason) == (second, "latch closed")
    logged = [(r.levelno, r.getMessage().split(" ", 2)[2]) for r in records(caplog, zk_path)]
    assert [level for level, _ in logged] == [
        logging.INFO,  # gained
        *[logging.WARNING] * len(losses),  # the end of a lost term is at DEBUG
        logging.INFO,  # gained again
        logging.INFO,  # ended: latch closed
    ]
    assert logged[0][1].startswith("gained after") and logged[-1][1].endswith("held: latch closed")


class Lead:
    """A selector's ``lead``: says that it leads, and leads until its term ends."""

    def __init__(self) -> None:
        self.leading = threading.Event()

    def __call__(self, leadership: Leadership) -> None:
        self.leading.set()
        leadership.lost_event.wait(SOON)


def test_a_selector_tells_its_term_and_a_queued_turn_closed_as_cancelled(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard
) -> None:
    lead = Lead()
    first = LeaderSelector(zk_client_factory(), zk_path, lead, "first")
    second = LeaderSelector(zk_client_factory(), zk_path, lead, "second")
    first.start()
    assert lead.leading.wait(SOON)
    second.start()
    eventually(lambda: len(first.participants()) == 2, what="the second queued")
    assert second.close(SOON)
    assert first.close(SOON)
    heard.wait_for([WAITING, ACQUIRED, WAITING, CANCELLED, RELEASED])
    events = heard.events()
    assert {e.recipe for e in events} == {"selector"}
    assert events[3].reason == "selector closed" and events[3].node is None
    assert events[4].reason == "leadership given up" and events[4].node == events[1].node


def test_a_queued_selector_that_leaves_on_a_suspension_tells_a_failed_wait_at_info(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard, caplog: pytest.LogCaptureFixture
) -> None:
    lead = Lead()
    leader = LeaderSelector(zk_client_factory(), zk_path, lead, "leader")
    queued_client = zk_client_factory()
    queued = LeaderSelector(queued_client, zk_path, lead, "queued")
    leader.start()
    assert lead.leading.wait(SOON)
    with caplog.at_level(logging.INFO, logger="pycurator"):
        queued.start()
        eventually(lambda: len(leader.participants()) == 2, what="queued")
        expire_kazoo_session(queued_client)
        heard.wait_for([WAITING, ACQUIRED, WAITING, LockEventKind.FAILED])
    failed = heard.events()[3]
    assert failed.reason == "connection suspended" and failed.waited is not None
    (record,) = [r for r in records(caplog, zk_path) if r.event == "failed"]  # type: ignore[attr-defined]
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        f"leadership {zk_path}: wait failed after {failed.waited * 1000:.1f} ms:"
        " connection suspended"
    )
    assert queued.close(SOON) and leader.close(SOON)


def test_an_asyncio_latch_tells_the_same_story(zk: KazooClient, zk_path: str, heard: Heard) -> None:
    async def main() -> None:
        async with aio.LeaderLatch(zk, zk_path, "a") as latch:
            assert await latch.wait(SOON)

    run(main())
    heard.wait_for([WAITING, ACQUIRED, RELEASED])
    assert heard.events()[-1].reason == "latch closed"


def test_an_asyncio_selector_tells_its_term_and_a_queued_turn_closed_as_cancelled(
    zk_client_factory: ClientFactory, zk_path: str, heard: Heard
) -> None:
    async def main() -> None:
        leading = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            leading.set()
            await leadership.lost_event.wait()

        first = aio.LeaderSelector(zk_client_factory(), zk_path, lead, "first")
        second = aio.LeaderSelector(zk_client_factory(), zk_path, lead, "second")
        await first.start()
        await asyncio.wait_for(leading.wait(), SOON)
        await second.start()
        while len(await first.participants()) < 2:
            await asyncio.sleep(0.02)
        assert await second.close(SOON)
        assert await first.close(SOON)

    run(main())
    heard.wait_for([WAITING, ACQUIRED, WAITING, CANCELLED, RELEASED])
    events = heard.events()
    assert {e.recipe for e in events} == {"selector"}
    assert events[3].reason == "selector closed" and events[3].node is None
    assert events[4].node == events[1].node


def test_an_asyncio_semaphore_mutex_and_multi_lock_tell_the_same_stories(
    zk: KazooClient, zk_path: str, heard: Heard
) -> None:
    paths = [f"{zk_path}/one", f"{zk_path}/two"]

    async def main() -> None:
        async with aio.InterProcessSemaphoreMutex(zk, f"{zk_path}/semaphore-mutex"):
            pass
        async with aio.InterProcessMultiLock(zk, paths):
            pass

    run(main())
    heard.wait_for([WAITING, ACQUIRED, RELEASED], f"{zk_path}/semaphore-mutex")
    assert {e.recipe for e in heard.events(f"{zk_path}/semaphore-mutex")} == {"semaphore-mutex"}
    for path in paths:
        heard.wait_for([WAITING, ACQUIRED, RELEASED], path)
        assert {e.recipe for e in heard.events(path)} == {"mutex"}


def test_a_failing_listener_is_logged_and_the_lock_goes_on(
    zk: KazooClient, zk_path: str, heard: Heard, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(event: LockEvent) -> None:
        raise RuntimeError("listener bug")

    add_lock_listener(failing)
    try:
        with caplog.at_level(logging.ERROR, logger="pycurator"), InterProcessMutex(zk, zk_path):
            pass
    finally:
        remove_lock_listener(failing)
    heard.wait_for([WAITING, ACQUIRED, RELEASED])  # the listener after the failing one heard
    failures = [r for r in caplog.records if "a lock listener failed" in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info is not None and r.exc_info[0] is RuntimeError for r in failures)


def test_a_removed_listener_hears_nothing_more_and_a_listener_must_be_callable(
    zk: KazooClient, zk_path: str
) -> None:
    mine = Heard(zk_path)
    add_lock_listener(mine)
    with InterProcessMutex(zk, f"{zk_path}/before"):
        pass
    remove_lock_listener(mine)
    remove_lock_listener(mine)  # not there any more: nothing happens
    with InterProcessMutex(zk, f"{zk_path}/after"):
        pass
    assert {e.path for e in mine.events()} == {f"{zk_path}/before"}
    with pytest.raises(TypeError, match="lock listener"):
        add_lock_listener("print")  # type: ignore[arg-type]


def test_nobody_listening_and_a_quiet_logger_build_no_event_and_log_nothing(
    zk: KazooClient,
    zk_path: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recipes still report (each wait and hold is told to its reporter), but with no
    listener and the logger above INFO, no report makes a ``LockEvent`` or a record."""
    # whatever another test left registered
    monkeypatch.setattr(LOCK_LISTENERS, "listeners", ())
    built: list[tuple[Any, ...]] = []
    told: list[LockEvent] = []
    real_event, real_tell = LockEvent, observe._tell

    def event(*args: Any, **kwargs: Any) -> LockEvent:
        built.append(args)
        return real_event(*args, **kwargs)

    def tell(event: LockEvent, level: int) -> None:
        told.append(event)
        real_tell(event, level)

    monkeypatch.setattr(observe, "LockEvent", event)
    monkeypatch.setattr(observe, "_tell", tell)
    reported: list[tuple[str, str]] = []  # (what, recipe) of each report under zk_path

    def spy(owner: type, name: str, reporter: Callable[[Any], observe.Reporter]) -> None:
        real = getattr(owner, name)

        def spied(self: Any, *args: Any, **kwargs: Any) -> Any:
            if reporter(self).path.startswith(zk_path):
                reported.append((name, reporter(self).recipe))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, spied)

    for name in ("waiting", "acquired"):
        spy(observe.Reporter, name, lambda reporter: reporter)
    spy(observe.HoldReport, "released", lambda hold: hold.reporter)

    async def aio_cycle() -> None:
        async with aio.InterProcessMutex(zk, f"{zk_path}/aio"):
            pass

    with caplog.at_level(logging.WARNING, logger="pycurator"):
        with InterProcessMutex(zk, f"{zk_path}/mutex"):
            pass
        run(aio_cycle())
        lease = InterProcessSemaphoreV2(zk, f"{zk_path}/semaphore", 1).acquire(SOON)
        assert lease is not None
        lease.close()
        latch = LeaderLatch(zk, f"{zk_path}/latch", "a")
        latch.start()
        assert latch.wait(SOON)
        latch.close()
        recipes = ["latch", "mutex", "mutex", "semaphore"]

        def told_of(what: str) -> list[str]:
            return sorted(recipe for said, recipe in reported if said == what)

        # the term's end is reported on kazoo's thread
        eventually(lambda: told_of("released") == recipes, what=f"each hold's end: {reported}")
    assert told_of("waiting") == told_of("acquired") == recipes
    assert (built, told) == ([], [])
    assert [r for r in caplog.records if r.name == "pycurator"] == []
