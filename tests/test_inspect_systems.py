"""Who holds and who waits on the other Java lock systems' paths, read from child names as each
Java system writes them (no server)."""

from __future__ import annotations

import pytest

from pycurator._protocol.zkrecipes import znode_name_key
from pycurator._recipes.inspection_systems import (
    classify_others,
    layout_of_others,
    name_session,
    zklocker_key,
)

S1, S2, S3 = 72057646661894145, 72057646661894146, -72057646661894147


def summary(
    layout: str, children: list[tuple[str, int]], permits: int | None = None
) -> list[tuple[str, str, bool, int]]:
    nodes, _ = classify_others(layout, children, permits)
    return [(n.name, n.kind, n.holder, n.position) for n in nodes]


def test_each_systems_layout_is_told_by_its_names() -> None:
    assert layout_of_others([f"x-{S1}-0000000003"]) == "zookeeper-write-lock"
    assert layout_of_others([f"x-{S3}-0000000003"]) == "zookeeper-write-lock"
    assert layout_of_others(["n_0000000000"]) == "zookeeper-election"
    assert layout_of_others(["lock-0000000001"]) == "menagerie-lock"
    assert layout_of_others(["lock-vm-23-1-0000000001"]) == "menagerie-lock"
    assert layout_of_others(["readLock-0000000001"]) == "menagerie-read-write"
    assert layout_of_others(["writeLock-0000000001"]) == "menagerie-read-write"
    assert layout_of_others(["permit-0000000001"]) == "menagerie-semaphore"
    assert layout_of_others([f"dlk-{S1}-0000000001"]) == "zklocker"
    assert layout_of_others([f"dlk-orders-{S1}-0000000001"]) == "zklocker"
    assert layout_of_others(["config", "x-notes"]) is None


def test_znode_name_order_puts_negative_sequences_first_and_unnumbered_names_last() -> None:
    names = ["config", f"x-{S1}-0000000002", f"x-{S2}--000000005", "x-1-0000000002", "a-b"]
    ordered = sorted(names, key=znode_name_key)
    # by number, then by the part before it (String.compareTo); names without one last
    assert ordered == [
        f"x-{S2}--000000005",
        "x-1-0000000002",
        f"x-{S1}-0000000002",
        "a-b",
        "config",
    ]


def test_the_first_write_lock_node_holds_and_the_others_wait_in_order() -> None:
    children = [(f"x-{S2}-0000000002", S2), (f"x-{S1}-0000000001", S1), ("config", 0)]
    assert summary("zookeeper-write-lock", children) == [
        (f"x-{S1}-0000000001", "write", True, 0),
        (f"x-{S2}-0000000002", "write", False, 1),
    ]


def test_a_foreign_numbered_child_blocks_every_write_lock_node_as_java_sorts_it() -> None:
    children = [(f"x-{S1}-0000000002", S1), ("_c_0b9c-lock-0000000001", 0)]
    assert summary("zookeeper-write-lock", children) == [
        ("_c_0b9c-lock-0000000001", "other", False, 0),
        (f"x-{S1}-0000000002", "write", False, 1),
    ]


def test_the_session_is_read_from_the_names_that_carry_it() -> None:
    assert name_session("zookeeper-write-lock", f"x-{S1}-0000000001") == S1
    assert name_session("zookeeper-write-lock", f"x-{S3}-0000000001") == S3
    assert name_session("zklocker", f"dlk-a-b-{S2}-0000000001") == S2
    assert name_session("zklocker", f"dlk-{S2}-0000000001") == S2
    assert name_session("menagerie-lock", "lock-0000000001") is None
    assert zklocker_key(f"dlk-a-b-{S2}-0000000001") == "a-b"
    assert zklocker_key(f"dlk-{S2}-0000000001") == ""
    assert zklocker_key("config") is None
    # a key ending in "-" or a negative session: the owner tells
    assert zklocker_key(f"dlk-a-{S3}-0000000001", S3) == "a"
    assert zklocker_key(f"dlk-a--{S1}-0000000001", S1) == "a-"


