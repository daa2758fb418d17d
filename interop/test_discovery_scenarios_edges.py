"""Service discovery scenarios at the edges, across Java and Python on a real ZooKeeper, each
compared with what Java's curator-x-discovery does in the same case on the Curator of this run
(Debian's 5.4, or 5.9 with ``./dev newest``): a sticky provider moving off an instance noted
down and staying where it moved, as Curator's; a sequential instance through an expiry, then
updated and unregistered, seen by Java's cache on its one node; an unregister during an outage,
twice, staying done through a reconnect and through an expiry (CURATOR-164, -617); a node that
is, or becomes, no instance beside good ones, in both languages' caches and providers; the
unregister during an outage from asyncio too."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator._recipes.registration_nodes import REMADE_AFTER
from pycurator.aio import discovery as aio
from pycurator.discovery import (
    DownInstancePolicy,
    InstanceFormatError,
    JsonInstanceSerializer,
    RoundRobinStrategy,
    ServiceInstance,
    ServiceType,
    StickyStrategy,
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
    jclass,
)
from pycurator.testing._helpers import steady
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON

from .test_discovery_interop import CLASSES, instance
from .test_discovery_scenarios import java, python
from .test_discovery_scenarios_aio import java_sees, run, until
from .test_discovery_scenarios_more import by_id

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")


def plain(key: str, **changes: Any) -> ServiceInstance:
    """An instance without a payload: Java's ``equals`` then compares it field by field, as
    Python's does (the tests' payload classes have none), so Curator's provider knows it by
    value."""
    return instance(key, payload=None, **changes)


@contextlib.contextmanager
def java_sticky_provider(
    service: JavaServiceDiscovery, name: str, seconds: int, errors: int
) -> Iterator[Any]:
    """Curator's provider of ``name``: sticky over round robin, down after ``errors`` errors
    for ``seconds``; started, closed after."""
    strategies = "strategies.StickyStrategy", "strategies.RoundRobinStrategy"
    strategy = discovery_class(strategies[0])(discovery_class(strategies[1])())
    policy = discovery_class("DownInstancePolicy")(
        seconds, jclass("java.util.concurrent.TimeUnit").SECONDS, errors
    )
    provider = (
        service.java.serviceProviderBuilder()
        .serviceName(name)
        .providerStrategy(strategy)
        .downInstancePolicy(policy)
        .build()
    )
    provider.start()
    try:
        yield provider, strategy
    finally:
        provider.close()


def test_a_sticky_provider_moves_off_an_instance_noted_down_and_stays_where_it_moved(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Both providers (sticky over round robin, down after one error for 2 s) of the same
    three instances, two Java's and one Python's, told of the same errors: both stick to the
    same instance, move to the same one when it is noted down (the round robin's counter goes
    on from where it was), stay there once the down one is back, and count the same picks."""
    base = f"{zk_path}/services"
    a, b, c = plain("a"), plain("b"), plain("c")
    with java(curator_factory(), base) as service, python(zk, base) as mine:
        service.register(a)
        mine.register_service(b)
        service.register(c)
        sticky = StickyStrategy(RoundRobinStrategy())
        policy = DownInstancePolicy(timeout=2.0, error_threshold=1)
        with (
            java_sticky_provider(service, "billing", 2, 1) as (theirs, java_strategy),
            mine.service_provider("billing", strategy=sticky, down_instance_policy=policy) as ours,
        ):

            def offered() -> tuple[list[str], list[str]]:
                javas = sorted(str(i.getId()) for i in theirs.getAllInstances())
                return [i.id for i in ours.get_all_instances()], javas

            def picks() -> tuple[str | None, str | None]:
                mine_ = ours.get_instance()
                java_ = theirs.getInstance()
                return (
                    None if mine_ is None else mine_.id,
                    None if java_ is None else str(java_.getId()),
                )

            def numbers() -> tuple[int, int]:
                return sticky.instance_number, int(java_strategy.getInstanceNumber())

            def listed(key: str) -> Any:
                """Java's instance as its provider lists it, to note an error of."""
                (one,) = (i for i in theirs.getAllInstances() if str(i.getId()) == key)
                return one

            everything = (["a", "b", "c"], ["a", "b", "c"])
            eventually(lambda: offered() == everything, SOON)
            assert [picks() for _ in range(3)] == [("a", "a")] * 3
            assert numbers() == (0, 0)
            ours.note_error(a)
            theirs.noteError(listed("a"))
            assert offered() == (["b", "c"], ["b", "c"])
            assert [picks() for _ in range(3)] == [("c", "c")] * 3  # counter at 1 of [b, c]
            assert numbers() == (1, 1)
            # back after the timeout (Curator's at its next purge, half a timeout later at most)
            eventually(lambda: offered() == everything, 2.0 + 1.0 + SOON)
            assert [picks() for _ in range(3)] == [("c", "c")] * 3  # still listed: kept
            assert numbers() == (1, 1)
            ours.note_error(c)
            theirs.noteError(listed("c"))
            assert [picks() for _ in range(2)] == [("a", "a")] * 2  # counter at 2 of [a, b]
            assert numbers() == (2, 2)
        service.unregister(a)
        service.unregister(c)
        mine.unregister_service(b)
    assert children(zk, f"{base}/billing") == []


