"""pycurator.aio.discovery against a real ZooKeeper server: the threaded discovery's nodes,
queries and registrations kept through an expiry, awaited; a task cancelled while it
registers leaves the instance registered, written by the keeper; a cancelled close leaves no
node behind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.aio import discovery as aio_discovery
from pycurator.discovery import (
    InstanceFormatError,
    JsonInstanceSerializer,
    ServiceInstance,
    ServiceType,
)
from pycurator.testing import STEADY_RECONNECT, ClientFactory, FaultProxy, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run
from .support import SOON, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def instance(instance_id: str = "id-1", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {"id": instance_id, "address": "10.0.0.5", "port": 8080}
    return ServiceInstance("billing", registration_time_utc=1, **{**fields, **changes})


def test_an_instance_is_registered_found_updated_and_unregistered(
    zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"

    async def main() -> None:
        async with aio_discovery.ServiceDiscovery(zk, base) as discovery:
            await discovery.register_service(instance())
            data, _ = zk.get(f"{base}/billing/id-1")
            assert data == JsonInstanceSerializer().serialize(instance())
            assert await discovery.query_for_names() == ["billing"]
            assert await discovery.query_for_instances("billing") == [instance()]
            await discovery.update_service(instance(port=9090))
            assert await discovery.query_for_instance("billing", "id-1") == instance(port=9090)
            zk.create(f"{base}/billing/bad", b"[]")
            told: list[InstanceFormatError] = []
            discovery.on_malformed(told.append)
            assert await discovery.query_for_instances("billing") == [instance(port=9090)]
            assert [error.path for error in told] == [f"{base}/billing/bad"]
            zk.delete(f"{base}/billing/bad")
            await discovery.unregister_service(instance())
            assert await discovery.query_for_instances("billing") == []

    run(main())


def test_an_expired_session_has_the_instance_registered_again(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client, base = zk_client_factory(), f"{zk_path}/services"

    async def main() -> None:
        async with aio_discovery.ServiceDiscovery(client, base) as discovery:
            await discovery.register_service(instance())
            await asyncio.to_thread(expire_kazoo_session, client)
            await asyncio.to_thread(
                eventually,
                lambda: (
                    (stat := zk.exists(f"{base}/billing/id-1")) is not None
                    and stat.ephemeralOwner == client.client_id[0]
                ),
                SOON,
                what="registered in the new session",
            )

    run(main())


def test_a_register_cancelled_while_it_waits_is_still_written(
    zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"

    async def main() -> None:
        async with aio_discovery.ServiceDiscovery(zk, base) as discovery:
            task = asyncio.ensure_future(discovery.register_service(instance()))
            await asyncio.sleep(0)  # sent, not yet answered
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert discovery.registered == [instance()]
            await asyncio.to_thread(
                eventually,
                lambda: zk.exists(f"{base}/billing/id-1") is not None,
                SOON,
                what="written by the keeper",
            )

    run(main())


def test_a_close_cancelled_while_it_deletes_still_deletes_every_node(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """The deletes a cancelled close had not done yet are left to the keeper, as those of a
    close that runs out of time: no node is left behind."""
    base = f"{zk_path}/services"
    statics = [instance(f"s-{n}", service_type=ServiceType.STATIC) for n in range(3)]

    async def main(front: FaultProxy) -> None:
        hosts = front.hosts
        client = zk_client_factory(hosts=hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
        discovery = aio_discovery.ServiceDiscovery(client, base)
        await discovery.start()
        for one in statics:
            await discovery.register_service(one)
        front.blackhole()
        closing = asyncio.ensure_future(discovery.close())
        await asyncio.sleep(0.2)  # the first delete sent, held back
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        front.heal()
        await asyncio.to_thread(
            eventually,
            lambda: not zk.exists(f"{base}/billing") or zk.get_children(f"{base}/billing") == [],
            SOON,
            what="every node deleted",
        )

    with FaultProxy(zk_server.hosts.split(",")[0]) as front:
        run(main(front))


def test_a_close_cancelled_while_it_closes_its_caches_still_unregisters(
    zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"

    async def main() -> None:
        discovery = aio_discovery.ServiceDiscovery(zk, base)
        await discovery.start()
        await discovery.register_service(instance())
        await discovery.service_cache("billing").start()
        closing = asyncio.ensure_future(discovery.close())
        await asyncio.sleep(0)  # the cache's close begun
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert discovery.registered == []
        await asyncio.to_thread(
            eventually,
            lambda: zk.exists(f"{base}/billing/id-1") is None,
            SOON,
            what="unregistered",
        )

    run(main())
