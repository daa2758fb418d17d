"""``ServiceCache`` and ``ServiceProvider`` on a real ZooKeeper, both front ends: instances
registered, changed and unregistered by another client are held and told; a dropped
connection and an expired session are read again, only the differences told; a node that is
no instance is left out and reported; the provider's strategies, down-instance policy and
filters, ``enabled`` among them."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState

from pycurator.aio import discovery as aio_discovery
from pycurator.discovery import (
    DownInstancePolicy,
    InstanceFormatError,
    JsonInstanceSerializer,
    RandomStrategy,
    ServiceCacheListener,
    ServiceDiscovery,
    ServiceInstance,
    StickyStrategy,
)
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    FaultProxy,
    expire_kazoo_session,
)
from pycurator.testing._helpers import steady
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run
from .support import SOON, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def instance(instance_id: str = "id-1", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {"id": instance_id, "address": "10.0.0.5", "port": 8080}
    return ServiceInstance("billing", registration_time_utc=1, **{**fields, **changes})


class Told(ServiceCacheListener):
    """Counts ``cache_changed()`` and keeps each state told."""

    def __init__(self) -> None:
        self.changes = 0
        self.states: list[str] = []
        self.clients: list[Any] = []

    def cache_changed(self) -> None:
        self.changes += 1

    def state_changed(self, client: Any, state: str) -> None:
        self.clients.append(client)
        self.states.append(state)


@pytest.fixture
def registry(zk: KazooClient, zk_path: str) -> Iterator[ServiceDiscovery]:
    """Another client's discovery, registering what the caches follow."""
    with ServiceDiscovery(zk, f"{zk_path}/services") as other:
        yield other


def test_a_cache_holds_what_another_client_registers_changes_and_unregisters(
    registry: ServiceDiscovery, zk_client_factory: ClientFactory
) -> None:
    registry.register_service(instance("id-1"))
    with ServiceDiscovery(zk_client_factory(), registry.base_path) as discovery:
        cache = discovery.service_cache("billing")
        told, calls = Told(), threading.Semaphore(0)
        cache.add_listener(told)
        cache.add_listener(calls.release)
        with cache:
            assert cache.get_instances() == [instance("id-1")]  # start() waits for the load
            assert told.changes == 0  # the first load is not a change, as in Curator
            registry.register_service(instance("id-2"))
            assert calls.acquire(timeout=SOON)
            assert cache.get_instances() == [instance("id-1"), instance("id-2")]
            registry.update_service(instance("id-1", port=9090))
            assert calls.acquire(timeout=SOON)
            assert cache.get_instances()[0].port == 9090
            registry.unregister_service(instance("id-2"))
            assert calls.acquire(timeout=SOON)
            assert cache.get_instances() == [instance("id-1", port=9090)]
            assert told.changes == 3
            cache.remove_listener(told)
            registry.unregister_service(instance("id-1"))
            assert calls.acquire(timeout=SOON)
            assert cache.get_instances() == [] and told.changes == 3
        assert "ServiceCache" in repr(cache)
        registry.register_service(instance("id-3"))
        assert not calls.acquire(timeout=0.5)  # closed: hears nothing more


