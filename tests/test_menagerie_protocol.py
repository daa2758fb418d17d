"""menagerie's protocol on a scripted server (:mod:`tests.scripted`): what it does that
Curator's mutex does not. Its names and empty data; a base made persistent with its
ancestors; a lost create found again among the session's unclaimed nodes; the downgrade's
plain ephemeral node and a writer that lists again before holding; the semaphore's watches on
the ``permits`` nodes nearest ahead, and what it leaves behind."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import KazooState

from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol import wire
from pycurator._protocol.menagerie import ReadSide
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.menagerie import PermitSteps, lock_engine, read_write_engines
from pycurator._recipes.zkrecipes import write_lock_engine

from .scripted import (
    REDUCED,
    WATCHED,
    Fire,
    Forgets,
    Owes,
    Reply,
    ScriptedServer,
    State,
    Timeout,
    stat,
)

BASE = "/app/m"
SESSION = 0x51
OTHER_SESSION = 0x52
LISTING = ListChildren(BASE, reduce=REDUCED)
RELIST = ListChildren(BASE)


def node(head: str, number: int) -> str:
    return f"{head}{number:010d}"


def path(name: str) -> str:
    return f"{BASE}/{name}"


def create(head: str, sequence: str | None = None) -> CreateNode:
    """The create of a menagerie node: empty data, ephemeral, numbered by ZooKeeper unless
    ``sequence`` is given."""
    mode = CreateMode.EPHEMERAL_SEQUENTIAL if sequence is None else CreateMode.EPHEMERAL
    return CreateNode(path(head + (sequence or "")), b"", None, mode)


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


def test_a_lock_node_is_lock_seq_empty_and_ephemeral_sequential(client: KazooTransport) -> None:
    ours = node("lock-", 3)
    server = ScriptedServer(
        [
            Reply(create("lock-"), (path(ours), stat(30, SESSION))),
            Reply(LISTING, [node("readLock-", 1), "lockfoo", ours, "config"]),
        ],
        session=SESSION,
    )
    held = server.run(lock_engine(client, BASE, None).acquire_steps(None))
    assert held == LockNode(path(ours), 30, SESSION)
    assert server.claimed == {path(ours): server.claimed[path(ours)]}
    server.finish()


def test_a_missing_base_is_made_persistent_and_empty_with_its_ancestors(
    client: KazooTransport,
) -> None:
    ours = node("lock-", 0)
    server = ScriptedServer(
        [
            Reply(create("lock-"), error=NoNodeError()),
            Reply(LISTING, error=NoNodeError()),
            Reply(CreateParent(BASE, CreateMode.PERSISTENT), error=NoNodeError()),
            Reply(CreateParent("/app", CreateMode.PERSISTENT), ("/app", stat(1))),
            Reply(CreateParent(BASE, CreateMode.PERSISTENT), (BASE, stat(2))),
            Reply(create("lock-"), (path(ours), stat(3, SESSION))),
            Reply(LISTING, [ours]),
        ],
        session=SESSION,
    )
    assert server.run(lock_engine(client, BASE, None).acquire_steps(None)) == LockNode(
        path(ours), 3, SESSION
    )
    server.finish()


def test_a_lost_create_is_found_among_the_sessions_unclaimed_nodes(client: KazooTransport) -> None:
    engine = lock_engine(client, BASE, None)
    another_acquires = node("lock-", 2)
    ours = node("lock-", 1)
    server = ScriptedServer(
        [
            Reply(create("lock-"), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # the name does not tell whose node it is: the session and the claims do
            Reply(RELIST, [another_acquires, ours, node("lock-", 0), "lockfoo"]),
            Reply(NodeExists(path(node("lock-", 0))), stat(10, OTHER_SESSION)),
            Reply(NodeExists(path(ours)), stat(11, SESSION)),
            Reply(RELIST, [another_acquires, ours]),
        ],
        session=SESSION,
    )
    claimant = object()
    server.claimed[path(another_acquires)] = claimant
    assert server.run(engine.acquire_steps(None)) == LockNode(path(ours), 11, SESSION)
    assert server.claimed[path(another_acquires)] is claimant
    assert path(ours) in server.claimed
    server.finish()

    # the release deletes the node and drops its claim
    release = ScriptedServer([Reply(DeleteNode(path(ours)))], session=SESSION)
    release.claimed = server.claimed
    release.run(engine.delete_steps(path(ours)))
    assert release.claimed == {path(another_acquires): claimant}
    release.finish()


def test_a_downgrade_creates_a_plain_ephemeral_node_under_the_write_nodes_sequence(
    client: KazooTransport,
) -> None:
    _, read = read_write_engines(client, BASE, None)
    write_node = path(node("writeLock-", 7))
    downgrade = "readLock--0000000007"
    server = ScriptedServer(
        [
            Reply(create("readLock-", "-0000000007"), (path(downgrade), stat(40, SESSION))),
            Reply(LISTING, [node("writeLock-", 7), downgrade, node("writeLock-", 8)]),
        ],
        session=SESSION,
    )
    assert server.run(read.acquire_steps(None, ReadSide(write_node))) == LockNode(
        path(downgrade), 40, SESSION
    )
    server.finish()


def test_a_writer_next_in_line_lists_again_before_holding(client: KazooTransport) -> None:
    write, _ = read_write_engines(client, BASE, None)
    ours = node("writeLock-", 9)
    holder = node("writeLock-", 7)
    downgrade = "readLock--0000000007"
    server = ScriptedServer(
        [
            Reply(create("writeLock-"), (path(ours), stat(90, SESSION))),
            Reply(LISTING, [holder, ours]),
            Reply(GetData(path(holder), watch=WATCHED), (b"", stat(70, OTHER_SESSION))),
            Fire(path(holder)),
            # the holder downgraded before it released: its read node now keeps us out
            Reply(RELIST, [downgrade, ours]),
            Reply(GetData(path(downgrade), watch=WATCHED), (b"", stat(80, OTHER_SESSION))),
            Fire(path(downgrade)),
            Reply(RELIST, [ours]),
        ],
        session=SESSION,
    )
    assert server.run(write.acquire_steps(None)) == LockNode(path(ours), 90, SESSION)
    server.finish()


def permits(client: KazooTransport, count: int) -> PermitSteps:
    return PermitSteps(client, BASE, count, None, "standard")


def test_a_permit_waiter_watches_the_permits_nodes_nearest_ahead_and_no_other(
    client: KazooTransport,
) -> None:
    ours = node("permit-", 4)
    ahead = [node("permit-", n) for n in range(4)]
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(40, SESSION))),
            Reply(ListChildren(BASE), [*ahead, ours]),
            Reply(GetData(path(ahead[3]), watch=WATCHED), (b"", stat(30, 7))),
            Reply(GetData(path(ahead[2]), watch=WATCHED), (b"", stat(20, 7))),
            # a holder's release, not the node just ahead of ours: it grants us a permit
            Fire(path(ahead[2])),
            Reply(RELIST, [ahead[0], ahead[3], ours]),
            Reply(GetData(path(ahead[0]), watch=WATCHED), (b"", stat(0, 7))),
            Fire(path(ahead[0])),
            Reply(RELIST, [ahead[3], ours]),
            Forgets(path(ahead[3])),
        ],
        session=SESSION,
    )
    held = server.run(permits(client, 2).acquire_steps(None))
    assert held is not None and held[0] == LockNode(path(ours), 40, SESSION)
    assert [r.path for r in server.sent if isinstance(r, GetData)] == [
        path(ahead[3]),
        path(ahead[2]),
        path(ahead[0]),  # ahead[3] is still watched: not asked again
    ]
    server.finish()
    assert not server.listeners


def test_a_watched_permit_gone_before_its_watch_lists_again_at_once(
    client: KazooTransport,
) -> None:
    ours = node("permit-", 2)
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(20, SESSION))),
            Reply(ListChildren(BASE), [node("permit-", 0), node("permit-", 1), ours]),
            Reply(GetData(path(node("permit-", 1)), watch=WATCHED), error=NoNodeError()),
            Reply(RELIST, [ours]),
        ],
        session=SESSION,
    )
    held = server.run(permits(client, 1).acquire_steps(None))
    assert held is not None and held[0].path == path(ours)
    server.finish()


def test_a_permit_that_times_out_drops_its_watches_and_deletes_its_node(
    client: KazooTransport,
) -> None:
    ours = node("permit-", 2)
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(20, SESSION))),
            Reply(ListChildren(BASE), [node("permit-", 0), node("permit-", 1), ours]),
            Reply(GetData(path(node("permit-", 1)), watch=WATCHED), (b"", stat(10, 7))),
            Reply(GetData(path(node("permit-", 0)), watch=WATCHED), (b"", stat(0, 7))),
            Timeout(),
            Forgets(path(node("permit-", 0))),
            Forgets(path(node("permit-", 1))),
            Reply(DeleteNode(path(ours))),
        ],
        session=SESSION,
    )
    assert server.run(permits(client, 2).acquire_steps(5)) is None
    assert server.claimed == {}
    server.finish()


def test_a_permit_whose_session_ended_queues_again(client: KazooTransport) -> None:
    ours, again = node("permit-", 1), node("permit-", 5)
    new_session = SESSION + 1
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(10, SESSION))),
            Reply(ListChildren(BASE), [node("permit-", 0), ours]),
            Reply(GetData(path(node("permit-", 0)), watch=WATCHED), (b"", stat(0, 7))),
            State(KazooState.CONNECTED, session=new_session),
            Reply(RELIST, [node("permit-", 0)]),  # our node went with the session
            # no watch to drop: kazoo dropped them all with the connection
            Reply(DeleteNode(path(ours)), error=NoNodeError()),
            Reply(create("permit-"), (path(again), stat(50, new_session))),
            Reply(ListChildren(BASE), [again]),
        ],
        session=SESSION,
    )
    held = server.run(permits(client, 1).acquire_steps(None))
    assert held is not None and held[0] == LockNode(path(again), 50, new_session)
    server.finish()


def test_available_permits_are_the_permits_less_the_permit_nodes_never_below_zero(
    client: KazooTransport,
) -> None:
    # a participant that counts more permits (menagerie checks no count) made the third node
    server = ScriptedServer(
        [
            Reply(RELIST, [node("permit-", 2), node("permit-", 0), node("permit-", 1)]),
            Reply(RELIST, [node("permit-", 3)]),
            Reply(RELIST, error=NoNodeError()),
        ],
        session=SESSION,
    )
    semaphore = permits(client, 2)
    assert [server.run(semaphore.available_steps()) for _ in range(3)] == [0, 1, 2]
    server.finish()


def test_bad_permits_are_refused(client: KazooTransport) -> None:
    with pytest.raises(ValueError):
        permits(client, 0)
    with pytest.raises(TypeError):
        permits(client, True)
    with pytest.raises(ValueError):
        PermitSteps(client, "relative", 1, None, "standard")


def test_a_deadline_that_passes_during_the_create_leaves_nothing(client: KazooTransport) -> None:
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(node("permit-", 0)), stat(1, SESSION)), late=True),
            Reply(ListChildren(BASE), [node("permit-", 0)], late=True),
        ],
        session=SESSION,
    )
    assert server.run(permits(client, 1).acquire_steps(0.5)) is None
    # the create lands later: the node it made is deleted then
    server.script.append(Owes(path(node("permit-", 0))))
    server.land()
    server.finish()


def test_a_drop_between_a_permits_decision_and_the_session_check_keeps_it(
    client: KazooTransport,
) -> None:
    ours = node("permit-", 1)
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(10, SESSION))),
            # the listing that grants the permit is read as the connection goes: the session
            # lives on, and the permit with it
            Reply(
                ListChildren(BASE), [node("permit-", 0), ours], then=(State(KazooState.SUSPENDED),)
            ),
        ],
        session=SESSION,
    )
    held = server.run(permits(client, 2).acquire_steps(None))
    assert held is not None and held[0] == LockNode(path(ours), 10, SESSION)
    server.finish()


def test_a_drop_during_the_recovery_of_a_lost_create_takes_the_sessions_node(
    client: KazooTransport,
) -> None:
    engine = lock_engine(client, BASE, None)
    ours = node("lock-", 1)
    server = ScriptedServer(
        [
            Reply(create("lock-"), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # the connection drops again before the owner is read: still this session's node
            Reply(RELIST, [ours], then=(State(KazooState.SUSPENDED),)),
            Reply(NodeExists(path(ours)), stat(11, SESSION)),
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [ours]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(path(ours), 11, SESSION)
    assert path(ours) in server.claimed
    server.finish()


def test_a_create_whose_session_ended_before_it_went_out_is_named_again(
    client: KazooTransport,
) -> None:
    """A name that carries the session (ZooKeeper's WriteLock) names the session the node is in:
    a create that went out in a newer session than its name says is deleted and made again."""
    engine = write_lock_engine(client, BASE, None)
    new_session = SESSION + 1
    stale, fresh = f"x-{SESSION}-", f"x-{new_session}-"

    def create_named(head: str) -> CreateNode:
        return CreateNode(
            path(head), wire.ZK_WRITE_LOCK_DATA, None, CreateMode.EPHEMERAL_SEQUENTIAL
        )

    server = ScriptedServer(
        [
            # queued in the session named, sent once an expiry had opened the next one
            Reply(
                create_named(stale),
                (path(node(stale, 1)), stat(10, new_session)),
                then=(State(KazooState.LOST), State(KazooState.CONNECTED, session=new_session)),
            ),
            Reply(LISTING, [node(stale, 1)]),
            Owes(path(node(stale, 1))),
            Reply(create_named(fresh), (path(node(fresh, 2)), stat(20, new_session))),
            Reply(LISTING, [node(fresh, 2)]),
        ],
        session=SESSION,
    )
    held = server.run(engine.acquire_steps(None))
    assert held == LockNode(path(node(fresh, 2)), 20, new_session)
    server.finish()


def test_a_permit_waiter_watches_again_after_a_drop(client: KazooTransport) -> None:
    ours = node("permit-", 1)
    server = ScriptedServer(
        [
            Reply(create("permit-"), (path(ours), stat(10, SESSION))),
            Reply(ListChildren(BASE), [node("permit-", 0), ours]),
            Reply(GetData(path(node("permit-", 0)), watch=WATCHED), (b"", stat(0, 7))),
            # kazoo drops every watch with the connection; back in the same session
            State(KazooState.SUSPENDED),
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [node("permit-", 0), ours]),
            # the watch is set again, else nothing would wake the waiter when the permit goes
            Reply(GetData(path(node("permit-", 0)), watch=WATCHED), (b"", stat(0, 7))),
            Reply(RELIST, [node("permit-", 0), ours]),  # woken by the reconnect meanwhile
            Fire(path(node("permit-", 0))),
            Reply(RELIST, [ours]),
        ],
        session=SESSION,
    )
    held = server.run(permits(client, 1).acquire_steps(None))
    assert held is not None and held[0] == LockNode(path(ours), 10, SESSION)
    server.finish()


def test_the_sweep_after_a_lost_create_asks_again_after_a_connection_loss(
    client: KazooTransport,
) -> None:
    engine = lock_engine(client, BASE, None)
    ours = node("lock-", 1)
    server = ScriptedServer(
        [
            Reply(RELIST, [ours]),
            # whose node it is, asked as the connection goes: asked again once it is back
            Reply(NodeExists(path(ours)), error=ConnectionLoss(), disconnects=True),
            State(KazooState.CONNECTED),
            Reply(NodeExists(path(ours)), stat(11, SESSION)),
            Owes(path(ours)),  # this session's, claimed by no acquire: the create given up made it
        ],
        session=SESSION,
    )
    server.run(engine._orphans_steps(engine.naming.prefix(engine.driver.token, None, ""), {}))
    server.finish()
