"""The kept node's steps (:mod:`pycurator._recipes.persistent_node`) on a scripted server: each
request it sends and what it does with each answer, with no server, thread or sleep; Curator's
``PersistentNode`` without CURATOR-154, -190, -297, -483 and -498."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.exceptions import (
    ConnectionLoss,
    NoAuthError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.callback_runner import Cancelled
from pycurator._protocol import wire
from pycurator._protocol.modes import CreateMode
from pycurator._protocol.requests import (
    CreateNode,
    CreateParent,
    DeleteNode,
    ListChildren,
    NodeExists,
    SetData,
)
from pycurator._recipes.persistent_node import Keeper

from .scripted import WATCHED, Fire, Forgets, Owes, Reply, State, Stop, Timeout, stat
from .scripted_election import Call, Server

SESSION, OTHER_SESSION = 0x51, 0x77
ID = "11111111-1111-4111-8111-111111111111"
PREFIX = wire.protected_prefix(ID)
BASE = "/svc/group/node"
OURS = f"/svc/group/{PREFIX}node"


@pytest.fixture(autouse=True)
def fixed_protection_id(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(wire, "new_protected_id", lambda: ID)
    yield


def create(path: str, data: bytes, mode: CreateMode = CreateMode.EPHEMERAL) -> CreateNode:
    return CreateNode(path, data, None, mode)


def watch(path: str) -> NodeExists:
    return NodeExists(path, watch=WATCHED)


def made(path: str, session: int = SESSION) -> tuple[str, Any]:
    """A create's answer: the server's path and the node's stat."""
    return path, stat(7, session)


def cancel() -> None:
    raise Cancelled()


def run(keeper: Keeper, *script: Any) -> Server:
    """Run ``keeper``'s steps on ``script`` to their end (a stop, or a cancellation)."""
    server = Server(script, session=SESSION)
    with contextlib.suppress(Cancelled):
        server.run(keeper.steps())
    server.finish()
    return server


def test_a_node_is_made_under_its_protected_name_with_container_parents_then_watched() -> None:
    created: list[bool] = []
    keeper = Keeper(
        BASE, CreateMode.EPHEMERAL, b"d", protected=True, on_created=lambda: created.append(True)
    )
    run(
        keeper,
        Reply(create(OURS, b"d"), error=NoNodeError()),
        Reply(CreateParent("/svc/group"), error=NoNodeError()),
        Reply(CreateParent("/svc")),
        Reply(CreateParent("/svc/group")),
        Reply(create(OURS, b"d"), made(OURS)),
        Reply(watch(OURS), stat(7, SESSION)),
        Call(cancel),
        Forgets(OURS),
        Reply(DeleteNode(OURS)),
    )
    assert created == [True]
    assert keeper.actual_path is None  # closed


def test_a_deleted_node_is_made_again_under_its_name_with_the_latest_data() -> None:
    keeper = Keeper(BASE, CreateMode.EPHEMERAL, b"old", protected=True)
    run(
        keeper,
        Reply(create(OURS, b"old"), made(OURS)),
        Reply(watch(OURS), stat(7, SESSION)),
        Call(lambda: keeper.set_data(b"new")),
        Reply(SetData(OURS, b"new")),
        Fire(OURS, EventType.DELETED),
        Reply(create(OURS, b"new"), made(OURS)),  # CURATOR-190: the name made once, kept
        Reply(watch(OURS), stat(8, SESSION)),
        Stop(),
    )


def test_a_sequential_node_is_made_again_at_its_sequence_in_the_mode_without_one() -> None:
    """CURATOR-483."""
    keeper = Keeper("/q/n-", CreateMode.EPHEMERAL_SEQUENTIAL, b"x", protected=True)
    first, again = f"/q/{PREFIX}n-", f"/q/{PREFIX}n-0000000004"
    run(
        keeper,
        Reply(create(first, b"x", CreateMode.EPHEMERAL_SEQUENTIAL), made(again)),
        Reply(watch(again), stat(7, SESSION)),
        Fire(again, EventType.DELETED),
        Reply(create(again, b"x", CreateMode.EPHEMERAL), made(again)),
        Reply(watch(again), stat(9, SESSION)),
        Stop(),
    )


def test_a_reconnect_makes_the_node_again_or_gives_the_one_found_our_data() -> None:
    """As Curator on RECONNECTED; CURATOR-154: the data given meanwhile is written."""
    keeper = Keeper(BASE, CreateMode.PERSISTENT, b"old")
    run(
        keeper,
        Reply(create(BASE, b"old", CreateMode.PERSISTENT), made(BASE, 0)),
        Reply(watch(BASE), stat(7)),
        State(KazooState.SUSPENDED),
        Call(lambda: keeper.set_data(b"new")),
        State(KazooState.CONNECTED),
        Reply(create(BASE, b"new", CreateMode.PERSISTENT), error=NodeExistsError()),
        Reply(SetData(BASE, b"new")),
        Reply(watch(BASE), stat(7)),
        Stop(),
    )


def test_a_lost_answer_is_found_again_under_our_protected_name_when_this_session_made_it() -> None:
    keeper = Keeper(BASE, CreateMode.EPHEMERAL, b"d", protected=True)
    run(
        keeper,
        Reply(create(OURS, b"d"), error=ConnectionLoss(), disconnects=True),
        State(KazooState.CONNECTED),
        Reply(ListChildren("/svc/group"), ["other", f"{PREFIX}node"]),
        Reply(NodeExists(OURS), stat(7, SESSION)),
        Reply(SetData(OURS, b"d")),  # written again: it may have changed meanwhile
        Reply(watch(OURS), stat(7, SESSION)),
        Stop(),
    )


