"""Service discovery scenarios across Java and Python on a real ZooKeeper, on the Curator of
this run (Debian's 5.4, or 5.9 with ``./dev newest``), as a fleet meets them: each service type
registered by one language and cached, balanced and queried by the other; updates and
``enabled`` seen through the other's cache and provider; an unregister of what the other
registered doing nothing (Curator's rule); payloads Python has no class for kept and written
back; ``watchInstances`` on either side while the other writes the node; an expired Python
session's instances gone for Java's cache and back once, without a duplicate; bad input
leaving no node behind."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator._recipes.registration_nodes import REMADE_AFTER
from pycurator.discovery import (
    InvalidServiceInstance,
    JsonInstanceSerializer,
    RawPayload,
    RoundRobinStrategy,
    ServiceDiscovery,
    ServiceInstance,
    ServiceType,
    StickyStrategy,
    UriSpec,
)
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    CuratorFactory,
    FaultProxy,
    JavaServiceDiscovery,
    children,
    discovery_class,
    eventually,
    expire_session,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON
from tests.test_discovery_json import Details

from .test_discovery_interop import CLASSES, instance

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")

TYPES = {
    "d": ServiceType.DYNAMIC,
    "s": ServiceType.STATIC,
    "p": ServiceType.PERMANENT,
    "q": ServiceType.DYNAMIC_SEQUENTIAL,
}


def python(
    client: KazooClient, base: str, *, compatible: bool = True, watch: bool = False
) -> ServiceDiscovery:
    serializer = JsonInstanceSerializer(payload_classes=CLASSES, compatible=compatible)
    return ServiceDiscovery(client, base, serializer=serializer, watch_instances=watch)


def java(
    curator: Any, base: str, *, compatible: bool = True, watch: bool = False
) -> JavaServiceDiscovery:
    return JavaServiceDiscovery(
        curator, base, payload_classes=CLASSES, compatible=compatible, watch_instances=watch
    )


@contextlib.contextmanager
def java_provider(service: JavaServiceDiscovery, name: str) -> Iterator[Any]:
    """Curator's ``ServiceProvider`` of ``name`` (round robin), started, closed after."""
    provider = service.java.serviceProviderBuilder().serviceName(name).build()
    provider.start()
    try:
        yield provider
    finally:
        provider.close()


def by_id(instances: list[ServiceInstance]) -> list[ServiceInstance]:
    return sorted(instances, key=lambda i: i.id)


