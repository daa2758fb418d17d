"""The lock engine's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one exchange (:mod:`tests.scripted`) to the mutex's engine
and checks every request it sends, in order, and what it leaves behind. The same protocol runs
on a real server in test_mutex.py, test_faults.py and the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from pycurator._client.callback_runner import Cancelled
from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol import wire
from pycurator._protocol.deadline import Deadline
from pycurator._protocol.drivers import MUTEX_DRIVER, write_driver
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode

from .scripted import (
    REDUCED,
    WATCHED,
    Fire,
    Forgets,
    Interrupt,
    Owes,
    Reply,
    ScriptedServer,
    State,
    Stop,
    Timeout,
    stat,
)

BASE = "/locks/m"
DATA = b"me"
SESSION = 0x51
#: The protection ids our acquires draw, in order; others' nodes carry other ids.
IDS = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"]
OTHER = "_c_99999999-9999-4999-8999-999999999999-"
AHEAD = "_c_88888888-8888-4888-8888-888888888888-"


def prefix(n: int = 0) -> str:
    return wire.protected_prefix(IDS[n])


def name(seq: int, owner: str | None = None) -> str:
    """A mutex node's name, ours (the first acquire's) unless ``owner`` is another prefix."""
    return f"{owner or prefix()}{wire.LOCK_NAME}{seq:010d}"


def path(node: str) -> str:
    return f"{BASE}/{node}"


def create(n: int = 0) -> CreateNode:
    """The create of the ``n``-th acquire's node."""
    return CreateNode(path(prefix(n) + wire.LOCK_NAME), DATA, None, CreateMode.EPHEMERAL_SEQUENTIAL)


#: The listing the engine pipelines behind its create, reduced to a decision as it is read.
LISTING = ListChildren(BASE, reduce=REDUCED)
#: A plain listing of the lock path.
RELIST = ListChildren(BASE)


@pytest.fixture(autouse=True)
def protected_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ids = iter(IDS)
    monkeypatch.setattr(wire, "new_protected_id", lambda: next(ids))
    yield


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


@pytest.fixture
def engine(client: KazooTransport) -> LockEngine:
    """The mutex's engine."""
    return LockEngine(client, BASE, MUTEX_DRIVER, data=DATA)


def test_holds_at_once_on_the_listing_pipelined_behind_the_create(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(4, OTHER), name(3)]),
        ],
        session=SESSION,
    )
    held = server.run(engine.acquire_steps(None))
    assert held == LockNode(path(name(3)), 30, SESSION)
    assert [(kind, type(request).__name__) for kind, request in server.log] == [
        ("send", "CreateNode"),
        ("send", "ListChildren"),  # sent before the create's answer is awaited
        ("await", "CreateNode"),
        ("await", "ListChildren"),
    ]
    server.finish()


def test_a_waiter_watches_only_its_predecessor_and_confirms_its_node_once_it_is_next(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(1, AHEAD), name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Fire(path(name(2, OTHER))),
            # the listing is sent as the deletion is read, before the waiter wakes
            Reply(RELIST, [name(1, AHEAD), name(3)]),
            Reply(GetData(path(name(1, AHEAD)), watch=WATCHED), (b"", stat(10, 8))),
            Fire(path(name(1, AHEAD))),
            # next in line: one exists of our node, no listing
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()
    assert not any(server.watches.values())
    # each next request is sent as the deletion is read, before the waiter wakes
    assert [(kind, type(request).__name__) for kind, request in server.log[4:]] == [
        ("send", "GetData"),
        ("await", "GetData"),
        ("send", "ListChildren"),
        ("woken", "NoneType"),
        ("await", "ListChildren"),
        ("send", "GetData"),
        ("await", "GetData"),
        ("send", "NodeExists"),
        ("woken", "NoneType"),
        ("await", "NodeExists"),
    ]


def test_a_connection_change_as_the_predecessor_goes_lists_again_not_reading_the_exists_sent_ahead(
    engine: LockEngine,
) -> None:
    predecessor = path(name(2, OTHER))
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(predecessor, watch=WATCHED), (b"", stat(20, 7))),
            Fire(predecessor),
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),  # sent as the deletion is read
            # our node may have gone with the session: a new listing, not that exists' answer
            Reply(RELIST, [name(3)]),
        ],
        session=SESSION,
    )

    def reconnected(event: WatchedEvent) -> None:  # before the waiter reads the deletion
        for listener in list(server.listeners):
            listener(KazooState.CONNECTED)

    server.watches[predecessor].append(reconnected)
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_predecessor_gone_before_its_watch_decides_again_at_once(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), error=NoNodeError()),
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_predecessor_gone_when_it_was_not_next_lists_again(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(1, AHEAD), name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), error=NoNodeError()),
            Reply(RELIST, [name(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_foreign_children_sort_behind_a_mutex_node_as_curator_sorts_them(
    engine: LockEngine,
) -> None:
    # names without the lock's token keep their whole name as sort key (Curator's
    # fixForSorting), so they sort after every sequence number; other prefixes sort by number
    foreign = ["readme", f"{OTHER}__READ__0000000001", "x-lock-0000000009", "leases"]
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [*foreign, name(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_foreign_child_that_sorts_ahead_is_waited_for(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, ["0000000001", name(3), "zz"]),
            Reply(GetData(path("0000000001"), watch=WATCHED), (b"", stat(1, 0))),
            Timeout(),
            Forgets(path("0000000001")),
            Reply(DeleteNode(path(name(3)))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(5)) is None
    server.finish()


@pytest.mark.parametrize("error", [KeyboardInterrupt, asyncio.CancelledError, Cancelled])
def test_an_acquire_stopped_with_its_create_on_its_way_deletes_the_node_before_it_ends(
    engine: LockEngine, error: type[BaseException]
) -> None:
    """Ctrl-C, a task's cancellation, a selector's close: it finds no node of ours after."""
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION)), late=True),
            Reply(LISTING, [name(3)], late=True),
            Interrupt(error, lands=True),  # the create's answer comes in the clean-up's wait
            Reply(DeleteNode(path(name(3)))),
        ],
        session=SESSION,
    )
    with pytest.raises(error):
        server.run(engine.acquire_steps(5))
    server.finish()


