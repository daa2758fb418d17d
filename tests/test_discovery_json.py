"""Curator's JsonInstanceSerializer on Jackson's bytes: what is written, byte for byte (the
bytes checked against Java in interop/test_discovery_json_interop.py), and what is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from pycurator.discovery import (
    DubboZookeeperInstance,
    InstanceFormatError,
    JavaLong,
    JsonInstanceSerializer,
    PayloadTypeError,
    RawPayload,
    ServiceInstance,
    ServiceType,
    SpringZookeeperInstance,
    UriSpec,
    java_payload,
)

#: Curator's bytes for this instance (5.4 and 5.9 alike; ../shared/CURATOR-RECIPES.md).
VERIFIED = (
    b'{"name":"svc","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,'
    b'"payload":"hello","registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC",'
    b'"uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},'
    b'{"value":"address","variable":true},{"value":":","variable":false},'
    b'{"value":"port","variable":true}]}}'
)


def verified_instance(**changes: Any) -> ServiceInstance:
    fields: dict[str, Any] = {
        "name": "svc",
        "id": "id-1",
        "address": "10.0.0.5",
        "port": 8080,
        "payload": "hello",
        "registration_time_utc": 1700000000123,
        "uri_spec": UriSpec("{scheme}://{address}:{port}"),
    }
    given = {**fields, **changes}
    return ServiceInstance(given.pop("name"), **given)


def payload_bytes(payload: object, serializer: JsonInstanceSerializer | None = None) -> bytes:
    """What is written between ``"payload":`` and ``,"registrationTimeUTC"``."""
    data = (serializer or JsonInstanceSerializer()).serialize(verified_instance(payload=payload))
    return data.split(b',"payload":', 1)[1].rsplit(b',"registrationTimeUTC":', 1)[0]


def test_the_default_serializer_writes_curators_verified_bytes() -> None:
    assert JsonInstanceSerializer().serialize(verified_instance()) == VERIFIED


@pytest.mark.parametrize("enabled", [True, False])
def test_outside_compatible_mode_enabled_is_written_last(enabled: bool) -> None:
    data = JsonInstanceSerializer(compatible=False).serialize(verified_instance(enabled=enabled))
    assert data == VERIFIED[:-1] + b',"enabled":' + str(enabled).lower().encode() + b"}"
    compatible = JsonInstanceSerializer().serialize(verified_instance(enabled=enabled))
    assert b"enabled" not in compatible


def test_nulls_are_written_and_a_missing_uri_spec_is_null() -> None:
    bare = ServiceInstance("s", id="i", registration_time_utc=0, service_type=ServiceType.STATIC)
    assert JsonInstanceSerializer().serialize(bare) == (
        b'{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,'
        b'"registrationTimeUTC":0,"serviceType":"STATIC","uriSpec":null}'
    )


@java_payload("com.example.Details")
@dataclass
class Details:
    region: str | None = None
    ssl_port: int | None = field(default=None, metadata={"java": "sslPort"})
    tags: list[str] | None = None


PAYLOADS: list[tuple[object, bytes]] = [
    ("hello", b'"hello"'),
    (42, b"42"),
    (-(2**31), b"-2147483648"),
    (2**31, b'["java.lang.Long",2147483648]'),
    (1099511627776, b'["java.lang.Long",1099511627776]'),
    (2**64, b'["java.math.BigInteger",18446744073709551616]'),
    (JavaLong(7), b'["java.lang.Long",7]'),
    (1.5, b"1.5"),
    (1e20, b"1.0E20"),
    (True, b"true"),
    (None, b"null"),
    ({"k": "v", "zone": "a"}, b'{"@class":"java.util.LinkedHashMap","k":"v","zone":"a"}'),
    (
        {"n": 2**40, "m": {"x": [1.0]}},
        b'{"@class":"java.util.LinkedHashMap","n":1099511627776,"m":{"x":[1.0]}}',
    ),
    (["a", "b"], b'["java.util.ArrayList",["a","b"]]'),
    ([], b'["java.util.ArrayList",[]]'),
    (
        Details("eu", 8443, ["x"]),
        b'{"@class":"com.example.Details","region":"eu","sslPort":8443,"tags":["x"]}',
    ),
    (
        SpringZookeeperInstance("app-1", "billing", {"zone": "a"}),
        b'{"@class":"org.springframework.cloud.zookeeper.discovery.ZookeeperInstance",'
        b'"id":"app-1","name":"billing","metadata":{"zone":"a"}}',
    ),
    (
        DubboZookeeperInstance("10.0.0.5:20880", "shop", {}),
        b'{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance",'
        b'"id":"10.0.0.5:20880","name":"shop","metadata":{}}',
    ),
    (RawPayload("com.other.Thing", {"a": 1}), b'{"@class":"com.other.Thing","a":1}'),
    (RawPayload("java.util.HashSet", [1, 2], wrapped=True), b'["java.util.HashSet",[1,2]]'),
]


@pytest.mark.parametrize(("payload", "written"), PAYLOADS, ids=lambda v: repr(v)[:40])
def test_each_payload_is_typed_as_curators_json_type_info_writes_it(
    payload: object, written: bytes
) -> None:
    assert payload_bytes(payload) == written


@pytest.mark.parametrize(("payload", "written"), PAYLOADS, ids=lambda v: repr(v)[:40])
def test_each_payload_reads_back_equal_and_of_its_type(payload: object, written: bytes) -> None:
    serializer = JsonInstanceSerializer(payload_classes=[Details, SpringZookeeperInstance])
    serializer_dubbo = JsonInstanceSerializer(DubboZookeeperInstance)
    use = serializer_dubbo if isinstance(payload, DubboZookeeperInstance) else serializer
    read = use.deserialize(use.serialize(verified_instance(payload=payload)))
    assert read == verified_instance(payload=payload)
    assert type(read.payload) is type(payload) or (
        isinstance(payload, int) and type(read.payload) is JavaLong
    )
    assert use.serialize(read) == use.serialize(verified_instance(payload=payload))


def test_strings_are_escaped_as_jackson_escapes_them() -> None:
    text = 'q"b\\ n\n t\t r\r b\b f\f \x00\x1f \x7f é ☃ \U0001f512 /'
    assert payload_bytes(text) == (
        b'"q\\"b\\\\ n\\n t\\t r\\r b\\b f\\f \\u0000\\u001F \x7f '
        + "é ☃ ".encode()
        + b'\\uD83D\\uDD12 /"'
    )
    assert JsonInstanceSerializer().deserialize(
        JsonInstanceSerializer().serialize(verified_instance(payload=text))
    ).payload == (text)


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (object(), "object has no Java class name"),
        ({1: "a"}, "a map's key must be a str"),
        ({"@class": "x"}, "cannot have the key '@class'"),
        ([{1, 2}], "set has no Java class name"),
    ],
)
def test_a_payload_with_no_java_class_name_is_refused_naming_its_type(
    payload: object, words: str
) -> None:
    with pytest.raises(PayloadTypeError, match=words):
        JsonInstanceSerializer().serialize(verified_instance(payload=payload))


def test_a_payload_that_is_no_json_number_is_refused() -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        JsonInstanceSerializer().serialize(verified_instance(payload=float("nan")))


def test_a_payload_type_without_a_java_class_name_is_refused_at_once() -> None:
    class Plain:
        pass

    with pytest.raises(PayloadTypeError, match=r"Plain has no Java class name.*java_payload"):
        JsonInstanceSerializer(Plain)
    with pytest.raises(PayloadTypeError, match="Plain"):
        JsonInstanceSerializer(payload_classes=[Plain])
    with pytest.raises(PayloadTypeError, match="takes a dataclass"):
        java_payload("com.example.X")(Plain)
    with pytest.raises(PayloadTypeError, match="non-empty str"):
        java_payload("")


def test_a_payload_class_reads_defaults_for_missing_members_and_ignores_unknown_ones() -> None:
    data = (
        b'{"name":"s","id":"i","payload":{"@class":"com.example.Details","sslPort":1,"other":true}}'
    )
    read = JsonInstanceSerializer(Details).deserialize(data)
    assert read.payload == Details(None, 1, None)
    spring = b'{"payload":{"@class":"' + SpringZookeeperInstance.java_class.encode() + b'"}}'
    assert JsonInstanceSerializer(SpringZookeeperInstance).deserialize(spring).payload == (
        SpringZookeeperInstance(None, None, {})
    )


def test_a_payload_of_an_unknown_java_class_is_kept_raw_and_written_back_alike() -> None:
    node = (
        b'{"name":"s","id":"i","address":null,"port":null,"sslPort":null,'
        b'"payload":{"@class":"com.other.Thing","a":[1,{"b":null}],"c":1.5},'
        b'"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null}'
    )
    read = JsonInstanceSerializer().deserialize(node)
    assert read.payload == RawPayload("com.other.Thing", {"a": [1, {"b": None}], "c": 1.5})
    assert JsonInstanceSerializer().serialize(read) == node


def test_a_payload_not_of_the_serializers_type_is_refused_as_java_refuses_it() -> None:
    data = JsonInstanceSerializer().serialize(verified_instance(payload={"a": "b"}))
    with pytest.raises(InstanceFormatError, match="payload: expected str, not dict"):
        JsonInstanceSerializer(str).deserialize(data)
    with pytest.raises(InstanceFormatError, match="expected int, not bool"):
        JsonInstanceSerializer(int).deserialize(b'{"payload":true}')
    assert JsonInstanceSerializer(int).deserialize(b'{"payload":null}').payload is None
    assert JsonInstanceSerializer(dict).deserialize(data).payload == {"a": "b"}


DEFAULTS: dict[str, Any] = {
    "name": "",
    "id": "",
    "address": None,
    "port": None,
    "ssl_port": None,
    "payload": None,
    "registration_time_utc": 0,
    "service_type": ServiceType.DYNAMIC,
    "uri_spec": None,
    "enabled": True,
}

#: What Jackson reads (Curator 5.4 and 5.9, Jackson 2.14): the same table runs against Java in
#: interop/test_discovery_json_interop.py.
TOLERATED: list[tuple[bytes, dict[str, Any]]] = [
    (b'{"name":"svc","id":"i"}', {"name": "svc", "id": "i"}),
    (b'{"name":5,"id":1.5,"address":true}', {"name": "5", "id": "1.5", "address": "true"}),
    (b'{"port":"8080","sslPort":" 8443"}', {"port": 8080, "ssl_port": 8443}),
    (b'{"port":""}', {}),
    (b'{"port":8080.9,"sslPort":-8080.9}', {"port": 8080, "ssl_port": -8080}),
    (b'{"registrationTimeUTC":1.7e12}', {"registration_time_utc": 1700000000000}),
    (b'{"registrationTimeUTC":"17"}', {"registration_time_utc": 17}),
    (b'{"registrationTimeUTC":null}', {}),
    (b'{"registrationTimeUTC":""}', {}),
    (b'{"serviceType":"STATIC"}', {"service_type": ServiceType.STATIC}),
    (b'{"serviceType":1}', {"service_type": ServiceType.STATIC}),
    (b'{"serviceType":3}', {"service_type": ServiceType.DYNAMIC_SEQUENTIAL}),
    (
        b'{"uriSpec":"{scheme}://{address}:{port}"}',
        {"uri_spec": UriSpec("{scheme}://{address}:{port}")},
    ),
    (b'{"uriSpec":{"parts":[{"value":"x"}]}}', {"uri_spec": UriSpec("x")}),
    (b'{"uriSpec":{}}', {"uri_spec": UriSpec()}),
    (b'{"enabled":null}', {"enabled": False}),
    (b'{"enabled":0}', {"enabled": False}),
    (b'{"enabled":2}', {}),
    (b'{"enabled":"True"}', {}),
    (b'{"enabled":""}', {"enabled": False}),
    (b'{"payload":5000000000}', {"payload": 5000000000}),
    (b'{"payload":{"a":1}}', {"payload": {"a": 1}}),
    (b'{"payload":{"a":1,"@class":"java.util.TreeMap","b":2}}', {"payload": {"a": 1, "b": 2}}),
    (b'{"payload":["java.lang.Long",5]}', {"payload": JavaLong(5)}),
    (b'{"payload":["java.lang.Long","5"]}', {"payload": JavaLong(5)}),
    (b'{"payload":["java.lang.Long",5.5]}', {"payload": JavaLong(5)}),
    (b'{"payload":["java.lang.Integer",5]}', {"payload": 5}),
    (b'{"payload":["java.lang.String","s"]}', {"payload": "s"}),
    (
        b'{"payload":["java.util.ArrayList",[1,5000000000,{"a":2}]]}',
        {"payload": [1, 5000000000, {"a": 2}]},
    ),
    (b'{"x":1,"name":"a"} trailing', {"name": "a"}),
    (b' \r\n\t{"name":"a"}', {"name": "a"}),
    (b'{"name":"a","name":"b"}', {"name": "b"}),
    (b'\xef\xbb\xbf{"name":"\xc3\xa9"}', {"name": "\u00e9"}),
    ('{"name":"x"}'.encode("utf-16"), {"name": "x"}),
]


@pytest.mark.parametrize(("data", "fields"), TOLERATED, ids=lambda v: repr(v)[:50])
def test_a_node_is_read_as_jackson_reads_it(data: bytes, fields: dict[str, Any]) -> None:
    read = JsonInstanceSerializer().deserialize(data)
    assert {name: getattr(read, name) for name in DEFAULTS} == {**DEFAULTS, **fields}


#: What Jackson refuses, with the words the error names it by.
REFUSED: list[tuple[bytes, str]] = [
    (b"", "no content"),
    (b"  ", "no content"),
    (b"{", "invalid JSON"),
    (b'{"name":NaN}', "NaN is not JSON"),
    (b"[1]", "expected a JSON object, not an array"),
    (b'"s"', "expected a JSON object, not a string"),
    (b"\xff{}", "not UTF-8"),
    (b'{"port":"8080.5"}', "port: '8080.5' is not a whole number"),
    (b'{"port":"x"}', "port: 'x' is not a whole number"),
    (b'{"port":true}', "port: cannot read a number from a boolean"),
    (b'{"port":3000000000}', "port: 3000000000 is out of range"),
    (b'{"port":[8080]}', "port: cannot read a number from an array"),
    (b'{"registrationTimeUTC":1e30}', "registrationTimeUTC: .* is out of range"),
    (b'{"serviceType":"static"}', "serviceType: 'static' is not one of DYNAMIC"),
    (b'{"serviceType":7}', "serviceType: 7 is not one of"),
    (b'{"serviceType":""}', "serviceType: '' is not one of"),
    (b'{"uriSpec":{"parts":5}}', "uriSpec.parts: expected an array, not a number"),
    (b'{"uriSpec":"{a"}', "uriSpec: Final variable not closed"),
    (b'{"enabled":"yes"}', "enabled: 'yes' is not true or false"),
    (b'{"name":{}}', "name: cannot read a string from an object"),
    (b'{"payload":[1,2]}', "payload: a typed array is \\[class name, value\\]"),
    (b'{"payload":["java.lang.Long","x"]}', r"payload \(java.lang.Long\): 'x' is not a whole"),
]


@pytest.mark.parametrize(("data", "words"), REFUSED, ids=lambda v: repr(v)[:50])
def test_what_jackson_refuses_is_an_error_naming_the_problem(data: bytes, words: str) -> None:
    with pytest.raises(InstanceFormatError, match=words):
        JsonInstanceSerializer().deserialize(data)


def test_where_java_keeps_null_a_name_id_type_or_parts_reads_as_its_default() -> None:
    data = b'{"name":null,"id":null,"serviceType":null,"uriSpec":{"parts":null}}'
    read = JsonInstanceSerializer().deserialize(data)
    assert (read.name, read.id, read.service_type) == ("", "", ServiceType.DYNAMIC)
    assert read.uri_spec == UriSpec()


def test_a_19_digit_long_is_read_though_debians_jackson_2_14_1_cannot() -> None:
    data = b'{"registrationTimeUTC":-9223372036854775808,"payload":["java.lang.Long",2]}'
    assert JsonInstanceSerializer().deserialize(data).registration_time_utc == -(2**63)
    data = b'{"payload":["java.lang.Long",4611686018427387904]}'
    assert JsonInstanceSerializer().deserialize(data).payload == JavaLong(2**62)


def test_an_unknown_class_read_from_a_wrapper_array_or_object_is_kept_raw() -> None:
    read = JsonInstanceSerializer().deserialize(b'{"payload":["x",2]}')
    assert read.payload == RawPayload("x", 2, wrapped=True)
    read = JsonInstanceSerializer().deserialize(b'{"payload":{"@class":"com.nope.X","a":1}}')
    assert read.payload == RawPayload("com.nope.X", {"a": 1})


def test_a_read_instance_keeps_what_java_keeps_even_where_a_new_one_is_refused() -> None:
    read = JsonInstanceSerializer().deserialize(b'{"name":"a/b","port":-1}')
    assert (read.name, read.id, read.port) == ("a/b", "", -1)


def test_serializing_takes_only_instances_and_reading_only_bytes() -> None:
    with pytest.raises(TypeError, match="expected a ServiceInstance"):
        JsonInstanceSerializer().serialize({"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="read from bytes, not str"):
        JsonInstanceSerializer().deserialize('{"name":"x"}')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="compatible must be a bool"):
        JsonInstanceSerializer(compatible=None)  # type: ignore[arg-type]
    serializer = JsonInstanceSerializer(str, compatible=False)
    assert (serializer.payload_type, serializer.compatible) == (str, False)
