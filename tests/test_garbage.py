"""What a recipe's life leaves to the garbage collector: nothing.

A hold, a lease, a latch, a selector's term or a kept node that ends is freed by reference
counting, as soon as its owner lets go: none of its objects is left in a reference cycle that
only a collection frees. At thousands of operations a second such cycles (the owner and its
callbacks, a cancelled task's traceback, an error answer's, a deadline's timer kept until its
time) made the collector run a hundred times a second and cost a fifth of the client's CPU.
Also the timers: a cancelled one lets go of what it would have called at once, and a heap of
timers cancelled long before their time is rebuilt without them.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import threading
import types
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.retry import KazooRetry

from pycurator import (
    CreateMode,
    CuratorCache,
    DistributedAtomicLong,
    DistributedBarrier,
    DistributedDoubleBarrier,
    GroupMember,
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    PersistentNode,
    PromotedToLock,
    SharedCount,
    aio,
)
from pycurator._client import background
from pycurator._client.background import Timers
from pycurator._client.runtime import services_of
from pycurator.aio import discovery as aio_discovery
from pycurator.discovery import ServiceDiscovery, ServiceInstance, ServiceType

from .support import SOON, eventually

#: Operations run with the collector off before the garbage is counted.
OPERATIONS = 30


@pytest.fixture
def collector_off() -> Iterator[Callable[[], list[object]]]:
    """The collector off (after a collection); what it is given is a function that collects
    and returns the cyclic garbage made since, as it would have freed it."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()

    def garbage() -> list[object]:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        return found

    try:
        yield garbage
    finally:
        if was_enabled:
            gc.enable()


def ours(garbage: list[object]) -> Counter[str]:
    """The objects of pycurator, and the frames, among ``garbage``, by type."""
    return Counter(
        f"frame of {thing.f_code.co_name}"
        if isinstance(thing, types.FrameType)
        else type(thing).__qualname__
        for thing in garbage
        if type(thing).__module__.startswith("pycurator") or isinstance(thing, types.FrameType)
    )


