"""The leader election's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one exchange to one participant, a latch's or a selector's
term (:class:`~pycurator._recipes.election.Election`, set in a scene of
:mod:`tests.scripted_election`), and checks every request it sends, in order, what its owner hears,
and what it leaves behind. The same protocol runs on a real server in test_latch.py,
test_selector.py, test_selector_queue.py, test_unfixable_errors.py and the interop suite.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError, NoNodeError
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.callback_runner import Cancelled
from pycurator._protocol.checks import ConnectionPolicy
from pycurator._protocol.events import LockEventKind
from pycurator._protocol.requests import DeleteNode, GetData
from pycurator._protocol.steps import Steps, WaitSignal
from pycurator._protocol.transport import CLIENT_STOPPED, SESSION_EXPIRED
from pycurator._recipes.hold_monitor import HoldState
from pycurator._recipes.participants import Participant, participants_steps

from .scripted import Entry, Fire, Forgets, Land, Owes, Reply, State, Stop, Timeout, stat
from .scripted_election import (
    AHEAD,
    ID,
    NEW_SESSION,
    OTHER,
    RELIST,
    SESSION,
    TERM_LOST,
    TURN,
    Call,
    Scene,
    create,
    held,
    made,
    name,
    path,
    prefix,
    rejoined,
    watch,
)

# -- leading ---------------------------------------------------------------------------------


def test_the_first_in_the_queue_leads_at_once_and_a_stop_deletes_its_node(
    scene: Callable[..., Scene], events: list[LockEventKind]
) -> None:
    latch = scene()
    leading_at_first_wait: list[bool] = []
    server = latch.serve(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3), name(4, OTHER)]),
        Call(lambda: leading_at_first_wait.append(latch.election.is_leading)),
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert server.run(latch.election.steps()) == "latch closed"
    assert leading_at_first_wait == [True]
    # the listing is pipelined behind the create: no listing, watch or wait before leading
    assert [(kind, type(request).__name__) for kind, request in server.log[:5]] == [
        ("send", "CreateNode"),
        ("send", "ListChildren"),
        ("await", "CreateNode"),
        ("await", "ListChildren"),
        ("woken", "NoneType"),
    ]
    assert server.sent == [create(), RELIST, DeleteNode(path(name(3)))]
    assert latch.heard == [("elected", held(3)), ("deposed", "latch closed")]
    assert latch.election.node is None and not latch.election.is_leading
    assert events == [LockEventKind.WAITING, LockEventKind.ACQUIRED, LockEventKind.RELEASED]
    assert [monitor.state for monitor in server.monitors] == [HoldState.RELEASED]
    server.finish()


# -- waiting -----------------------------------------------------------------------------------


def test_a_waiter_watches_only_its_predecessor_and_lists_again_at_each_deletion(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    reason = latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(1, AHEAD), name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        Fire(path(name(2, OTHER))),
        Reply(RELIST, [name(1, AHEAD), name(3)]),
        Reply(watch(name(1, AHEAD)), (b"", stat(10, 8))),
        Fire(path(name(1, AHEAD))),
        Reply(RELIST, [name(3)]),  # Curator's latch lists again, even when it was next
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert reason == "latch closed"
    assert latch.heard == [("elected", held(3)), ("deposed", "latch closed")]
    assert latch.server is not None
    assert not any(latch.server.watches.values())


def test_a_predecessor_gone_before_its_watch_lists_again_at_once_and_drops_no_watch(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), error=NoNodeError()),  # so no watch was set
        Reply(RELIST, [name(3)]),
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert latch.heard[0] == ("elected", held(3))


def test_foreign_children_sort_behind_the_latch_nodes_as_curator_sorts_them(
    scene: Callable[..., Scene],
) -> None:
    # names without the latch's token keep their whole name as sort key (Curator's
    # fixForSorting), so they sort after every sequence number
    foreign = ["readme", f"{OTHER}lock-0000000001", "x-latch-y", "locks"]
    latch = scene()
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [*foreign, name(3)]),
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert latch.heard[0] == ("elected", held(3))


def test_a_foreign_child_that_sorts_ahead_is_watched_as_a_predecessor(
    scene: Callable[..., Scene], events: list[LockEventKind]
) -> None:
    latch = scene()
    reason = latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, ["0000000001", name(3), "zz"]),
        Reply(watch("0000000001"), (b"", stat(1, 0))),
        latch.stop(),
        Forgets(path("0000000001")),
        Reply(DeleteNode(path(name(3)))),
    )
    assert reason == "latch closed"
    assert latch.heard == []
    # the owner's stop ends the turn in the queue as cancelled
    assert events == [LockEventKind.WAITING, LockEventKind.CANCELLED]
    assert latch.server is not None
    assert not any(latch.server.watches.values())


# -- the connection --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "heard", "reported"),
    [
        # standard: a suspension ends the term, and the latch queues again: the same node
        # leads again once reconnected
        (
            "standard",
            [
                ("elected", held(3)),
                ("deposed", "connection suspended"),
                ("elected", held(3)),
                ("deposed", "latch closed"),
            ],
            [*TURN, *TERM_LOST, *TURN, LockEventKind.RELEASED],
        ),
        # session: the term lasts through it; the children are listed again all the same
        (
            "session",
            [("elected", held(3)), ("deposed", "latch closed")],
            [*TURN, LockEventKind.RELEASED],
        ),
    ],
)
def test_a_suspension_ends_leadership_under_standard_only(
    scene: Callable[..., Scene],
    policy: ConnectionPolicy,
    heard: list[tuple[str, object]],
    reported: list[LockEventKind],
    events: list[LockEventKind],
) -> None:
    latch = scene(policy)
    leading: list[bool] = []
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3)]),
        State(KazooState.SUSPENDED),
        Call(lambda: leading.append(latch.election.is_leading)),
        State(KazooState.CONNECTED),
        Reply(RELIST, [name(3)]),
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert leading == [policy == "session"]
    assert latch.heard == heard
    assert latch.sent == [create(), RELIST, RELIST, DeleteNode(path(name(3)))]
    assert events == reported


@pytest.mark.parametrize("policy", ["standard", "session"])
def test_a_queued_selector_term_leaves_the_queue_at_a_suspension_under_standard_only(
    scene: Callable[..., Scene], policy: ConnectionPolicy, events: list[LockEventKind]
) -> None:
    term = scene(policy, selector=True)
    start: list[Entry | Call] = [
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        State(KazooState.SUSPENDED),
    ]
    if policy == "standard":
        # Curator's selector ends a queued attempt; the node's delete waits for the connection
        script = [*start, Forgets(path(name(2, OTHER))), Owes(path(name(3)))]
        expected, kind = "connection suspended", LockEventKind.FAILED
    else:
        script = [
            *start,
            Fire(path(name(2, OTHER)), EventType.NONE),  # kazoo drops its watches meanwhile
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(2, OTHER), name(3)]),
            Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
            term.stop("leadership given up"),
            Forgets(path(name(2, OTHER))),
            Reply(DeleteNode(path(name(3)))),
        ]
        expected, kind = "leadership given up", LockEventKind.CANCELLED
    assert term.play(*script) == expected
    assert term.heard == []
    assert events == [LockEventKind.WAITING, kind]


def test_an_expiry_mid_wait_queues_again_with_a_new_node(scene: Callable[..., Scene]) -> None:
    latch = scene()
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        State(KazooState.LOST),
        Fire(path(name(2, OTHER)), EventType.NONE),  # kazoo drops its watches at the loss
        State(KazooState.CONNECTED, session=NEW_SESSION),
        Reply(RELIST, [name(2, OTHER)]),  # our node went with the session
        Owes(path(name(3))),
        Reply(create(1), made(5, 1, NEW_SESSION)),
        Reply(RELIST, [name(2, OTHER), name(5, prefix(1))]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        Fire(path(name(2, OTHER))),
        Reply(RELIST, [name(5, prefix(1))]),
        latch.stop(),
        Reply(DeleteNode(path(name(5, prefix(1))))),
    )
    assert latch.heard == [("elected", held(5, 1, NEW_SESSION)), ("deposed", "latch closed")]


def test_a_leader_whose_session_expired_does_not_lead_on_its_old_node(
    scene: Callable[..., Scene],
) -> None:
    # CURATOR-696: the old node may still be listed, but another session made it
    latch = scene()
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3)]),
        State(KazooState.LOST),
        *rejoined(latch),
    )
    assert latch.heard == [
        ("elected", held(3)),
        ("deposed", SESSION_EXPIRED),
        ("elected", held(5, 1, NEW_SESSION)),
        ("deposed", "latch closed"),
    ]


def test_a_session_policy_leader_is_deposed_once_its_session_timeout_passes_while_suspended(
    scene: Callable[..., Scene],
) -> None:
    # the runtime's count from the suspension runs out while still disconnected (LOST in the
    # same session); kazoo then ends that session and makes a new one, where the old node,
    # still listed until the server expires its session, is deleted and replaced
    latch = scene("session")
    leading: list[bool] = []
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3)]),
        State(KazooState.SUSPENDED),
        Call(lambda: leading.append(latch.election.is_leading)),
        State(KazooState.LOST),
        Call(lambda: leading.append(latch.election.is_leading)),
        State(KazooState.LOST),
        *rejoined(latch),
    )
    assert leading == [True, False]
    assert latch.heard == [
        ("elected", held(3)),
        ("deposed", SESSION_EXPIRED),
        ("elected", held(5, 1, NEW_SESSION)),
        ("deposed", "latch closed"),
    ]


@pytest.mark.parametrize(
    ("end", "reason"), [(State(KazooState.LOST), SESSION_EXPIRED), (Stop(), CLIENT_STOPPED)]
)
def test_a_queued_selector_term_ends_with_its_session_and_says_why(
    scene: Callable[..., Scene], end: Entry, reason: str
) -> None:
    term = scene("session", selector=True)
    assert (
        term.play(
            Reply(create(), made(3)),
            Reply(RELIST, [name(2, OTHER), name(3)]),
            Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
            end,
            Forgets(path(name(2, OTHER))),
            Owes(path(name(3))),  # not connected: the delete is owed
        )
        == reason
    )


def test_a_client_stop_mid_wait_ends_the_steps_and_owes_the_delete(
    scene: Callable[..., Scene], events: list[LockEventKind]
) -> None:
    latch = scene()
    reason = latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        Stop(),
        Forgets(path(name(2, OTHER))),
        Owes(path(name(3))),
    )
    assert reason == CLIENT_STOPPED
    assert events == [LockEventKind.WAITING, LockEventKind.FAILED]


# -- errors and late answers -----------------------------------------------------------------


def test_noauth_ends_the_attempt_logged_once_with_the_node_deleted_and_failed_set(
    scene: Callable[..., Scene], caplog: pytest.LogCaptureFixture
) -> None:
    latch = scene()
    caplog.set_level(logging.ERROR, logger="pycurator")
    # another participant's node that we may not read: no retry can fix that
    reason = latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), error=NoAuthError()),  # no watch set: none to drop
        Reply(DeleteNode(path(name(3)))),
    )
    assert reason == "NoAuthError"
    assert isinstance(latch.election.failed, NoAuthError)
    assert [kind for kind, _ in latch.heard] == ["trouble"]
    assert isinstance(latch.heard[0][1], NoAuthError)
    records = [record for record in caplog.records if record.name == "pycurator"]
    assert len(records) == 1 and "no retry can fix it" in records[0].getMessage()
    assert records[0].exc_info is None
    assert latch.election.node is None


def test_noauth_on_the_create_leaves_no_node_and_fails_the_attempt(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    reason = latch.play(
        Reply(create(), error=NoAuthError()),
        Reply(RELIST, error=NoAuthError()),
    )
    assert reason == "NoAuthError"
    assert isinstance(latch.election.failed, NoAuthError)
    assert latch.sent == [create(), RELIST]


def test_a_create_answered_late_is_undone_when_it_lands_and_a_new_node_is_made(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    latch.play(
        Reply(create(), made(3), late=True),
        Reply(RELIST, [name(3)], late=True),
        # the step gave up on it, and waits a moment before the next try
        Land(),
        Owes(path(name(3))),  # as it lands: nothing is left behind
        Timeout(),
        Reply(create(1), made(4, 1)),
        Reply(RELIST, [name(4, prefix(1))]),
        latch.stop(),
        Reply(DeleteNode(path(name(4, prefix(1))))),
    )
    assert latch.heard[0] == ("elected", held(4, 1))


def test_a_connection_lost_between_create_and_listing_lists_again_once_connected(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, error=ConnectionLoss(), disconnects=True),
        Reply(RELIST, error=ConnectionLoss()),
        State(KazooState.CONNECTED),
        Reply(RELIST, [name(3)]),
        # the reconnect woke the election too: it lists once more, and still leads
        Reply(RELIST, [name(3)]),
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert latch.heard == [("elected", held(3)), ("deposed", "latch closed")]
    assert latch.sent.count(create()) == 1  # the node is kept: only the listing is sent again


# -- ending mid-wait ---------------------------------------------------------------------------


def test_a_runner_cancellation_mid_wait_cleans_up_then_ends_the_steps(
    scene: Callable[..., Scene], events: list[LockEventKind]
) -> None:
    latch = scene()

    def cancel() -> None:
        raise Cancelled()

    server = latch.serve(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        Call(cancel),
        Forgets(path(name(2, OTHER))),
        Reply(DeleteNode(path(name(3)))),
    )
    with pytest.raises(Cancelled):
        server.run(latch.election.steps())
    assert events == [LockEventKind.WAITING, LockEventKind.CANCELLED]
    server.finish()


def until_waits(steps: Steps[Any], waits: int) -> Steps[None]:
    """``steps`` up to (not into) their ``waits``-th wait; then they are left unfinished."""
    value: Any = None
    error: BaseException | None = None
    while True:
        step = steps.throw(error) if error is not None else steps.send(value)
        if isinstance(step, WaitSignal):
            waits -= 1
            if waits == 0:
                return
        value, error = None, None
        try:
            value = yield step
        except BaseException as exc:
            error = exc


def test_steps_dropped_mid_wait_clean_up_in_the_background(scene: Callable[..., Scene]) -> None:
    latch = scene()
    server = latch.serve(
        Reply(create(), made(3)),
        Reply(RELIST, [name(2, OTHER), name(3)]),
        Reply(watch(name(2, OTHER)), (b"", stat(20, 7))),
        # once dropped: the background drops the watch and owes the node's delete
        Forgets(path(name(2, OTHER))),
        Owes(path(name(3))),
    )
    steps = latch.election.steps()
    server.run(until_waits(steps, 1))
    assert server.script[0] == Forgets(path(name(2, OTHER)))  # nothing cleaned up yet
    steps.close()
    server.finish()  # no listener is left either


# -- participants ------------------------------------------------------------------------------


def test_participants_are_read_in_queue_order_with_foreign_children_and_ids(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    server = latch.serve(
        Reply(RELIST, ["x", name(4, OTHER), name(2, AHEAD), name(3)]),
        # every node's data is asked for at once
        Reply(GetData(path(name(2, AHEAD))), error=NoNodeError()),  # gone while reading
        Reply(GetData(path(name(3))), (ID, stat(30, SESSION))),
        Reply(GetData(path(name(4, OTHER))), ("java-\u00e9".encode(), stat(40, 7))),
        Reply(GetData(path("x")), (b"\xff", stat(1, 0))),
    )
    participants = server.run(participants_steps(latch.election.engine))
    assert participants == [
        Participant("me", True),  # the first node still there leads
        Participant("java-\u00e9", False),
        Participant("\ufffd", False),
    ]
    assert [kind for kind, _ in server.log[2:6]] == ["send"] * 4
    server.finish()


def test_participants_ride_through_a_connection_loss_sending_only_the_unanswered_again(
    scene: Callable[..., Scene],
) -> None:
    latch = scene()
    server = latch.serve(
        Reply(RELIST, [name(3), name(4, OTHER)]),
        Reply(GetData(path(name(3))), (ID, stat(30, SESSION))),
        Reply(GetData(path(name(4, OTHER))), error=ConnectionLoss(), disconnects=True),
        State(KazooState.CONNECTED),
        Reply(GetData(path(name(4, OTHER))), (b"other", stat(40, 7))),
    )
    participants = server.run(participants_steps(latch.election.engine))
    assert participants == [Participant("me", True), Participant("other", False)]
    server.finish()


def test_no_participants_is_one_listing_and_nothing_else(scene: Callable[..., Scene]) -> None:
    latch = scene()
    server = latch.serve(Reply(RELIST, error=NoNodeError()))
    assert server.run(participants_steps(latch.election.engine)) == []
    server.finish()