def test_a_create_unanswered_after_a_stop_is_undone_when_it_lands(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION)), late=True),
            Reply(LISTING, [name(3)], late=True),
            Interrupt(),  # and no answer within the clean-up's wait (DELETE_WAIT)
            Owes(path(name(3))),  # once the create lands
        ],
        session=SESSION,
    )
    with pytest.raises(KeyboardInterrupt):
        server.run(engine.acquire_steps(5))
    assert server.script == [Owes(path(name(3)))]  # nothing owed before it lands
    server.land()
    server.finish()


def test_a_create_answered_after_the_deadline_is_undone_when_it_lands(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION)), late=True),
            Reply(LISTING, [name(3)], late=True),
            Owes(path(name(3))),  # once the create lands
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(0)) is None
    assert server.script == [Owes(path(name(3)))]  # nothing owed before it lands
    server.land()
    server.finish()


def test_a_create_lost_with_the_connection_is_found_again_by_its_prefix(
    engine: LockEngine,
) -> None:
    earlier_session = 0x77
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # did the server make our node before the connection went? look for our prefix
            Reply(RELIST, [name(2), name(3), name(1, OTHER)]),
            Reply(NodeExists(path(name(2))), stat(20, earlier_session)),
            Owes(path(name(2))),  # ours by name, but an earlier session's (CURATOR-498)
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
            Reply(RELIST, [name(3), name(4, OTHER)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_lost_create_not_found_in_time_is_swept_in_the_background(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(3)], late=True),  # the look for our node outlasts the deadline
            # then, in the background: whatever the lost create made is deleted
            Reply(RELIST, [name(3), name(4, OTHER)]),
            Owes(path(name(3))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(5)) is None
    server.finish()


def test_a_connection_lost_between_create_and_listing_lists_again_once_connected(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, error=ConnectionLoss(), disconnects=True),
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_an_expiry_mid_wait_queues_again_with_a_new_node(engine: LockEngine) -> None:
    new_session = SESSION + 1
    ours_again = f"{prefix(1)}{wire.LOCK_NAME}{5:010d}"
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            State(KazooState.LOST),
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED, session=new_session),
            Reply(RELIST, [name(2, OTHER)]),  # our node went with the session
            Reply(DeleteNode(path(name(3))), error=NoNodeError()),
            Reply(create(1), (path(ours_again), stat(50, new_session))),
            Reply(LISTING, [ours_again]),
        ],
        session=SESSION,
    )
    held = server.run(engine.acquire_steps(None))
    assert held == LockNode(path(ours_again), 50, new_session)
    server.finish()


def test_noauth_on_the_create_reaches_the_caller_and_leaves_nothing(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=NoAuthError()),
            Reply(LISTING, error=NoAuthError()),
        ],
        session=SESSION,
    )
    with pytest.raises(NoAuthError):
        server.run(engine.acquire_steps(None))
    server.finish()
    assert not server.watches


def test_a_missing_parent_is_made_as_containers_and_the_create_sent_again(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=NoNodeError()),
            Reply(LISTING, error=NoNodeError()),
            # the deepest parent first: one request when only it is missing
            Reply(CreateParent(BASE), error=NoNodeError()),
            Reply(CreateParent("/locks"), ("/locks", stat(1))),
            Reply(CreateParent(BASE), (BASE, stat(2))),
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_stop_mid_wait_ends_with_connection_closed_and_owes_the_nodes_delete(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Stop(),
            Owes(path(name(3))),
        ],
        session=SESSION,
    )
    with pytest.raises(ConnectionClosedError):
        server.run(engine.acquire_steps(None))
    server.finish()


