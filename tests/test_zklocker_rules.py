"""ZkLocker's rules on plain lists of child names as Java's ZkLocker writes them: its names read
from the right, its filter, its order (Java's ``Integer.parseInt`` of the last part), who holds
and whom a waiter watches, with foreign children, keyless and keyed lockers, keys with ``-``,
negative session ids, and sequences past Java's ``int``."""

from __future__ import annotations

import random

import pytest

from pycurator._protocol.drivers import Decision, NodeVanishedError
from pycurator._protocol.zklocker import (
    LockerName,
    ZkLockerDriver,
    check_key,
    conflicts,
    java_prefix,
    java_sees,
    naming,
    parse,
    sequence,
    sort_children,
)

S1, S2, S3 = 72057646661894145, 72057646661894146, -8935141660703064063


def node(seq: int, session: int = S1, key: str | None = None) -> str:
    """A node's name as ZkLocker writes it (``%010d`` of the sequence, as ZooKeeper does)."""
    return f"dlk-{session}-{seq:010d}" if key is None else f"dlk-{key}-{session}-{seq:010d}"


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        (node(1), LockerName(None, S1, 1)),
        (node(7, S2, "orders"), LockerName("orders", S2, 7)),
        (node(7, S2, "a-b"), LockerName("a-b", S2, 7)),
        (node(7, S1, "a-123"), LockerName("a-123", S1, 7)),
        (node(7, S1, "-x"), LockerName("-x", S1, 7)),
        (node(7, S1, "a--b"), LockerName("a--b", S1, 7)),
        (node(7, S1, "42"), LockerName("42", S1, 7)),
        (node(3, S3), LockerName(None, S3, 3)),  # a negative session id: dlk--893...-000..3
        (node(3, S3, "k-1"), LockerName("k-1", S3, 3)),
        (f"dlk-{S1}--2147483648", LockerName(None, S1, 2**31)),
        (f"dlk-k-{S3}--2147483648", LockerName("k", S3, 2**31)),
    ],
)
def test_a_name_is_read_from_the_right_and_tells_its_key_exactly(
    name: str, parsed: LockerName
) -> None:
    assert parse(name) == parsed


@pytest.mark.parametrize(
    "name",
    ["config", "dlk-notes", "dlk-x-5", "dlk-5", "lock-0000000001", f"dlk-k-{S1}-", "dlk--5"],
)
def test_a_name_no_zklocker_writes_has_no_key(name: str) -> None:
    assert parse(name) is None


@pytest.mark.parametrize(
    ("name", "number"),
    [
        (node(12), 12),
        ("dlk-x-5", 5),  # a foreign child with a number: Java counts it by that number
        ("dlk-x-+5", 5),  # Integer.parseInt takes a plus sign
        ("dlk-x-\u0665", 5),  # ... and any decimal digit of the BMP
        (f"dlk-{S1}--000000004", 4),  # a wrapped counter's -4: Java reads it without its sign
        (f"dlk-{S1}--2147483648", 2**31),  # Java throws; ZooKeeper wrote it: taken as it reads
        (f"dlk-{S1}-2147483647", 2**31 - 1),
    ],
)
def test_the_sequence_is_what_javas_parse_int_reads_after_the_last_dash(
    name: str, number: int
) -> None:
    assert sequence(name) == number


@pytest.mark.parametrize(
    "name",
    [
        "dlk-notes",
        "dlk-x-",
        "dlk-x-+",
        "dlk-x-5a",
        "dlk-x-2147483648",
        "dlk-x-1_0",
        "dlk-x- 5",
        "dlk-x-\U0001d7d3",  # a digit outside the BMP: two UTF-16 units, no digit to Java
        "config",
        f"dlk-{S1}--9999999999",
    ],
)
def test_a_child_java_cannot_parse_has_no_sequence(name: str) -> None:
    assert sequence(name) is None


