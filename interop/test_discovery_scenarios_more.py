"""More service discovery scenarios across Java and Python on a real ZooKeeper, each
compared with what Java's curator-x-discovery does in the same case on the Curator of this
run (Debian's 5.4, or 5.9 with ``./dev newest``): a sequential instance found by its node's
name, a missing one found by neither; services without instances listed alike; updates of
every type seen by Java's cache; each side's close and session end; a down instance left out
by both providers alike; one id in two services; an update putting an instance back over an
operator's write. (The values, without ZooKeeper: test_discovery_values_interop.py.)"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator.discovery import (
    DownInstancePolicy,
    JsonInstanceSerializer,
    ServiceInstance,
    ServiceNotRegisteredError,
    ServiceType,
)
from pycurator.testing import (
    ClientFactory,
    CuratorFactory,
    JavaServiceDiscovery,
    children,
    discovery_class,
    eventually,
    jclass,
    to_java_instance,
)
from tests.support import SOON

from .test_discovery_interop import instance, java, python
from .test_discovery_scenarios import TYPES

pytestmark = pytest.mark.usefixtures("java_payload_classes", "no_orphans")


def by_id(instances: Sequence[ServiceInstance]) -> list[ServiceInstance]:
    return sorted(instances, key=lambda i: i.id)


# -- queries -----------------------------------------------------------------------------------


def test_a_sequential_instance_is_found_by_its_nodes_name_not_its_id_by_both(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Curator's ``queryForInstance(name, id)`` reads the node ``name/id``: a
    DYNAMIC_SEQUENTIAL instance's id finds nothing, its node's name finds it (with the id it
    was given). Python reads the same, whichever side registered it; a missing id or service
    is None and no instances for both."""
    base = f"{zk_path}/services"
    theirs = instance("q", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
    ours = instance("r", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
    with java(curator_factory(), base) as service, python(zk, base) as mine:
        service.register(theirs)
        mine.register_service(ours)
        eventually(lambda: len(children(zk, f"{base}/billing")) == 2, SOON)
        nodes = sorted(children(zk, f"{base}/billing"))
        assert [n[:1] for n in nodes] == ["q", "r"] and all(len(n) == 11 for n in nodes)
        for node, registered in zip(nodes, [theirs, ours], strict=True):
            assert service.query_for_instance("billing", node) == registered
            assert mine.query_for_instance("billing", node) == registered
            assert service.query_for_instance("billing", registered.id) is None
            assert mine.query_for_instance("billing", registered.id) is None
        for name, instance_id in [("billing", "missing"), ("missing", "q")]:
            assert service.query_for_instance(name, instance_id) is None
            assert mine.query_for_instance(name, instance_id) is None
        assert service.query_for_instances("missing") == mine.query_for_instances("missing") == []
        assert by_id(service.query_for_instances("billing")) == [theirs, ours]
        assert mine.query_for_instances("billing") == [theirs, ours]
        service.unregister(theirs)  # Curator's deletes billing/q, which is not its node
        mine.unregister_service(ours)
        assert children(zk, f"{base}/billing") == [nodes[0]]
        zk.delete(f"{base}/billing/{nodes[0]}")


def test_services_without_instances_are_listed_alike(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """A base with nothing under it lists no service on both sides; a service node with no
    instance (a lasting one, as a hand or an older tool makes it) is listed by both; a
    missing base is an empty list here where Curator throws (documented)."""
    base = f"{zk_path}/services"
    zk.ensure_path(base)
    with java(curator_factory(), base) as service, python(zk, base) as mine:
        assert service.query_for_names() == mine.query_for_names() == []
        for name in ("zeta", "alpha", "mid\u00e9"):
            zk.create(f"{base}/{name}")
        assert service.query_for_names() == mine.query_for_names() == ["alpha", "mid\u00e9", "zeta"]
        assert service.query_for_instances("alpha") == mine.query_for_instances("alpha") == []
    gone = f"{zk_path}/nothing"
    with java(curator_factory(), gone) as service, python(zk, gone) as mine:
        with pytest.raises(Exception, match="NoNode"):
            service.java.queryForNames()
        assert mine.query_for_names() == []


# -- registrations -----------------------------------------------------------------------------


def test_python_updates_of_every_type_are_seen_by_javas_cache_and_queries(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Python registers one instance of each type and updates each: Java's cache holds each
    update, on the node the instance was registered at (a sequential one's own). Java's own
    ``updateService`` of its sequential instance writes ``name/id``, which is not its node:
    Curator throws (pinned, the reference for why Python keeps the node's name)."""
    base = f"{zk_path}/services"
    registered = [instance(key, service_type=kind) for key, kind in TYPES.items()]
    updated = [replace(one, port=9000 + n) for n, one in enumerate(registered)]
    with python(zk, base) as mine, java(curator_factory(), base) as found:
        cache = found.service_cache("billing").start()
        for one in registered:
            mine.register_service(one)
        assert cache.wait_for(lambda held: by_id(held) == by_id(registered), SOON)
        nodes = children(zk, f"{base}/billing")
        for one in updated:
            mine.update_service(one)
        assert cache.wait_for(lambda held: by_id(held) == by_id(updated), SOON)
        assert sorted(children(zk, f"{base}/billing")) == sorted(nodes)  # written in place
        assert by_id(found.query_for_instances("billing")) == by_id(updated)
        with java(curator_factory(), f"{zk_path}/java") as theirs:
            sequential = instance("q", service_type=ServiceType.DYNAMIC_SEQUENTIAL)
            theirs.register(sequential)
            with pytest.raises(Exception, match="NoNode"):
                theirs.update(replace(sequential, port=1))
            (left,) = children(zk, f"{zk_path}/java/billing")
        zk.delete(f"{zk_path}/java/billing/{left}")  # Curator's close leaves it (pinned)
    assert children(zk, f"{base}/billing") == []


def test_each_sides_close_and_a_session_end_leave_what_the_other_then_finds_alike(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
) -> None:
    """A client that ends its session without closing its discovery leaves its STATIC and
    PERMANENT instances for the other side to find, as Curator's does; a discovery's close
    removes every instance of every type (Curator's but its sequential one's node)."""
    kinds = [ServiceType.DYNAMIC, ServiceType.STATIC, ServiceType.PERMANENT]
    lasting = by_id([instance(k.value.lower(), service_type=k) for k in kinds[1:]])
    registered = [instance(k.value.lower(), service_type=k) for k in kinds]
    for side in ("java", "python"):
        base = f"{zk_path}/{side}"
        zk.ensure_path(base)
        if side == "java":
            curator = curator_factory()
            writer: Any = java(curator, base).start()
            for one in registered:
                writer.register(one)
            eventually(lambda: len(children(zk, f"{base}/billing")) == 3, SOON)  # noqa: B023
            curator.close()  # the session ends, the discovery is not closed
        else:
            client = zk_client_factory()
            writer = python(client, base)
            writer.start()
            for one in registered:
                writer.register_service(one)
            client.stop()
            client.close()
        with java(curator_factory(), base) as service, python(zk, base) as mine:
            eventually(lambda: by_id(mine.query_for_instances("billing")) == lasting, SOON)
            assert by_id(service.query_for_instances("billing")) == lasting
            for one in lasting:
                zk.delete(f"{base}/billing/{one.id}")
    # a close removes what it registered, of every type, on both sides
    with java(curator_factory(), f"{zk_path}/j2") as service, python(zk, f"{zk_path}/p2") as mine:
        for one in registered:
            service.register(one)
            mine.register_service(one)
    assert children(zk, f"{zk_path}/j2/billing") == children(zk, f"{zk_path}/p2/billing") == []


# -- picking -----------------------------------------------------------------------------------


@contextlib.contextmanager
def java_provider(
    service: JavaServiceDiscovery, name: str, seconds: int, errors: int
) -> Iterator[Any]:
    policy = discovery_class("DownInstancePolicy")(
        seconds, jclass("java.util.concurrent.TimeUnit").SECONDS, errors
    )
    provider = (
        service.java.serviceProviderBuilder().serviceName(name).downInstancePolicy(policy).build()
    )
    provider.start()
    try:
        yield provider
    finally:
        provider.close()


@pytest.mark.parametrize("errors", [1, 2])
def test_an_instance_noted_down_is_left_out_and_back_as_by_curators_provider(
    errors: int, curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Both providers of one service with the same policy (2 s, ``errors`` errors), told of
    the same errors: the instance is left out by both from the ``errors``-th error on, an
    error of an instance no longer listed changes nothing, an updated instance is a new one
    (no errors), and both offer the down one again after the timeout (Curator at its next
    purge, within half a timeout more)."""
    base = f"{zk_path}/services"
    a, b, c = (instance(key) for key in "abc")
    with java(curator_factory(), base) as service, python(zk, base) as mine:
        for one in (a, b, c):
            service.register(one)
        with (
            java_provider(service, "billing", 2, errors) as theirs,
            mine.service_provider(
                "billing",
                down_instance_policy=DownInstancePolicy(timeout=2.0, error_threshold=errors),
            ) as provider,
        ):

            def offered() -> tuple[list[str], list[str]]:
                javas = sorted(str(i.getId()) for i in theirs.getAllInstances())
                return [i.id for i in provider.get_all_instances()], javas

            def listed(key: str) -> Any:
                """Java's instance as its provider gives it (the payload class of these
                tests, as many, has no ``equals``: Curator's provider knows its instances by
                identity then, so a Java caller notes the very object it was given)."""
                (found,) = (i for i in theirs.getAllInstances() if str(i.getId()) == key)
                return found

            everything = (["a", "b", "c"], ["a", "b", "c"])
            eventually(lambda: offered() == everything, SOON)
            java_b = listed("b")
            for n in range(1, errors):
                provider.note_error(b)
                theirs.noteError(java_b)
                assert offered() == everything, n
            provider.note_error(b)
            theirs.noteError(java_b)
            provider.note_error(instance("gone"))
            theirs.noteError(to_java_instance(instance("gone")))
            assert offered() == (["a", "c"], ["a", "c"])
            picks = {getattr(provider.get_instance(), "id", None) for _ in range(6)}
            assert picks == {str(theirs.getInstance().getId()) for _ in range(6)} == {"a", "c"}
            service.update(replace(b, port=9999))  # a new instance: no errors noted
            eventually(lambda: offered() == everything, SOON)
            java_c = listed("c")
            for _ in range(errors):
                provider.note_error(c)
                theirs.noteError(java_c)
            assert offered() == (["a", "b"], ["a", "b"])
            eventually(lambda: offered() == everything, 2.0 + 1.0 + SOON)
        for one in (a, b, c):
            service.unregister(one)


def test_one_id_in_two_services_is_two_instances_here_where_curator_mixes_them_up(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """Curator knows its registrations by id alone: a second service registered under the
    same id is written, but unregistering it deletes the first service's node and leaves its
    own (pinned). Python knows an instance by its service and id: each unregister deletes its
    own node, and an update that renames an instance is refused, changing nothing."""
    billing = instance("x")
    audit = replace(instance("x"), name="audit")
    java_base, python_base = f"{zk_path}/java", f"{zk_path}/python"
    with java(curator_factory(), java_base) as theirs, python(zk, python_base) as mine:
        for base, register in ((java_base, theirs.register), (python_base, mine.register_service)):
            register(billing)
            register(audit)
            assert children(zk, f"{base}/billing") == children(zk, f"{base}/audit") == ["x"]
        theirs.unregister(audit)
        mine.unregister_service(audit)
        assert children(zk, f"{java_base}/billing") == [] and children(
            zk, f"{java_base}/audit"
        ) == ["x"]
        assert (
            children(zk, f"{python_base}/billing") == ["x"]
            and children(zk, f"{python_base}/audit") == []
        )
        assert mine.registered == [billing]
        renamed = replace(billing, name="renamed", port=1)
        with pytest.raises(ServiceNotRegisteredError):
            mine.update_service(renamed)
        assert mine.registered == [billing]
        zk.delete(f"{java_base}/audit/x")  # what Curator left behind
    assert children(zk, f"{python_base}/billing") == []


def operator_write(zk: KazooClient, path: str, data: bytes) -> None:
    """Write ``data`` to the instance node at ``path`` as an operator would, once it is there:
    Curator deletes its instance's node and makes it again when its client reconnects (seen
    once under CI's load, between a registration and the write)."""

    def written() -> bool:
        try:
            zk.set(path, data)
        except NoNodeError:
            return False
        return True

    eventually(written, SOON, f"{path} written")


def test_an_update_puts_the_instance_back_over_an_operators_write_as_javas_does(
    curator_factory: CuratorFactory, zk: KazooClient, zk_path: str
) -> None:
    """An operator drains an instance (writes ``"enabled":false`` to its node); the service
    then updates its instance unchanged, to serve again: Curator's ``updateService`` writes
    it, whenever it comes, and so must Python's (right after the operator's write, before the
    node's watch is heard, as well as later)."""
    drained = JsonInstanceSerializer(compatible=False).serialize(instance("a", enabled=False))
    with (
        java(curator_factory(), f"{zk_path}/java") as theirs,
        python(zk, f"{zk_path}/python") as mine,
    ):
        for side, register, update in (
            ("java", theirs.register, theirs.update),
            ("python", mine.register_service, mine.update_service),
        ):
            path = f"{zk_path}/{side}/billing/a"
            register(instance("a"))
            ours, _ = zk.get(path)
            for pause in (0.0, 0.5):
                operator_write(zk, path, drained)
                time.sleep(pause)
                update(instance("a"))
                assert zk.get(path)[0] == ours, (side, pause)
        theirs.unregister(instance("a"))
