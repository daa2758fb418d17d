"""ZooKeeper's recipes as pure rules: names parsed, ordered and decided on as Java's
``ZNodeName``, ``WriteLock`` and ``LeaderElectionSupport`` do, on plain lists of names."""

from __future__ import annotations

import random

import pytest

from pycurator._protocol.drivers import Decision, NodeVanishedError
from pycurator._protocol.wire import java_parse_int
from pycurator._protocol.zkrecipes import (
    ELECTION_DRIVER,
    ELECTION_NAMING,
    WRITE_LOCK_DRIVER,
    WRITE_LOCK_NAMING,
    check_host_name,
    offer_number,
    split_znode_name,
)

SID = 72057646661894145


def lock(seq: int, session: int = SID) -> str:
    """A WriteLock node's name as ZooKeeper writes it (``%010d`` of the parent's counter)."""
    return f"x-{session}-{seq:010d}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0000000007", 7),
        ("2147483647", 2147483647),
        ("-2147483648", -2147483648),
        ("+12", 12),
        ("-0000000001", -1),
        ("\u0663", 3),  # Arabic-Indic three: Character.digit reads it
        ("2147483648", None),
        ("-2147483649", None),
        ("", None),
        ("-", None),
        ("+", None),
        ("1 ", None),
        ("1_000", None),
        ("0x1", None),
        ("\U0001d7ce", None),  # a digit outside the BMP: two UTF-16 units to Java, no digit
    ],
)
def test_sequences_parse_as_java_integer_parse_int(text: str, value: int | None) -> None:
    assert java_parse_int(text) == value


@pytest.mark.parametrize(
    ("name", "prefix", "sequence"),
    [
        ("x-72057646661894145-0000000000", "x-72057646661894145", 0),
        ("x-72057646661894145--2147483648", "x-72057646661894145", -2147483648),
        ("x--5-0000000003", "x--5", 3),  # a negative session id
        ("x--5--0000000003", "x--5", -3),
        ("_c_0b9c-lock-0000000001", "_c_0b9c-lock", 1),
        ("config", "config", None),
        ("notes-v2", "notes", None),
        ("-7", "", 7),
        ("--7", "", -7),
        ("lock-", "lock", None),
    ],
)
def test_a_name_splits_at_its_last_dash_as_znode_name_does(
    name: str, prefix: str, sequence: int | None
) -> None:
    assert split_znode_name(name) == (prefix, sequence)


def test_write_lock_nodes_sort_by_sequence_then_prefix_unnumbered_last() -> None:
    ordered = [
        lock(-2147483648, 9),  # after a wrap of the counter: before every positive number
        lock(1, 3),
        lock(1, 4),  # a tie on the sequence: by prefix, as String.compareTo
        "_c_0b9c-lock-0000000002",  # a foreign child with a number competes by it
        lock(3, 1),
        "config",  # no number: after every numbered name
        "notes-v2",
    ]
    shuffled = ordered[:]
    random.Random(7).shuffle(shuffled)
    assert WRITE_LOCK_DRIVER.sort(shuffled) == ordered


def test_prefixes_compare_by_utf16_code_unit_as_java_strings_do() -> None:
    # U+FF5E sorts after U+1F600 by code point, before it by UTF-16 unit (0xD83D)
    high, astral = "x-\uff5e-0000000001", "x-\U0001f600-0000000001"
    assert WRITE_LOCK_DRIVER.sort([high, astral]) == [astral, high]


def test_the_first_node_holds_and_a_waiter_watches_the_one_just_before_it() -> None:
    children = WRITE_LOCK_DRIVER.sort([lock(4, 2), lock(2, 1), "config", lock(3, 5)])
    assert WRITE_LOCK_DRIVER.decide(children, lock(2, 1)) == Decision(True)
    assert WRITE_LOCK_DRIVER.decide(children, lock(3, 5)) == Decision(False, lock(2, 1), True)
    assert WRITE_LOCK_DRIVER.decide(children, lock(4, 2)) == Decision(False, lock(3, 5), False)


def test_a_foreign_numbered_child_blocks_and_an_unnumbered_one_never_does() -> None:
    foreign = "_c_0b9c-lock-0000000001"
    children = WRITE_LOCK_DRIVER.sort([lock(2), foreign, "config"])
    assert WRITE_LOCK_DRIVER.decide(children, lock(2)) == Decision(False, foreign, True)
    children = WRITE_LOCK_DRIVER.sort([lock(2), "config", "readme"])
    assert WRITE_LOCK_DRIVER.decide(children, lock(2)).holds


def test_a_waiter_lists_again_before_holding_a_later_node_may_sort_before_it() -> None:
    assert WRITE_LOCK_DRIVER.relist_before_holding
    assert ELECTION_DRIVER.relist_before_holding


def test_our_node_missing_from_the_children_is_reported_vanished() -> None:
    with pytest.raises(NodeVanishedError):
        WRITE_LOCK_DRIVER.decide([lock(1)], lock(2))
    with pytest.raises(NodeVanishedError):
        ELECTION_DRIVER.decide(["n_0000000001"], "n_0000000002")


def test_write_lock_naming_is_x_session_dash_with_persistent_parents_and_claims() -> None:
    assert WRITE_LOCK_NAMING.prefix("x-", SID, "") == f"x-{SID}-"
    assert WRITE_LOCK_NAMING.prefix("x-", -5, "") == "x--5-"  # Java's signed decimal long
    assert WRITE_LOCK_NAMING.parents == "persistent"
    assert WRITE_LOCK_NAMING.claims
    assert WRITE_LOCK_DRIVER.node_sequence() is None  # EPHEMERAL_SEQUENTIAL


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("n_0000000004", 4),
        ("n_-2147483648", -2147483648),
        ("n_config", None),
        ("config", None),
        ("ab12", None),  # Java reads any two characters as the head: to Java, offer 12
        ("n_", None),
        ("n_2147483648", None),
    ],
)
def test_an_offer_is_n_and_a_java_int(name: str, number: int | None) -> None:
    assert offer_number(name) == number


def test_offers_sort_by_number_foreign_children_left_out_ties_in_listing_order() -> None:
    listing = ["n_0000000010", "config", "n_-0000000002", "n_9", "n_0000000009", "lock-1"]
    assert ELECTION_DRIVER.sort(listing) == [
        "n_-0000000002",
        "n_9",  # the tie keeps its listing order, as Java's stable Collections.sort
        "n_0000000009",
        "n_0000000010",
    ]


def test_the_first_offer_leads_and_each_other_watches_the_one_before_its_own() -> None:
    offers = ELECTION_DRIVER.sort(["n_0000000003", "zk-config", "n_0000000001", "n_0000000002"])
    assert ELECTION_DRIVER.decide(offers, "n_0000000001") == Decision(True)
    assert ELECTION_DRIVER.decide(offers, "n_0000000003") == Decision(False, "n_0000000002", False)


def test_election_naming_is_n_underscore_with_a_persistent_root() -> None:
    assert ELECTION_NAMING.prefix("n_", SID, "") == "n_"
    assert ELECTION_NAMING.parents == "persistent"
    assert ELECTION_NAMING.claims


def test_a_host_name_must_be_text_utf8_can_write() -> None:
    assert check_host_name("host-1") == "host-1"
    with pytest.raises(TypeError, match="host_name must be a str"):
        check_host_name(b"host")
    with pytest.raises(ValueError, match="UTF-8"):
        check_host_name("\ud800")
