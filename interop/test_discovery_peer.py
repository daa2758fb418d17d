"""The test kit's Java discovery peer on a real ZooKeeper: Java registers, updates and
unregisters, another Java client queries and caches it; the nodes' bytes, read raw with kazoo,
are the bytes pycurator's serializer writes, and a node pycurator's bytes made is the instance
Java finds."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.discovery import (
    JsonInstanceSerializer,
    ServiceInstance,
    ServiceType,
    SpringZookeeperInstance,
    UriSpec,
)
from pycurator.testing import CuratorFactory, JavaServiceDiscovery, eventually, session_of
from tests.support import SOON

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")

SPRING = SpringZookeeperInstance.java_class


def spring_instance(instance_id: str = "id-1", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {
        "id": instance_id,
        "address": "10.0.0.5",
        "port": 8080,
        "payload": SpringZookeeperInstance("app-1", "billing", {"zone": "a"}),
        "registration_time_utc": 1700000000123,
        "uri_spec": UriSpec("{scheme}://{address}:{port}"),
    }
    return ServiceInstance("billing", **{**fields, **changes})


def peer(curator: Any, base: str, **options: Any) -> JavaServiceDiscovery:
    options.setdefault("payload_class", SPRING)
    options.setdefault("payload_classes", [SpringZookeeperInstance])
    return JavaServiceDiscovery(curator, base, **options)


def test_java_finds_and_caches_what_java_registers_updates_and_unregisters(
    curator_factory: CuratorFactory, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    instance = spring_instance()
    with peer(curator_factory(), base) as service, peer(curator_factory(), base) as client:
        cache = client.service_cache("billing").start()
        assert cache.instances() == []
        service.register(instance)
        assert cache.wait_for(lambda found: found == [instance], SOON)
        assert client.query_for_names() == ["billing"]
        assert client.query_for_instances("billing") == [instance]
        assert client.query_for_instance("billing", "id-1") == instance
        assert client.query_for_instance("billing", "nope") is None
        updated = spring_instance(port=9090, payload=SpringZookeeperInstance("app-1", "b", {}))
        service.update(updated)
        assert cache.wait_for(lambda found: found == [updated], SOON)
        service.unregister(updated)
        assert cache.wait_for(lambda found: found == [], SOON)
        # (Curator's cache holds a change before its listeners are told of it)
        eventually(lambda: cache.changes >= 3, SOON, what="the three changes told")
        assert client.query_for_instances("billing") == []


def test_the_nodes_java_writes_are_pycurators_bytes(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    curator = curator_factory()
    dynamic, static = spring_instance(), spring_instance("id-2", service_type=ServiceType.STATIC)
    serializer = JsonInstanceSerializer(SpringZookeeperInstance)
    with peer(curator, base) as service:
        service.register(dynamic)
        service.register(static)
        data, stat = zk.get(f"{base}/billing/id-1")
        assert data == serializer.serialize(dynamic)
        assert serializer.deserialize(data) == dynamic
        assert stat.ephemeralOwner == session_of(curator)[0]  # DYNAMIC: an ephemeral node
        data, stat = zk.get(f"{base}/billing/id-2")
        assert data == serializer.serialize(static) and stat.ephemeralOwner == 0
        service.unregister(static)  # a persistent node outlives the session: unregister it


def test_outside_compatible_mode_java_writes_enabled_as_pycurator_does(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    instance = spring_instance(enabled=False)
    with peer(curator_factory(), base, compatible=False) as service:
        service.register(instance)
        data, _ = zk.get(f"{base}/billing/id-1")
    serializer = JsonInstanceSerializer(SpringZookeeperInstance, compatible=False)
    assert data == serializer.serialize(instance) and data.endswith(b',"enabled":false}')
    assert serializer.deserialize(data) == instance


def test_java_finds_and_caches_a_node_made_of_pycurators_bytes(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    instance = spring_instance("py-1", address="fd00:0:0:0:0:0:0:2%eth0")
    with peer(curator_factory(), base) as client:
        cache = client.service_cache("billing").start()
        data = JsonInstanceSerializer(SpringZookeeperInstance).serialize(instance)
        zk.create(f"{base}/billing/py-1", data, ephemeral=True, makepath=True)
        assert cache.wait_for(lambda found: found == [instance], SOON)
        assert client.query_for_instances("billing") == [instance]
        zk.delete(f"{base}/billing/py-1")
        assert cache.wait_for(lambda found: found == [], SOON)


def test_one_node_java_cannot_read_fails_javas_whole_query(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Why pycurator's reader keeps what Jackson cannot read (an unknown payload class):
    Java's ``queryForInstances`` throws for the whole service on one such node."""
    base = f"{zk_path}/services"
    good = JsonInstanceSerializer(SpringZookeeperInstance).serialize(spring_instance())
    zk.create(f"{base}/billing/id-1", good, ephemeral=True, makepath=True)
    unknown = b'{"name":"billing","id":"x","payload":{"@class":"com.nope.Gone"}}'
    zk.create(f"{base}/billing/x", unknown, ephemeral=True)
    client = peer(curator_factory(), base, payload_class="java.lang.Object")
    with client, pytest.raises(Exception, match=r"com\.nope\.Gone"):
        client.query_for_instances("billing")
    read = JsonInstanceSerializer(payload_classes=[SpringZookeeperInstance])
    for name in ("id-1", "x"):
        assert read.deserialize(zk.get(f"{base}/billing/{name}")[0]).id == name
        zk.delete(f"{base}/billing/{name}")
