"""A discovery's registrations through ZooKeeper's failures, on a real server: a session that
expires has every instance registered again, with its latest data; a dropped connection
leaves each node as it is (the same node, no duplicate of a sequential one); what is
unregistered or closed while the server is out of reach is deleted once it is back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError

from pycurator._protocol.waits import DELETE_WAIT
from pycurator.discovery import ServiceDiscovery, ServiceInstance, ServiceType
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    FaultProxy,
    expire_kazoo_session,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def instance(instance_id: str = "id-1", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {"id": instance_id, "address": "10.0.0.5", "port": 8080}
    return ServiceInstance("billing", registration_time_utc=1, **{**fields, **changes})


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


@pytest.fixture
def behind(front: FaultProxy, zk_client_factory: ClientFactory) -> KazooClient:
    """A client through the fault proxy, reconnecting steadily."""
    return zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)


def nodes(zk: KazooClient, base: str) -> dict[str, tuple[bytes, int, int]]:
    """Each instance node: its data, creation zxid and owner (none once the server reaped
    the empty container of the service)."""
    found: dict[str, tuple[bytes, int, int]] = {}
    try:
        names = zk.get_children(f"{base}/billing")
    except NoNodeError:
        return found
    for name in names:
        try:
            data, stat = zk.get(f"{base}/billing/{name}")
        except NoNodeError:
            continue  # deleted since the listing
        found[name] = (data, stat.czxid, stat.ephemeralOwner)
    return found


def test_an_expired_session_has_every_instance_registered_again_with_its_latest_data(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    base = f"{zk_path}/services"
    with ServiceDiscovery(client, base) as discovery:
        discovery.register_service(instance())
        discovery.register_service(instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL))
        latest = instance(port=9090)
        discovery.update_service(latest)
        before = nodes(zk, base)
        expire_kazoo_session(client)
        eventually(
            lambda: (
                len(after := nodes(zk, base)) == 2
                and all(owner == client.client_id[0] for _, _, owner in after.values())
            ),
            SOON,
            what="both instances registered in the new session",
        )
        after = nodes(zk, base)
        assert after["id-1"][0] == before["id-1"][0]  # the latest data, not the first
        assert discovery.query_for_instance("billing", "id-1") == latest
        made = [(czxid, name) for name, (_, czxid, _) in after.items() if name.startswith("seq")]
        gone = [(czxid, name) for name, (_, czxid, _) in before.items() if name.startswith("seq")]
        assert len(made) == 1 and made != gone  # a new sequential node, and one only
    assert nodes(zk, base) == {}


def test_a_dropped_connection_leaves_each_node_as_it_was_without_a_duplicate(
    front: FaultProxy, behind: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with ServiceDiscovery(behind, base) as discovery:
        discovery.register_service(instance())
        discovery.register_service(instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL))
        before = nodes(zk, base)
        session = behind.client_id[0]
        front.drop_connections()
        eventually(lambda: behind.connected, SOON, what="reconnected")
        discovery.update_service(instance(port=9090))  # waits for the check of the reconnect
        assert behind.client_id[0] == session
        after = nodes(zk, base)
        assert set(after) == set(before)
        assert [czxid for _, czxid, _ in after.values()] == [c for _, c, _ in before.values()]


def test_an_unregister_while_the_server_is_out_of_reach_returns_and_deletes_once_back(
    front: FaultProxy, behind: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with ServiceDiscovery(behind, base) as discovery:
        discovery.register_service(instance())
        discovery.register_service(instance("id-2", service_type=ServiceType.STATIC))
        front.blackhole()
        front.drop_connections()
        eventually(lambda: not behind.connected, SOON, what="disconnected")
        began = time.monotonic()
        discovery.unregister_service(instance())
        assert time.monotonic() - began < DELETE_WAIT
        assert discovery.registered == [instance("id-2", service_type=ServiceType.STATIC)]
        began = time.monotonic()
        discovery.close()
        assert time.monotonic() - began < DELETE_WAIT
        assert set(zk.get_children(f"{base}/billing")) == {"id-1", "id-2"}
        front.heal()
        # (the emptied parent is a container, which the server may have reaped by then: nodes())
        eventually(lambda: not nodes(zk, base), SOON, what="deleted once back")


def test_a_register_that_cannot_reach_the_server_in_time_is_written_once_it_can(
    front: FaultProxy, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    client = zk_client_factory(hosts=front.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT)
    base = f"{zk_path}/services"
    with ServiceDiscovery(client, base) as discovery:
        front.blackhole()
        front.drop_connections()
        with pytest.raises(ConnectionLoss, match="stays registered"):
            discovery.register_service(instance())
        assert discovery.registered == [instance()]
        front.heal()
        eventually(lambda: zk.exists(f"{base}/billing/id-1") is not None, SOON, what="registered")


def test_a_node_another_client_deletes_is_made_again(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with ServiceDiscovery(zk_client_factory(), base) as discovery:
        discovery.register_service(instance())
        discovery.register_service(instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL))
        before = nodes(zk, base)
        for name in before:
            zk.delete(f"{base}/billing/{name}")
        eventually(
            lambda: len(nodes(zk, base)) == 2
            and all(czxid not in {c for _, c, _ in before.values()} for _, czxid, _ in
                    nodes(zk, base).values()),
            SOON,
            what="both made again",
        )  # fmt: skip
