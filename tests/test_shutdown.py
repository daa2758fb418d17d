"""Leaving an election and stopping a client: no two leaders, no wait left hanging.

- ``close()`` then ``client.stop()`` (the usual shutdown) never lets the next participant lead
  while the closed leader's ``lead`` still runs, threaded or asyncio;
- ``close()`` from inside ``lead`` returns, and ``close(timeout)`` says when it gave up;
- every wait of every recipe ends with ``ConnectionClosedError`` once its client is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
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
    aio,
)
from pycurator.testing import ClientFactory

from .aio_support import run
from .support import SOON, Worker, children, eventually

orphan_free = pytest.mark.usefixtures("zk_no_orphans")


class SlowToLeave:
    """A ``lead`` that, once its term ends, takes ``linger`` seconds to clean up before it
    returns, and notes when it returned."""

    def __init__(self, linger: float) -> None:
        self.linger = linger
        self.started = threading.Event()
        self.returned_at: float | None = None

    def __call__(self, leadership: Leadership) -> None:
        self.started.set()
        leadership.lost_event.wait()
        time.sleep(self.linger)  # the work a leader finishes before it lets go
        self.returned_at = time.monotonic()


class Follower:
    """A ``lead`` that notes when it began and leads until its term ends."""

    def __init__(self) -> None:
        self.led = threading.Event()
        self.led_at: float | None = None

    def __call__(self, leadership: Leadership) -> None:
        self.led_at = time.monotonic()
        self.led.set()
        leadership.lost_event.wait()


@pytest.fixture
def selectors() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for selector in made:
        with contextlib.suppress(RuntimeError):  # closed by the test
            selector.close(SOON)


@orphan_free
def test_close_then_stop_lets_the_next_leader_lead_only_after_lead_returned(
    zk_client_factory: ClientFactory, zk_path: str, selectors: list[Any]
) -> None:
    path = f"{zk_path}/leader"
    leaving_client = zk_client_factory()
    leaving, following = SlowToLeave(1.0), Follower()
    first = LeaderSelector(leaving_client, path, leaving, "first")
    second = LeaderSelector(zk_client_factory(), path, following, "second")
    selectors.append(second)
    first.start()
    assert leaving.started.wait(SOON)
    second.start()
    eventually(lambda: len(children(leaving_client, path)) == 2, what="the second queued")
    assert first.close() is True
    assert leaving.returned_at is not None  # close waited for lead
    leaving_client.stop()
    assert following.led.wait(SOON)
    assert following.led_at is not None and following.led_at >= leaving.returned_at


@orphan_free
def test_close_from_inside_lead_returns_and_the_node_goes_once_lead_returns(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/leader"
    outcome: list[bool] = []
    returned = threading.Event()

    def lead(leadership: Leadership) -> None:
        outcome.append(selector.close())
        assert leadership.lost_event.is_set()
        assert len(children(zk, path)) == 1  # still ours while lead runs
        returned.set()

    selector = LeaderSelector(zk, path, lead, "a")
    selector.start()
    assert returned.wait(SOON)
    assert outcome == [False]
    eventually(lambda: children(zk, path) == [], what="the node gone once lead returned")


@orphan_free
def test_close_with_a_timeout_gives_up_waiting_for_a_lead_that_does_not_return(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/leader"
    started, release = threading.Event(), threading.Event()

    def stubborn(leadership: Leadership) -> None:
        started.set()
        release.wait(SOON)  # ignores lost_event

    selector = LeaderSelector(zk, path, stubborn, "a")
    selector.start()
    assert started.wait(SOON)
    began = time.monotonic()
    assert selector.close(timeout=0.5) is False
    assert 0.4 < time.monotonic() - began < SOON
    assert len(children(zk, path)) == 1  # lead still runs: the node stays
    release.set()
    eventually(lambda: children(zk, path) == [], what="the node gone once lead returned")


@orphan_free
def test_await_close_returns_after_lead_ended_and_its_node_is_deleted(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/leader"
    leaving_client, following_client = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        started, followed = asyncio.Event(), asyncio.Event()
        finished: list[float] = []
        led: list[float] = []

        async def slow_to_leave(leadership: aio.Leadership) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:  # cancelled: a last piece of work before letting go
                await asyncio.shield(asyncio.sleep(0.5))
                finished.append(time.monotonic())

        async def follow(leadership: aio.Leadership) -> None:
            led.append(time.monotonic())
            followed.set()
            await leadership.lost_event.wait()

        first = aio.LeaderSelector(leaving_client, path, slow_to_leave, "first")
        second = aio.LeaderSelector(following_client, path, follow, "second")
        await first.start()
        await asyncio.wait_for(started.wait(), SOON)
        await second.start()
        while len(children(leaving_client, path)) < 2:
            await asyncio.sleep(0.02)
        assert await first.close() is True
        assert finished, "close() returned before lead ended"
        assert len(children(following_client, path)) == 1  # our node is gone already
        leaving_client.stop()
        await asyncio.wait_for(followed.wait(), SOON)
        assert led[0] >= finished[0]
        assert await second.close() is True

    run(main())


@orphan_free
def test_await_close_from_inside_lead_returns_false_and_lead_is_cancelled(
    zk: KazooClient, zk_path: str
) -> None:
    path = f"{zk_path}/leader"

    async def main() -> None:
        outcome: list[object] = []
        done = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            try:
                outcome.append(await selector.close())
                await asyncio.sleep(SOON)  # cancelled here
                outcome.append("not cancelled")
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise
            finally:
                done.set()

        selector = aio.LeaderSelector(zk, path, lead, "a")
        await selector.start()
        await asyncio.wait_for(done.wait(), SOON)
        assert outcome == [False, "cancelled"]
        while children(zk, path):
            await asyncio.sleep(0.02)

    run(main())


def _wait_for(
    kind: str, waiting: KazooClient, holding: KazooClient, path: str
) -> Callable[[], Any]:
    """Make ``holding`` hold (or lead) on ``path`` and return a call with which ``waiting``
    waits behind it, without timeout."""
    if kind == "mutex":
        assert InterProcessMutex(holding, path).acquire(SOON)
        return InterProcessMutex(waiting, path).acquire
    if kind in ("read lock", "write lock"):
        assert InterProcessReadWriteLock(holding, path).write_lock().acquire(SOON)
        rw = InterProcessReadWriteLock(waiting, path)
        return (rw.read_lock() if kind == "read lock" else rw.write_lock()).acquire
    if kind == "semaphore":
        assert InterProcessSemaphoreV2(holding, path, 1).acquire(SOON) is not None
        return InterProcessSemaphoreV2(waiting, path, 1).acquire
    if kind == "semaphore mutex":
        assert InterProcessSemaphoreMutex(holding, path).acquire(SOON)
        return InterProcessSemaphoreMutex(waiting, path).acquire
    if kind == "multi-lock":
        assert InterProcessMutex(holding, f"{path}/b").acquire(SOON)
        return InterProcessMultiLock(waiting, [f"{path}/a", f"{path}/b"]).acquire
    assert kind == "latch"
    leader = LeaderLatch(holding, path, "leader")
    leader.start()
    assert leader.wait(SOON)
    latch = LeaderLatch(waiting, path, "waiter")
    latch.start()
    return latch.wait


KINDS = ["mutex", "read lock", "write lock", "semaphore", "semaphore mutex", "multi-lock", "latch"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_wait_ends_with_connection_closed_when_its_client_is_stopped(
    zk_client_factory: ClientFactory, zk_path: str, kind: str
) -> None:
    waiting, holding = zk_client_factory(), zk_client_factory()
    worker = Worker(_wait_for(kind, waiting, holding, zk_path))
    worker.start()
    eventually(lambda: _queued(holding, zk_path) >= 2, what="the waiter queued")
    waiting.stop()
    with pytest.raises(ConnectionClosedError):
        worker.outcome(SOON)


def test_a_latch_wait_after_the_client_stopped_raises_connection_closed(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    latch = LeaderLatch(client, zk_path, "a")
    latch.start()
    assert latch.wait(SOON)
    client.stop()
    with pytest.raises(ConnectionClosedError):
        latch.wait()
    with pytest.raises(ConnectionClosedError):
        InterProcessMutex(client, zk_path).acquire()


def test_an_asyncio_latch_wait_after_the_client_stopped_raises_connection_closed(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()

    async def main() -> None:
        latch = aio.LeaderLatch(client, zk_path, "a")
        await latch.start()
        assert await latch.wait(SOON)
        client.stop()
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(latch.wait(), SOON)
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(aio.InterProcessMutex(client, zk_path).acquire(), SOON)

    run(main())


@pytest.mark.parametrize("kind", ["mutex", "read lock", "semaphore", "semaphore mutex", "latch"])
def test_an_asyncio_wait_ends_with_connection_closed_when_its_client_is_stopped(
    zk_client_factory: ClientFactory, zk_path: str, kind: str
) -> None:
    waiting, holding = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        if kind == "latch":
            leader = LeaderLatch(holding, zk_path, "leader")
            leader.start()
            assert leader.wait(SOON)
            latch = aio.LeaderLatch(waiting, zk_path, "waiter")
            await latch.start()
            wait: Any = latch.wait()
        else:
            _wait_for(kind, waiting, holding, zk_path)  # holds on the path
            makers: dict[str, Callable[[], Any]] = {
                "mutex": lambda: aio.InterProcessMutex(waiting, zk_path),
                "read lock": lambda: aio.InterProcessReadWriteLock(waiting, zk_path).read_lock(),
                "semaphore": lambda: aio.InterProcessSemaphoreV2(waiting, zk_path, 1),
                "semaphore mutex": lambda: aio.InterProcessSemaphoreMutex(waiting, zk_path),
            }
            recipe = makers[kind]()
            wait = recipe.acquire()
        task = asyncio.ensure_future(wait)
        while _queued(holding, zk_path) < 2:
            await asyncio.sleep(0.02)
        await asyncio.get_running_loop().run_in_executor(None, waiting.stop)
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(task, SOON)

    run(main())


def _queued(client: KazooClient, path: str) -> int:
    """How many nodes queue on ``path`` (or on a semaphore's or multi-lock's inner paths)."""
    names = children(client, path)
    inner = [f"{path}/{n}" for n in names if not n.startswith("_c_")]
    return sum(1 for n in names if n.startswith("_c_")) + sum(
        len(children(client, p)) for p in inner
    )
