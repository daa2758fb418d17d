"""The semaphore's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one exchange (:mod:`tests.scripted`) to
``InterProcessSemaphoreV2``'s steps and checks every request they send, in order: the internal
mutex taken under ``locks/``, the lease node created under ``leases/``, the leases listed (with
a children watch when there are too many), and the mutex released once the lease is held or
given up. The same protocol runs on a real server in test_semaphore.py and against Java
Curator in interop/test_semaphore_interop.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoAuthError, NoNodeError
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.transport import KazooTransport, default_node_data, transport_of
from pycurator._protocol import wire
from pycurator._protocol.deadline import Deadline
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.hold import Acquired
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.semaphore import SemaphoreSteps, lease_data_steps

from .scripted import (
    REDUCED,
    WATCHED,
    Entry,
    Fire,
    Forgets,
    Owes,
    Reply,
    ScriptedServer,
    State,
    Stop,
    Timeout,
    stat,
)

BASE = "/sem/s"
LOCKS = f"{BASE}/{wire.SEMAPHORE_LOCK_PARENT}"
LEASES = f"{BASE}/{wire.SEMAPHORE_LEASE_PARENT}"
DATA = b"me"
SESSION = 0x51
#: The protection ids our creates draw, in order: the internal mutex's node, then the lease's.
IDS = [f"{n * 8}-{n * 4}-4{n * 3}-8{n * 3}-{n * 12}" for n in "1234"]
OTHER = "_c_99999999-9999-4999-8999-999999999999-"
AHEAD = "_c_88888888-8888-4888-8888-888888888888-"
T = TypeVar("T")

#: The internal mutex's listing, pipelined behind its create and reduced to a decision.
LOCK_LISTING = ListChildren(LOCKS, reduce=REDUCED)
#: The leases' listing pipelined behind the lease's create.
LEASE_LISTING = ListChildren(LEASES)
#: The leases' listing that sets the children watch a waiter waits on.
WATCHED_LEASES = ListChildren(LEASES, watch=WATCHED)


def prefix(n: int) -> str:
    return wire.protected_prefix(IDS[n])


def lock(n: int, seq: int) -> str:
    """The path of the internal mutex's node of our ``n``-th create."""
    return f"{LOCKS}/{prefix(n)}{wire.LOCK_NAME}{seq:010d}"


def lease(n: int, seq: int) -> str:
    """The path of the lease node of our ``n``-th create."""
    return f"{LEASES}/{prefix(n)}{wire.LEASE_NAME}{seq:010d}"


def other(seq: int, owner: str = OTHER) -> str:
    """The name of another participant's lease node."""
    return f"{owner}{wire.LEASE_NAME}{seq:010d}"


def name(path: str) -> str:
    return wire.node_name(path)


def create_lock(n: int) -> CreateNode:
    """The internal mutex's create (its nodes hold Curator's default data, as Curator's)."""
    return CreateNode(
        f"{LOCKS}/{prefix(n)}{wire.LOCK_NAME}",
        default_node_data(),
        None,
        CreateMode.EPHEMERAL_SEQUENTIAL,
    )


def create_lease(n: int) -> CreateNode:
    return CreateNode(
        f"{LEASES}/{prefix(n)}{wire.LEASE_NAME}", DATA, None, CreateMode.EPHEMERAL_SEQUENTIAL
    )


def mutex_taken(n: int, seq: int, session: int = SESSION) -> list[Reply]:
    """The internal mutex taken at once: our node is the only one under ``locks/``."""
    return [
        Reply(create_lock(n), (lock(n, seq), stat(seq, session))),
        Reply(LOCK_LISTING, [name(lock(n, seq))]),
    ]


@pytest.fixture(autouse=True)
def protected_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ids = iter(IDS)
    monkeypatch.setattr(wire, "new_protected_id", lambda: next(ids))
    yield


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


def semaphore(client: KazooTransport, max_leases: int) -> SemaphoreSteps:
    return SemaphoreSteps(client, BASE, max_leases, DATA, None, "standard")


def nodes(leases: list[Acquired] | None) -> list[LockNode] | None:
    return None if leases is None else [node for node, _ in leases]


