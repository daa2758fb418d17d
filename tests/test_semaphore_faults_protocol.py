"""The semaphore's protocol on a scripted server when a fault falls between two steps: a drop as
the count that grants a lease is read, a cancellation or an expiry as the internal mutex is
released, a lease made after the mutex was lost. Each was found by the fault explorer
(tests/explorer) and is kept here as the exchange that shows it; the rest of the protocol is in
test_semaphore_protocol.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.callback_runner import Cancelled
from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol import wire
from pycurator._protocol.requests import DeleteNode
from pycurator._protocol.steps import Await, Steps
from pycurator._recipes.lock_nodes import LockNode

from .scripted import Fire, Forgets, Owes, Reply, ScriptedServer, State, stat
from .test_semaphore_protocol import (
    AHEAD,
    IDS,
    LEASE_LISTING,
    LEASES,
    SESSION,
    WATCHED_LEASES,
    create_lease,
    lease,
    lock,
    mutex_taken,
    name,
    nodes,
    other,
    semaphore,
)

T = TypeVar("T")


@pytest.fixture(autouse=True)
def protected_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ids = iter(IDS)
    monkeypatch.setattr(wire, "new_protected_id", lambda: next(ids))
    yield


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


def test_a_drop_between_the_leases_count_and_the_session_check_keeps_the_lease(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            # the count that grants the lease is read as the connection goes; the session
            # lives on, and so does the lease: no second lease queued behind it
            Reply(
                LEASE_LISTING, [other(6), name(lease(1, 7))], then=(State(KazooState.SUSPENDED),)
            ),
            Owes(lock(0, 4)),  # the internal mutex's delete waits for the connection
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(1, 7), 70, SESSION)]
    server.finish()


def cancelled_awaiting(steps: Steps[T], request: DeleteNode) -> Steps[T]:
    """``steps``, cancelled (as a runner throws :class:`Cancelled` in) as they wait for the
    answer to ``request``, once."""
    value: Any = None
    error: BaseException | None = None
    thrown = False
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if not thrown and isinstance(step, Await) and step.result.reply.request == request:
            thrown, value, error = True, None, Cancelled()
            continue
        try:
            value, error = (yield step), None
        except BaseException as exc:
            value, error = None, exc


def test_a_lease_taken_as_the_mutex_release_is_cancelled_is_returned(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [name(lease(1, 7))]),
            Reply(DeleteNode(lock(0, 4))),  # its answer is not awaited: the owner cancels
            Owes(lock(0, 4), sent=True),
            Reply(DeleteNode(lease(1, 7))),  # the lease no acquire returns is not left behind
        ],
        session=SESSION,
    )
    steps = semaphore(client, 2).acquire_steps(1, None)
    with pytest.raises(Cancelled):
        server.run(cancelled_awaiting(steps, DeleteNode(lock(0, 4))))
    server.finish()


def test_a_lease_whose_session_ends_as_the_mutex_is_released_is_taken_again(
    client: KazooTransport,
) -> None:
    new_session = SESSION + 1
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [name(lease(1, 7))]),
            # the session expires as the mutex is released: the lease went with it
            Reply(
                DeleteNode(lock(0, 4)),
                error=ConnectionLoss(),
                then=(State(KazooState.LOST), State(KazooState.CONNECTED, session=new_session)),
            ),
            Owes(lock(0, 4), sent=True),
            Reply(DeleteNode(lease(1, 7)), error=NoNodeError()),
            *mutex_taken(2, 5, new_session),
            Reply(create_lease(3), (lease(3, 8), stat(80, new_session))),
            Reply(LEASE_LISTING, [name(lease(3, 8))]),
            Reply(DeleteNode(lock(2, 5))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 2).acquire_steps(1, None))
    # never a lease of a session that has ended
    assert nodes(leases) == [LockNode(lease(3, 8), 80, new_session)]
    server.finish()


def test_a_lease_made_after_the_mutexs_session_ended_is_not_taken(client: KazooTransport) -> None:
    new_session = SESSION + 1
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            # the lease's create is lost as the session that holds the mutex expires
            Reply(create_lease(1), error=ConnectionLoss(), disconnects=True),
            Reply(
                LEASE_LISTING,
                error=ConnectionLoss(),
                then=(State(KazooState.LOST), State(KazooState.CONNECTED, session=new_session)),
            ),
            Reply(LEASE_LISTING, []),  # the lost create is looked for, then made again
            Reply(create_lease(1), (lease(1, 7), stat(70, new_session))),
            Reply(LEASE_LISTING, [name(lease(1, 7))]),
            # made in a session that does not hold the mutex: not ours to take, the mutex again
            Reply(DeleteNode(lease(1, 7))),
            Reply(DeleteNode(lock(0, 4)), error=NoNodeError()),
            *mutex_taken(2, 5, new_session),
            Reply(create_lease(3), (lease(3, 8), stat(80, new_session))),
            Reply(LEASE_LISTING, [name(lease(3, 8))]),
            Reply(DeleteNode(lock(2, 5))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 1).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(3, 8), 80, new_session)]
    server.finish()


def test_a_lease_made_after_ours_means_the_mutex_is_lost_and_it_is_taken_again(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [
            *mutex_taken(0, 4),
            Reply(create_lease(1), (lease(1, 7), stat(70, SESSION))),
            Reply(LEASE_LISTING, [other(6), name(lease(1, 7))]),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7))]),
            # our mutex node deleted by another, a lease is made under the mutex taken next:
            # waiting on would wait for a lease that waits for ours
            Fire(LEASES, EventType.CHILD),
            Reply(WATCHED_LEASES, [other(6), name(lease(1, 7)), other(8, AHEAD)]),
            Forgets(LEASES),
            Reply(DeleteNode(lease(1, 7))),
            Reply(DeleteNode(lock(0, 4)), error=NoNodeError()),
            *mutex_taken(2, 9),
            Reply(create_lease(3), (lease(3, 10), stat(100, SESSION))),
            Reply(LEASE_LISTING, [name(lease(3, 10))]),
            Reply(DeleteNode(lock(2, 9))),
        ],
        session=SESSION,
    )
    leases = server.run(semaphore(client, 1).acquire_steps(1, None))
    assert nodes(leases) == [LockNode(lease(3, 10), 100, SESSION)]
    server.finish()
