"""Every recipe under each of kazoo's handlers (threading, gevent and eventlet, unpatched) and
under pycurator's opt-in ``FastThreadingHandler``.

Nothing is monkey-patched: the units of concurrency (threads, greenlets, green threads) are
made with the handler's own ``spawn`` and waited on with its own events, as an application
under that handler would. Under gevent and eventlet every unit shares one OS thread, so a lock
that keyed ownership by OS thread would let two of them in at once.
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.serialization import Exists

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LockNotOwnedError,
    LockReleaseError,
)
from pycurator._client import kazoo_internals
from pycurator._client.concurrency import is_green
from pycurator._recipes import hold_monitor
from pycurator.testing import ClientFactory, expire_kazoo_session

from .support import SOON
from .test_performance import watched_paths

HANDLERS = ("threading", "fast", "gevent", "eventlet")


def make_handler(name: str) -> Any:
    """A fresh kazoo handler of the given kind."""
    if name == "gevent":
        from kazoo.handlers.gevent import SequentialGeventHandler

        return SequentialGeventHandler()
    if name == "eventlet":
        with warnings.catch_warnings():  # eventlet warns on import that it is deprecated
            warnings.simplefilter("ignore")
            from kazoo.handlers.eventlet import SequentialEventletHandler
        return SequentialEventletHandler()
    if name == "fast":
        from pycurator.handlers import FastThreadingHandler

        return FastThreadingHandler()
    from kazoo.handlers.threading import SequentialThreadingHandler

    return SequentialThreadingHandler()


class Unit:
    """``target`` run in a unit the handler spawns (thread, greenlet or green thread), with its
    result or error kept for the test."""

    def __init__(self, handler: Any, target: Callable[[], Any]) -> None:
        self.handler = handler
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = handler.event_object()
        self._target = target
        handler.spawn(self._run)

    def _run(self) -> None:
        try:
            self.result = self._target()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def outcome(self, timeout: float = SOON) -> Any:
        """The unit's result (its exception re-raised) once it has ended."""
        assert self.done.wait(timeout), f"unit still running after {timeout}s"
        if self.error is not None:
            raise self.error
        return self.result


class Env:
    """A client under one handler, and ways to run and wait within that handler."""

    def __init__(self, name: str, factory: ClientFactory, hosts: str) -> None:
        self.name = name
        self.factory = factory
        self.hosts = hosts
        self.client = self.new_client()
        self.handler = self.client.handler

    def new_client(self) -> KazooClient:
        return self.factory(handler=make_handler(self.name))

    def spawn(self, target: Callable[[], Any]) -> Unit:
        return Unit(self.handler, target)

    def event(self) -> Any:
        return self.handler.event_object()

    def eventually(self, predicate: Callable[[], bool], what: str) -> None:
        """Poll ``predicate`` while letting the handler's other units run."""
        end = time.monotonic() + SOON
        while not predicate():
            assert time.monotonic() < end, f"not true within {SOON}s: {what}"
            self.handler.sleep_func(0.02)


@pytest.fixture(params=HANDLERS)
def env(request: pytest.FixtureRequest, zk_client_factory: ClientFactory, zk_server: Any) -> Env:
    return Env(request.param, zk_client_factory, zk_server.hosts)


def hold_until(env: Env, lock: Any, go: Any) -> tuple[Unit, Any]:
    """A unit that acquires ``lock``, reports it held, and releases once ``go`` is set."""
    held = env.event()

    def run() -> None:
        assert lock.acquire(SOON)
        held.set()
        assert go.wait(SOON)
        lock.release()

    unit = env.spawn(run)
    assert held.wait(SOON), "the holder did not get the lock"
    return unit, held


def test_units_sharing_one_mutex_exclude_each_other(env: Env, zk_path: str) -> None:
    lock = InterProcessMutex(env.client, zk_path)
    inside: list[int] = []
    most = [0]

    def contend(me: int) -> None:
        for _ in range(4):
            assert lock.acquire(SOON)
            inside.append(me)
            most[0] = max(most[0], len(inside))
            env.handler.sleep_func(0.01)  # lets the other units run while this one is inside
            inside.remove(me)
            lock.release()
            env.handler.sleep_func(0.005)  # the next holder is in before this one asks again

    units = [env.spawn(functools.partial(contend, me)) for me in range(3)]
    for unit in units:
        unit.outcome()
    assert most[0] == 1
    assert not lock.is_acquired_in_this_process()


def test_a_timed_acquire_by_another_unit_returns_false_on_time(env: Env, zk_path: str) -> None:
    lock = InterProcessMutex(env.client, zk_path)
    go = env.event()
    holder, _ = hold_until(env, lock, go)
    start = time.monotonic()
    assert env.spawn(lambda: lock.acquire(0.3)).outcome() is False
    assert 0.25 <= time.monotonic() - start < 0.3 + 5

    def take_and_release() -> bool:
        taken: bool = lock.acquire(SOON)
        lock.release()
        return taken

    waiter = env.spawn(take_and_release)
    go.set()
    holder.outcome()
    assert waiter.outcome() is True