def test_a_timeout_mid_wait_drops_the_watch_and_deletes_the_node(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Timeout(),
            Forgets(path(name(2, OTHER))),
            Reply(DeleteNode(path(name(3)))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(30)) is None
    server.finish()
    assert not any(server.watches.values())


def test_a_delete_lost_with_the_connection_goes_on_in_the_background(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Timeout(),
            Forgets(path(name(2, OTHER))),
            Reply(DeleteNode(path(name(3))), error=ConnectionLoss()),
            Owes(path(name(3)), sent=True),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(30)) is None
    server.finish()


def test_the_sorted_children_ride_through_a_connection_loss(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(RELIST, error=ConnectionLoss(), disconnects=True),
            State(KazooState.CONNECTED),
            Reply(RELIST, [name(4, OTHER), "x", name(3)]),
        ],
        session=SESSION,
    )
    children = server.run(engine.sorted_children_steps())
    assert children == [name(3), name(4, OTHER), "x"]
    server.finish()


def test_the_script_fails_a_protocol_that_sends_another_request(engine: LockEngine) -> None:
    server = ScriptedServer([Reply(create(1), (path(name(3)), stat(30, SESSION)))])
    with pytest.raises(AssertionError, match="expected"):
        server.run(engine.acquire_steps(None))


def test_the_script_fails_a_protocol_that_ends_before_it(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(3)]),
            Reply(DeleteNode(path(name(3)))),
        ],
        session=SESSION,
    )
    server.run(engine.acquire_steps(None))
    with pytest.raises(AssertionError, match="ended before the script"):
        server.finish()


def test_the_script_fails_a_request_that_a_callback_sent_and_swallowed(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (b"", stat(20, 7))),
            Fire(path(name(2, OTHER))),
            Reply(RELIST, [name(3)]),  # the watcher sends an exists of our node instead
        ],
        session=SESSION,
    )
    with pytest.raises(AssertionError, match="expected ListChildren"):
        server.run(engine.acquire_steps(None))


def test_a_write_waiter_lists_again_before_it_holds(client: KazooTransport) -> None:
    engine = LockEngine(client, BASE, write_driver(), data=DATA)
    write = wire.WRITE_LOCK_NAME
    ours, ahead = f"{prefix()}{write}{3:010d}", f"{OTHER}{write}{2:010d}"
    server = ScriptedServer(
        [
            Reply(
                CreateNode(path(prefix() + write), DATA, None, CreateMode.EPHEMERAL_SEQUENTIAL),
                (path(ours), stat(30, SESSION)),
            ),
            Reply(LISTING, [ahead, ours]),
            Reply(GetData(path(ahead), watch=WATCHED), (b"", stat(20, 7))),
            Fire(path(ahead)),
            Reply(RELIST, [ours]),  # a listing, not an exists: the write side relists
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(ours), 30, SESSION)
    server.finish()


def test_a_revocable_holder_watches_its_node_and_hears_the_revocation(
    client: KazooTransport,
) -> None:
    revoked: list[bool] = []
    engine = LockEngine(client, BASE, MUTEX_DRIVER, data=DATA).revocable(
        lambda: revoked.append(True)
    )
    empty = CreateNode(path(prefix() + wire.LOCK_NAME), b"", None, CreateMode.EPHEMERAL_SEQUENTIAL)
    server = ScriptedServer(
        [
            Reply(empty, (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(3)]),
            Reply(GetData(path(name(3)), watch=WATCHED), (b"", stat(30, SESSION))),
            # once our node's data changes: read it again, watching again
            Reply(GetData(path(name(3)), watch=WATCHED), (wire.REVOKE_MESSAGE, stat(30, SESSION))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    assert not revoked
    server.fire(path(name(3)), EventType.CHANGED)
    assert revoked == [True]
    server.finish()


def test_a_plain_create_gives_the_listing_that_came_with_it(engine: LockEngine) -> None:
    # as the election and the semaphore create: the listing itself, not a decision
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(RELIST, [name(3), name(2, OTHER)]),
        ],
        session=SESSION,
    )
    node, listed = server.run(engine.create_node_steps(Deadline(None)))
    assert node == LockNode(path(name(3)), 30, SESSION)
    assert listed == [name(3), name(2, OTHER)]
    server.finish()


def test_a_watch_dropped_on_the_server_as_it_is_set_is_set_again(engine: LockEngine) -> None:
    # the server keeps one watch per path for a session: another waiter of this client that
    # gave up on the same node had the server drop it just after our request set it
    predecessor = path(name(2, OTHER))
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(predecessor, watch=WATCHED), (b"", stat(20, 7)), drops_a_watch=True),
            Reply(GetData(predecessor, watch=WATCHED), (b"", stat(20, 7))),
            Fire(predecessor),
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()
