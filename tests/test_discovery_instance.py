"""curator-x-discovery's values: a service instance's fields and checks, the URI template as
Curator parses and builds it, Java's number text, and the address Curator's builder picks."""

from __future__ import annotations

import math
import uuid
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any

import pytest

from pycurator._client.interfaces import parse_if_inet6
from pycurator._protocol.discovery import (
    InterfaceAddress,
    curator_addresses,
    java_double,
    java_interface_order,
    now_ms,
)
from pycurator.discovery import (
    InvalidServiceInstance,
    InvalidUriSpec,
    JavaLong,
    ServiceInstance,
    ServiceType,
    UriPart,
    UriSpec,
    local_address,
    local_addresses,
    local_instance,
)

DEFAULT_SPEC = "{scheme}://{address}:{port}"


def test_an_instance_gets_curators_builder_defaults_but_the_address() -> None:
    before = now_ms()
    instance = ServiceInstance("svc")
    assert uuid.UUID(instance.id).version == 4 and str(uuid.UUID(instance.id)) == instance.id
    assert before <= instance.registration_time_utc <= now_ms()
    assert instance.address is None and instance.port is None and instance.ssl_port is None
    assert instance.service_type is ServiceType.DYNAMIC and instance.enabled is True
    assert ServiceInstance("svc").id != instance.id


def test_a_local_instance_gets_the_address_curators_builder_picks() -> None:
    instance = local_instance("svc", port=8080)
    found = local_addresses()
    assert instance.address == local_address() == (found[0] if found else None)
    assert uuid.UUID(instance.id).version == 4
    assert local_instance("svc", address="10.0.0.5", id="i").address == "10.0.0.5"


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"name": ""}, "name", "must not be empty"),
        ({"name": "a/b"}, "name", "contains '/'"),
        ({"id": "a/b"}, "id", "contains '/'"),
        ({"id": ""}, "id", "must not be empty"),
        ({"id": ".."}, "id", "relative paths not allowed"),
        ({"name": "a\x01"}, "name", "invalid character"),
        ({"port": -1}, "port", "outside 0-65535"),
        ({"port": 65536}, "port", "outside 0-65535"),
        ({"ssl_port": 70000}, "ssl_port", "outside 0-65535"),
        ({"registration_time_utc": 2**63}, "registration_time_utc", "outside"),
        ({"service_type": "SOMETIMES"}, "service_type", "not one of DYNAMIC, STATIC"),
    ],
)
def test_a_field_curator_would_not_register_is_refused_naming_it(
    fields: dict[str, Any], field: str, words: str
) -> None:
    given = {"name": "svc", **fields}
    with pytest.raises(InvalidServiceInstance, match=words) as caught:
        ServiceInstance(given.pop("name"), **given)
    assert caught.value.field == field
    assert f"{field} {fields[field]!r}" in str(caught.value)


@pytest.mark.parametrize(
    "fields",
    [{"port": "80"}, {"port": True}, {"id": 5}, {"address": 5}, {"enabled": 1}, {"uri_spec": 5}],
)
def test_a_field_of_the_wrong_type_is_a_type_error(fields: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match=next(iter(fields))):
        ServiceInstance("svc", **fields)


def test_the_edges_of_the_ranges_are_accepted_and_names_converted() -> None:
    instance = ServiceInstance(
        "svc",
        port=0,
        ssl_port=65535,
        service_type="STATIC",  # type: ignore[arg-type]
        uri_spec=DEFAULT_SPEC,  # type: ignore[arg-type]
    )
    assert instance.service_type is ServiceType.STATIC
    assert instance.uri_spec == UriSpec(DEFAULT_SPEC)
    assert ServiceType.DYNAMIC_SEQUENTIAL.is_dynamic and not ServiceType.PERMANENT.is_dynamic


def test_instances_are_equal_field_by_field_and_hash_without_the_payload() -> None:
    one = ServiceInstance("svc", id="i", payload={"zone": "a"}, registration_time_utc=1)
    same = ServiceInstance("svc", id="i", payload={"zone": "a"}, registration_time_utc=1)
    other = ServiceInstance("svc", id="i", payload={"zone": "b"}, registration_time_utc=1)
    assert one == same and hash(one) == hash(same)
    assert one != other
    assert len({one, same, other}) == 2


def test_a_uri_spec_is_parsed_into_curators_parts() -> None:
    assert UriSpec(DEFAULT_SPEC).parts == (
        UriPart("scheme", True),
        UriPart("://", False),
        UriPart("address", True),
        UriPart(":", False),
        UriPart("port", True),
    )
    assert UriSpec("{ scheme\t}x").parts == (UriPart("scheme", True), UriPart("x"))
    assert UriSpec("a{}b").parts == (UriPart("a"), UriPart("b"))
    assert UriSpec("") == UriSpec() and UriSpec("").parts == ()
    assert repr(UriSpec("a{b}")) == "UriSpec('a{b}')"
    assert list(UriSpec("{x}")) == [UriPart("x", True)]


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{a{b}}", "{ is not allowed inside of a variable specification"),
        ("a}", "} must be preceded by {"),
        ("{scheme}://{address", "Final variable not closed - expected }"),
    ],
)
def test_a_template_curator_rejects_is_refused_with_its_words(template: str, reason: str) -> None:
    with pytest.raises(InvalidUriSpec, match=reason) as caught:
        UriSpec(template)
    assert caught.value.template == template


