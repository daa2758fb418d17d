"""Service discovery's values across Java and Python, each compared with what Java's
curator-x-discovery makes of the same case on the Curator of this run (Debian's 5.4, or 5.9
with ``./dev newest``), no ZooKeeper needed: URIs built from values of every kind; an
instance's defaults as Curator's builder makes them; the bytes of edge values (control and
line-separator characters, the ends of ``int`` and ``double``, empty and long strings, nested
maps and lists) written by each side and read by the other; payloads of Java classes Python
lacks written back as Java wrote them; the strategies picking the same instance from the
same lists."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from pycurator.discovery import (
    JavaLong,
    JsonInstanceSerializer,
    RandomStrategy,
    RoundRobinStrategy,
    ServiceInstance,
    ServiceType,
    StickyStrategy,
    UriSpec,
    local_instance,
)
from pycurator.testing import (
    discovery_class,
    from_java_instance,
    java_serializer,
    jclass,
    to_java_instance,
    to_java_payload,
)
from tests.test_discovery_json import Details, verified_instance

from .test_discovery_interop import CLASSES
from .test_discovery_json_interop import jbytes

pytestmark = pytest.mark.usefixtures("java_payload_classes")

# -- URIs --------------------------------------------------------------------------------------

#: An instance with a field of each kind a template reads: non-ASCII name and id, an IPv6
#: address with its scope, the ends of a port, a negative time, a type named in two words.
ODD = ServiceInstance(
    "s\u00e9",
    id="i\u00e9",
    address="fd00:0:0:0:0:0:0:2%eth0",
    port=0,
    ssl_port=65535,
    registration_time_utc=-5,
    service_type=ServiceType.DYNAMIC_SEQUENTIAL,
)
BARE = ServiceInstance("s", id="i", registration_time_utc=0, service_type=ServiceType.PERMANENT)

#: (template, instance, variables): each built by Java's ``UriSpec.build`` for reference.
BUILDS: list[tuple[str, ServiceInstance | None, dict[str, object] | None]] = [
    ("{scheme}://{address}:{port}/{ssl-port}", ODD, None),
    ("{scheme}://{address}:{port}", BARE, None),
    ("{name}/{id}/{service-type}/{registration-time-utc}", ODD, None),
    ("{scheme}", ODD, {"scheme": None}),  # a variable mapped to null leaves the field out
    ("{scheme}:{address}", BARE, {"scheme": "grpc", "address": 10}),
    ("{[}{]}", ODD, {"[": "x", "]": None}),  # the braces are variables too
    ("{\t port \n}{ }{}", ODD, {"": "empty"}),  # trimmed as Java trims; {} is no part
    ("{\u00a0y}", None, {"\u00a0y": 1, "y": 2}),  # Java's trim keeps a no-break space
    ("\U0001f512{name}\u2028{unknown}", ODD, None),
    ("{ name}{id }", ODD, {"name": ""}),
    ("a{b}c", None, {"b": "\x00"}),
    ("{v}", None, {"v": -0.0}),
    ("{v}", None, {"v": 1e-5}),
    ("{v}", None, {"v": 2**70}),
    ("{v}", None, {"v": -(2**63)}),
    ("{v}", None, {"v": True}),
    ("{v}", None, {"v": ServiceType.STATIC}),
    ("{v}", None, {"v": []}),
    ("{v}", None, {"v": {}}),
    # values as Java's String.valueOf writes them: a Long, the non-finite doubles, and a
    # list's and a map's toString (null, true, doubles inside written as Java writes them)
    ("{v}", None, {"v": JavaLong(5)}),
    ("{port}", replace(BARE, port=JavaLong(8080)), None),
    ("{v}", None, {"v": float("nan")}),
    ("{v}/{w}", None, {"v": float("inf"), "w": float("-inf")}),
    ("{v}", None, {"v": [1, "a", None, True, 1.5, 1e20]}),
    ("{v}", None, {"v": {"a": 1, "b": None, "c": [False]}}),
    ("{v}", None, {"v": [[1, 2], {"k": "v"}]}),
]


def java_build(
    template: str, one: ServiceInstance | None, variables: dict[str, object] | None
) -> str:
    java_variables = jclass("java.util.HashMap")()
    for key, value in (variables or {}).items():
        java_variables.put(key, None if value is None else to_java_value(value))
    spec = discovery_class("UriSpec")(template)
    return str(spec.build(None if one is None else to_java_instance(one), java_variables))


def to_java_value(value: object) -> Any:
    """``value`` as the Java value a Java caller would put in the variables."""
    if isinstance(value, ServiceType):
        return discovery_class("ServiceType").valueOf(value.value)
    return to_java_payload(value)


@pytest.mark.parametrize(
    ("template", "one", "variables"), BUILDS, ids=[f"{i}:{b[0]!r}" for i, b in enumerate(BUILDS)]
)
def test_a_uri_is_built_as_javas_uri_spec_builds_it(
    template: str, one: ServiceInstance | None, variables: dict[str, object] | None
) -> None:
    expected = java_build(template, one, variables)
    assert UriSpec(template).build(one, variables) == expected
    if one is not None and variables is None:
        java_one = to_java_instance(replace(one, uri_spec=UriSpec(template)))
        assert replace(one, uri_spec=UriSpec(template)).build_uri_spec() == str(
            java_one.buildUriSpec()
        )


# -- an instance's defaults --------------------------------------------------------------------


def test_local_instance_has_the_defaults_of_curators_builder() -> None:
    """``local_instance(name)`` is what ``ServiceInstance.builder().name(name).build()`` is in
    Java: a random version-4 UUID in lower case, the same address, now in milliseconds, the
    rest unset (DYNAMIC, enabled); the same fields make the same bytes."""
    before = int(time.time() * 1000)
    built = discovery_class("ServiceInstance").builder().name("billing").build()
    ours = local_instance("billing")
    after = int(time.time() * 1000)
    theirs = from_java_instance(built)
    for made in (theirs, ours):
        assert before <= made.registration_time_utc <= after
        assert len(made.id) == 36 and made.id.count("-") == 4 and made.id[14] == "4"
        assert made.id == made.id.lower() and made.id[19] in "89ab"
    assert ours.id != theirs.id
    aligned = replace(ours, id=theirs.id, registration_time_utc=theirs.registration_time_utc)
    assert aligned == theirs
    for compatible in (True, False):
        assert JsonInstanceSerializer(compatible=compatible).serialize(aligned) == bytes(
            java_serializer(compatible=compatible).serialize(built)
        )
    # a bare instance is Curator's constructor with nulls: no address, nothing guessed
    bare = ServiceInstance("billing", id="i", registration_time_utc=1)
    java_bare = discovery_class("ServiceInstance")(
        "billing", "i", None, None, None, None, 1, discovery_class("ServiceType").DYNAMIC, None
    )
    assert from_java_instance(java_bare) == bare


# -- bytes of edge values ----------------------------------------------------------------------

EDGES: dict[str, ServiceInstance] = {
    "line separators everywhere": verified_instance(
        name="a\u2028b\u2029", address="\u2028", payload={"\u2028k": "\u2029v"}
    ),
    "C1 controls, BOM, noncharacters": verified_instance(
        payload="\x80\x9f\u00a0\u00ad\ufeff\uffff\ufffe"
    ),
    "DEL": verified_instance(address="\x7f", payload="\x7f"),
    "every low control": verified_instance(payload="".join(chr(c) for c in range(0x20))),
    "HTML and slashes": verified_instance(payload="</script>&'\"/\\"),
    "empty strings": verified_instance(address="", payload=""),
    "empty map": verified_instance(payload={}),
    "empty nested": verified_instance(payload={"a": {}, "b": [], "c": [[]], "d": [{}]}),
    "keys to escape": verified_instance(
        payload={"": 1, '"': 2, "\n": 3, "\u00e9": 4, "\U0001f512": 5}
    ),
    "int ends in a map": verified_instance(
        payload={"a": 2**31 - 1, "b": -(2**31), "c": 2**31, "d": -(2**31) - 1, "e": -(2**53)}
    ),
    "Integer.MAX_VALUE": verified_instance(payload=2**31 - 1),
    "Integer.MIN_VALUE - 1": verified_instance(payload=-(2**31) - 1),
    "negative Long": verified_instance(payload=JavaLong(-5)),
    "double ends": verified_instance(
        payload=[
            5e-324,
            1.7976931348623157e308,
            2.2250738585072014e-308,
            1e7,
            9999999.999,
            0.001,
            0.00099,
            123456789.0,
            2.0,
            -1.5,
            1e21,
            1e300,
        ]
    ),
    "double 1.0E7": verified_instance(payload=1e7),
    "double 0.001": verified_instance(payload=0.001),
    "double -0.0": verified_instance(payload=-0.0),
    "false": verified_instance(payload=False),
    "null payload": verified_instance(payload=None),
    "booleans and null in a list": verified_instance(payload=[True, False, None]),
    "long name, id and address": verified_instance(
        name="n" * 2000, id="i" * 1000, address="a" * 5000
    ),
    "100,000-character payload": verified_instance(payload="x" * 100_000),
    "time -1": verified_instance(registration_time_utc=-1),
    "time 0": verified_instance(registration_time_utc=0),
    "time of 18 digits": verified_instance(registration_time_utc=999_999_999_999_999_999),
    "ports 0": verified_instance(port=0, ssl_port=0),
    "blank variables in the spec": verified_instance(uri_spec=UriSpec("{ }{}x")),
    "non-ASCII spec": verified_instance(uri_spec=UriSpec("\u2028{\u00e9}\U0001f512")),
    "an object's nulls": verified_instance(payload=Details(None, None, None)),
    "an object's empties": verified_instance(payload=Details("", 0, [])),
    "maps in lists in maps": verified_instance(payload=[{"a": [1, {"b": None}]}]),
    "whole doubles in a map": verified_instance(payload={"x": 3.0, "y": 1e16, "z": 1.0e-7}),
}


@pytest.mark.parametrize("case", list(EDGES))
def test_edge_values_are_the_same_bytes_each_way(case: str) -> None:
    """Each side writes the bytes the other writes, in both modes, and reads the other's to
    the same instance; Java writes back the bytes Python wrote."""
    one = EDGES[case]
    for compatible in (True, False):
        ours = JsonInstanceSerializer(compatible=compatible).serialize(one)
        theirs = bytes(java_serializer(compatible=compatible).serialize(to_java_instance(one)))
        assert ours == theirs
    ours = JsonInstanceSerializer(compatible=False).serialize(one)
    read = java_serializer(compatible=False).deserialize(jbytes(ours))
    assert from_java_instance(read, CLASSES) == one
    assert bytes(java_serializer(compatible=False).serialize(read)) == ours
    assert (
        JsonInstanceSerializer(payload_classes=CLASSES, compatible=False).deserialize(ours) == one
    )


# -- picking -----------------------------------------------------------------------------------


class JavaPicker:
    """One of Curator's strategies, picking from lists a Python test hands it."""

    def __init__(self, strategy: Any) -> None:
        import jpype

        self.strategy = strategy
        self._current: list[Any] = []
        self._provider = jpype.JProxy(
            "org.apache.curator.x.discovery.details.InstanceProvider",
            dict={"getInstances": self._instances},
        )

    def _instances(self) -> Any:
        listed = jclass("java.util.ArrayList")()
        for one in self._current:
            listed.add(one)
        return listed

    def pick(self, java_instances: list[Any]) -> str | None:
        self._current = java_instances
        found = self.strategy.getInstance(self._provider)
        return None if found is None else str(found.getId())


