"""Service discovery scenarios across Java and Python's asyncio front end and command line, on
a real ZooKeeper and the Curator of this run (Debian's 5.4, or 5.9 with ``./dev newest``):
each service type registered, updated and unregistered by ``pycurator.aio.discovery`` and
cached by Java, and the reverse with asyncio caches, listeners and providers; an expiry of the
asyncio client; ``watch_instances``; ``close()`` and a cancelled call; ``pycurator register``
seen by Java's ``queryForInstances`` exactly while its command runs, and ``pycurator services``
listing what Java registers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient

from pycurator.aio import discovery as aio
from pycurator.discovery import (
    DownInstancePolicy,
    JsonInstanceSerializer,
    RandomStrategy,
    RoundRobinStrategy,
    ServiceInstance,
    ServiceType,
    SpringZookeeperInstance,
    StickyStrategy,
)
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    CuratorFactory,
    FaultProxy,
    JavaServiceCache,
    JavaServiceDiscovery,
    children,
    eventually,
    expire_session,
)
from pycurator.testing._helpers import steady
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.cli_support import ends_within, python_command, run_cli, start_cli
from tests.support import SOON, Worker

from .test_discovery_interop import CLASSES, instance

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")

T = TypeVar("T")

TYPES = {
    "d": ServiceType.DYNAMIC,
    "s": ServiceType.STATIC,
    "p": ServiceType.PERMANENT,
    "q": ServiceType.DYNAMIC_SEQUENTIAL,
}


def run(coroutine: Awaitable[T]) -> T:
    """Run a scenario on a fresh loop, failing it after a generous bound."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, 4 * SOON)

    return asyncio.run(bounded())


def python(client: KazooClient, base: str, *, watch: bool = False) -> aio.ServiceDiscovery:
    serializer = JsonInstanceSerializer(payload_classes=CLASSES)
    return aio.ServiceDiscovery(client, base, serializer=serializer, watch_instances=watch)


def java(
    curator: Any, base: str, *, watch: bool = False, compatible: bool = True
) -> JavaServiceDiscovery:
    return JavaServiceDiscovery(
        curator, base, payload_classes=CLASSES, watch_instances=watch, compatible=compatible
    )


def by_id(instances: list[ServiceInstance]) -> list[ServiceInstance]:
    return sorted(instances, key=lambda i: i.id)


async def java_sees(
    cache: JavaServiceCache, condition: Callable[[list[ServiceInstance]], bool]
) -> None:
    """Wait, off the loop, until Java's cache holds what ``condition`` asks."""
    assert await asyncio.to_thread(cache.wait_for, condition, SOON), cache.instances()


async def settled(cache: JavaServiceCache) -> int:
    """Java's cache's count of changes once it stays the same for half a second: Curator
    updates what its cache holds before it tells its listeners."""
    return await asyncio.to_thread(steady, lambda: cache.changes)


async def until(condition: Callable[[], bool], what: str) -> None:
    await asyncio.to_thread(eventually, condition, SOON, what)


class Told:
    """An asyncio service cache listener (``async def``) counting its calls and the states."""

    def __init__(self) -> None:
        self.changes = 0
        self.states: list[str] = []
        self.changed = asyncio.Event()

    async def cache_changed(self) -> None:
        await asyncio.sleep(0)
        self.changes += 1
        self.changed.set()

    def state_changed(self, client: Any, state: str) -> None:
        self.states.append(str(state))

    async def one_change(self) -> None:
        """Exactly one call comes, and no second one within a short bound."""
        await asyncio.wait_for(self.changed.wait(), SOON)
        await asyncio.sleep(0.3)  # a duplicate would have come by now
        assert self.changes == 1, self.changes
        self.changes = 0
        self.changed.clear()