def test_the_order_keeps_zklocker_nodes_only_by_number_then_name() -> None:
    children = [
        "config",
        node(9, S2),
        "_c_0b9c-lock-0000000001",  # a Curator node: not dlk-, not counted (as Java)
        "dlk-notes",  # Java throws on it (bug 3): ignored
        node(4, S1, "k"),
        "dlk-x-4",  # ties with a real sequence: by name
        node(2, S3),
    ]
    assert sort_children(children) == [node(2, S3), node(4, S1, "k"), "dlk-x-4", node(9, S2)]


# -- keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "k", "a-b", "-x", "42", "a--b", "订单", "x.y"])
def test_a_key_that_reads_back_is_accepted(key: str | None) -> None:
    assert check_key(key) == key
    if key is not None:
        assert parse(f"{java_prefix(key)}{S3}-0000000001") == LockerName(key, S3, 1)


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        ("", ValueError, "must not be empty"),
        ("a/b", ValueError, "contains '/'"),
        ("a-", ValueError, "ends with '-'"),
        ("a\x00b", ValueError, "null character"),
        ("a\x07", ValueError, "invalid character"),
        (b"k", TypeError, "str or None"),
        (5, TypeError, "str or None"),
    ],
)
def test_a_bad_key_is_refused_with_its_reason(key: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        check_key(key)  # type: ignore[arg-type]


def test_the_naming_is_javas_name_and_reads_back_only_the_sessions_own_nodes() -> None:
    keyed, keyless = naming("a"), naming(None)
    assert keyed.prefix("ignored", S1, "") == f"dlk-a-{S1}-"
    assert keyless.prefix("ignored", S3, "") == f"dlk-{S3}-"
    assert (keyed.protected, keyed.session, keyed.parents, keyed.claims) == (
        False,
        True,
        "persistent",
        True,
    )
    assert keyed.made(node(5, S1, "a"), f"dlk-a-{S1}-")
    assert keyed.made(f"dlk-a-{S1}--000000005", f"dlk-a-{S1}-")
    # key "a-<session>"'s node starts with key "a"'s prefix: not made with it
    assert not keyed.made(node(5, S1, f"a-{S1}"), f"dlk-a-{S1}-")
    assert not keyless.made(node(5, S1, str(S1)), f"dlk-{S1}-")
    assert not keyless.made(node(5, S2), f"dlk-{S1}-")


# -- who holds -----------------------------------------------------------------------------------


def decide(key: str | None, children: list[str], ours: str) -> Decision:
    driver = ZkLockerDriver(key)
    return driver.decide(driver.sort(children), ours)


def test_the_first_node_holds_and_foreign_children_do_not_count() -> None:
    ours = node(5, S1, "k")
    children = ["config", "dlk-notes", "_c_1-lock-0000000001", node(7, S2, "k"), ours]
    assert decide("k", children, ours) == Decision(True)


def test_a_waiter_watches_the_nearest_node_before_its_own() -> None:
    ours = node(5, S2, "k")
    children = [node(1, S3, "k"), node(3, S1, "k"), ours, node(8, S3, "k")]
    assert decide("k", children, ours) == Decision(False, node(3, S1, "k"), False)
    children = [node(3, S1, "k"), ours]
    assert decide("k", children, ours) == Decision(False, node(3, S1, "k"), True)


def test_a_foreign_child_with_a_number_and_the_prefix_blocks_as_in_java() -> None:
    ours = node(5, S1, "x")
    assert decide("x", ["dlk-x-4", ours], ours) == Decision(False, "dlk-x-4", True)
    assert decide(None, ["dlk-x-4", node(5)], node(5)) == Decision(False, "dlk-x-4", True)
    assert decide("y", ["dlk-x-4", node(5, S1, "y")], node(5, S1, "y")) == Decision(True)


def test_our_node_missing_from_the_listing_is_told() -> None:
    with pytest.raises(NodeVanishedError):
        decide("k", [node(1, S2, "k")], node(2, S1, "k"))


def test_two_nodes_of_one_session_queue_behind_each_other() -> None:
    first, second = node(1, S1, "k"), node(2, S1, "k")
    assert decide("k", [first, second], first) == Decision(True)
    assert decide("k", [first, second], second) == Decision(False, first, True)


#: Mixed keys: (our key, the key of the node before ours, what Java with our key does, what
#: the Python side does). "wait" means the node ahead keeps us waiting.
MIXED = [
    (None, "k", "wait", "wait"),  # Java's keyless sees every keyed node; so does Python
    ("k", None, "hold", "wait"),  # Java's keyed ignores keyless; Python: the keyless Java sees us
    ("a", "a-b", "wait", "wait"),  # "dlk-a-" starts "dlk-a-b-..."
    ("a-b", "a", "hold", "wait"),  # Java a-b ignores a; Python: Java a sees our node
    ("a", "b", "hold", "hold"),  # distinct keys: independent, in both languages
    ("a-b", "a-c", "hold", "hold"),
    ("k", "k", "wait", "wait"),
]


@pytest.mark.parametrize(("ours_key", "ahead_key", "java", "python"), MIXED)
def test_mixed_keys_java_and_python_decide_as_the_table_says(
    ours_key: str | None, ahead_key: str | None, java: str, python: str
) -> None:
    ahead, ours = node(1, S2, ahead_key), node(2, S1, ours_key)
    java_waits = java_sees(ours_key, ahead)
    assert ("wait" if java_waits else "hold") == java
    held = decide(ours_key, [ahead, ours], ours).holds
    assert ("hold" if held else "wait") == python


def test_a_numeric_key_sees_the_keyless_nodes_of_the_session_it_names() -> None:
    # Java's filter "dlk-42-" counts keyless nodes of session 42: so does the Python side
    keyless_of_42, ours = node(1, 42), node(2, S1, "42")
    assert java_sees("42", keyless_of_42)
    assert decide("42", [keyless_of_42, ours], ours) == Decision(False, keyless_of_42, True)


# -- agreement with Java, and no cycle -----------------------------------------------------------


def java_waits_for(key: str | None, children: list[str], ours: str) -> list[str]:
    """Java's ``innerLock``: its filter, then the nodes of lower number (its TreeSet's headSet);
    a child without a number, on which Java throws, left out."""
    mine = sequence(ours)
    assert mine is not None
    numbered = [(c, sequence(c)) for c in children if java_sees(key, c)]
    return [c for c, number in numbered if number is not None and number < mine]


KEYS = [None, "a", "a-b", "a-b-c", "b", "42", "-x"]


@pytest.mark.parametrize("seed", range(40))
def test_python_waits_for_all_java_waits_for_only_on_lower_nodes(seed: int) -> None:
    rng = random.Random(seed)
    sessions = [S1, S2, S3, 42]
    keys = [rng.choice(KEYS) for _ in range(rng.randint(1, 9))]
    nodes = [(key, node(seq, rng.choice(sessions), key)) for seq, key in enumerate(keys)]
    foreign = ["config", "dlk-notes", "dlk-a-b-x"]
    children = [name for _, name in nodes] + foreign
    rng.shuffle(children)
    order = sort_children(children)
    for key, ours in nodes:
        decision = ZkLockerDriver(key).decide(order, ours)
        lower = order[: order.index(ours)]
        python = [c for c in lower if conflicts(key, ours, c)]
        assert set(java_waits_for(key, children, ours)) <= set(python)  # never less careful
        assert decision.holds == (not python)
        if not decision.holds:
            assert decision.watch == python[-1]  # the nearest: a lower node, so no cycle
            assert order.index(decision.watch) < order.index(ours)
    # the nodes that hold together conflict with none of the others that hold
    holding = [(k, n) for k, n in nodes if ZkLockerDriver(k).decide(order, n).holds]
    for key, ours in holding:
        for other_key, other in holding:
            if other != ours:
                assert not conflicts(key, ours, other)
                assert not conflicts(other_key, other, ours)