def strategy_class(name: str) -> Any:
    return discovery_class(f"strategies.{name}")


#: Lists picked from in turn: growing, shrinking, empty, and back.
LISTS = ["abc", "abc", "abc", "ab", "ab", "abcd", "abcd", "abcd", "", "", "cd", "bcd", "bcd", "a"]


def test_round_robin_and_sticky_pick_what_curators_pick_from_the_same_lists() -> None:
    made = {key: ServiceInstance("svc", id=key, registration_time_utc=1) for key in "abcd"}
    java_made = {key: to_java_instance(one) for key, one in made.items()}
    pairs: list[tuple[Any, Any]] = [
        (RoundRobinStrategy(), strategy_class("RoundRobinStrategy")()),
        (
            StickyStrategy(RoundRobinStrategy()),
            strategy_class("StickyStrategy")(strategy_class("RoundRobinStrategy")()),
        ),
    ]
    for ours, theirs in pairs:
        picker = JavaPicker(theirs)
        picks = []
        for listed in LISTS:
            mine = ours.get_instance([made[key] for key in listed])
            picks.append(
                ((None if mine is None else mine.id), picker.pick([java_made[k] for k in listed]))
            )
        assert [p for p, _ in picks] == [j for _, j in picks]
    # Curator's sticky counts a pick from an empty list as an instance too (documented)
    sticky = StickyStrategy(RoundRobinStrategy())
    java_sticky = strategy_class("StickyStrategy")(strategy_class("RoundRobinStrategy")())
    picker = JavaPicker(java_sticky)
    for listed in ["ab", "b", "", "a"]:
        sticky.get_instance([made[key] for key in listed])
        picker.pick([java_made[key] for key in listed])
    assert (sticky.instance_number, int(java_sticky.getInstanceNumber())) == (2, 3)