def test_reentry_counts_per_unit(env: Env, zk_path: str) -> None:
    lock = InterProcessMutex(env.client, zk_path)
    assert lock.acquire(SOON)
    assert lock.acquire(0)  # re-entry: nothing sent, no wait
    lock.release()
    assert lock.is_owned_by_current_thread()
    assert env.spawn(lambda: lock.acquire(0.2)).outcome() is False
    lock.release()
    assert not lock.is_acquired_in_this_process()


def test_release_by_a_unit_that_does_not_hold_it_raises(env: Env, zk_path: str) -> None:
    lock = InterProcessMutex(env.client, zk_path)
    assert lock.acquire(SOON)
    with pytest.raises(LockNotOwnedError):
        env.spawn(lock.release).outcome()
    assert lock.is_owned_by_current_thread()
    lock.release()


def test_read_write_sides_follow_the_unit(env: Env, zk_path: str) -> None:
    rw = InterProcessReadWriteLock(env.client, zk_path)
    read, write = rw.read_lock(), rw.write_lock()
    go = env.event()
    writer, _ = hold_until(env, write, go)
    assert env.spawn(lambda: read.acquire(0.2)).outcome() is False
    assert env.spawn(lambda: write.acquire(0.2)).outcome() is False
    go.set()
    writer.outcome()
    assert write.acquire(SOON)
    assert read.acquire(0)  # the write holder reads at once (downgrade)
    write.release()
    assert env.spawn(lambda: write.acquire(0.2)).outcome() is False
    assert env.spawn(lambda: read.acquire(SOON)).outcome() is True  # readers share
    read.release()


def test_semaphore_leases_are_counted_across_units(env: Env, zk_path: str) -> None:
    semaphore = InterProcessSemaphoreV2(env.client, zk_path, 2)
    first = env.spawn(lambda: semaphore.acquire(SOON)).outcome()
    second = env.spawn(lambda: semaphore.acquire(SOON)).outcome()
    assert first is not None and second is not None
    assert env.spawn(lambda: semaphore.acquire(0.2)).outcome() is None
    waiter = env.spawn(lambda: semaphore.acquire(SOON))
    first.close()  # a lease is not tied to a unit
    third = waiter.outcome()
    assert third is not None
    second.close()
    third.close()


def test_semaphore_mutex_excludes_units_and_any_unit_releases(env: Env, zk_path: str) -> None:
    mutex = InterProcessSemaphoreMutex(env.client, zk_path)
    assert env.spawn(lambda: mutex.acquire(SOON)).outcome() is True
    assert env.spawn(lambda: mutex.acquire(0.2)).outcome() is False
    assert mutex.acquire(0.2) is False  # not re-entrant
    waiter = env.spawn(lambda: mutex.acquire(SOON))
    mutex.release()
    assert waiter.outcome() is True
    env.spawn(mutex.release).outcome()
    with pytest.raises(LockNotOwnedError):
        mutex.release()


def test_multi_lock_excludes_units(env: Env, zk_path: str) -> None:
    multi = InterProcessMultiLock(env.client, [f"{zk_path}/a", f"{zk_path}/b"])
    go = env.event()
    holder, _ = hold_until(env, multi, go)
    assert env.spawn(lambda: multi.acquire(0.2)).outcome() is False
    go.set()
    holder.outcome()
    assert multi.acquire(SOON)
    with pytest.raises(LockReleaseError):
        env.spawn(multi.release).outcome()  # the members are held by this unit, not that one
    multi.release()


def test_a_lost_hold_is_reported_under_the_handler(env: Env, zk_path: str) -> None:
    client = env.new_client()
    lock = InterProcessMutex(client, f"{zk_path}/mutex")
    lease = InterProcessSemaphoreV2(client, f"{zk_path}/semaphore", 1).acquire(SOON)
    assert lease is not None
    heard = {"lock": env.event(), "lease": env.event()}
    lock.on_lost(lambda _lock, _reason: heard["lock"].set())
    lease.on_lost(lambda _lease, _reason: heard["lease"].set())
    assert lock.acquire(SOON)
    expire_kazoo_session(client)
    assert lock.lost_event.wait(SOON) and lease.lost_event.wait(SOON)
    assert heard["lock"].wait(SOON) and heard["lease"].wait(SOON)
    assert not lock.is_held() and not lease.is_held()
    lock.release()
    lease.close()


def test_the_deferred_node_watch_is_set_under_the_handler(
    env: Env, zk_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hold_monitor, "WATCH_DELAY", 0.2)
    callers: list[threading.Thread] = []

    def record_exists(request: Any) -> None:
        if isinstance(request, Exists):
            callers.append(threading.current_thread())

    restore = kazoo_internals.observe_calls(env.client, record_exists)
    try:
        lock = InterProcessMutex(env.client, zk_path)
        with lock:
            env.eventually(lambda: watched_paths(env.client) == [lock.lock_path], "deferred watch")
    finally:
        restore()
    assert callers
    if is_green(env.handler):  # a green handler's client is only driven from its own thread
        assert set(callers) == {threading.current_thread()}
