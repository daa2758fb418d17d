"""A leader's election on a scripted server as its connection goes: its steps never wait where
its loss cannot reach them. A leader's listing (after a reconnect, as Curator's latch lists
again) is cut short by any news, and no request of its is sent again through a suspension, so
the loss is told at once, not once the connection is back; and a term, once lost, never comes
back. The explorer found a leader whose listing rode a suspension through, deposed only after
the reconnect, or never (its hold verified ours again before its steps looked):
has_leadership() said False meanwhile, but lost_event, not_leader() and on_lost never told it.
The rest of the election's protocol: test_election_protocol.py; on a real server:
test_leader_deposed.py.
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import KazooState

from pycurator._protocol.events import LockEventKind
from pycurator._protocol.requests import DeleteNode
from pycurator._protocol.transport import SESSION_EXPIRED

from .scripted import Land, Owes, Reply, State, Timeout
from .scripted_election import (
    NEW_SESSION,
    RELIST,
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
)


def test_a_leader_listing_again_as_its_connection_drops_is_deposed_before_it_is_back(
    scene: Callable[..., Scene], events: list[LockEventKind]
) -> None:
    latch = scene()
    heard_while_away: list[list[tuple[str, object]]] = []
    latch.play(
        Reply(create(), made(3)),
        # the connection drops and comes back as the listing that elects us is answered: the
        # steps hear of it once they lead, and list again
        Reply(
            RELIST,
            [name(3)],
            then=(State(KazooState.SUSPENDED), State(KazooState.CONNECTED)),
        ),
        Reply(RELIST, error=ConnectionLoss(), then=(State(KazooState.SUSPENDED),)),
        Call(lambda: heard_while_away.append(list(latch.heard))),
        State(KazooState.CONNECTED),
        Reply(RELIST, [name(3)]),  # the next term, on the same node
        latch.stop(),
        Reply(DeleteNode(path(name(3)))),
    )
    assert heard_while_away == [[("elected", held(3)), ("deposed", "connection suspended")]]
    assert latch.heard[2:] == [("elected", held(3)), ("deposed", "latch closed")]
    assert events == [*TURN, *TERM_LOST, *TURN, LockEventKind.RELEASED]
    assert latch.server is not None
    assert all(monitor.once for monitor in latch.server.monitors)  # a term never comes back


def test_a_session_policy_leader_listing_after_a_reconnect_hears_its_session_end_at_once(
    scene: Callable[..., Scene],
) -> None:
    latch = scene("session")
    heard_while_away: list[list[tuple[str, object]]] = []
    server = latch.serve(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3)]),
        State(KazooState.SUSPENDED),  # the session policy leads on
        State(KazooState.CONNECTED),
        Reply(RELIST, [name(3)], late=True),  # Curator's latch lists again: a slow answer
        State(KazooState.SUSPENDED),
        State(KazooState.LOST),  # the session timeout spent suspended: the session has ended
        Call(lambda: heard_while_away.append(list(latch.heard))),
        Land(),  # the listing lands late: nobody waits for it
        *rejoined(latch),
    )
    server.run(latch.election.steps())
    server.finish()
    assert heard_while_away == [[("elected", held(3)), ("deposed", SESSION_EXPIRED)]]
    assert latch.heard[2:] == [("elected", held(5, 1, NEW_SESSION)), ("deposed", "latch closed")]
    # the leader's listing was waited for with the news, not awaited alone
    listed = [i for i, entry in enumerate(server.log) if entry == ("send", RELIST)]
    assert server.log[listed[1] + 1] == ("woken", None)
    assert ("await", RELIST) not in server.log[listed[1] : listed[2]]


def test_a_leader_listing_that_times_out_lists_again_and_a_path_found_gone_replaces_the_node(
    scene: Callable[..., Scene],
) -> None:
    latch = scene("session")
    latch.play(
        Reply(create(), made(3)),
        Reply(RELIST, [name(3)]),
        State(KazooState.SUSPENDED),
        State(KazooState.CONNECTED),
        Reply(RELIST, [name(3)], late=True),
        Timeout(),  # no answer within the step's wait: tried again a moment later
        Timeout(),
        Reply(RELIST, error=NoNodeError()),  # the path went, with our node: a new one
        Owes(path(name(3))),
        Reply(create(1), made(5, 1)),
        Reply(RELIST, [name(5, prefix(1))]),
        latch.stop(),
        Reply(DeleteNode(path(name(5, prefix(1))))),
    )
    assert latch.heard == [
        ("elected", held(3)),
        ("deposed", "election node gone"),
        ("elected", held(5, 1)),
        ("deposed", "latch closed"),
    ]