def test_python_caches_and_balances_what_java_registers_of_every_type_and_leaves_it_be(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    spec = UriSpec("{scheme}://{address}:{ssl-port}/{service-type}/{id}")
    registered = [
        instance(key, service_type=kind, ssl_port=8443, uri_spec=spec)
        for key, kind in TYPES.items()
    ]
    with java(curator_factory(), base) as service, python(zk, base) as mine:
        for one in registered:
            service.register(one)
        java_cache = service.service_cache("billing").start()
        with mine.service_cache("billing") as cache, mine.service_provider("billing") as provider:
            eventually(lambda: by_id(cache.get_instances()) == by_id(registered), SOON)
            assert java_cache.wait_for(lambda held: by_id(held) == by_id(registered), SOON)
            picks = [provider.get_instance() for _ in range(8)]
            assert picks[:4] == picks[4:] and by_id([p for p in picks[:4] if p]) == by_id(
                registered
            )
            for held in cache.get_instances():  # a URI as Java builds it
                (ours,) = (
                    j for j in service.java.queryForInstances("billing") if j.getId() == held.id
                )
                assert held.build_uri_spec() == str(ours.buildUriSpec())
                assert held.build_uri_spec().startswith("https://10.0.0.5:8443/")
            for one in registered:  # not ours: Curator's unregister does nothing either
                mine.unregister_service(one)
            assert by_id(mine.query_for_instances("billing")) == by_id(registered)
            for one in registered:
                service.unregister(one)
            # Curator's unregister forgets a sequential node's name: q<seq> stays (pinned)
            eventually(lambda: [i.id for i in cache.get_instances()] == ["q"], SOON)
            (left,) = children(zk, f"{base}/billing")
            zk.delete(f"{base}/billing/{left}")
            eventually(lambda: cache.get_instances() == [], SOON)


def test_java_caches_balances_and_lists_what_python_registers_of_every_type_and_leaves_it_be(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    registered = [instance(key, service_type=kind) for key, kind in TYPES.items()]
    other = ServiceInstance("audit", id="a-1", port=7000, registration_time_utc=1)
    with python(zk, base) as service, java(curator_factory(), base) as found:
        for one in [*registered, other]:
            service.register_service(one)
        assert found.query_for_names() == ["audit", "billing"]
        java_cache = found.service_cache("billing").start()
        assert java_cache.wait_for(lambda held: by_id(held) == by_id(registered), SOON)
        with java_provider(found, "billing") as provider:
            picks = {found.from_java(provider.getInstance()) for _ in range(8)}
            assert by_id(list(picks)) == by_id(registered)
        for one in registered:  # not Java's: Curator's unregister does nothing
            found.unregister(one)
        assert by_id(found.query_for_instances("billing")) == by_id(registered)
    # Python's close unregistered every instance, the sequential one by its real name
    assert children(zk, f"{base}/billing") == []
    assert children(zk, f"{base}/audit") == []


def test_updates_each_way_move_a_sticky_provider_and_enabled_false_drains_an_instance(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Curator's sticky strategy keeps an instance while the list holds one equal to it: an
    update by its owner (Java or Python) is a new instance, and the master picks again; an
    instance updated to ``enabled=false`` (written outside compatible mode) is left out by
    both languages' providers."""
    base = f"{zk_path}/services"
    with (
        java(curator_factory(), base, compatible=False) as service,
        python(zk, base, compatible=False) as mine,
    ):
        service.register(instance("j-1"))
        mine.register_service(instance("p-1"))
        sticky = StickyStrategy(RoundRobinStrategy())
        with mine.service_provider("billing", strategy=sticky) as provider:
            eventually(lambda: len(provider.get_all_instances()) == 2, SOON)
            first = provider.get_instance()
            assert first is not None and [provider.get_instance() for _ in range(3)] == [first] * 3
            assert sticky.instance_number == 0
            owner_update = instance(first.id, port=9090)
            if first.id == "j-1":
                service.update(owner_update)
            else:
                mine.update_service(owner_update)
            eventually(lambda: owner_update in provider.get_all_instances(), SOON)
            again = provider.get_instance()
            assert sticky.instance_number == 1 and again is not None
            with java_provider(service, "billing") as theirs:
                eventually(lambda: len(theirs.getAllInstances()) == 2, SOON)
                service.update(instance("j-1", enabled=False))
                mine.update_service(instance("p-1", port=9191))
                eventually(
                    lambda: provider.get_all_instances() == [instance("p-1", port=9191)], SOON
                )
                eventually(
                    lambda: (
                        [found_java(service, i) for i in theirs.getAllInstances()]
                        == [instance("p-1", port=9191)]
                    ),
                    SOON,
                )
                assert provider.get_instance() == instance("p-1", port=9191)
                mine.update_service(instance("p-1", enabled=False))
                eventually(lambda: theirs.getAllInstances().isEmpty(), SOON)
                eventually(lambda: provider.get_instance() is None, SOON)


def found_java(service: JavaServiceDiscovery, java_instance: Any) -> ServiceInstance:
    return service.from_java(java_instance)


def test_a_payload_of_a_class_python_does_not_know_crosses_and_comes_back_as_java_wrote_it(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Java registers an instance whose payload is a class the Python side has no class for:
    Python reads it raw (``@class`` kept), registers it again elsewhere, and Java reads back
    the very instance it wrote; the node's bytes are Java's."""
    original = instance("j-1", payload=Details("eu-1", 8443, ["x", "y"]))
    with java(curator_factory(), f"{zk_path}/java") as service:
        service.register(original)
        plain = ServiceDiscovery(zk, f"{zk_path}/java")  # no payload classes
        with plain:
            (read,) = plain.query_for_instances("billing")
        assert isinstance(read.payload, RawPayload)
        assert read.payload.java_class == Details.java_class  # type: ignore[attr-defined]
        javas, _ = zk.get(f"{zk_path}/java/billing/j-1")
        with ServiceDiscovery(zk, f"{zk_path}/python") as again:
            again.register_service(read)
            pythons, _ = zk.get(f"{zk_path}/python/billing/j-1")
            assert pythons == javas
            with java(curator_factory(), f"{zk_path}/python") as reader:
                assert reader.query_for_instance("billing", "j-1") == original
        service.unregister(original)


def test_java_watching_its_instance_and_python_taking_it_over_share_one_node(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """A Python service takes over the id a Java one registered with ``watchInstances``
    (Curator's register: delete and make again); Java's later ``updateService`` writes that
    node, and Python, watching its instances too, takes the data as its instance; one node,
    Python's, throughout, and Python's close removes it."""
    base = f"{zk_path}/services"
    path = f"{base}/billing/id-1"
    client = zk_client_factory()
    with java(curator_factory(), base, watch=True) as theirs:
        theirs.register(instance(port=8080))
        with python(client, base, watch=True) as mine:
            mine.register_service(instance(port=9090))
            _, stat = zk.get(path)
            assert stat.ephemeralOwner == client.client_id[0]
            theirs.update(instance(port=7070))
            eventually(lambda: mine.registered == [instance(port=7070)], SOON, what="adopted")
            assert children(zk, f"{base}/billing") == ["id-1"]
            assert zk.exists(path).czxid == stat.czxid
        assert children(zk, f"{base}/billing") == []


def test_java_taking_over_an_instance_python_holds_keeps_it_as_the_last_registrar(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """The reverse, as a Java service replacing a Python one under the same id: Curator's
    register deletes Python's node and makes its own; Python, which hears its node go, leaves
    Java's be (made again at once, it would have taken the id back from the last registrar,
    and Java's register would have returned with no node of its own), and its close leaves
    Java's node too."""
    base = f"{zk_path}/services"
    path = f"{base}/billing/id-1"
    client = zk_client_factory()
    with java(curator_factory(), base) as theirs:
        with python(client, base) as mine:
            mine.register_service(instance(port=9090))
            theirs.register(instance(port=8080))
            _, stat = zk.get(path)
            assert stat.ephemeralOwner != client.client_id[0]
            eventually(
                lambda: mine.query_for_instance("billing", "id-1") == instance(port=8080),
                SOON,
                what="Java's instance read by Python",
            )
            time.sleep(4 * REMADE_AFTER)  # well past the time Python's would be made again
            assert zk.exists(path) == stat  # not taken back
        assert zk.exists(path) == stat  # left at Python's close
        assert theirs.query_for_instance("billing", "id-1") == instance(port=8080)
        theirs.unregister(instance(port=8080))
    assert children(zk, f"{base}/billing") == []


def test_an_expired_python_session_takes_its_dynamic_instances_from_javas_cache_and_back_once(
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """Python registers a DYNAMIC, a DYNAMIC_SEQUENTIAL and a STATIC instance; its session
    expires: Java's cache loses the two dynamic ones and keeps the static one, then holds all
    three again once Python is back, the sequential one on one new node (no duplicate)."""
    base = f"{zk_path}/services"
    kinds = [ServiceType.DYNAMIC, ServiceType.DYNAMIC_SEQUENTIAL, ServiceType.STATIC]
    registered = [instance(kind.value.lower(), service_type=kind) for kind in kinds]
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    with python(client, base) as service, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        for one in registered:
            service.register_service(one)
        assert cache.wait_for(lambda held: by_id(held) == by_id(registered), SOON)
        before = children(zk, f"{base}/billing")
        session, password = client.client_id
        front.blackhole()
        front.drop_connections()
        expire_session(zk_server.hosts, session, password)
        static = [registered[2]]
        assert cache.wait_for(lambda held: held == static, SOON)
        front.heal()
        assert cache.wait_for(lambda held: by_id(held) == by_id(registered), SOON)
        after = children(zk, f"{base}/billing")
        assert len(after) == 3 and set(after) & set(before) == {"dynamic", "static"}
        assert by_id(found.query_for_instances("billing")) == by_id(registered)


def test_bad_input_is_refused_by_name_and_leaves_no_node_for_java_to_find(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """What Java's builder takes and Curator registers (a port of 70000), read by Python
    from Java's node as Java reads it, is refused when Python registers it, naming the field,
    and nothing is written."""
    base = f"{zk_path}/services"
    built = (
        discovery_class("ServiceInstance")
        .builder()
        .name("billing")
        .id("wide")
        .address("10.0.0.5")
        .port(70000)
        .build()
    )
    with java(curator_factory(), f"{zk_path}/java") as theirs, python(zk, base) as mine:
        theirs.java.registerService(built)
        (wide,) = python(zk, f"{zk_path}/java").query_for_instances("billing")
        assert wide.port == 70000  # read as Java reads it
        with pytest.raises(InvalidServiceInstance, match="port"):
            mine.register_service(wide)
        assert mine.registered == []
        assert children(zk, base) == [] and theirs.query_for_names() == ["billing"]
        theirs.java.unregisterService(built)
