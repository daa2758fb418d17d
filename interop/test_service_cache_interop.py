"""The service cache and provider across Java and Python on a real ZooKeeper, on the Curator of
this run (Debian's 5.4, or 5.9 with ``./dev newest``): a Python ``ServiceCache`` holds and tells
what Java's discovery registers, updates and unregisters, and holds what a Java
``ServiceCache`` of the same service holds; a Python ``ServiceProvider`` balances across Java and
Python instances and leaves out the one Java disabled, as Curator's provider does; a Java
``ServiceCache`` sees what Python registers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.discovery import JsonInstanceSerializer, ServiceDiscovery
from pycurator.testing import CuratorFactory, JavaServiceDiscovery, eventually
from tests.support import SOON

from .test_discovery_interop import CLASSES, instance

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")


def python(client: KazooClient, base: str, compatible: bool = True) -> ServiceDiscovery:
    serializer = JsonInstanceSerializer(payload_classes=CLASSES, compatible=compatible)
    return ServiceDiscovery(client, base, serializer=serializer)


def java(curator: Any, base: str, compatible: bool = True) -> JavaServiceDiscovery:
    return JavaServiceDiscovery(curator, base, payload_classes=CLASSES, compatible=compatible)


def waited(calls: threading.Semaphore, holds: Callable[[], bool]) -> bool:
    """Whether ``holds()`` comes true, woken by each ``cache_changed()``."""
    for _ in range(50):
        if holds():
            return True
        calls.acquire(timeout=SOON / 50)
    return holds()


def test_a_python_cache_holds_and_tells_what_java_registers_as_java_s_cache_does(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with java(curator_factory(), base) as service, python(zk, base) as found:
        service.register(instance("id-1"))
        java_cache = service.service_cache("billing").start()
        calls = threading.Semaphore(0)
        with found.service_cache("billing") as cache:
            assert cache.get_instances() == [instance("id-1")]
            cache.add_listener(calls.release)
            service.register(instance("id-2", port=8081))
            assert waited(calls, lambda: len(cache.get_instances()) == 2)
            service.update(instance("id-1", port=9090))
            assert waited(calls, lambda: cache.get_instances()[0].port == 9090)
            service.unregister(instance("id-2", port=8081))
            assert waited(calls, lambda: cache.get_instances() == [instance("id-1", port=9090)])
            assert java_cache.wait_for(lambda held: held == cache.get_instances(), SOON)


def test_a_python_provider_balances_across_java_and_python_and_skips_what_java_disabled(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    curator = curator_factory()
    with (
        java(curator, base, compatible=False) as service,
        python(zk, base) as mine,
    ):
        service.register(instance("j-1"))
        service.register(instance("j-off", enabled=False))  # enabled is written: not compatible
        mine.register_service(instance("p-1"))
        with mine.service_provider("billing") as provider:
            eventually(lambda: len(provider.get_all_instances()) == 2, SOON)
            picks = [provider.get_instance() for _ in range(4)]
            assert [p.id for p in picks if p is not None] == ["j-1", "p-1"] * 2
            provider.note_error(instance("j-1"))
            provider.note_error(instance("j-1"))
            assert provider.get_all_instances() == [instance("p-1")]


def test_a_java_cache_sees_what_python_registers_and_a_python_cache_sees_the_same(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with python(zk, base) as service, java(curator_factory(), base) as found:
        java_cache = found.service_cache("billing").start()
        with service.service_cache("billing") as cache:
            for n in (1, 2, 3):
                service.register_service(instance(f"id-{n}"))
            eventually(lambda: len(cache.get_instances()) == 3, SOON)
            assert java_cache.wait_for(
                lambda held: sorted(held, key=lambda i: i.id) == cache.get_instances(), SOON
            )
            service.unregister_service(instance("id-2"))
            assert java_cache.wait_for(lambda held: len(held) == 2, SOON)
            eventually(lambda: cache.get_instances() == [instance("id-1"), instance("id-3")])
        # (Curator's cache holds a change before its listeners are told of it)
        eventually(lambda: java_cache.changes >= 4, SOON, what="the four changes told")