def test_the_first_offer_leads_an_election() -> None:
    children = [("n_0000000004", S2), ("n_0000000002", S1), ("stray", S3)]
    assert summary("zookeeper-election", children) == [
        ("n_0000000002", "offer", True, 0),
        ("n_0000000004", "offer", False, 1),
    ]


def test_menagerie_lock_order_is_the_number_after_the_last_dash() -> None:
    children = [("lock-vm-1-0000000003", S2), ("lock-0000000001", S1), ("notes", 0)]
    nodes, ignored = classify_others("menagerie-lock", children)
    assert [(n.name, n.holder, n.position) for n in nodes] == [
        ("lock-0000000001", True, 0),
        ("lock-vm-1-0000000003", False, 1),
    ]
    assert ignored == ["notes"]


def test_menagerie_readers_ahead_of_the_first_writer_hold_and_a_downgrade_holds_beside_it() -> None:
    children = [
        ("readLock-0000000001", S1),
        ("writeLock-0000000002", S2),
        ("readLock--0000000002", S2),  # the writer's downgrade
        ("readLock-0000000003", S3),
        ("writeLock-0000000004", S1),
    ]
    assert summary("menagerie-read-write", children) == [
        ("readLock-0000000001", "read", True, 0),
        ("readLock--0000000002", "read", True, 0),
        ("writeLock-0000000002", "write", False, 1),
        ("readLock-0000000003", "read", False, 2),
        ("writeLock-0000000004", "write", False, 3),
    ]


def test_menagerie_permits_are_told_only_when_given() -> None:
    children = [("permit-0000000003", S3), ("permit-0000000001", S1), ("permit-0000000002", S2)]
    assert summary("menagerie-semaphore", children, permits=2) == [
        ("permit-0000000001", "permit", True, 0),
        ("permit-0000000002", "permit", True, 0),
        ("permit-0000000003", "permit", False, 1),
    ]
    assert [holder for _, _, holder, _ in summary("menagerie-semaphore", children)] == [
        False,
        False,
        False,
    ]


def test_zklocker_nodes_queue_among_what_their_own_java_locker_lists() -> None:
    children = [
        (f"dlk-a-{S1}-0000000001", S1),
        (f"dlk-{S2}-0000000002", S2),  # keyless: lists every dlk- node, waits for a
        (f"dlk-a-{S3}-0000000003", S3),  # keyed a: ignores the keyless node
        (f"dlk-b-{S2}-0000000004", S2),
        ("config", 0),
    ]
    assert summary("zklocker", children) == [
        (f"dlk-a-{S1}-0000000001", "key a", True, 0),
        (f"dlk-{S2}-0000000002", "keyless", False, 1),
        (f"dlk-a-{S3}-0000000003", "key a", False, 1),
        (f"dlk-b-{S2}-0000000004", "key b", True, 0),
    ]


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="not a layout"):
        classify_others("mutex", [])


@pytest.mark.parametrize(
    ("layout", "persistent", "ephemeral", "kind"),
    [
        ("menagerie-lock", "lock-0000000001", "lock-0000000002", "lock"),
        ("menagerie-read-write", "writeLock-0000000001", "readLock-0000000002", "read"),
        ("menagerie-semaphore", "permit-0000000001", "permit-0000000002", "permit"),
        ("zookeeper-election", "n_0000000001", "n_0000000002", "offer"),
        ("zklocker", f"dlk-k-{S2}-0000000001", f"dlk-k-{S1}-0000000002", "key k"),
    ],
)
def test_a_persistent_node_the_system_counts_stands_in_line_and_never_holds(
    layout: str, persistent: str, ephemeral: str, kind: str
) -> None:
    """Java reads names, not modes: a persistent node its filter takes is counted (and, first,
    blocks for good); it shows as ``other`` in its place, and the node behind it waits."""
    got = summary(layout, [(ephemeral, S1), (persistent, 0)], permits=1)
    assert [(name, k, holder) for name, k, holder, _ in got] == [
        (persistent, "other", False),
        (ephemeral, kind, False),
    ]
    assert got[0][3] < got[1][3]
