"""menagerie's rules on plain lists of names, as Java menagerie writes them: Java's
``Integer.parseInt`` of the text after the last ``-``, the prefix filter, the order, and who
holds and whom a waiter watches, for the lock, both sides of the read/write lock and the
semaphore (:mod:`pycurator._protocol.menagerie`)."""

from __future__ import annotations

import pytest

from pycurator._protocol import wire
from pycurator._protocol.drivers import Decision, Driver, NodeVanishedError
from pycurator._protocol.menagerie import (
    LOCK_DRIVER,
    LOCK_NAMING,
    PERMIT_NAMING,
    READ_DRIVER,
    READ_NAMING,
    WRITE_DRIVER,
    WRITE_NAMING,
    PermitDriver,
    ReadSide,
    sequence,
)
from pycurator._protocol.wire import JAVA_INT_MAX as INT_MAX
from pycurator._protocol.wire import JAVA_INT_MIN as INT_MIN
from pycurator._protocol.wire import java_parse_int as java_int


def seq(head: str, number: int) -> str:
    """A name as ZooKeeper numbers it: ``%010d``."""
    return f"{head}{number:010d}"


def decide(driver: Driver, children: list[str], ours: str) -> Decision:
    return driver.decide(driver.sort(children), ours)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0000000007", 7),
        ("+12", 12),
        ("-12", -12),
        (str(INT_MAX), INT_MAX),
        (str(INT_MIN), INT_MIN),
        ("\u0661\u0662", 12),  # Arabic-Indic digits: Character.digit reads them
        ("\uff11", 1),  # a fullwidth digit
    ],
)
def test_java_int_reads_what_integer_parse_int_reads(text: str, value: int) -> None:
    assert java_int(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "+",
        "-",
        "1_0",
        " 1",
        "1 ",
        "0x1",
        "1.0",
        str(INT_MAX + 1),
        str(INT_MIN - 1),
        "\U0001d7ce",
    ],
)
def test_java_int_refuses_what_integer_parse_int_throws_on(text: str) -> None:
    assert java_int(text) is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("lock-0000000003", 3),
        ("lock-host-12-0000000004", 4),  # ReentrantZkLock2's names: the last dash
        ("readLock--0000000005", 5),  # a downgrade's node
        ("lock--000000005", 5),  # a negative sequence: its sign read as the separator
        ("lock--2147483648", None),  # Integer.MIN_VALUE loses its sign and overflows
        ("lockfoo", None),  # no dash: IllegalArgumentException in Java
        ("lock-notes", None),
        ("lock-", None),
    ],
)
def test_a_sequence_is_read_after_the_last_dash(name: str, value: int | None) -> None:
    assert sequence(name) == value


def test_the_lock_keeps_parseable_lock_children_in_sequence_order() -> None:
    children = [
        seq("lock-", 9),
        "lockfoo",
        seq("lock-vm-7-", 2),
        seq("readLock-", 1),
        "lock-notes",
        seq("lock-", 5),
        "config",
    ]
    assert LOCK_DRIVER.sort(children) == [seq("lock-vm-7-", 2), seq("lock-", 5), seq("lock-", 9)]


def test_the_first_lock_node_holds_and_the_others_watch_their_nearest_predecessor() -> None:
    children = [seq("lock-", 8), seq("lock-", 3), seq("lock-", 5)]
    assert decide(LOCK_DRIVER, children, seq("lock-", 3)) == Decision(True)
    assert decide(LOCK_DRIVER, children, seq("lock-", 5)) == Decision(False, seq("lock-", 3), True)
    assert decide(LOCK_DRIVER, children, seq("lock-", 8)) == Decision(False, seq("lock-", 5), False)


def test_a_foreign_lock_child_competes_by_its_number_and_a_tie_counts_as_ahead() -> None:
    ours = seq("lock-", 4)
    assert decide(LOCK_DRIVER, [ours, seq("lockX-", 2)], ours) == Decision(
        False, "lockX-0000000002", True
    )
    assert decide(LOCK_DRIVER, [seq("lockX-", 4), ours], ours).watch == seq("lockX-", 4)
    assert decide(LOCK_DRIVER, [ours, seq("lockX-", 4)], ours).watch == seq("lockX-", 4)
    assert decide(LOCK_DRIVER, [ours, "lockX-abc", "lockX"], ours) == Decision(True)


def test_a_node_missing_from_the_listing_has_vanished() -> None:
    with pytest.raises(NodeVanishedError):
        decide(LOCK_DRIVER, [seq("lock-", 1)], seq("lock-", 2))


def test_a_reader_waits_only_for_a_lower_writer() -> None:
    children = [seq("readLock-", 1), seq("writeLock-", 2), seq("readLock-", 3), seq("lock-", 0)]
    assert decide(READ_DRIVER, children, seq("readLock-", 1)) == Decision(True)
    assert decide(READ_DRIVER, children, seq("readLock-", 3)) == Decision(
        False, seq("writeLock-", 2), True
    )


