"""The barriers' protocols on a scripted server: no ZooKeeper, no thread, no sleep.

``DistributedBarrier`` and ``DistributedDoubleBarrier`` (:mod:`pycurator._recipes.barriers`) on
Curator's nodes, in Curator's order; above all, a member passes only on what it reads (``ready``
or ``member_qty`` children), never on a wake-up alone, a reconnect's included (Curator's
GH-1290), and a wait that gives up leaves neither its node nor its watches behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.transport import KazooTransport, default_node_data, transport_of
from pycurator._protocol import wire
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    DeleteNode,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.barriers import BarrierSteps, DoubleBarrierSteps

from .scripted import WATCHED, Entry, Fire, Forgets, Reply, ScriptedServer, State, Timeout, stat

PATH = "/app/barrier"
READY = f"{PATH}/{wire.BARRIER_READY}"
OURS = "44444444-4444-4444-8444-444444444444"
LOW = "00000000-0000-4000-8000-000000000000"
HIGH = "ffffffff-ffff-4fff-bfff-ffffffffffff"
SESSION = 0x51


def at(name: str) -> str:
    return f"{PATH}/{name}"


@pytest.fixture(autouse=True)
def our_name(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(wire, "new_protected_id", lambda: OURS)
    yield


@pytest.fixture
def client() -> KazooTransport:
    return transport_of(KazooClient(hosts="127.0.0.1:1", timeout=10.0))


def ready_is(there: bool) -> Reply:
    """``ready`` checked, watched."""
    return Reply(NodeExists(READY, WATCHED), stat(9) if there else None)


#: Our member made: EPHEMERAL, Curator's default data.
MADE = Reply(
    CreateNode(at(OURS), default_node_data(), None, CreateMode.EPHEMERAL), (at(OURS), stat(5))
)


def played(script: Sequence[Entry], steps: object) -> tuple[ScriptedServer, bool]:
    server = ScriptedServer(script, session=SESSION)
    result = bool(server.run(steps))  # type: ignore[arg-type]
    server.finish()
    return server, result


def test_the_member_that_completes_the_count_makes_ready(client: KazooTransport) -> None:
    script: list[Entry] = [
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [LOW, OURS]),
        Reply(
            CreateNode(READY, default_node_data(), None, CreateMode.PERSISTENT), (READY, stat(9))
        ),
        Forgets(READY),
    ]
    server, entered = played(script, DoubleBarrierSteps(client, PATH, 2).enter_steps(None))
    assert entered
    assert not any(server.watches.values())


def test_a_member_that_finds_ready_passes_at_once(client: KazooTransport) -> None:
    _, entered = played(
        [ready_is(True), MADE, Forgets(READY)],
        DoubleBarrierSteps(client, PATH, 5).enter_steps(None),
    )
    assert entered


def test_a_waiting_member_passes_when_ready_is_made(client: KazooTransport) -> None:
    script: list[Entry] = [
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [OURS]),
        Fire(READY, EventType.CREATED),
        ready_is(True),
        Forgets(READY),
    ]
    _, entered = played(script, DoubleBarrierSteps(client, PATH, 3).enter_steps(None))
    assert entered


def test_a_wake_up_or_a_reconnect_lets_nobody_through_before_enough_entered(
    client: KazooTransport,
) -> None:
    """Curator's GH-1290 (fixed after 5.9.0): a SyncConnected event or a spurious wake-up ended
    an enter with True though too few had entered. Here each wake-up reads again (``ready``,
    then the children) and waits again; the timeout ends the enter with False, our node
    deleted (Curator keeps it)."""
    script: list[Entry] = [
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [OURS]),
        State(KazooState.SUSPENDED),
        State(KazooState.CONNECTED),  # the reads ride through the reconnect
        ready_is(False),
        Reply(ListChildren(PATH), [OURS]),
        ready_is(False),  # the reconnect came after the wake-up: read again
        Reply(ListChildren(PATH), [OURS]),
        State(KazooState.CONNECTED),  # a wake-up with nothing new
        ready_is(False),
        Reply(ListChildren(PATH), [LOW, OURS]),
        Timeout(),
        Forgets(READY),
        Reply(NodeExists(READY), None),
        Reply(DeleteNode(at(OURS))),
    ]
    server, entered = played(script, DoubleBarrierSteps(client, PATH, 3).enter_steps(5.0))
    assert not entered
    assert server.sent[-1] == DeleteNode(at(OURS))


def test_an_enter_out_of_time_that_finds_ready_entered_after_all(client: KazooTransport) -> None:
    script: list[Entry] = [
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [OURS]),
        Timeout(),
        Forgets(READY),
        Reply(NodeExists(READY), stat(9)),  # a member counted us as it made ready
    ]
    _, entered = played(script, DoubleBarrierSteps(client, PATH, 2).enter_steps(5.0))
    assert entered


def test_a_member_whose_node_went_with_its_session_enters_again(client: KazooTransport) -> None:
    script: list[Entry] = [
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [OURS]),
        State(KazooState.LOST),
        State(KazooState.CONNECTED, session=SESSION + 1),
        ready_is(False),
        Reply(ListChildren(PATH), [LOW]),  # ours is gone
        ready_is(False),
        MADE,
        Reply(ListChildren(PATH), [LOW, OURS]),
        Reply(
            CreateNode(READY, default_node_data(), None, CreateMode.PERSISTENT), (READY, stat(9))
        ),
        Forgets(READY),
    ]
    _, entered = played(script, DoubleBarrierSteps(client, PATH, 2).enter_steps(None))
    assert entered


def test_a_member_not_lowest_deletes_its_node_and_waits_until_every_member_left(
    client: KazooTransport,
) -> None:
    script: list[Entry] = [
        Reply(ListChildren(PATH), [HIGH, OURS, wire.BARRIER_READY, LOW]),
        Reply(NodeExists(at(LOW), WATCHED), stat(3)),
        Reply(DeleteNode(at(OURS))),
        Fire(at(LOW), EventType.DELETED),
        Reply(ListChildren(PATH), [HIGH, wire.BARRIER_READY]),
        Reply(NodeExists(at(HIGH), WATCHED), stat(4)),  # the last one in: wait for it
        Fire(at(HIGH), EventType.DELETED),
        Reply(ListChildren(PATH), [wire.BARRIER_READY]),
        Forgets(at(LOW)),
        Forgets(at(HIGH)),
        Reply(DeleteNode(READY)),
    ]
    server, left = played(script, DoubleBarrierSteps(client, PATH, 3).leave_steps(None))
    assert left
    sent = [type(request).__name__ for request in server.sent]
    assert sent[1:3] == ["NodeExists", "DeleteNode"]  # Curator's order: watch, then delete


def test_the_lowest_member_waits_for_the_others_and_goes_last(client: KazooTransport) -> None:
    ours = LOW
    script: list[Entry] = [
        Reply(ListChildren(PATH), [HIGH, ours, wire.BARRIER_READY]),
        Reply(NodeExists(at(HIGH), WATCHED), stat(3)),
        Fire(at(HIGH), EventType.DELETED),
        Reply(ListChildren(PATH), [ours, wire.BARRIER_READY]),
        Reply(DeleteNode(at(ours))),
        Forgets(at(HIGH)),
        Reply(DeleteNode(READY)),
    ]
    barrier = DoubleBarrierSteps(client, PATH, 2)
    barrier.our_name, barrier.our_path = ours, at(ours)
    _, left = played(script, barrier.leave_steps(None))
    assert left


def test_a_leave_out_of_time_deletes_our_node_and_leaves_ready_to_the_others(
    client: KazooTransport,
) -> None:
    ours = LOW
    script: list[Entry] = [
        Reply(ListChildren(PATH), [HIGH, ours, wire.BARRIER_READY]),
        Reply(NodeExists(at(HIGH), WATCHED), stat(3)),
        Timeout(),
        Forgets(at(HIGH)),
        Reply(DeleteNode(at(ours))),
        Reply(ListChildren(PATH), [HIGH, wire.BARRIER_READY]),  # a member is left: ready stays
    ]
    barrier = DoubleBarrierSteps(client, PATH, 2)
    barrier.our_name, barrier.our_path = ours, at(ours)
    _, left = played(script, barrier.leave_steps(1.0))
    assert not left


def test_a_barrier_waiter_goes_once_the_node_is_gone(client: KazooTransport) -> None:
    script: list[Entry] = [
        Reply(NodeExists(PATH, WATCHED), stat(3)),
        State(KazooState.CONNECTED),  # a wake-up: read again, still there
        Reply(NodeExists(PATH, WATCHED), stat(3)),
        Fire(PATH, EventType.DELETED),
        Reply(NodeExists(PATH, WATCHED), None),
        Forgets(PATH),
    ]
    _, passed = played(script, BarrierSteps(client, PATH).wait_steps(None))
    assert passed


def test_a_barrier_wait_out_of_time_is_false(client: KazooTransport) -> None:
    script: list[Entry] = [Reply(NodeExists(PATH, WATCHED), stat(3)), Timeout(), Forgets(PATH)]
    _, passed = played(script, BarrierSteps(client, PATH).wait_steps(0.5))
    assert not passed
