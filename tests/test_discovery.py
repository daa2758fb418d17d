"""``ServiceDiscovery`` on a real ZooKeeper, threads: registering, updating, unregistering and
querying, each node's mode and bytes, a node that is no instance, bad input; and the
registrations kept through expiries and dropped connections (test_discovery_faults.py)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator._recipes.lock_nodes import MAX_NODE_DATA
from pycurator._recipes.registration_nodes import REMADE_AFTER
from pycurator.discovery import (
    InstanceFormatError,
    InvalidServiceInstance,
    JsonInstanceSerializer,
    PayloadTypeError,
    ServiceDiscovery,
    ServiceInstance,
    ServiceNotRegisteredError,
    ServiceType,
    SpringZookeeperInstance,
)
from pycurator.testing import SOON, children, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def instance(instance_id: str = "id-1", name: str = "billing", **changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {"id": instance_id, "address": "10.0.0.5", "port": 8080}
    return ServiceInstance(name, registration_time_utc=1700000000123, **{**fields, **changes})


@pytest.fixture
def discovery(zk: KazooClient, zk_path: str) -> Iterator[ServiceDiscovery]:
    serializer = JsonInstanceSerializer(payload_classes=[SpringZookeeperInstance])
    with ServiceDiscovery(zk, f"{zk_path}/services", serializer=serializer) as found:
        yield found


def test_a_registered_instance_is_the_node_curator_makes_and_every_query_finds_it(
    discovery: ServiceDiscovery, zk: KazooClient
) -> None:
    payload = SpringZookeeperInstance("app-1", "billing", {"zone": "a"})
    registered = instance(payload=payload)
    discovery.register_service(registered)
    data, stat = zk.get(f"{discovery.base_path}/billing/id-1")
    assert data == JsonInstanceSerializer().serialize(registered)
    assert stat.ephemeralOwner == zk.client_id[0]  # DYNAMIC: ephemeral
    assert discovery.query_for_names() == ["billing"]
    assert discovery.query_for_instances("billing") == [registered]
    assert discovery.query_for_instance("billing", "id-1") == registered
    assert discovery.query_for_instance("billing", "nope") is None
    assert discovery.query_for_instances("nope") == []
    assert discovery.registered == [registered]


def test_the_queries_of_a_base_path_that_does_not_exist_find_nothing(
    zk: KazooClient, zk_path: str
) -> None:
    found = ServiceDiscovery(zk, f"{zk_path}/none")  # queries need no start
    assert found.query_for_names() == []
    assert found.query_for_instances("billing") == []
    assert found.query_for_instance("billing", "id-1") is None


@pytest.mark.parametrize(
    ("kind", "ephemeral"),
    [(ServiceType.STATIC, False), (ServiceType.PERMANENT, False), (ServiceType.DYNAMIC, True)],
)
def test_each_type_makes_its_node_in_curators_mode_and_close_deletes_it(
    zk: KazooClient, zk_path: str, kind: ServiceType, ephemeral: bool
) -> None:
    base = f"{zk_path}/services"
    with ServiceDiscovery(zk, base) as discovery:
        discovery.register_service(instance(service_type=kind))
        stat = zk.exists(f"{base}/billing/id-1")
        assert stat is not None and bool(stat.ephemeralOwner) is ephemeral
    assert children(zk, f"{base}/billing") == []


def test_a_sequential_instance_is_found_updated_and_unregistered_by_its_real_name(
    discovery: ServiceDiscovery, zk: KazooClient
) -> None:
    sequential = instance(service_type=ServiceType.DYNAMIC_SEQUENTIAL)
    discovery.register_service(sequential)
    (name,) = zk.get_children(f"{discovery.base_path}/billing")
    assert name.startswith("id-1") and len(name) == len("id-1") + 10
    updated = instance(service_type=ServiceType.DYNAMIC_SEQUENTIAL, port=9090)
    discovery.update_service(updated)
    assert discovery.query_for_instances("billing") == [updated]
    discovery.unregister_service(updated)
    assert children(zk, f"{discovery.base_path}/billing") == []


def test_an_update_is_written_and_kept_an_unregister_is_done_once(
    discovery: ServiceDiscovery, zk: KazooClient
) -> None:
    discovery.register_service(instance())
    updated = instance(port=9090, ssl_port=8443)
    discovery.update_service(updated)
    assert discovery.query_for_instance("billing", "id-1") == updated
    assert discovery.registered == [updated]
    discovery.unregister_service(updated)
    discovery.unregister_service(updated)  # again: nothing, no error
    assert discovery.query_for_instances("billing") == []
    with pytest.raises(ServiceNotRegisteredError, match="billing/id-1"):
        discovery.update_service(updated)


def test_registering_an_instance_again_takes_over_a_node_of_another_session(
    discovery: ServiceDiscovery, zk: KazooClient, zk_client_factory: Any
) -> None:
    other = zk_client_factory()
    path = f"{discovery.base_path}/billing/id-1"
    other.create(path, b"stale", ephemeral=True, makepath=True)
    discovery.register_service(instance())
    data, stat = zk.get(path)
    assert stat.ephemeralOwner == zk.client_id[0] and data != b"stale"


def test_a_node_that_is_no_instance_is_skipped_logged_and_told(
    discovery: ServiceDiscovery, zk: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    discovery.register_service(instance())
    bad = f"{discovery.base_path}/billing/bad"
    zk.create(bad, b'{"name":"billing","port":"x"}')
    told: list[InstanceFormatError] = []
    discovery.on_malformed(told.append)
    with caplog.at_level(logging.WARNING, logger="pycurator"):
        assert discovery.query_for_instances("billing") == [instance()]
    assert [error.path for error in told] == [bad]
    assert "port" in told[0].reason and bad in caplog.text
    with pytest.raises(InstanceFormatError, match="bad"):
        discovery.query_for_instance("billing", "bad")
    zk.delete(bad)


def test_a_failing_on_malformed_callback_is_logged_and_the_query_goes_on(
    discovery: ServiceDiscovery, zk: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    zk.create(f"{discovery.base_path}/billing/bad", b"not json", makepath=True)

    def fails(error: InstanceFormatError) -> None:
        raise RuntimeError("boom")

    discovery.on_malformed(fails)
    assert discovery.query_for_instances("billing") == []
    assert "on_malformed callback failed" in caplog.text
    zk.delete(f"{discovery.base_path}/billing/bad")


def test_bad_input_is_refused_before_anything_is_written(
    zk: KazooClient, zk_path: str, discovery: ServiceDiscovery
) -> None:
    with pytest.raises(ValueError, match="Path must not end"):
        ServiceDiscovery(zk, f"{zk_path}/")
    with pytest.raises(TypeError, match="serialize"):
        ServiceDiscovery(zk, zk_path, serializer=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"service name 'a/b' contains '/'"):
        discovery.query_for_instances("a/b")
    with pytest.raises(ValueError, match=r"instance id '\.\.'"):
        discovery.query_for_instance("billing", "..")
    with pytest.raises(InvalidServiceInstance, match="port 70000"):
        instance(port=70000)
    with pytest.raises(PayloadTypeError, match="set"):
        discovery.register_service(instance(payload={1, 2}))
    with pytest.raises(PayloadTypeError):
        ServiceDiscovery(zk, zk_path, this_instance=instance(payload=object()))
    # more than a node holds: sent, the server would drop the connection, again and again
    too_big = instance(payload="x" * MAX_NODE_DATA)
    with pytest.raises(
        ValueError, match=r"billing/id-1 is 1048\d{3} bytes; .* at most 104\d{4} at "
    ):
        discovery.register_service(too_big)
    discovery.register_service(instance())
    with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
        discovery.update_service(too_big)
    with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
        ServiceDiscovery(zk, zk_path, this_instance=too_big)
    assert discovery.registered == [instance()]
    discovery.unregister_service(instance())
    assert zk.exists(f"{discovery.base_path}/billing/id-1") is None
    assert discovery.registered == []


def test_the_largest_instance_a_node_takes_is_registered_and_a_byte_more_is_refused(
    zk: KazooClient, discovery: ServiceDiscovery
) -> None:
    """The bound leaves room for the request around the data: an instance at it is written
    (a sequential one too, its path ten digits longer), on a client whose connection never
    drops."""
    states: list[str] = []
    zk.add_listener(states.append)
    with pytest.raises(ValueError, match=r"at most (\d+) at") as caught:
        discovery.register_service(instance(payload="x" * MAX_NODE_DATA))
    found = re.search(r"at most (\d+)", str(caught.value))
    assert found is not None
    most = int(found.group(1))
    for kind in (ServiceType.DYNAMIC, ServiceType.DYNAMIC_SEQUENTIAL):
        framing = len(JsonInstanceSerializer().serialize(instance(payload="", service_type=kind)))
        largest = instance(payload="x" * (most - framing), service_type=kind)
        assert len(JsonInstanceSerializer().serialize(largest)) == most
        discovery.register_service(largest)
        assert discovery.query_for_instances("billing") == [largest]
        with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
            discovery.update_service(
                instance(payload="x" * (most - framing + 1), service_type=kind)
            )
        discovery.unregister_service(largest)
    assert states == []


def test_registering_needs_a_started_discovery_and_start_is_once(
    zk: KazooClient, zk_path: str
) -> None:
    discovery = ServiceDiscovery(zk, f"{zk_path}/services")
    with pytest.raises(RuntimeError, match="not started"):
        discovery.register_service(instance())
    discovery.start()
    with pytest.raises(RuntimeError, match="more than once"):
        discovery.start()
    discovery.close()
    discovery.close()  # again: nothing more
    with pytest.raises(RuntimeError, match="not started, or closed"):
        discovery.register_service(instance())


def test_this_instance_is_registered_at_start(zk: KazooClient, zk_path: str) -> None:
    this = instance()
    with ServiceDiscovery(zk, f"{zk_path}/services", this_instance=this) as discovery:
        assert discovery.this_instance == this
        assert discovery.query_for_instances("billing") == [this]
    assert ServiceDiscovery(zk, f"{zk_path}/services").query_for_instances("billing") == []


def test_with_watch_instances_what_another_writes_to_a_node_is_the_instance(
    zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    with ServiceDiscovery(zk, base, watch_instances=True) as discovery:
        discovery.register_service(instance())
        drained = instance(ssl_port=9443)
        zk.set(f"{base}/billing/id-1", JsonInstanceSerializer().serialize(drained))
        eventually(lambda: discovery.registered == [drained], SOON, what="taken as the instance")
    with ServiceDiscovery(zk, base) as discovery:
        discovery.register_service(instance())
        zk.set(f"{base}/billing/id-1", JsonInstanceSerializer().serialize(drained))
        assert discovery.query_for_instance("billing", "id-1") == drained  # left be
        assert discovery.registered == [instance()]


def test_a_node_another_deletes_and_makes_again_at_once_stays_theirs(
    zk: KazooClient, zk_path: str, zk_client_factory: Any
) -> None:
    """As Curator's register takes an instance's node from another registrar (a delete, then
    its own create): the registrar that hears its node go leaves the new one be, and leaves
    it at its close."""
    base = f"{zk_path}/services"
    path = f"{base}/billing/id-1"
    older, newer = zk_client_factory(), zk_client_factory()
    with ServiceDiscovery(older, base) as leaving:
        leaving.register_service(instance(port=1))
        newer.delete(path)
        time.sleep(REMADE_AFTER / 5)  # a registrar farther away than this client
        data = JsonInstanceSerializer().serialize(instance(port=2))
        newer.create(path, data, ephemeral=True, makepath=True)  # its container may be reaped
        time.sleep(4 * REMADE_AFTER)  # well past the time ours would be made again
        assert zk.exists(path).ephemeralOwner == newer.client_id[0]
        assert leaving.query_for_instance("billing", "id-1") == instance(port=2)
    assert zk.exists(path).ephemeralOwner == newer.client_id[0]
    newer.delete(path)


def test_two_registrars_of_one_instance_leave_it_to_the_last_and_do_not_take_it_back(
    zk: KazooClient, zk_path: str, zk_client_factory: Any
) -> None:
    """A rolling restart registers one id from two processes: the later takes the node, as
    Curator's register does; the earlier, which hears its node go, leaves the new owner's node
    be (it does not take it back, which the later would answer in kind, for ever), takes its
    data as the instance under ``watch_instances``, and does not delete it at its close."""
    base = f"{zk_path}/services"
    path = f"{base}/billing/id-1"
    older, newer = zk_client_factory(), zk_client_factory()
    with ServiceDiscovery(older, base, watch_instances=True) as leaving:
        leaving.register_service(instance(port=1))
        with ServiceDiscovery(newer, base) as starting:
            starting.register_service(instance(port=2))
            eventually(lambda: leaving.registered == [instance(port=2)], SOON, what="adopted")
            starting.update_service(instance(port=3))
            eventually(lambda: leaving.registered == [instance(port=3)], SOON, what="adopted")
            _, stat = zk.get(path)
            assert stat.ephemeralOwner == newer.client_id[0]
            leaving.close()
            assert zk.exists(path) == stat
            assert JsonInstanceSerializer().deserialize(zk.get(path)[0]) == instance(port=3)