def test_a_reader_watches_the_nearest_lower_writer() -> None:
    children = [
        seq("writeLock-", 1),
        seq("writeLock-", 4),
        seq("readLock-", 6),
        seq("writeLock-", 8),
    ]
    assert decide(READ_DRIVER, children, seq("readLock-", 6)) == Decision(
        False, seq("writeLock-", 4), False
    )


def test_a_writer_waits_for_the_nearest_lower_reader_or_writer() -> None:
    children = [
        seq("readLock-", 1),
        seq("writeLock-", 2),
        seq("readLock-", 3),
        seq("writeLock-", 4),
    ]
    assert decide(WRITE_DRIVER, children, seq("writeLock-", 2)).watch == seq("readLock-", 1)
    assert decide(WRITE_DRIVER, children, seq("writeLock-", 4)).watch == seq("readLock-", 3)
    assert decide(WRITE_DRIVER, [seq("writeLock-", 2), seq("lock-", 1)], seq("writeLock-", 2)) == (
        Decision(True)
    )
    assert WRITE_DRIVER.relist_before_holding  # a downgrade's node may come below it


def test_a_downgrade_is_held_at_once_under_the_write_nodes_sequence() -> None:
    side = ReadSide("/base/writeLock-0000000007")
    assert side.node_sequence() == "-0000000007"
    assert READ_NAMING.prefix(side.token, None, "") + (side.node_sequence() or "") == (
        "readLock--0000000007"
    )
    assert decide(
        side, ["writeLock-0000000007", "readLock--0000000007"], "readLock--0000000007"
    ) == (Decision(True))
    assert ReadSide().node_sequence() is None


def test_a_downgrades_node_keeps_a_later_writer_behind_it_but_not_a_reader() -> None:
    downgrade = "readLock--0000000007"
    children = [downgrade, seq("writeLock-", 9), seq("readLock-", 10)]
    assert decide(WRITE_DRIVER, children, seq("writeLock-", 9)).watch == downgrade
    assert decide(READ_DRIVER, children, downgrade) == Decision(True)
    # the write node it takes its sequence from ties with it, and a tie never blocks here
    assert decide(WRITE_DRIVER, [seq("writeLock-", 7), downgrade], seq("writeLock-", 7)) == (
        Decision(True)
    )


def test_a_permit_holds_while_fewer_than_permits_nodes_are_ahead() -> None:
    driver = PermitDriver(2)
    children = [seq("permit-", n) for n in (5, 1, 3, 7)] + ["permitX", "lock-0000000000"]
    ordered = driver.sort(children)
    assert ordered == [seq("permit-", n) for n in (1, 3, 5, 7)]
    assert driver.decide(ordered, seq("permit-", 3)) == Decision(True)
    assert not driver.decide(ordered, seq("permit-", 5)).holds
    assert driver.watches(ordered, seq("permit-", 3)) == []


def test_a_permit_waiter_watches_the_permits_nodes_nearest_ahead() -> None:
    driver = PermitDriver(2)
    ordered = driver.sort([seq("permit-", n) for n in range(6)])
    assert driver.watches(ordered, seq("permit-", 2)) == [seq("permit-", 0), seq("permit-", 1)]
    assert driver.watches(ordered, seq("permit-", 5)) == [seq("permit-", 3), seq("permit-", 4)]
    assert PermitDriver(1).watches(ordered, seq("permit-", 5)) == [seq("permit-", 4)]


@pytest.mark.parametrize("permits", [1, 2, 3])
def test_watching_the_permits_nearest_is_exact(permits: int) -> None:
    """Whatever nodes ahead go away, the waiter holds only if one it watches went: so it is
    woken by every change that can grant it, and by no other deletion."""
    driver = PermitDriver(permits)
    everyone = [seq("permit-", n) for n in range(6)]
    ours = everyone[-1]
    watched = set(driver.watches(everyone, ours))
    for mask in range(1 << 5):
        left = [c for i, c in enumerate(everyone[:-1]) if not mask >> i & 1] + [ours]
        gone = set(everyone) - set(left)
        if driver.decide(left, ours).holds:
            assert gone & watched


def test_a_foreign_permit_child_that_ties_is_not_ahead() -> None:
    driver = PermitDriver(1)
    ordered = driver.sort([seq("permitX-", 4), seq("permit-", 4)])
    assert driver.decide(ordered, seq("permit-", 4)) == Decision(True)


def test_each_recipe_names_its_node_with_its_head_and_persistent_parents() -> None:
    for naming, head in [
        (LOCK_NAMING, "lock-"),
        (READ_NAMING, "readLock-"),
        (WRITE_NAMING, "writeLock-"),
        (PERMIT_NAMING, "permit-"),
    ]:
        assert naming.prefix("ignored", 77, "ignored") == head
        assert naming.parents == "persistent" and naming.claims
    assert wire.MENAGERIE_LOCK_HEAD.startswith(wire.MENAGERIE_LOCK_FILTER)