INSTANCE = ServiceInstance(
    "billing",
    id="id-1",
    address="10.0.0.5",
    port=8080,
    registration_time_utc=1700000000123,
    service_type=ServiceType.DYNAMIC_SEQUENTIAL,
)


@pytest.mark.parametrize(
    ("template", "instance", "variables", "built"),
    [
        (DEFAULT_SPEC, INSTANCE, None, "http://10.0.0.5:8080"),
        # an SSL port makes the scheme https, while {port} stays the plain port
        (
            DEFAULT_SPEC,
            ServiceInstance("s", address="h", port=80, ssl_port=443),
            None,
            "https://h:80",
        ),
        ("{scheme}://{address}:{ssl-port}", ServiceInstance("s", address="h"), None, "http://h:"),
        ("{name}/{id}/{service-type}", INSTANCE, None, "billing/id-1/dynamic_sequential"),
        ("{registration-time-utc}", INSTANCE, None, "1700000000123"),
        ("{[}{port}{]}", INSTANCE, None, "{8080}"),
        (DEFAULT_SPEC, INSTANCE, {"scheme": "grpc", "port": 9}, "grpc://10.0.0.5:9"),
        ("{a}-{b}-{c}-{d}", None, {"a": True, "b": 1.5, "c": 1e20, "d": None}, "true-1.5-1.0E20-"),
        ("{port}|{missing}|", INSTANCE, {"port": None}, "||"),
        (DEFAULT_SPEC, None, None, "http://:"),
        # each value as Java's String.valueOf writes the Java value it stands for
        ("{a}|{b}", None, {"a": JavaLong(5), "b": JavaLong(-(2**63))}, "5|-9223372036854775808"),
        ("{port}", ServiceInstance("s", port=JavaLong(8080)), None, "8080"),
        (
            "{a}/{b}/{c}",
            None,
            {"a": math.nan, "b": math.inf, "c": -math.inf},
            "NaN/Infinity/-Infinity",
        ),
        ("{a}", None, {"a": [1, "a", None, True, 1e20, ("t",)]}, "[1, a, null, true, 1.0E20, [t]]"),
        ("{a}", None, {"a": {"k": None, "m": {"n": [False]}}}, "{k=null, m={n=[false]}}"),
        ("{a}{b}", None, {"a": [], "b": {}}, "[]{}"),
    ],
)
def test_a_uri_is_built_as_curator_builds_it(
    template: str,
    instance: ServiceInstance | None,
    variables: dict[str, object] | None,
    built: str,
) -> None:
    assert UriSpec(template).build(instance, variables) == built


def test_an_instance_builds_its_own_uri_or_nothing() -> None:
    assert ServiceInstance("s", address="h", port=1, uri_spec=UriSpec(DEFAULT_SPEC)).build_uri_spec(
        {"scheme": "ws"}
    ) == ("ws://h:1")
    assert ServiceInstance("s").build_uri_spec() == ""


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.5, "1.5"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (-1.25e-7, "-1.25E-7"),
        (123456789.5, "1.234567895E8"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (5e-324, "4.9E-324"),
    ],
)
def test_a_float_is_written_as_javas_double_to_string(value: float, text: str) -> None:
    assert java_double(value) == text


def _v4(name: str, address: str, p2p: bool = False) -> InterfaceAddress:
    return InterfaceAddress(name, IPv4Address(address), p2p)


def _v6(name: str, address: str, p2p: bool = False) -> InterfaceAddress:
    return InterfaceAddress(name, IPv6Address(address), p2p)


def test_java_orders_new_interfaces_and_addresses_first_ipv4_read_before_ipv6() -> None:
    ipv4 = [_v4("lo", "127.0.0.1"), _v4("eth0", "192.0.2.2")]
    ipv6 = [_v6("lo", "::1"), _v6("eth0", "fd00::2"), _v6("eth0", "fe80::fc:ff:fe00:1")]
    ordered = java_interface_order(ipv4, ipv6)
    assert [a.java_text for a in ordered] == [
        "fe80:0:0:0:fc:ff:fe00:1%eth0",
        "fd00:0:0:0:0:0:0:2%eth0",
        "192.0.2.2",
        "0:0:0:0:0:0:0:1%lo",
        "127.0.0.1",
    ]
    # no loopback, no link-local: the builder's default here is the unique local IPv6 address
    assert curator_addresses(ordered) == ["fd00:0:0:0:0:0:0:2%eth0", "192.0.2.2"]


def test_a_link_local_address_counts_on_a_point_to_point_interface_only() -> None:
    addresses = [_v4("ppp0", "169.254.1.1", True), _v4("eth1", "169.254.2.2"), _v6("tun0", "::1")]
    assert curator_addresses(addresses) == ["169.254.1.1"]
    assert curator_addresses([_v4("lo", "127.0.0.2")]) == []


def test_proc_if_inet6_is_read_in_its_order() -> None:
    text = (
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "fd000000000000000000000000000002 04 40 00 82     eth0\n"
        "garbage\n"
    )
    assert parse_if_inet6(text) == [("lo", ip_address("::1")), ("eth0", ip_address("fd00::2"))]
