"""Who holds and who waits, read from child names as Java Curator writes them (no server)."""

from __future__ import annotations

from collections.abc import Sequence

from pycurator._protocol.wire import is_latch_node_name
from pycurator._recipes.inspection import (
    Entry,
    QueuedNode,
    _curator_view,
    classify_latch,
    classify_mutex,
    classify_read_write,
    classify_semaphore,
    layout_of,
)

U1 = "_c_11111111-1111-4111-8111-111111111111-"
U2 = "_c_22222222-2222-4222-8222-222222222222-"
U3 = "_c_33333333-3333-4333-8333-333333333333-"


def entry(name: str, session: int = 1) -> Entry:
    return Entry(name, session, b"127.0.0.1", 0)


def summary(participants: Sequence[QueuedNode]) -> list[tuple[str, str, bool, int]]:
    return [(p.entry.name, p.kind, p.holder, p.position) for p in participants]


def test_layout_is_told_by_the_child_names() -> None:
    assert layout_of([]) == "empty"
    assert layout_of([f"{U1}lock-0000000001"]) == "mutex"
    assert layout_of([f"{U1}__WRIT__0000000001", f"{U2}__READ__0000000002"]) == "read-write"
    assert layout_of(["locks", "leases"]) == "semaphore"
    assert layout_of(["leases"]) == "semaphore"
    assert layout_of([f"{U1}latch-0000000001", f"{U2}latch-0000000002"]) == "latch"
    assert layout_of(["latch-0000000001"]) == "latch"


def test_latch_node_names_are_told_from_lock_and_other_names() -> None:
    assert is_latch_node_name(f"{U1}latch-0000000001")
    assert is_latch_node_name("latch-0000000001")
    assert not is_latch_node_name(f"{U1}lock-0000000001")
    assert not is_latch_node_name(f"{U1}latch-1")
    assert not is_latch_node_name("latch-")
    assert not is_latch_node_name("mylatch-0000000001")


def test_mutex_holder_is_the_lowest_sequence_whatever_the_listing_order() -> None:
    entries = [entry(f"{U1}lock-0000000005"), entry(f"{U2}lock-0000000002")]
    assert summary(classify_mutex(entries)) == [
        (f"{U2}lock-0000000002", "mutex", True, 0),
        (f"{U1}lock-0000000005", "mutex", False, 1),
    ]


def test_a_foreign_child_takes_part_in_the_mutex_order_as_other() -> None:
    entries = [entry("abc__lock__0000000001"), entry(f"{U1}lock-0000000007")]
    assert summary(classify_mutex(entries)) == [
        (f"{U1}lock-0000000007", "mutex", True, 0),
        ("abc__lock__0000000001", "other", False, 1),
    ]


def test_readers_ahead_of_the_first_writer_all_hold() -> None:
    entries = [
        entry(f"{U3}__WRIT__0000000003", 3),
        entry(f"{U1}__READ__0000000001", 1),
        entry(f"{U2}__READ__0000000002", 2),
        entry(f"{U1}__READ__0000000004", 1),
    ]
    assert summary(classify_read_write(entries)) == [
        (f"{U1}__READ__0000000001", "read", True, 0),
        (f"{U2}__READ__0000000002", "read", True, 0),
        (f"{U3}__WRIT__0000000003", "write", False, 1),
        (f"{U1}__READ__0000000004", "read", False, 2),
    ]


def test_a_read_node_of_the_write_holders_session_holds_as_a_downgrade() -> None:
    entries = [
        entry(f"{U1}__WRIT__0000000001", 1),
        entry(f"{U2}__READ__0000000002", 2),
        entry(f"{U3}__READ__0000000003", 1),
    ]
    assert summary(classify_read_write(entries)) == [
        (f"{U1}__WRIT__0000000001", "write", True, 0),
        (f"{U2}__READ__0000000002", "read", False, 1),
        (f"{U3}__READ__0000000003", "read", True, 0),
    ]


def test_a_writer_behind_a_reader_waits() -> None:
    entries = [entry(f"{U1}__READ__0000000001", 1), entry(f"{U2}__WRIT__0000000002", 2)]
    assert [p.holder for p in classify_read_write(entries)] == [True, False]


def test_semaphore_leases_hold_and_the_locks_queue_waits() -> None:
    leases = [entry(f"leases/{U2}lease-0000000001", 2), entry(f"leases/{U1}lease-0000000000", 1)]
    locks = [entry(f"locks/{U3}lock-0000000004", 3)]
    assert summary(classify_semaphore(locks, leases)) == [
        (f"leases/{U1}lease-0000000000", "lease", True, 0),
        (f"leases/{U2}lease-0000000001", "lease", True, 0),
        (f"locks/{U3}lock-0000000004", "lock", False, 1),
    ]


def test_the_newest_lease_of_the_locks_queue_head_is_still_waiting() -> None:
    leases = [
        entry(f"leases/{U1}lease-0000000000", 1),
        entry(f"leases/{U2}lease-0000000002", 2),
    ]
    locks = [entry(f"locks/{U2}lock-0000000001", 2), entry(f"locks/{U3}lock-0000000003", 3)]
    assert summary(classify_semaphore(locks, leases)) == [
        (f"leases/{U1}lease-0000000000", "lease", True, 0),
        (f"leases/{U2}lease-0000000002", "lease", False, 1),
        (f"locks/{U2}lock-0000000001", "lock", False, 1),
        (f"locks/{U3}lock-0000000003", "lock", False, 2),
    ]


def test_latch_leader_is_first_by_the_part_after_latch_whatever_the_uuid_or_listing() -> None:
    # U3 sorts first by whole name, but queue order is by sequence alone
    entries = [
        entry(f"{U1}latch-0000000009", 1),
        entry(f"{U3}latch-0000000002", 3),
        entry(f"{U2}latch-0000000005", 2),
    ]
    assert summary(classify_latch(entries)) == [
        (f"{U3}latch-0000000002", "latch", True, 0),
        (f"{U2}latch-0000000005", "latch", False, 1),
        (f"{U1}latch-0000000009", "latch", False, 2),
    ]


def test_a_foreign_child_takes_part_in_the_latch_order_as_other() -> None:
    entries = [entry("aaa-0000000001"), entry(f"{U1}latch-0000000007")]
    assert summary(classify_latch(entries)) == [
        (f"{U1}latch-0000000007", "latch", True, 0),
        ("aaa-0000000001", "other", False, 1),
    ]


def test_a_persistent_child_that_sorts_among_the_sequences_blocks_curators_queue() -> None:
    """Curator sorts every child of a lock path: a persistent ``lock-0000000001`` sorts before
    the lock nodes made after it and is never deleted; a name that sorts after every sequence
    (``config``) takes no part."""
    view = _curator_view(
        "/p", [entry(f"{U1}lock-0000000002"), entry("lock-0000000001", 0), entry("config", 0)], None
    )
    assert view.layout == "mutex"
    assert summary(view.participants) == [
        ("lock-0000000001", "other", False, 0),
        (f"{U1}lock-0000000002", "mutex", False, 1),
    ]
    assert view.blockers == ("lock-0000000001",)
    assert view.ignored == ("config",)
    assert view.note.startswith(
        "the queue is blocked by lock-0000000001 (a persistent node no session will ever delete)"
    )


def test_a_blocker_alone_is_read_as_the_layout_asked_for() -> None:
    view = _curator_view("/p", [entry("0000000007", 0)], "read-write")
    assert (view.layout, view.blockers) == ("read-write", ("0000000007",))
    assert [(p.kind, p.holder) for p in view.participants] == [("other", False)]