def test_a_lease_is_granted_at_once_while_fewer_than_max_leases_exist(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(DeleteNode(lock(0, 4))),  # the internal mutex, released once we hold
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()
    assert not any(server.watches.values())
    # the internal mutex is taken before the lease is created, and released after
    assert [(kind, type(request).__name__) for kind, request in server.log] == [
        ("send", "CreateNode"),
        ("send", "ListChildren"),
        ("await", "CreateNode"),
        ("await", "ListChildren"),
        ("send", "CreateNode"),
        ("send", "ListChildren"),  # pipelined behind the lease's create
        ("await", "CreateNode"),
        ("await", "ListChildren"),
        ("send", "DeleteNode"),
        ("await", "DeleteNode"),
    ]


def test_a_waiter_watches_the_leases_children_and_is_woken_by_a_release(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            # too many: list again, this time setting the children watch, and wait
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            Fire(LEASES, EventType.CHILD),  # the other holder returned its lease
            Reply(WATCHED_LEASES, [name(lease(1, 7))]),
            Forgets(LEASES),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 1).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()
    assert not any(server.watches.values())
    # the internal mutex is held all through the wait, and released only once the lease is
    assert [kind for kind, _ in server.log[8:]] == [
        "send",
        "await",
        "woken",
        "send",
        "await",
        "send",
        "await",
    ]
    assert server.sent[-1] == DeleteNode(lock(0, 4))


def test_waiters_queue_on_the_internal_mutex_before_creating_a_lease(
    client: KazooTransport,
) -> None:
    ahead = f"{LOCKS}/{AHEAD}{wire.LOCK_NAME}{3:010d}"
    server = ScriptedServer(
        [
            Reply(create_lock(0), (lock(0, 4), stat(40, SESSION))),
            Reply(LOCK_LISTING, [name(ahead), name(lock(0, 4))]),
            # another participant holds the internal mutex: watch its node, no lease yet
            Reply(GetData(ahead, watch=WATCHED), (b"", stat(30, 7))),
            Fire(ahead),
            Reply(NodeExists(lock(0, 4)), stat(40, SESSION)),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()
    assert not any(server.watches.values())


def test_foreign_children_count_under_leases_and_sort_last_under_locks(
    client: KazooTransport,
) -> None:
    foreign_locks = ["readme", f"{OTHER}{wire.LEASE_NAME}0000000001", "x-lock-0000000009"]
    server = ScriptedServer(
        [
            Reply(create_lock(0), (lock(0, 4), stat(40, SESSION))),
            # names without the mutex's token sort after every sequence number: ours is first
            Reply(LOCK_LISTING, [*foreign_locks, name(lock(0, 4))]),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            # every child of leases/ counts, a lease node or not (a count, not an order)
            Reply(LEASE_LISTING, ["readme", other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, ["readme", other(6), name(lease(1, 7))]),
            Fire(LEASES, EventType.CHILD),
            Reply(WATCHED_LEASES, ["readme", name(lease(1, 7))]),
            Forgets(LEASES),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()


def test_a_lease_create_answered_after_the_deadline_is_undone_when_it_lands(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION)), late=True),
            Reply(LEASE_LISTING, [name(lease(1, 7))], late=True),
            Reply(DeleteNode(lock(0, 4))),  # the internal mutex is released at once
            Owes(lease(1, 7)),  # once the create lands
        ],
        session=SESSION,
    )
    assert server.run(semaphore(client, 2).acquire_steps(1, 5)) is None
    assert server.script == [Owes(lease(1, 7))]  # nothing owed before it lands
    server.land()
    server.finish()


def test_a_connection_lost_between_create_and_listing_lists_again_once_connected(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, error=ConnectionLoss(), disconnects=True),
            Reply(WATCHED_LEASES, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            Forgets(LEASES),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()
    assert not any(server.watches.values())


def test_an_expiry_mid_wait_takes_the_mutex_again_and_creates_a_new_lease(
    client: KazooTransport,
) -> None:
    new_session = SESSION + 1
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            State(KazooState.LOST),
            Reply(WATCHED_LEASES, error=ConnectionLoss()),
            State(KazooState.CONNECTED, session=new_session),
            # our lease went with the session, and another's took its place
            Reply(WATCHED_LEASES, [other(6), other(8, AHEAD)]),
            Forgets(LEASES),
            Reply(DeleteNode(lease(1, 7)), error=NoNodeError()),
            Reply(DeleteNode(lock(0, 4)), error=NoNodeError()),  # so did our mutex node
            *mutex_taken(2, 8, new_session),
            Reply(create_lease(3), (lease(3, 9), stat(90, new_session))),
            Reply(LEASE_LISTING, [name(lease(3, 9))]),
            Reply(DeleteNode(lock(2, 8))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 1).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(3, 9), 90, new_session)]
    server.finish()


def test_a_lease_listed_in_an_ended_session_is_not_held(client: KazooTransport) -> None:
    new_session = SESSION + 1
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            State(KazooState.CONNECTED, session=new_session),
            # the listing still shows our node, but the session that made it has ended
            Reply(WATCHED_LEASES, [name(lease(1, 7))]),
            Forgets(LEASES),
            Reply(DeleteNode(lease(1, 7)), error=NoNodeError()),
            Reply(DeleteNode(lock(0, 4)), error=NoNodeError()),
            *mutex_taken(2, 8, new_session),
            Reply(create_lease(3), (lease(3, 9), stat(90, new_session))),
            Reply(LEASE_LISTING, [name(lease(3, 9))]),
            Reply(DeleteNode(lock(2, 8))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 1).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(3, 9), 90, new_session)]
    server.finish()