def test_java_caches_and_balances_what_asyncio_registers_updates_and_unregisters_by_type(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    base = f"{zk_path}/services"
    registered = [instance(key, service_type=kind) for key, kind in TYPES.items()]

    async def main() -> None:
        with java(curator_factory(), base) as found:
            cache = found.service_cache("billing").start()
            async with python(zk, base) as mine:
                for one in registered:
                    await mine.register_service(one)
                await java_sees(cache, lambda held: by_id(held) == by_id(registered))
                assert by_id(found.query_for_instances("billing")) == by_id(registered)
                provider = found.java.serviceProviderBuilder().serviceName("billing").build()
                provider.start()
                try:
                    picks = {found.from_java(provider.getInstance()) for _ in range(8)}
                    assert by_id(list(picks)) == by_id(registered)
                finally:
                    provider.close()
                updated = [instance(one.id, service_type=one.service_type, port=9090)
                           for one in registered]  # fmt: skip
                for one in updated:
                    await mine.update_service(one)
                await java_sees(cache, lambda held: by_id(held) == by_id(updated))
                seq = [n for n in children(zk, f"{base}/billing") if n.startswith("q")]
                assert len(seq) == 1  # updated in place, by its real name
                for one in registered:  # not Java's: Curator's unregister does nothing
                    found.unregister(one)
                await mine.unregister_service(registered[0])
                await mine.unregister_service(registered[3])
                await java_sees(cache, lambda held: by_id(held) == by_id(updated[1:3]))
            # close unregistered the static and permanent ones too
            await java_sees(cache, lambda held: held == [])
            assert children(zk, f"{base}/billing") == []

    run(main())


def test_asyncio_caches_lists_and_balances_what_java_registers_with_one_call_per_change(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """An asyncio cache's ``async def`` listener is told each Java register, update and
    unregister once; the providers' strategies and ``note_error`` pick among Java's
    instances as Curator's do."""
    base = f"{zk_path}/services"
    registered = [instance(key, service_type=kind) for key, kind in TYPES.items()]

    async def main() -> None:
        with java(curator_factory(), base) as service:
            for one in registered[:3]:
                service.register(one)
            async with python(zk, base) as mine:
                told = Told()
                async with mine.service_cache("billing") as cache:
                    cache.add_listener(told)
                    assert by_id(cache.get_instances()) == by_id(registered[:3])
                    service.register(registered[3])
                    await told.one_change()
                    assert by_id(cache.get_instances()) == by_id(registered)
                    service.update(instance("d", port=9090))
                    await told.one_change()
                    assert instance("d", port=9090) in cache.get_instances()
                    service.unregister(registered[0])
                    await told.one_change()
                    assert len(cache.get_instances()) == 3
                    assert await mine.query_for_names() == ["billing"]
                    queried = await mine.query_for_instances("billing")
                    assert by_id(queried) == by_id(cache.get_instances())
                    seq = registered[3]
                    (node,) = [n for n in children(zk, f"{base}/billing") if n.startswith("q")]
                    assert await mine.query_for_instance("billing", node) == seq
                    present = by_id(cache.get_instances())
                    round_robin = mine.service_provider("billing", strategy=RoundRobinStrategy())
                    sticky = StickyStrategy(RandomStrategy())
                    policy = DownInstancePolicy(timeout=30.0, error_threshold=2)
                    async with (
                        round_robin,
                        mine.service_provider("billing", strategy=sticky) as stuck,
                        mine.service_provider("billing", down_instance_policy=policy) as down,
                    ):
                        cycle = [round_robin.get_instance() for _ in range(6)]
                        assert cycle[:3] == cycle[3:] and by_id(cycle[:3]) == present  # type: ignore[arg-type]
                        first = stuck.get_instance()
                        assert [stuck.get_instance() for _ in range(4)] == [first] * 4
                        victim = present[0]
                        down.note_error(victim)
                        assert victim in down.get_all_instances()
                        down.note_error(victim)
                        assert victim not in down.get_all_instances()
                        assert {down.get_instance() for _ in range(6)} == set(present[1:])
                    assert told.changes == 0 and told.states == []
                service.unregister(registered[1])
                service.unregister(registered[2])
            # Curator forgets a sequential node's name: its unregister leaves it (pinned)
            for name in children(zk, f"{base}/billing"):
                zk.delete(f"{base}/billing/{name}")

    run(main())


def test_an_expired_asyncio_session_takes_its_dynamic_instances_from_java_and_back_once(
    front: FaultProxy,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """The asyncio client's session expires: Java's cache loses its DYNAMIC and
    DYNAMIC_SEQUENTIAL instances and keeps the STATIC one, then holds the three again, once
    each; the asyncio cache of a Java service is told LOST and reads it again. A reconnect
    within the session leaves every node as it is: Java's cache hears nothing."""
    base = f"{zk_path}/services"
    kinds = [ServiceType.DYNAMIC, ServiceType.DYNAMIC_SEQUENTIAL, ServiceType.STATIC]
    registered = [instance(kind.value.lower(), service_type=kind) for kind in kinds]
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    javas = ServiceInstance("audit", id="a-1", port=7000, registration_time_utc=1)

    async def main() -> None:
        with java(curator_factory(), base) as found:
            found.register(javas)
            cache = found.service_cache("billing").start()
            async with python(client, base) as service:
                told = Told()
                async with service.service_cache("audit") as audit:
                    audit.add_listener(told)
                    for one in registered:
                        await service.register_service(one)
                    await java_sees(cache, lambda held: by_id(held) == by_id(registered))
                    before = children(zk, f"{base}/billing")
                    changes, session = await settled(cache), client.client_id[0]
                    front.drop_connections()  # a reconnect within the session: nodes left be
                    await until(lambda: "CONNECTED" in told.states, "told connected again")
                    await asyncio.sleep(0.5)  # a node made again would be told by now
                    assert cache.changes == changes and client.client_id[0] == session
                    assert children(zk, f"{base}/billing") == before
                    told.states.clear()
                    session, password = client.client_id
                    front.blackhole()
                    front.drop_connections()
                    await asyncio.to_thread(expire_session, zk_server.hosts, session, password)
                    await java_sees(cache, lambda held: held == [registered[2]])
                    front.heal()
                    await java_sees(cache, lambda held: by_id(held) == by_id(registered))
                    after = children(zk, f"{base}/billing")
                    assert len(after) == 3 and set(after) & set(before) == {"dynamic", "static"}
                    await until(lambda: "CONNECTED" in told.states, "told connected again")
                    assert "LOST" in told.states and audit.get_instances() == [javas]
                    assert told.changes == 0  # Java's instance never left the service
            await java_sees(cache, lambda held: held == [])
            found.unregister(javas)

    run(main())


def test_asyncio_watching_its_instance_adopts_what_java_writes_to_the_node(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """An asyncio service takes over the id a Java one registered with ``watchInstances``;
    Java's ``updateService`` writes that node and the asyncio discovery, watching too, takes
    it as its instance: one node throughout, removed by the asyncio close."""
    base = f"{zk_path}/services"
    path = f"{base}/billing/id-1"
    client = zk_client_factory()

    async def main() -> None:
        with java(curator_factory(), base, watch=True) as theirs:
            theirs.register(instance(port=8080))
            async with python(client, base, watch=True) as mine:
                await mine.register_service(instance(port=9090))
                _, stat = zk.get(path)
                assert stat.ephemeralOwner == client.client_id[0]
                theirs.update(instance(port=7070))
                await until(lambda: mine.registered == [instance(port=7070)], "adopted")
                assert children(zk, f"{base}/billing") == ["id-1"]
                assert zk.exists(path).czxid == stat.czxid
            assert children(zk, f"{base}/billing") == []

    run(main())


def test_close_removes_every_node_and_closes_caches_and_providers_even_when_cancelled(
    front: FaultProxy,
    zk_client_factory: ClientFactory,
    curator_factory: CuratorFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """A register cancelled while the server is out of reach stays registered (as one that
    runs out of time, docs/discovery.md) and is written once it is back; a close cancelled
    while it deletes still removes every node, as Java's cache sees, and leaves the caches and
    providers closed."""
    base = f"{zk_path}/services"
    registered = [instance(f"s-{n}", service_type=ServiceType.STATIC) for n in range(3)]
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)

    async def main() -> None:
        with java(curator_factory(), base) as found:
            cache = found.service_cache("billing").start()
            mine = python(client, base)
            await mine.start()
            await mine.register_service(registered[0])
            front.blackhole()
            pending = asyncio.ensure_future(mine.register_service(registered[1]))
            await asyncio.sleep(0.2)  # sent, held back
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            assert mine.registered == registered[:2]
            front.heal()
            await java_sees(cache, lambda held: by_id(held) == registered[:2])
            await mine.register_service(registered[2])
            service_cache = mine.service_cache("billing")
            provider = mine.service_provider("billing")
            await service_cache.start()
            await provider.start()
            await java_sees(cache, lambda held: by_id(held) == registered)
            front.blackhole()
            closing = asyncio.ensure_future(mine.close())
            await asyncio.sleep(0.2)  # the first delete sent, held back
            closing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await closing
            front.heal()
            await java_sees(cache, lambda held: held == [])
            assert "closed" in repr(service_cache) and "closed" in repr(provider)
            assert mine.registered == []
            await mine.close()  # again: nothing more

    run(main())


# -- the command line ----------------------------------------------------------------------------

#: The command: prints its instance's id, then waits for ever.
PRINT_ID_THEN_SLEEP = (
    "import os, time; print(os.environ['PYCURATOR_SERVICE_ID'], flush=True); time.sleep(60)"
)
PAYLOAD = '{"zone": "eu-1", "weights": [1, 2], "big": 1099511627776, "on": true, "none": null}'


def first_line(process: Any) -> str:
    reader = Worker(process.stdout.readline)
    reader.start()
    line: str = reader.outcome(SOON)
    return line.strip()


@contextlib.contextmanager
def registering(hosts: str, base: str, *options: str) -> Iterator[tuple[Any, str]]:
    process = start_cli(
        "register", "--hosts", hosts, "--base", base, "--session-timeout", "4", "billing",
        "--port", "8080", "--address", "10.0.0.9", *options, "--",
        *python_command(PRINT_ID_THEN_SLEEP),
    )  # fmt: skip
    try:
        yield process, first_line(process)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=SOON)


@pytest.mark.parametrize("ending", ["exit", "SIGTERM", "SIGKILL"])
def test_java_finds_what_register_keeps_exactly_while_its_command_runs(
    ending: str, curator_factory: CuratorFactory, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    with (
        java(curator_factory(), zk_path) as found,
        registering(zk_server.hosts, zk_path, "--payload", PAYLOAD) as (process, instance_id),
    ):
        cache = found.service_cache("billing").start()
        (java_one,) = found.java.queryForInstances("billing")
        assert str(java_one.getId()) == instance_id and int(java_one.getPort()) == 8080
        assert str(java_one.getAddress()) == "10.0.0.9"
        assert str(java_one.getServiceType().name()) == "DYNAMIC"
        payload = java_one.getPayload()
        assert str(payload.getClass().getName()) == "java.util.LinkedHashMap"
        assert str(payload.get("zone")) == "eu-1" and int(payload.get("weights").get(1)) == 2
        assert str(payload.get("big").getClass().getName()) == "java.lang.Long"
        assert bool(payload.get("on")) and payload.get("none") is None
        assert cache.instances()[0].id == instance_id
        (command,) = process_children(process.pid)
        if ending == "exit":
            os.kill(command, signal.SIGTERM)  # the command ends on its own
        else:
            process.send_signal(getattr(signal, ending))
        process.wait(SOON)
        assert ends_within(command, SOON)
        assert cache.wait_for(lambda held: held == [], SOON)  # within the session timeout
        assert list(found.java.queryForInstances("billing")) == []


def test_a_spring_payload_given_to_register_is_read_by_java_as_its_class(
    curator_factory: CuratorFactory, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    spring = SpringZookeeperInstance("app-7", "billing", {"zone": "eu-1"})
    payload = json.dumps({"@class": spring.java_class, "id": "app-7", "name": "billing",
                          "metadata": {"zone": "eu-1"}})  # fmt: skip
    with (
        java(curator_factory(), zk_path) as found,
        registering(zk_server.hosts, zk_path, "--payload", payload) as (process, instance_id),
    ):
        (java_one,) = found.java.queryForInstances("billing")
        assert str(java_one.getPayload().getClass().getName()) == spring.java_class
        assert found.from_java(java_one).payload == spring
        assert found.from_java(java_one).id == instance_id
        process.send_signal(signal.SIGTERM)
        process.wait(SOON)
        assert list(found.java.queryForInstances("billing")) == []  # unregistered at once


def process_children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as listed:
        return [int(child) for child in listed.read().split()]


def test_services_lists_what_java_registers_with_its_exact_fields(
    curator_factory: CuratorFactory, zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    spring = instance("j-1", ssl_port=8443)
    with java(curator_factory(), zk_path) as service:
        service.register(spring)
        service.register(ServiceInstance("audit", id="a-1", port=7000, registration_time_utc=5))
        names = run_cli("services", "--hosts", zk_server.hosts, "--base", zk_path)
        assert names.stdout.splitlines() == ["NAME     INSTANCES", "audit    1", "billing  1"]
        listed = run_cli(
            "services", "--hosts", zk_server.hosts, "--base", zk_path, "billing", "--json"
        )
        (shown,) = json.loads(listed.stdout)["instances"]
        written = json.loads(zk.get(f"{zk_path}/billing/j-1")[0])
        assert {k: v for k, v in shown.items() if k not in ("uri", "enabled")} == written
        assert shown["enabled"] is True and shown["uri"] == "https://10.0.0.5:8080"
        assert list(shown)[: len(written)] == list(written)  # Jackson's field order
        service.unregister(spring)
        service.unregister(ServiceInstance("audit", id="a-1", port=7000, registration_time_utc=5))
    with java(curator_factory(), zk_path, compatible=False) as service:
        drained = instance("j-2", enabled=False, service_type=ServiceType.STATIC)
        service.register(drained)
        listed = run_cli(
            "services", "--hosts", zk_server.hosts, "--base", zk_path, "billing", "--json"
        )
        (shown,) = json.loads(listed.stdout)["instances"]
        written = json.loads(zk.get(f"{zk_path}/billing/j-2")[0])
        assert {k: v for k, v in shown.items() if k != "uri"} == written
        assert shown["enabled"] is False and shown["serviceType"] == "STATIC"
        table = run_cli("services", "--hosts", zk_server.hosts, "--base", zk_path, "billing")
        assert table.stdout.splitlines()[1].split()[4:6] == ["STATIC", "no"]
        service.unregister(drained)


def test_services_watch_prints_each_java_change_once(
    curator_factory: CuratorFactory, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    options = ("--hosts", zk_server.hosts, "--base", zk_path, "billing", "--watch", "--json")
    with java(curator_factory(), zk_path) as service:
        service.register(instance("j-1"))
        process = start_cli("services", *options)
        try:
            docs = [json.loads(first_line(process))]
            service.update(instance("j-1", port=9090))
            docs.append(json.loads(first_line(process)))
            service.unregister(instance("j-1"))
            docs.append(json.loads(first_line(process)))
            ports = [[i["port"] for i in doc["instances"]] for doc in docs]
            assert ports == [[8080], [9090], []]
            time.sleep(0.5)  # no print more
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=SOON)
            assert (process.returncode, out, err) == (0, "", "")
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=SOON)
