"""Service discovery across Java and Python on a real ZooKeeper, both directions, on the
Curator of this run (Debian's 5.4, or 5.9 with ``./dev newest``): Java registers and
Python's discovery queries it, and the reverse, Java querying and caching what Python
registers; the node Python's discovery writes is the node Java's writes for the same instance,
for every payload kind; an expired session removes an instance for the other side too, and a
reconnect registers it again without a duplicate (Curator's own discovery adds one for a
sequential instance: pinned below)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator.discovery import (
    DubboZookeeperInstance,
    JsonInstanceSerializer,
    RawPayload,
    ServiceDiscovery,
    ServiceInstance,
    ServiceType,
    SpringZookeeperInstance,
    UriSpec,
)
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    CuratorFactory,
    FaultProxy,
    JavaServiceDiscovery,
    eventually,
    expire_session,
    new_curator,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON
from tests.test_discovery_json import PAYLOADS, Details

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")

CLASSES = [Details, SpringZookeeperInstance, DubboZookeeperInstance]


def instance(instance_id: str = "id-1", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {
        "id": instance_id,
        "address": "10.0.0.5",
        "port": 8080,
        "payload": SpringZookeeperInstance("app-1", "billing", {"zone": "a"}),
        "registration_time_utc": 1700000000123,
        "uri_spec": UriSpec("{scheme}://{address}:{port}"),
    }
    return ServiceInstance("billing", **{**fields, **changes})


def python(client: KazooClient, base: str) -> ServiceDiscovery:
    return ServiceDiscovery(
        client, base, serializer=JsonInstanceSerializer(payload_classes=CLASSES)
    )


def java(curator: Any, base: str) -> JavaServiceDiscovery:
    return JavaServiceDiscovery(curator, base, payload_classes=CLASSES)


def children(zk: KazooClient, path: str) -> list[str]:
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def test_python_finds_what_java_registers_of_every_type(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    kinds = {
        "d": ServiceType.DYNAMIC,
        "s": ServiceType.STATIC,
        "p": ServiceType.PERMANENT,
        "q": ServiceType.DYNAMIC_SEQUENTIAL,
    }
    registered = [instance(name, service_type=kind) for name, kind in kinds.items()]
    with java(curator_factory(), base) as service, python(zk, base) as found:
        for one in registered:
            service.register(one)
        assert found.query_for_names() == ["billing"]
        by_id = sorted(registered, key=lambda i: i.id)
        settled(lambda: sorted(found.query_for_instances("billing"), key=lambda i: i.id) == by_id)
        assert found.query_for_instance("billing", "d") == registered[0]
        for one in registered:
            service.unregister(one)
        # Curator's unregister forgets a sequential node's name: it deletes q, not q<seq>
        (left,) = children(zk, f"{base}/billing")
        assert left.startswith("q") and len(left) == 11
        zk.delete(f"{base}/billing/{left}")


def test_java_queries_and_caches_what_python_registers_updates_and_unregisters(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with python(zk, base) as service, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        service.register_service(instance())
        assert cache.wait_for(lambda instances: instances == [instance()], SOON)
        assert found.query_for_instances("billing") == [instance()]
        assert found.query_for_instance("billing", "id-1") == instance()
        service.update_service(instance(port=9090))
        assert cache.wait_for(lambda instances: instances == [instance(port=9090)], SOON)
        sequential = instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
        service.register_service(sequential)
        assert cache.wait_for(lambda instances: sequential in instances, SOON)
        service.unregister_service(instance())
        service.unregister_service(sequential)
        assert cache.wait_for(lambda instances: instances == [], SOON)
        assert found.query_for_instances("billing") == []


#: Every payload kind Java has a class for (a RawPayload of an unknown class it cannot make).
JAVA_PAYLOADS = [
    payload
    for payload, _ in PAYLOADS
    if not (isinstance(payload, RawPayload) and payload.java_class == "com.other.Thing")
]


@pytest.mark.parametrize("payload", JAVA_PAYLOADS, ids=lambda p: type(p).__name__)
def test_the_node_python_registers_is_the_node_java_registers(
    payload: object, curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    one = instance(payload=payload, service_type=ServiceType.STATIC)
    # lasting parents: Curator's own making of containers races the server's reaper of them
    # (a container made, reaped, then written under: NoNode), on the tests' short interval
    zk.ensure_path(f"{zk_path}/java")
    with java(curator_factory(), f"{zk_path}/java") as service:
        service.register(one)
        javas, java_stat = read_again(zk, f"{zk_path}/java/billing/id-1")
        service.unregister(one)
    with python(zk, f"{zk_path}/python") as service:
        service.register_service(one)
        pythons, python_stat = zk.get(f"{zk_path}/python/billing/id-1")
    assert pythons == javas
    assert python_stat.ephemeralOwner == java_stat.ephemeralOwner == 0


def settled(condition: Callable[[], bool]) -> None:
    """``condition`` once it holds: a Curator client whose CONNECTED comes after its
    discovery started re-registers each instance, deleting and making its node again."""
    eventually(condition, SOON, what="Curator's registrations settled")


def read_again(zk: KazooClient, path: str) -> tuple[bytes, Any]:
    """The node's data and stat, read again while it is gone for a moment: a Curator client
    whose CONNECTED comes after its discovery started re-registers each instance by deleting
    and making its node again."""
    read: list[tuple[bytes, Any]] = []

    def got() -> bool:
        try:
            read.append(zk.get(path))
        except NoNodeError:
            return False
        return True

    eventually(got, SOON, what=f"{path} read")
    return read[-1]


def test_a_python_instance_expired_is_gone_for_java_and_back_once_python_reconnects(
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk_path: str,
) -> None:
    base = f"{zk_path}/services"
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    with python(client, base) as service, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        service.register_service(instance())
        assert cache.wait_for(lambda instances: instances == [instance()], SOON)
        session, password = client.client_id
        front.blackhole()
        front.drop_connections()
        expire_session(zk_server.hosts, session, password)
        assert cache.wait_for(lambda instances: instances == [], SOON)  # gone for Java
        front.heal()
        assert cache.wait_for(lambda instances: instances == [instance()], SOON)
        assert found.query_for_instances("billing") == [instance()]


def test_a_java_instance_expired_is_gone_for_python_and_back_once_java_reconnects(
    front: FaultProxy, zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    curator = new_curator(front.hosts)
    try:
        with java(curator, base) as service, python(zk, base) as found:
            service.register(instance())
            settled(lambda: found.query_for_instances("billing") == [instance()])
            front.blackhole()
            front.drop_connections()
            expire_session(zk_server.hosts, *session_of(curator))
            assert found.query_for_instances("billing") == []  # gone for Python
            front.heal()
            eventually(
                lambda: found.query_for_instances("billing") == [instance()],
                SOON,
                what="registered again by Curator",
            )
    finally:
        curator.close()


def test_a_reconnect_keeps_one_node_per_python_instance_where_curator_adds_one(
    front: FaultProxy,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    curator_factory: CuratorFactory,
) -> None:
    """A dropped connection: pycurator's sequential instance keeps its one node; Curator's
    (on the same server, through the same fault) forgets its node's name and registers a
    second at RECONNECTED, which its unregister then leaves behind (pinned)."""
    sequential = instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    curator = new_curator(front.hosts)
    try:
        with python(client, f"{zk_path}/python") as mine, java(curator, f"{zk_path}/java") as its:
            mine.register_service(sequential)
            its.register(sequential)
            front.drop_connections()
            eventually(
                lambda: len(children(zk, f"{zk_path}/java/billing")) == 2,
                SOON,
                what="Curator's second node",
            )
            mine.update_service(sequential)  # once the check after the reconnect is done
            assert len(children(zk, f"{zk_path}/python/billing")) == 1
            found = JavaServiceDiscovery(curator_factory(), f"{zk_path}/python")
            assert [i.id for i in found.query_for_instances("billing")] == ["seq"]
            its.unregister(sequential)
            assert len(children(zk, f"{zk_path}/java/billing")) == 2  # it deletes neither
    finally:
        curator.close()
