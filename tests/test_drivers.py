"""Who holds the lock and whom a waiter watches, over children named as Java Curator names them."""

from __future__ import annotations

import pytest

from pycurator._drivers import Decision, NodeVanishedError, ReadDriver, StandardDriver, write_driver

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


def test_a_waiter_watches_the_node_right_before_its_own() -> None:
    driver = StandardDriver()
    children = driver.sort(mutex_children())
    assert driver.decide(children, f"{U2}lock-0000000009") == Decision(
        False, f"{U1}lock-0000000005"
    )
    assert driver.decide(children, f"{U1}lock-0000000005") == Decision(
        False, f"{U3}lock-0000000001"
    )


def test_nodes_of_other_names_take_part_in_the_order() -> None:
    # a node without the token sorts by its whole name: after every sequence number
    driver = StandardDriver()
    children = driver.sort([*mutex_children(), "foreign-node"])
    assert children[-1] == "foreign-node"
    assert driver.decide(children, "foreign-node") == Decision(False, f"{U2}lock-0000000009")


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
        False, f"{U3}lock-0000000001"
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
        False, f"{U3}__READ__0000000001"
    )
    assert driver.decide(children, f"{U1}__WRIT__0000000004") == Decision(
        False, f"{U1}__READ__0000000003"
    )


def test_reader_before_any_writer_holds() -> None:
    driver = ReadDriver()
    children = driver.sort(rw_children())
    assert driver.decide(children, f"{U3}__READ__0000000001") == Decision(True)


def test_reader_behind_a_writer_watches_the_first_writer() -> None:
    driver = ReadDriver()
    children = driver.sort(rw_children())
    assert driver.decide(children, f"{U1}__READ__0000000003") == Decision(
        False, f"{U2}__WRIT__0000000002"
    )
    assert driver.decide(children, f"{U2}__READ__0000000005") == Decision(
        False, f"{U2}__WRIT__0000000002"
    )


def test_reader_with_vanished_node_raises() -> None:
    driver = ReadDriver()
    with pytest.raises(NodeVanishedError):
        driver.decide(driver.sort(rw_children()), f"{U3}__READ__0000000099")