def test_random_picks_only_what_is_listed_and_none_from_nothing_as_curators_does() -> None:
    made = [ServiceInstance("svc", id=key, registration_time_utc=1) for key in "abc"]
    picker = JavaPicker(strategy_class("RandomStrategy")())
    ours = RandomStrategy()
    assert ours.get_instance([]) is None and picker.pick([]) is None
    java_made = [to_java_instance(one) for one in made]
    for listed in (made[:1], made):
        java_listed = java_made[: len(listed)]
        mine = {getattr(ours.get_instance(listed), "id", None) for _ in range(60)}
        theirs = {picker.pick(java_listed) for _ in range(60)}
        assert mine == theirs == {one.id for one in listed}


# -- payloads Python has no class for -----------------------------------------------------------


def java_payloads() -> dict[str, Any]:
    """Payloads of Java classes no Python class stands for, as a Java service makes them."""
    import jpype

    string_set = jclass("java.util.HashSet")()
    string_set.add("x")
    return {
        "HashSet": string_set,
        "Character": jclass("java.lang.Character")("c"),
        "UUID": jclass("java.util.UUID").fromString("123e4567-e89b-12d3-a456-426614174000"),
        "byte[]": jpype.JArray(jpype.JByte)(b"ab"),
        "int[]": jpype.JArray(jpype.JInt)([1, 2]),
        "String[]": jpype.JArray(jpype.JString)(["a"]),
        "List.of": jclass("java.util.List").of("a"),
        "Arrays.asList": jclass("java.util.Arrays").asList("a", "b"),
        "an enum": discovery_class("ServiceType").STATIC,
    }


def test_a_payload_java_wrote_of_a_class_python_lacks_is_written_back_as_java_wrote_it() -> None:
    """Each is read (a ``RawPayload``) and written back to the very bytes Java wrote, which
    Java reads to a payload equal to its own."""
    template = to_java_instance(verified_instance())
    for label, payload in java_payloads().items():
        built = discovery_class("ServiceInstance")(
            template.getName(),
            template.getId(),
            template.getAddress(),
            template.getPort(),
            None,
            payload,
            template.getRegistrationTimeUTC(),
            template.getServiceType(),
            template.getUriSpec(),
        )
        written = bytes(java_serializer().serialize(built))
        again = JsonInstanceSerializer().serialize(JsonInstanceSerializer().deserialize(written))
        assert again == written, label
        read = java_serializer().deserialize(jbytes(again)).getPayload()
        assert jclass("java.util.Objects").deepEquals(read, payload), label
