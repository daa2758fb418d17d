"""Who holds the lock and whom a waiter watches, over children named as Java Curator names them."""

from __future__ import annotations

import pytest

from pycurator._protocol.drivers import (
    Decision,
    NodeVanishedError,
    ReadDriver,
    ReadSideDriver,
    StandardDriver,
    after_wake,
    asks_first,
    write_driver,
)

U1 = "_c_11111111-1111-4111-8111-111111111111-"
U2 = "_c_22222222-2222-4222-8222-222222222222-"
U3 = "_c_33333333-3333-4333-8333-333333333333-"


def mutex_children() -> list[str]:
    # unsorted, as getChildren returns them; U3's node is oldest
    return [f"{U1}lock-0000000005", f"{U2}lock-0000000009", f"{U3}lock-0000000001"]


def test_first_node_holds_the_mutex() -> None:
    driver = StandardDriver()
    children = driver.sort(mutex_children())
    assert driver.decide(children, f"{U3}lock-0000000001") == Decision(True)


def test_a_waiter_watches_the_node_right_before_its_own_and_only_the_second_holds_next() -> None:
    driver = StandardDriver()
    children = driver.sort(mutex_children())
    assert driver.decide(children, f"{U2}lock-0000000009") == Decision(
        False, f"{U1}lock-0000000005", then_holds=False
    )
    assert driver.decide(children, f"{U1}lock-0000000005") == Decision(
        False, f"{U3}lock-0000000001", then_holds=True
    )


def test_nodes_of_other_names_take_part_in_the_order() -> None:
    # a node without the token sorts by its whole name: after every sequence number
    driver = StandardDriver()
    children = driver.sort([*mutex_children(), "foreign-node"])
    assert children[-1] == "foreign-node"
    assert driver.decide(children, "foreign-node") == Decision(False, f"{U2}lock-0000000009")
    assert not driver.decide(children, "foreign-node").then_holds


def test_kazoo_style_names_sort_by_their_sequence_too() -> None:
    driver = StandardDriver()
    children = driver.sort(["abcdef__lock__0000000002", f"{U1}lock-0000000003"])
    # "__lock__0000000002" has no "lock-" token: it sorts by the whole name, after digits
    assert children == [f"{U1}lock-0000000003", "abcdef__lock__0000000002"]


def test_our_missing_node_means_the_session_expired() -> None:
    driver = StandardDriver()
    with pytest.raises(NodeVanishedError, match="Sequential path not found"):
        driver.decide(driver.sort(mutex_children()), f"{U1}lock-0000000042")


def test_max_leases_lets_that_many_hold_and_watches_that_far_back() -> None:
    driver = StandardDriver(max_leases=2)
    children = driver.sort(mutex_children())
    assert driver.decide(children, f"{U1}lock-0000000005").holds
    assert driver.decide(children, f"{U2}lock-0000000009") == Decision(
        False, f"{U3}lock-0000000001", then_holds=True
    )


def rw_children() -> list[str]:
    return [
        f"{U1}__READ__0000000003",
        f"{U2}__WRIT__0000000002",
        f"{U3}__READ__0000000001",
        f"{U1}__WRIT__0000000004",
        f"{U2}__READ__0000000005",
    ]


def test_write_lock_is_first_among_all_children() -> None:
    driver = write_driver()
    children = driver.sort(rw_children())
    assert driver.decide(children, f"{U2}__WRIT__0000000002") == Decision(
        False, f"{U3}__READ__0000000001", then_holds=True
    )
    assert driver.decide(children, f"{U1}__WRIT__0000000004") == Decision(
        False, f"{U1}__READ__0000000003", then_holds=False
    )


def test_reader_before_any_writer_holds() -> None:
    driver = ReadDriver()
    children = driver.sort(rw_children())
    assert driver.decide(children, f"{U3}__READ__0000000001") == Decision(True)


def test_reader_behind_a_writer_watches_the_first_writer() -> None:
    driver = ReadDriver()
    children = driver.sort(rw_children())
    # one writer ahead of the first reader: its deletion alone lets the reader in
    assert driver.decide(children, f"{U1}__READ__0000000003") == Decision(
        False, f"{U2}__WRIT__0000000002", then_holds=True
    )
    # two writers ahead: the first one's deletion leaves the second
    assert driver.decide(children, f"{U2}__READ__0000000005") == Decision(
        False, f"{U2}__WRIT__0000000002", then_holds=False
    )


def test_reader_with_vanished_node_raises() -> None:
    driver = ReadDriver()
    with pytest.raises(NodeVanishedError):
        driver.decide(driver.sort(rw_children()), f"{U3}__READ__0000000099")


def test_the_write_holder_reads_at_once_with_a_node_beside_its_write_node() -> None:
    # CURATOR-621: the downgrade's read node takes the write node's sequence, unsequenced
    side = ReadSideDriver(f"/p/{U2}__WRIT__0000000002")
    assert side.node_sequence() == "0000000002"
    assert side.decide(side.sort(rw_children()), f"{U2}__READ__0000000002") == Decision(True)
    others = ReadSideDriver()
    assert others.node_sequence() is None
    children = others.sort(rw_children())
    assert others.decide(children, f"{U1}__READ__0000000003") == ReadDriver().decide(
        children, f"{U1}__READ__0000000003"
    )


def test_a_waiter_knows_the_lock_once_the_node_it_watched_goes_if_it_was_next() -> None:
    next_in_line = Decision(False, "a", then_holds=True)
    further_back = Decision(False, "b", then_holds=False)
    # deleted, no connection change: held (to be confirmed) or list again
    assert after_wake(next_in_line, True, False, False) == Decision(True)
    assert after_wake(further_back, True, False, False) is None
    # the write lock lists again before it may hold (a downgrade node may sort beside ours)
    assert after_wake(next_in_line, True, False, True) is None
    # an event that changed nothing: the same decision, watched again
    assert after_wake(further_back, False, False, False) is further_back
    # a connection change: list again, whatever else happened
    assert after_wake(next_in_line, True, True, False) is None
    assert after_wake(further_back, False, True, False) is None


def test_the_request_sent_first_after_the_deletion_is_the_one_the_waiter_makes_next() -> None:
    next_in_line = Decision(False, "a", then_holds=True)
    assert asks_first(next_in_line, False) == "exists"
    assert asks_first(next_in_line, True) == "children"
    assert asks_first(Decision(False, "b"), False) == "children"