def test_noauth_on_the_lease_create_reaches_the_caller_and_releases_the_mutex(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), error=NoAuthError()),
            Reply(LEASE_LISTING, error=NoAuthError()),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    with pytest.raises(NoAuthError):
        server.run(semaphore(client, 2).acquire_steps(1, None))
    server.finish()
    assert not server.watches


def test_a_stop_mid_wait_ends_with_connection_closed_and_owes_both_deletes(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            Stop(),
            Forgets(LEASES),
            Owes(lease(1, 7)),
            Owes(lock(0, 4)),
        ],
        session=SESSION,
    )
    with pytest.raises(ConnectionClosedError):
        server.run(semaphore(client, 1).acquire_steps(1, None))
    server.finish()
    assert not any(server.watches.values())


def test_a_timeout_mid_wait_deletes_the_lease_node_and_releases_the_mutex(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            Timeout(),
            Forgets(LEASES),
            Reply(DeleteNode(lease(1, 7))),
            Reply(DeleteNode(lock(0, 4))),
        ],
        session=SESSION,
    )
    assert server.run(semaphore(client, 1).acquire_steps(1, 30)) is None
    server.finish()
    assert not any(server.watches.values())


@pytest.mark.parametrize("max_leases", [3, 2])
def test_each_participant_counts_the_leases_against_its_own_max(
    client: KazooTransport, max_leases: int
) -> None:
    # nothing checks that participants agree on max_leases (Curator does not either): the
    # same three lease nodes are a grant for a max of 3 and a wait for a max of 2
    listing = [other(5), other(6, AHEAD), name(lease(1, 7))]
    script: list[Entry] = [
        *mutex_taken(0, 4),
        Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
        Reply(LEASE_LISTING, listing),
    ]
    if max_leases == 2:
        script += [
            Reply(WATCHED_LEASES, listing),
            Timeout(),
            Forgets(LEASES),
            Reply(DeleteNode(lease(1, 7))),
        ]
    server = ScriptedServer([*script, Reply(DeleteNode(lock(0, 4)))], session=SESSION)
    leases = server.run(semaphore(client, max_leases).acquire_steps(1, 30))
    expected = [LockNode(lease(1, 7), 70, SESSION)] if max_leases == 3 else None
    assert nodes(leases) == expected
    server.finish()


def test_many_leases_are_taken_one_by_one_and_all_returned_on_timeout(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(DeleteNode(lock(0, 4))),
            # the second lease: one too many, so it waits, and the wait times out
            *mutex_taken(2, 8),
            Reply(create_lease(3), (lease(3, 9), stat(90, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7)), name(lease(3, 9))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7)), name(lease(3, 9))]),
            Timeout(),
            Forgets(LEASES),
            Reply(DeleteNode(lease(3, 9))),
            Reply(DeleteNode(lock(2, 8))),
            Reply(DeleteNode(lease(1, 7))),  # the lease taken first is returned too
        ],
        session=SESSION,
    )
    assert server.run(semaphore(client, 2).acquire_steps(2, 30)) is None
    server.finish()


def test_the_participants_are_the_lease_nodes_listed_through_a_connection_loss(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            Reply(LEASE_LISTING, error=ConnectionLoss(), disconnects=True),
            State(KazooState.CONNECTED),
            Reply(LEASE_LISTING, [other(6), "readme", other(5, AHEAD)]),
        ],
        session=SESSION,
    )
    assert server.run(semaphore(client, 2).participant_steps()) == [
        other(5, AHEAD),
        other(6),
        "readme",
    ]
    server.finish()


def test_the_participants_of_a_semaphore_never_used_are_none(client: KazooTransport) -> None:
    server = ScriptedServer([Reply(LEASE_LISTING, error=NoNodeError())], session=SESSION)
    assert server.run(semaphore(client, 2).participant_steps()) == []
    server.finish()


def test_a_lease_nodes_data_is_read_through_a_connection_loss() -> None:
    server = ScriptedServer(
        [
            Reply(GetData(lease(1, 7)), error=ConnectionLoss(), disconnects=True),
            State(KazooState.CONNECTED),
            Reply(GetData(lease(1, 7)), (DATA, stat(70, SESSION))),
        ],
        session=SESSION,
    )
    assert server.run(lease_data_steps(lease(1, 7), Deadline(None))) == DATA
    server.finish()