def test_our_protected_name_made_by_an_earlier_session_is_deleted_never_taken() -> None:
    """CURATOR-498: found after a lost answer, or met as existing, a node under our protected
    name that another session made is an earlier session's of ours: deleted, and made again."""
    keeper = Keeper(BASE, CreateMode.EPHEMERAL, b"d", protected=True)
    run(
        keeper,
        Reply(create(OURS, b"d"), error=ConnectionLoss(), disconnects=True),
        State(KazooState.CONNECTED),
        Reply(ListChildren("/svc/group"), [f"{PREFIX}node"]),
        Reply(NodeExists(OURS), stat(7, OTHER_SESSION)),
        Owes(OURS),
        Reply(create(OURS, b"d"), error=NodeExistsError()),  # not gone yet
        Reply(NodeExists(OURS), stat(7, OTHER_SESSION)),
        Reply(DeleteNode(OURS, 0)),
        Reply(create(OURS, b"d"), made(OURS)),
        Reply(watch(OURS), stat(8, SESSION)),
        Stop(),
    )


def test_an_unprotected_node_found_there_is_adopted_whoever_made_it() -> None:
    keeper = Keeper(BASE, CreateMode.EPHEMERAL, b"d")
    run(
        keeper,
        Reply(create(BASE, b"d"), error=NodeExistsError()),
        Reply(SetData(BASE, b"d")),
        Reply(watch(BASE), stat(7, OTHER_SESSION)),
        Fire(BASE, EventType.DELETED),  # its session ended
        Reply(create(BASE, b"d"), made(BASE)),
        Reply(watch(BASE), stat(8, SESSION)),
        Stop(),
    )


def test_an_unprotected_sequential_lost_answer_takes_an_unclaimed_node_of_this_session() -> None:
    keeper = Keeper("/q/n-", CreateMode.EPHEMERAL_SEQUENTIAL, b"x")
    server = run(
        keeper,
        Reply(create("/q/n-", b"x", CreateMode.EPHEMERAL_SEQUENTIAL), error=ConnectionLoss()),
        Timeout(),  # the wait before a try again
        Reply(ListChildren("/q"), ["n-0000000001", "n-0000000002", "other"]),
        Reply(NodeExists("/q/n-0000000002"), stat(2, SESSION)),
        Reply(SetData("/q/n-0000000002", b"x")),
        Reply(watch("/q/n-0000000002"), stat(2, SESSION)),
        Stop(),
    )
    # n-0000000001 is another keeper's (claimed); the one taken is claimed, until closed
    assert server.claimed == {"/q/n-0000000001": "another"}


@pytest.fixture
def claimed_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's claims hold another keeper's node already."""
    original = Server.__init__

    def init(self: Server, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.claimed["/q/n-0000000001"] = "another"

    monkeypatch.setattr(Server, "__init__", init)


test_an_unprotected_sequential_lost_answer_takes_an_unclaimed_node_of_this_session = (
    pytest.mark.usefixtures("claimed_elsewhere")(
        test_an_unprotected_sequential_lost_answer_takes_an_unclaimed_node_of_this_session
    )
)


def test_a_close_with_the_create_on_its_way_deletes_what_it_made_when_it_lands() -> None:
    """CURATOR-297: a node made by a create answered after close stayed."""
    keeper = Keeper(BASE, CreateMode.PERSISTENT, b"d", protected=True)
    server = Server(
        [
            Reply(create(OURS, b"d", CreateMode.PERSISTENT), made(OURS, 0), late=True),
            Timeout(),  # the wait before a try again: the create still on its way
            Call(cancel),
            Owes(OURS),
        ],
        session=SESSION,
    )
    with pytest.raises(Cancelled):
        server.run(keeper.steps())
    assert server.script == [Owes(OURS)]  # nothing deleted until the create lands
    server.land()
    server.finish()


def test_no_right_to_create_is_kept_as_failed_until_news_brings_a_try_that_succeeds() -> None:
    keeper = Keeper(BASE, CreateMode.EPHEMERAL, b"d")
    failed: list[Any] = []
    run(
        keeper,
        Reply(create(BASE, b"d"), error=NoAuthError()),
        Call(lambda: failed.append(keeper.failed)),
        State(KazooState.SUSPENDED),
        State(KazooState.CONNECTED),
        Reply(create(BASE, b"d"), made(BASE)),
        Reply(watch(BASE), stat(7, SESSION)),
        Call(lambda: failed.append(keeper.failed)),
        Stop(),
    )
    assert isinstance(failed[0], NoAuthError) and failed[1] is None
    assert keeper.created


def test_a_failure_tried_again_on_its_timer_is_no_longer_told_while_the_try_is_on_its_way() -> None:
    """A waiter that comes while the next create is out hears how it ends, not the last one."""
    keeper = Keeper(f"{BASE}/under-ephemeral", CreateMode.EPHEMERAL, b"d")
    failed: list[Any] = []
    run(
        keeper,
        Reply(create(f"{BASE}/under-ephemeral", b"d"), error=NoChildrenForEphemeralsError()),
        Call(lambda: failed.append(keeper.failed)),
        Timeout(),  # the retry's timer: an ephemeral parent's end brings no news
        Reply(create(f"{BASE}/under-ephemeral", b"d"), made(f"{BASE}/under-ephemeral"), late=True),
        Call(lambda: failed.append(keeper.failed)),
        Stop(),
    )
    assert isinstance(failed[0], NoChildrenForEphemeralsError) and failed[1] is None