def test_a_dropped_connection_and_an_expiry_are_read_again_and_told(
    registry: ServiceDiscovery, zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as front:
        client = zk_client_factory(
            hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT
        )
        with ServiceDiscovery(client, registry.base_path) as discovery:
            told = Told()
            with discovery.service_cache("billing") as cache:
                cache.add_listener(told)
                front.blackhole()
                front.drop_connections()
                eventually(lambda: KazooState.SUSPENDED in told.states, SOON, what="suspended")
                registry.register_service(instance("id-1"))  # while the cache is cut off
                front.heal()
                eventually(lambda: cache.get_instances() == [instance("id-1")], SOON)
                # held before it is told: the listener hears it right after
                eventually(lambda: told.changes == 1, SOON, what="the change told")
                assert told.clients[0] is client
                expire_kazoo_session(client)
                registry.register_service(instance("id-2"))
                eventually(lambda: len(cache.get_instances()) == 2, SOON, what="after expiry")
                assert steady(lambda: told.changes) == 2  # read again: nothing told twice
                # told before that change, on the same worker
                assert KazooState.LOST in told.states
                assert told.states[-1] == KazooState.CONNECTED


def test_a_node_that_is_no_instance_is_left_out_and_reported(
    registry: ServiceDiscovery, zk: KazooClient
) -> None:
    base = registry.base_path
    registry.register_service(instance("id-1"))
    zk.create(f"{base}/billing/bad", b"not json")
    reported: list[InstanceFormatError] = []
    registry.on_malformed(reported.append)
    with registry.service_cache("billing") as cache:
        assert cache.get_instances() == [instance("id-1")]
        assert [error.path for error in reported] == [f"{base}/billing/bad"]
        assert [error.path for error in cache.malformed()] == [f"{base}/billing/bad"]
        zk.set(f"{base}/billing/id-1", b"[]")  # an instance no more: left out, and told
        eventually(lambda: cache.get_instances() == [], SOON)
        assert [error.path for error in reported][-1] == f"{base}/billing/id-1"
        held_bad = [f"{base}/billing/{n}" for n in ("bad", "id-1")]
        assert [e.path for e in cache.malformed()] == held_bad
        zk.set(f"{base}/billing/bad", JsonInstanceSerializer().serialize(instance("bad")))
        eventually(lambda: cache.get_instances() == [instance("bad")], SOON)
        assert [e.path for e in cache.malformed()] == [f"{base}/billing/id-1"]
    zk.delete(f"{base}/billing/bad")


def test_bad_arguments_are_refused_by_name(registry: ServiceDiscovery) -> None:
    with pytest.raises(ValueError, match="service name"):
        registry.service_cache("a/b")
    cache = registry.service_cache("billing")
    with pytest.raises(TypeError, match="cache_changed"):
        cache.add_listener(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strategy"):
        registry.service_provider("billing", strategy=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="filter"):
        registry.service_provider("billing", filters=[1])  # type: ignore[list-item]
    with cache, pytest.raises(RuntimeError, match="more than once"):
        cache.start()
    cache.close()  # twice: nothing more


def test_the_provider_picks_round_robin_and_leaves_out_disabled_and_filtered_instances(
    registry: ServiceDiscovery, zk: KazooClient
) -> None:
    for n in (1, 2, 3):
        registry.register_service(instance(f"id-{n}", port=8080 + n))
    disabled = instance("id-4", enabled=False)
    path = f"{registry.base_path}/billing/id-4"
    zk.create(path, JsonInstanceSerializer(compatible=False).serialize(disabled), ephemeral=True)
    with registry.service_provider("billing") as provider:
        picks = [provider.get_instance() for _ in range(6)]
        assert [p.id for p in picks if p is not None] == ["id-1", "id-2", "id-3"] * 2
        assert [i.id for i in provider.get_all_instances()] == ["id-1", "id-2", "id-3"]
    keep_odd = registry.service_provider("billing", filters=[lambda i: (i.port or 0) % 2 == 1])
    with keep_odd:
        assert [i.id for i in keep_odd.get_all_instances()] == ["id-1", "id-3"]
    zk.delete(path)


def test_an_instance_with_two_errors_is_left_out_for_the_policy_s_time(
    registry: ServiceDiscovery,
) -> None:
    registry.register_service(instance("id-1"))
    registry.register_service(instance("id-2"))
    policy = DownInstancePolicy(timeout=1.0, error_threshold=2)
    with registry.service_provider("billing", down_instance_policy=policy) as provider:
        assert provider.down_instance_policy == policy
        provider.note_error(instance("id-1"))
        assert len(provider.get_all_instances()) == 2  # one error: still offered
        provider.note_error(instance("id-1"))
        assert provider.get_all_instances() == [instance("id-2")]
        assert {provider.get_instance() for _ in range(4)} == {instance("id-2")}
        eventually(lambda: len(provider.get_all_instances()) == 2, 4.0, what="back")


def test_sticky_and_random_strategies_pick_among_the_cache_s_instances(
    registry: ServiceDiscovery,
) -> None:
    for n in (1, 2, 3):
        registry.register_service(instance(f"id-{n}"))
    sticky = StickyStrategy(RandomStrategy(random.Random(7)))
    with registry.service_provider("billing", strategy=sticky) as provider:
        first = provider.get_instance()
        assert first is not None and {provider.get_instance() for _ in range(5)} == {first}
        calls = threading.Semaphore(0)
        provider._cache.add_listener(calls.release)
        registry.unregister_service(first)
        assert calls.acquire(timeout=SOON)
        second = provider.get_instance()
        assert second is not None and second != first and sticky.instance_number == 1
    rng = RandomStrategy(random.Random(3))
    with registry.service_provider("billing", strategy=rng) as provider:
        assert len({provider.get_instance() for _ in range(40)}) == 2


def test_closing_the_discovery_closes_its_caches_and_providers(
    registry: ServiceDiscovery, zk_client_factory: ClientFactory
) -> None:
    discovery = ServiceDiscovery(zk_client_factory(), registry.base_path)
    discovery.start()
    cache, provider = discovery.service_cache("billing"), discovery.service_provider("billing")
    cache.start()
    provider.start()
    calls = threading.Semaphore(0)
    cache.add_listener(calls.release)
    discovery.close()
    registry.register_service(instance())
    assert not calls.acquire(timeout=0.5)
    assert provider.get_instance() is None


def test_the_asyncio_cache_and_provider_hold_and_tell_the_same(
    registry: ServiceDiscovery, zk_client_factory: ClientFactory
) -> None:
    registry.register_service(instance("id-1"))

    async def main() -> None:
        client = zk_client_factory()
        async with aio_discovery.ServiceDiscovery(client, registry.base_path) as discovery:
            changed = asyncio.Event()
            states: list[str] = []

            class Listener:
                async def cache_changed(self) -> None:
                    changed.set()

                def state_changed(self, client: Any, state: str) -> None:
                    states.append(state)

            async with discovery.service_cache("billing") as cache:
                cache.add_listener(Listener())
                assert cache.get_instances() == [instance("id-1")]
                await asyncio.to_thread(registry.register_service, instance("id-2"))
                await asyncio.wait_for(changed.wait(), SOON)
                assert [i.id for i in cache.get_instances()] == ["id-1", "id-2"]
                changed.clear()
                await asyncio.to_thread(expire_kazoo_session, client)
                await asyncio.to_thread(registry.unregister_service, instance("id-2"))
                await asyncio.wait_for(changed.wait(), SOON)
                assert cache.get_instances() == [instance("id-1")]
                assert KazooState.LOST in states
            policy = DownInstancePolicy(timeout=30.0, error_threshold=2)
            provider = discovery.service_provider("billing", down_instance_policy=policy)
            async with provider:
                assert provider.get_instance() == instance("id-1")
                provider.note_error(instance("id-1"))
                provider.note_error(instance("id-1"))
                assert provider.get_instance() is None
            assert "aio.ServiceProvider" in repr(provider)

    run(main())


def test_a_start_while_the_server_is_out_of_reach_returns_and_loads_once_it_is_back(
    registry: ServiceDiscovery, zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory
) -> None:
    registry.register_service(instance("id-1"))
    with FaultProxy(zk_server.hosts.split(",")[0]) as front:
        client = zk_client_factory(
            hosts=front.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT
        )
        discovery = ServiceDiscovery(client, registry.base_path)
        front.blackhole()
        front.drop_connections()
        eventually(lambda: not client.connected, SOON, what="disconnected")
        cache = discovery.service_cache("billing")
        began = time.monotonic()
        cache.start()
        assert time.monotonic() - began < 4.0 + SOON / 2  # the session timeout, not for ever
        assert cache.get_instances() == []
        front.heal()
        eventually(lambda: cache.get_instances() == [instance("id-1")], SOON, what="loaded")
        cache.close()