def per_operation(found: Counter[str]) -> dict[str, int]:
    """The types of which an operation left about one or more each in ``found`` (a rare path,
    such as an acquire that finds its parent reaped by the server, may leave one now and then)."""
    return {kind: count for kind, count in found.items() if count >= OPERATIONS // 2}


def _acquire_release(lock: Any) -> Callable[[], None]:
    """An operation of a lock with ``acquire(timeout)`` and ``release()``: take it, let it go."""

    def operation() -> None:
        assert lock.acquire(SOON)
        lock.release()

    return operation


def _rwlock(client: KazooClient, path: str) -> Callable[[], None]:
    lock = InterProcessReadWriteLock(client, path)

    def operation() -> None:
        for half in (lock.write_lock(), lock.read_lock()):
            assert half.acquire(SOON)
            half.release()

    return operation


def _semaphore(client: KazooClient, path: str) -> Callable[[], None]:
    semaphore = InterProcessSemaphoreV2(client, path, 2)

    def operation() -> None:
        lease = semaphore.acquire(timeout=SOON)
        assert lease is not None
        semaphore.return_lease(lease)

    return operation


def _latch(client: KazooClient, path: str) -> Callable[[], None]:
    def operation() -> None:
        latch = LeaderLatch(client, path)
        latch.start()
        assert latch.wait(SOON)
        latch.close()

    return operation


def _timed_out(client: KazooClient, path: str) -> Callable[[], None]:
    holder = InterProcessMutex(client, path)

    def operation() -> None:  # an error answer, a deadline's timer that fires, a cancelled wait
        assert holder.acquire(SOON)
        assert not InterProcessMutex(client, path).acquire(0.01)
        holder.release()

    return operation


def _atomic_long(client: KazooClient, path: str) -> Callable[[], None]:
    counter = DistributedAtomicLong(
        client, f"{path}/counter", KazooRetry(max_tries=3), PromotedToLock(f"{path}/lock", SOON)
    )

    def operation() -> None:  # a read and a versioned write, the stats and the value
        assert counter.increment().succeeded

    return operation


def _shared_count(client: KazooClient, path: str) -> Callable[[], None]:
    told = threading.Semaphore(0)
    count = SharedCount(client, f"{path}/count", 0)
    count.add_listener(lambda _shared, _count: told.release())
    count.start()

    def operation() -> None:  # a write, its watch, the read again and the listener told
        count.set_count(count.get_count() + 1)
        assert told.acquire(timeout=SOON)

    return operation


def _double_barrier(client: KazooClient, path: str) -> Callable[[], None]:
    member = DistributedDoubleBarrier(client, f"{path}/double", 1)
    barrier = DistributedBarrier(client, f"{path}/gate")

    def operation() -> None:
        assert member.enter(SOON) and member.leave(SOON)
        barrier.set_barrier()
        assert not barrier.wait_on_barrier(0.01)
        barrier.remove_barrier()
        assert barrier.wait_on_barrier(SOON)

    return operation


def _aio_mutex(client: KazooClient, path: str) -> Callable[[], None]:
    lock = aio.InterProcessMutex(client, path)

    async def cycle() -> None:
        assert await lock.acquire(SOON)
        await lock.release()

    return lambda: asyncio.run(cycle())


def _aio_latch(client: KazooClient, path: str) -> Callable[[], None]:
    async def cycle() -> None:
        latch = aio.LeaderLatch(client, path)
        await latch.start()
        assert await latch.wait(SOON)
        await latch.close()

    return lambda: asyncio.run(cycle())


def _cache(client: KazooClient, path: str) -> Callable[[], None]:
    def operation() -> None:  # a cache's life: its load, a change told, its close
        changed = threading.Event()
        cache = CuratorCache(client, path)

        def listener(kind: Any, old: Any, new: Any) -> None:
            if kind.name == "NODE_CHANGED":
                changed.set()

        cache.add_listener(listener)
        cache.start()
        assert cache.wait_initialized(SOON)
        client.set(path, b"x")
        assert changed.wait(SOON)
        cache.close()

    return operation


def _discovery(client: KazooClient, path: str) -> Callable[[], None]:
    discovery = ServiceDiscovery(client, path)
    discovery.start()
    sequential = ServiceInstance("svc", id="s", service_type=ServiceType.DYNAMIC_SEQUENTIAL)

    def operation() -> None:  # a registration's life, a query, and an unregister met twice
        for instance in (ServiceInstance("svc", id="d"), sequential):
            discovery.register_service(instance)
            discovery.update_service(instance)
        assert len(discovery.query_for_instances("svc")) == 2
        for instance in discovery.registered:
            discovery.unregister_service(instance)
            discovery.unregister_service(instance)

    return operation


def _service_cache(client: KazooClient, path: str) -> Callable[[], None]:
    discovery = ServiceDiscovery(client, path)
    discovery.start()
    instance = ServiceInstance("svc", id="c")

    def operation() -> None:  # a provider's life: its load, a change told, a pick, its close
        changed = threading.Event()
        with discovery.service_provider("svc") as provider:
            provider._cache.add_listener(changed.set)
            discovery.register_service(instance)
            assert changed.wait(SOON)
            assert provider.get_instance() == instance
            provider.note_error(instance)
            discovery.unregister_service(instance)

    return operation


def _persistent_node(client: KazooClient, path: str) -> Callable[[], None]:
    def operation() -> None:  # made, written, deleted on close
        node = PersistentNode(client, f"{path}/node", CreateMode.EPHEMERAL, b"a", True)
        node.start()
        assert node.wait_for_initial_create(SOON)
        node.set_data(b"b")
        node.close()

    return operation


def _aio_cache(client: KazooClient, path: str) -> Callable[[], None]:
    async def cycle() -> None:
        async with aio.CuratorCache(client, path) as cache:
            events = cache.events()
            assert await cache.wait_initialized(SOON)
            await asyncio.to_thread(client.set, path, b"x")
            async for event in events:
                if event.type.name == "NODE_CHANGED":
                    break

    return lambda: asyncio.run(cycle())


def _aio_discovery(client: KazooClient, path: str) -> Callable[[], None]:
    async def cycle() -> None:
        async with aio_discovery.ServiceDiscovery(client, path) as discovery:
            await discovery.register_service(ServiceInstance("svc", id="d"))
            assert len(await discovery.query_for_instances("svc")) == 1

    return lambda: asyncio.run(cycle())


def _aio_service_cache(client: KazooClient, path: str) -> Callable[[], None]:
    async def cycle() -> None:
        async with aio_discovery.ServiceDiscovery(client, path) as discovery:
            changed = asyncio.Event()
            async with discovery.service_cache("svc") as cache:
                cache.add_listener(changed.set)
                await discovery.register_service(ServiceInstance("svc", id="c"))
                await asyncio.wait_for(changed.wait(), SOON)
                assert len(cache.get_instances()) == 1

    return lambda: asyncio.run(cycle())


def _aio_persistent_node(client: KazooClient, path: str) -> Callable[[], None]:
    async def cycle() -> None:
        node = aio.PersistentNode(client, f"{path}/node", CreateMode.EPHEMERAL_SEQUENTIAL, b"a")
        await node.start()
        assert await node.wait_for_initial_create(SOON)
        await node.close()

    return lambda: asyncio.run(cycle())


def _group_member(client: KazooClient, path: str) -> Callable[[], None]:
    def operation() -> None:  # joined, seen, left
        member = GroupMember(client, path, "member", b"m")
        member.start()
        assert member.wait_for_initial_create(SOON)
        member.close()

    return operation


RECIPES: dict[str, Callable[[KazooClient, str], Callable[[], None]]] = {
    "mutex": lambda client, path: _acquire_release(InterProcessMutex(client, path)),
    "rwlock": _rwlock,
    "semaphore": _semaphore,
    "semaphore-mutex": lambda client, path: _acquire_release(
        InterProcessSemaphoreMutex(client, path)
    ),
    "multilock": lambda client, path: _acquire_release(
        InterProcessMultiLock(client, [f"{path}/a", f"{path}/b"])
    ),
    "latch": _latch,
    "timed-out-acquire": _timed_out,
    "atomic-long": _atomic_long,
    "shared-count": _shared_count,
    "barriers": _double_barrier,
    "aio-mutex": _aio_mutex,
    "aio-latch": _aio_latch,
    "cache": _cache,
    "group-member": _group_member,
    "aio-cache": _aio_cache,
    "persistent-node": _persistent_node,
    "aio-persistent-node": _aio_persistent_node,
    "discovery": _discovery,
    "aio-discovery": _aio_discovery,
    "service-cache": _service_cache,
    "aio-service-cache": _aio_service_cache,
}


#: Where a recipe's nodes go, under its path, where that is not the path itself.
NODE_PATHS = {
    "semaphore": ("locks", "leases"),
    "semaphore-mutex": ("locks", "leases"),
    "multilock": ("a", "b"),
    "atomic-long": ("lock",),
    "barriers": ("double",),
    "discovery": ("svc",),
    "aio-discovery": ("svc",),
    "service-cache": ("svc",),
    "aio-service-cache": ("svc",),
}


def lasting_parents(zk: KazooClient, path: str, children: tuple[str, ...] = ()) -> None:
    """Make the parents of the nodes under ``path`` (``path`` itself, or its ``children``)
    persistent, ahead of the recipe: a container the server reaps between two operations (more
    often the busier the machine) makes the next create fail, and an error answer's traceback
    holds kazoo's result, which holds the error: a cycle now and then, on a rare path, not the
    operation's own."""
    for parent in [f"{path}/{child}" for child in children] or [path]:
        zk.ensure_path(parent)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipe_s_operations_leave_no_cyclic_garbage(
    recipe: str,
    zk: KazooClient,
    zk_path: str,
    collector_off: Callable[[], list[object]],
) -> None:
    lasting_parents(zk, zk_path, NODE_PATHS.get(recipe, ()))
    operation = RECIPES[recipe](zk, zk_path)
    operation()  # the first one makes what the client keeps for every later one
    collector_off()  # what that left is not counted
    for _ in range(OPERATIONS):
        operation()
    assert per_operation(ours(collector_off())) == {}


def test_a_selector_s_terms_leave_no_cyclic_garbage(
    zk: KazooClient, zk_path: str, collector_off: Callable[[], list[object]]
) -> None:
    lasting_parents(zk, zk_path)
    terms = threading.Semaphore(0)
    selector = LeaderSelector(zk, zk_path, lambda _: terms.release(), auto_requeue=True)
    selector.start()
    try:
        assert terms.acquire(timeout=SOON)
        collector_off()
        for _ in range(OPERATIONS):
            assert terms.acquire(timeout=SOON)
        found = ours(collector_off())
    finally:
        assert selector.close(SOON)
    assert per_operation(found) == {}


def test_a_cache_s_events_leave_no_cyclic_garbage(
    zk: KazooClient, zk_path: str, collector_off: Callable[[], list[object]]
) -> None:
    lasting_parents(zk, zk_path)
    told = threading.Semaphore(0)
    cache = CuratorCache(zk, zk_path)
    cache.add_listener(lambda kind, old, new: told.release())
    cache.start()
    try:
        assert cache.wait_initialized(SOON) and told.acquire(timeout=SOON)
        collector_off()
        for _ in range(OPERATIONS):  # a creation, a change and a deletion each
            for write in (zk.create, lambda path: zk.set(path, b"x"), zk.delete):
                write(f"{zk_path}/n")
                assert told.acquire(timeout=SOON)
        found = ours(collector_off())
    finally:
        cache.close()
    assert per_operation(found) == {}


class _Call:
    """A timer's function, whose life a weak reference can follow."""

    def __call__(self) -> None:
        pass


def test_a_cancelled_timer_lets_go_of_its_function_at_once() -> None:
    timers = Timers(SequentialThreadingHandler())
    function = _Call()
    alive = weakref.ref(function)
    timer = timers.call_later(60, function)
    del function
    assert alive() is not None
    timer.cancel()
    timer.cancel()  # again: nothing more
    assert alive() is None


def test_timers_cancelled_long_before_their_time_do_not_pile_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(background, "COMPACT_AT", 10)
    handler = SequentialThreadingHandler()  # the timers keep it weakly
    timers = Timers(handler)
    ran = threading.Event()
    timers.call_later(0.3, ran.set)  # one that runs, in time, whatever is cancelled meanwhile
    for _ in range(1000):
        timers.call_later(60, _Call()).cancel()
    assert timers.pending() <= 2 * 10 + 2
    assert ran.wait(SOON)
    eventually(lambda: timers.pending() == 0, what="the heap emptied")


@pytest.mark.parametrize("module", ["gevent", "eventlet", "threading"])
def test_a_handlers_services_do_not_keep_it_alive(module: str) -> None:
    """The services of a handler are kept by the handler, weakly: a greenlet handler's too
    (its events are made by the handler itself, through a weak reference)."""
    handler_class = {
        "gevent": "kazoo.handlers.gevent.SequentialGeventHandler",
        "eventlet": "kazoo.handlers.eventlet.SequentialEventletHandler",
        "threading": "kazoo.handlers.threading.SequentialThreadingHandler",
    }[module]
    path, name = handler_class.rsplit(".", 1)
    handler = getattr(importlib.import_module(path), name)()
    services = services_of(handler)
    assert services.new_flag() is not None
    gone = weakref.ref(handler)
    del handler
    gc.collect()
    assert gone() is None
