"""curator-x-discovery's bytes, both ways, against Java's own JsonInstanceSerializer (Jackson
2.14) on the Curator of this run (Debian's 5.4, or 5.9 with ``./dev newest``): for every
payload kind and Spring Cloud- and Dubbo-shaped payloads (Java classes of those names, compiled
from interop/java), Python writes the bytes Java writes, reads Java's to an equal instance, and
Java reads Python's; URIs are built alike, nodes read alike, the default address is Java's.
No ZooKeeper is needed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pycurator._client.interfaces import linux_interface_addresses
from pycurator.discovery import (
    DubboZookeeperInstance,
    JavaLong,
    JsonInstanceSerializer,
    RawPayload,
    ServiceInstance,
    ServiceType,
    SpringZookeeperInstance,
    UriSpec,
    local_address,
)
from pycurator.testing import (
    add_classpath,
    curator_version,
    discovery_class,
    from_java_instance,
    java_serializer,
    jclass,
    start_jvm,
    to_java_instance,
    to_java_payload,
)
from tests.test_discovery_json import PAYLOADS, REFUSED, TOLERATED, Details, verified_instance

pytestmark = pytest.mark.usefixtures("java_payload_classes")

CLASSES = [Details, SpringZookeeperInstance, DubboZookeeperInstance]
SPEC = UriSpec("{scheme}://{address}:{port}")


def java_bytes(instance: ServiceInstance, compatible: bool = True) -> bytes:
    return bytes(java_serializer(compatible=compatible).serialize(to_java_instance(instance)))


def jbytes(data: bytes) -> Any:
    import jpype

    return jpype.JArray(jpype.JByte)(data)


def instance_with(**changes: Any) -> ServiceInstance:
    return verified_instance(**changes)


#: Instances beyond the payloads: every field's edges and kinds.
INSTANCES = {
    "verified": verified_instance(),
    "bare": ServiceInstance("s", id="i", registration_time_utc=0),
    "ssl and static": instance_with(ssl_port=8443, service_type=ServiceType.STATIC),
    "permanent, disabled": instance_with(service_type=ServiceType.PERMANENT, enabled=False),
    "sequential": instance_with(service_type=ServiceType.DYNAMIC_SEQUENTIAL, port=0),
    "ipv6 scope": instance_with(address="fd00:0:0:0:0:0:0:2%eth0", port=65535),
    # (Debian's jackson-core 2.14.1 writes a 19-digit number but cannot read one back:
    # tests/test_discovery_json.py)
    "negative time": instance_with(registration_time_utc=-(10**18) + 1),
    "escapes": instance_with(
        name="n\u00e9\u2603", address='q"b\\ \n\t\r\b\f\x00\x1f\x7f \U0001f512 /', payload="\u2028"
    ),
    "braces in the spec": instance_with(uri_spec=UriSpec("{[}x{]}/{ name }/{ssl-port}")),
    "empty spec": instance_with(uri_spec=UriSpec("")),
    "floats": instance_with(payload={"a": 1.5, "b": 1e20, "c": -0.0, "d": 0.001, "e": 1e-4}),
    "nested": instance_with(payload={"m": {"l": [1, 2**40, 2**70, None, True, {"x": "y"}]}}),
}


def all_instances() -> dict[str, ServiceInstance]:
    cases = dict(INSTANCES)
    for payload, _ in PAYLOADS:
        if isinstance(payload, RawPayload) and payload.java_class.startswith("com.other."):
            continue  # a class Java does not have: see the test of an unknown class below
        cases[f"payload {payload!r}"[:60]] = verified_instance(payload=payload)
    return cases


CASES = all_instances()


@pytest.mark.parametrize("compatible", [True, False], ids=["compatible", "with enabled"])
@pytest.mark.parametrize("case", list(CASES))
def test_python_writes_the_bytes_java_writes(case: str, compatible: bool) -> None:
    instance = CASES[case]
    python = JsonInstanceSerializer(compatible=compatible).serialize(instance)
    assert python == java_bytes(instance, compatible)


@pytest.mark.parametrize("case", list(CASES))
def test_python_reads_javas_bytes_to_an_equal_instance(case: str) -> None:
    instance = CASES[case]
    serializer = JsonInstanceSerializer(payload_classes=CLASSES)
    for compatible in (True, False):
        read = serializer.deserialize(java_bytes(instance, compatible))
        expected = instance if not compatible or instance.enabled else instance_as(instance)
        assert read == expected


def instance_as(instance: ServiceInstance) -> ServiceInstance:
    """``instance`` as a compatible node holds it: enabled (the field is not written)."""
    from dataclasses import replace

    return replace(instance, enabled=True)


@pytest.mark.parametrize("case", list(CASES))
def test_java_reads_pythons_bytes_and_writes_them_back_alike(case: str) -> None:
    instance = CASES[case]
    python = JsonInstanceSerializer(compatible=False).serialize(instance)
    java = java_serializer(compatible=False)
    read = java.deserialize(jbytes(python))
    assert bytes(java.serialize(read)) == python
    assert from_java_instance(read, CLASSES) == instance


def test_spring_and_dubbo_payloads_made_as_spring_and_dubbo_make_them_are_written_alike() -> None:
    metadata = {"zone": "a", "version": "2"}
    shaped: list[SpringZookeeperInstance | DubboZookeeperInstance] = [
        SpringZookeeperInstance("app-1", "billing", metadata),
        DubboZookeeperInstance("10.0.0.5:20880", "shop", metadata),
    ]
    for python in shaped:
        java_name = type(python).java_class
        # as Spring's and Dubbo's own code makes it: the class's constructor
        java_payload = jclass(java_name)(python.id, python.name, to_java_payload(metadata))
        instance = verified_instance(payload=python, uri_spec=SPEC)
        java = to_java_instance(instance)
        built = discovery_class("ServiceInstance")(
            java.getName(),
            java.getId(),
            java.getAddress(),
            java.getPort(),
            java.getSslPort(),
            java_payload,
            java.getRegistrationTimeUTC(),
            java.getServiceType(),
            java.getUriSpec(),
        )
        typed = java_serializer(java_name)
        written = bytes(typed.serialize(built))
        assert JsonInstanceSerializer(type(python)).serialize(instance) == written
        assert JsonInstanceSerializer(type(python)).deserialize(written) == instance
        read = typed.deserialize(jbytes(written))  # Java's payloadClass.cast passes
        assert str(read.getPayload().getClass().getName()) == java_name


def test_an_unknown_java_class_java_cannot_read_is_kept_and_written_back_alike() -> None:
    node = b'{"name":"s","id":"i","payload":{"@class":"com.nope.Gone","a":1}}'
    with pytest.raises(Exception, match=r"com\.nope\.Gone"):
        java_serializer().deserialize(jbytes(node))
    read = JsonInstanceSerializer().deserialize(node)
    assert read.payload == RawPayload("com.nope.Gone", {"a": 1})


@pytest.mark.parametrize(("data", "fields"), TOLERATED, ids=lambda v: repr(v)[:50])
def test_a_node_is_read_as_java_reads_it(data: bytes, fields: dict[str, Any]) -> None:
    java = java_serializer().deserialize(jbytes(data))
    assert from_java_instance(java) == JsonInstanceSerializer().deserialize(data)


@pytest.mark.parametrize(("data", "words"), REFUSED, ids=lambda v: repr(v)[:50])
def test_what_python_refuses_java_refuses(data: bytes, words: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 (Jackson's exceptions, various)
        java_serializer().deserialize(jbytes(data))


def test_a_long_payload_java_reads_is_a_long_and_python_keeps_it_one() -> None:
    data = JsonInstanceSerializer().serialize(verified_instance(payload=JavaLong(5)))
    payload = java_serializer().deserialize(jbytes(data)).getPayload()
    assert str(payload.getClass().getName()) == "java.lang.Long"
    assert isinstance(JsonInstanceSerializer().deserialize(data).payload, JavaLong)


TEMPLATES = [
    "{scheme}://{address}:{port}",
    "{scheme}://{address}:{ssl-port}/{name}/{id}?t={registration-time-utc}&k={service-type}",
    "{ scheme }://x{[}{]}{missing}",
    "plain",
    "",
    "{}{a}",
]
BUILD_INSTANCES = [
    None,
    verified_instance(),
    instance_with(ssl_port=443, service_type=ServiceType.DYNAMIC_SEQUENTIAL),
    ServiceInstance("s", id="i", registration_time_utc=0),
]
VARIABLES: list[dict[str, object] | None] = [
    None,
    {"scheme": "grpc", "port": 9, "a": True, "missing": 1.5},
    {"port": None, "name": 1e20},
]


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_uri_spec_is_parsed_and_built_as_java_does(template: str) -> None:
    java_spec = discovery_class("UriSpec")(template)
    parts = [(str(p.getValue()), bool(p.isVariable())) for p in java_spec.getParts()]
    assert parts == [(p.value, p.variable) for p in UriSpec(template).parts]
    for instance in BUILD_INSTANCES:
        for variables in VARIABLES:
            java_variables = jclass("java.util.HashMap")()
            for key, value in (variables or {}).items():
                java_variables.put(key, to_java_payload(value))
            java_instance = None if instance is None else to_java_instance(instance)
            built = str(java_spec.build(java_instance, java_variables))
            assert UriSpec(template).build(instance, variables) == built


@pytest.mark.parametrize("template", ["{a{b}}", "a}", "{a"])
def test_a_template_python_refuses_java_refuses(template: str) -> None:
    with pytest.raises(Exception, match=r"variable|preceded|closed"):
        discovery_class("UriSpec")(template)


def test_the_default_address_is_the_one_curators_builder_picks() -> None:
    java = discovery_class("ServiceInstance").builder().name("s").build()
    address = java.getAddress()
    assert local_address() == (None if address is None else str(address))


def test_the_hosts_addresses_are_listed_in_javas_order() -> None:
    interfaces = jclass("java.net.NetworkInterface").getNetworkInterfaces()
    java = []
    while interfaces.hasMoreElements():
        addresses = interfaces.nextElement().getInetAddresses()
        while addresses.hasMoreElements():
            java.append(str(addresses.nextElement().getHostAddress()))
    assert [a.java_text for a in linux_interface_addresses()] == java


def test_service_discovery_is_of_the_curator_this_run_tests() -> None:
    builder = discovery_class("ServiceDiscoveryBuilder").class_
    pom = "META-INF/maven/org.apache.curator/curator-x-discovery/pom.properties"
    stream = builder.getClassLoader().getResourceAsStream(pom)
    if stream is None:  # a jar built without Maven: its manifest says
        version = str(builder.getPackage().getImplementationVersion())
    else:
        properties = jclass("java.util.Properties")()
        properties.load(stream)
        stream.close()
        version = str(properties.getProperty("version"))
    assert version == curator_version()


def test_a_folder_added_to_the_classpath_once_the_jvm_runs_is_refused_by_name(
    java_payload_classes: str, tmp_path: Path
) -> None:
    start_jvm()
    add_classpath(java_payload_classes)  # added before the JVM started: already on it
    with pytest.raises(RuntimeError, match=f"the JVM already runs: {re.escape(str(tmp_path))}"):
        add_classpath(tmp_path)
