"""The protocols on a scripted server when the connection drops between two steps: a drop is not
another session.

kazoo's client has no ``client_id`` while it is merely disconnected; the session lives on, and so
do its nodes. Each place the lock engine and the election ask for the session is played with the
drop falling there: between the decision and the check, between the create's answer and the
listing's, and during the recovery of a lost create. An expiry, told at the reconnect, is
another session. (The semaphore's, menagerie's and the hold check's are beside their other
protocol tests.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import KazooState

from pycurator._client.transport import transport_of
from pycurator._protocol import wire
from pycurator._protocol.drivers import MUTEX_DRIVER
from pycurator._protocol.requests import DeleteNode, GetData, NodeExists
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode

from .scripted import WATCHED, Fire, Owes, Reply, ScriptedServer, State, stat
from .scripted_election import RELIST as LATCH_RELIST
from .scripted_election import Scene, held, made, watch
from .scripted_election import create as create_latch
from .scripted_election import name as latch
from .scripted_election import path as latch_path
from .test_engine_protocol import (
    BASE,
    DATA,
    IDS,
    LISTING,
    OTHER,
    RELIST,
    SESSION,
    create,
    name,
    path,
    prefix,
)

NEW_SESSION = SESSION + 1


@pytest.fixture(autouse=True)
def protected_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ids = iter(IDS)
    monkeypatch.setattr(wire, "new_protected_id", lambda: next(ids))
    yield


@pytest.fixture
def engine() -> LockEngine:
    """The mutex's engine, on a client that is never started: the script is its server."""
    return LockEngine(transport_of(KazooClient(hosts="127.0.0.1:1")), BASE, MUTEX_DRIVER, data=DATA)


def test_a_drop_between_the_decision_and_the_session_check_keeps_the_hold(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            # the connection goes as the listing that gives us the lock is read
            Reply(LISTING, [name(3)], then=(State(KazooState.SUSPENDED),)),
        ],
        session=SESSION,
    )
    # held, on our one node: no second acquire queued behind it
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_drop_as_a_waiter_is_told_it_holds_keeps_the_hold(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Fire(path(name(2, OTHER))),
            Reply(NodeExists(path(name(3))), stat(30, SESSION), disconnects=True),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_an_expiry_between_the_decision_and_the_check_deletes_the_node_and_queues_again(
    engine: LockEngine,
) -> None:
    ours_again = f"{prefix(1)}{wire.LOCK_NAME}{5:010d}"
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            # the reconnect finds the session expired and opens the next one
            Reply(
                LISTING,
                [name(3)],
                then=(State(KazooState.LOST), State(KazooState.CONNECTED, session=NEW_SESSION)),
            ),
            Reply(DeleteNode(path(name(3))), error=NoNodeError()),  # never left behind
            Reply(create(1), (path(ours_again), stat(50, NEW_SESSION))),
            Reply(LISTING, [ours_again]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(ours_again), 50, NEW_SESSION)
    server.finish()


def test_an_expiry_not_yet_followed_by_a_session_is_not_ours_and_owes_the_delete(
    engine: LockEngine,
) -> None:
    ours_again = f"{prefix(1)}{wire.LOCK_NAME}{5:010d}"
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(3)], then=(State(KazooState.LOST),)),
            Owes(path(name(3))),  # not connected: the delete goes on in the background
            Reply(create(1), error=ConnectionLoss()),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED, session=NEW_SESSION),
            # the lost create is looked for by its prefix before it is sent again
            Reply(RELIST, []),
            Reply(create(1), (path(ours_again), stat(50, NEW_SESSION))),
            Reply(LISTING, [ours_again]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(ours_again), 50, NEW_SESSION)
    server.finish()


def test_a_drop_during_the_recovery_of_a_lost_create_finds_our_node(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # the recovery lists, and the connection drops again before it reads the owner
            Reply(RELIST, [name(2, OTHER), name(3)], then=(State(KazooState.SUSPENDED),)),
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
            # ours, in the session that lives on: kept, not deleted as another session's
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_node_of_an_earlier_session_found_in_a_recovery_is_deleted(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(3)]),
            Reply(NodeExists(path(name(3))), stat(30, SESSION - 1)),  # CURATOR-498
            Owes(path(name(3))),
            Reply(create(), (path(name(4)), stat(40, SESSION))),
            Reply(LISTING, [name(4)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(4)), 40, SESSION)
    server.finish()


@pytest.fixture
def latch_scene(monkeypatch: pytest.MonkeyPatch) -> Scene:
    """A latch's election under the session policy (its leadership outlives a drop)."""
    return Scene(transport_of(KazooClient(hosts="127.0.0.1:1")), monkeypatch, "session")


def test_a_drop_between_the_listing_and_the_session_check_keeps_the_node_in_the_queue(
    latch_scene: Scene,
) -> None:
    # the session lives on through a drop, and so does our place: no reset, no second node
    ahead, ours = latch(2, OTHER), latch(3)
    latch_scene.play(
        Reply(create_latch(), made(3)),
        Reply(LATCH_RELIST, [ahead, ours], then=(State(KazooState.SUSPENDED),)),
        Reply(watch(ahead), (b"", stat(20, 7))),
        State(KazooState.CONNECTED),
        Reply(LATCH_RELIST, [ahead, ours]),
        Reply(watch(ahead), (b"", stat(20, 7))),
        Fire(latch_path(ahead)),
        Reply(LATCH_RELIST, [ours]),
        latch_scene.stop(),
        Reply(DeleteNode(latch_path(ours))),
    )
    assert latch_scene.heard == [("elected", held(3)), ("deposed", "latch closed")]