def test_a_sequential_instance_through_an_expiry_is_updated_and_unregistered_on_its_new_node(
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """Python registers a DYNAMIC_SEQUENTIAL instance; its session expires, and the instance
    is registered again on a new sequential node. An update then writes that node (Java's
    cache holds the update, once, and no other node appears), Python finds it by the new
    node's name, and the unregister deletes it: Java's cache is left empty, no node behind.
    (Curator forgets a sequential node's name: its own update and unregister miss it.)"""
    base = f"{zk_path}/services"
    registered = instance("seq", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
    updated = replace(registered, port=9090)
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    with python(client, base) as mine, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        mine.register_service(registered)
        assert cache.wait_for(lambda held: held == [registered], SOON)
        (before,) = children(zk, f"{base}/billing")
        made = zk.exists(f"{base}/billing/{before}")
        session, password = client.client_id
        front.blackhole()
        front.drop_connections()
        expire_session(zk_server.hosts, session, password)
        assert cache.wait_for(lambda held: held == [], SOON)
        front.heal()
        assert cache.wait_for(lambda held: held == [registered], SOON)
        (after,) = children(zk, f"{base}/billing")
        again = zk.exists(f"{base}/billing/{after}")
        # a new node (its name may be the old one's: the emptied parent, a container, may
        # have been reaped and made again, its sequence starting over)
        assert made is not None and again is not None and again.czxid != made.czxid
        changes = steady(lambda: cache.changes)
        mine.update_service(updated)
        assert cache.wait_for(lambda held: held == [updated], SOON)
        assert children(zk, f"{base}/billing") == [after]
        assert mine.query_for_instance("billing", after) == updated
        assert found.query_for_instance("billing", after) == updated
        assert (
            steady(lambda: cache.changes) == changes + 1
        )  # one write, no second one nor a second node
        assert children(zk, f"{base}/billing") == [after]
        mine.unregister_service(updated)
        assert children(zk, f"{base}/billing") == []
        assert cache.wait_for(lambda held: held == [], SOON)
        assert mine.registered == []


@pytest.mark.parametrize("expires", [False, True], ids=["session kept", "session expired"])
def test_an_unregister_during_an_outage_stays_done_for_java_through_the_reconnect(
    expires: bool,
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """Python unregisters a DYNAMIC instance while its server is out of reach, twice (both
    return at once, without error), and keeps a STATIC one. Once the connection is back, in
    the same session or in a new one after an expiry, Java's cache holds the STATIC one only,
    and the unregistered one never comes back: not made again by the reconnect's or the
    expiry's re-registration (CURATOR-164's ghost), not left behind by an unregister that
    failed on the connection loss (CURATOR-617)."""
    base = f"{zk_path}/services"
    dynamic, static = instance("d"), instance("s", service_type=ServiceType.STATIC)
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    with python(client, base) as mine, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        mine.register_service(dynamic)
        mine.register_service(static)
        assert cache.wait_for(lambda held: by_id(held) == [dynamic, static], SOON)
        session, password = client.client_id
        front.blackhole()
        front.drop_connections()
        eventually(lambda: not client.connected, SOON, what="disconnected")
        for _ in range(2):
            began = time.monotonic()
            mine.unregister_service(dynamic)
            assert time.monotonic() - began < 3.0
        assert mine.registered == [static]
        if expires:
            expire_session(zk_server.hosts, session, password)
        front.heal()
        assert cache.wait_for(lambda held: held == [static], SOON)
        eventually(lambda: client.connected, SOON, what="reconnected")
        time.sleep(4 * REMADE_AFTER + 1.0)  # time for a ghost to appear, were there one
        assert cache.instances() == [static]
        assert children(zk, f"{base}/billing") == ["s"]
        assert (client.client_id[0] != session) is expires
        mine.unregister_service(static)
    assert children(zk, f"{base}/billing") == []


#: What an operator or a broken tool leaves in a node: JSON Jackson cannot read as an instance.
GARBAGE = b'{"name":"billing","id":"x","port":"no"}'


def test_a_node_that_is_or_becomes_no_instance_is_left_out_by_both_caches_and_providers(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """A service of a Java instance, a Python one and a node that is no instance: Java's and
    Python's caches and providers hold the two instances (Java's query fails on the node, for
    the whole service; Python's skips it and names it). Made an instance, the node is held by
    both; made no instance again, Python's cache leaves it out and names it, where Curator's
    keeps the instance it held before (its cache throws on the node: documented)."""
    base = f"{zk_path}/services"
    a, b, x = instance("a"), instance("b"), instance("x")
    bad = f"{base}/billing/x"
    reported: list[InstanceFormatError] = []
    with (
        java(curator_factory(), base) as service,
        python(zk, base) as mine,
        contextlib.ExitStack() as stack,
    ):
        mine.on_malformed(reported.append)
        service.register(a)
        mine.register_service(b)
        zk.create(bad, GARBAGE)
        with pytest.raises(Exception, match='"no"'):
            service.java.queryForInstances("billing")
        assert mine.query_for_instances("billing") == [a, b]
        assert reported and reported[-1].path == bad
        theirs = service.service_cache("billing").start()
        stack.callback(theirs.close)
        ours = stack.enter_context(mine.service_cache("billing"))
        java_provider = service.java.serviceProviderBuilder().serviceName("billing").build()
        java_provider.start()
        stack.callback(java_provider.close)
        provider = stack.enter_context(mine.service_provider("billing"))
        assert theirs.wait_for(lambda held: by_id(held) == [a, b], SOON)
        assert ours.get_instances() == [a, b]
        assert [e.path for e in ours.malformed()] == [bad]
        eventually(
            lambda: sorted(str(i.getId()) for i in java_provider.getAllInstances()) == ["a", "b"],
            SOON,
        )
        assert provider.get_all_instances() == [a, b]
        zk.set(bad, JsonInstanceSerializer().serialize(x))
        assert theirs.wait_for(lambda held: by_id(held) == [a, b, x], SOON)
        eventually(lambda: ours.get_instances() == [a, b, x], SOON)
        assert ours.malformed() == []
        eventually(lambda: provider.get_all_instances() == [a, b, x], SOON)  # its own cache
        changes = steady(lambda: theirs.changes)
        zk.set(bad, GARBAGE)
        eventually(lambda: ours.get_instances() == [a, b], SOON)
        assert [e.path for e in ours.malformed()] == [bad]
        eventually(lambda: provider.get_all_instances() == [a, b], SOON)
        time.sleep(1.0)  # Curator's cache has heard the change by now: it keeps x, untold
        assert by_id(theirs.instances()) == [a, b, x]
        assert theirs.changes == changes
        zk.delete(bad)
        assert theirs.wait_for(lambda held: by_id(held) == [a, b], SOON)
        eventually(lambda: ours.malformed() == [], SOON)
        service.unregister(a)
        mine.unregister_service(b)


def test_an_asyncio_unregister_during_an_outage_stays_done_for_java_after_an_expiry(
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """The same with ``pycurator.aio.discovery``: an unregister awaited while the server is
    out of reach returns at once, twice; the session then expires, and once back, the new
    session registers the STATIC instance's data again but not the unregistered one, which
    Java's cache never sees again."""
    base = f"{zk_path}/services"
    dynamic, static = instance("d"), instance("s", service_type=ServiceType.STATIC)
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)

    async def main() -> None:
        with java(curator_factory(), base) as found:
            cache = found.service_cache("billing").start()
            serializer = JsonInstanceSerializer(payload_classes=CLASSES)
            async with aio.ServiceDiscovery(client, base, serializer=serializer) as mine:
                await mine.register_service(dynamic)
                await mine.register_service(static)
                await java_sees(cache, lambda held: by_id(held) == [dynamic, static])
                session, password = client.client_id
                front.blackhole()
                front.drop_connections()
                await until(lambda: not client.connected, "disconnected")
                for _ in range(2):
                    await asyncio.wait_for(mine.unregister_service(dynamic), 3.0)
                assert mine.registered == [static]
                await asyncio.to_thread(expire_session, zk_server.hosts, session, password)
                front.heal()
                await java_sees(cache, lambda held: held == [static])
                await until(
                    lambda: (now := client.client_id) is not None and now[0] != session, "anew"
                )
                await asyncio.sleep(4 * REMADE_AFTER + 1.0)  # a ghost would be back by now
                assert cache.instances() == [static]
                assert children(zk, f"{base}/billing") == ["s"]
                await mine.unregister_service(static)
            await java_sees(cache, lambda held: held == [])

    run(main())
