"""Every lock recipe behaves the same from threads (``pycurator``) and from asyncio tasks
(``pycurator.aio``): each scenario is written once and run on both front ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.exceptions import ConnectionClosedError

from pycurator import LockLostError
from pycurator.testing import expire_kazoo_session

from ..support import SOON, eventually
from .actors import Actor, Pending
from .fronts import Front
from .kinds import KINDS, LEASE, MULTI, READ, SEMAPHORE_MUTEX, Kind
from .observe import Calls, nodes


def lost_path(kind: Kind, path: str, held: list[str]) -> str:
    """The path a lost hold's LockLostError names: a lock's path (a multi-lock's first
    member's), a lease's node."""
    return held[0] if kind in (LEASE, SEMAPHORE_MUTEX) else kind.parents(path)[0]


def kinds(*, unless: Callable[[Kind], bool] = lambda kind: False) -> pytest.MarkDecorator:
    """Run the scenario on every kind of lock, except those ``unless`` rules out (whose
    recipe has no such behaviour)."""
    return pytest.mark.parametrize("kind", [k for k in KINDS if not unless(k)], ids=repr)


@kinds()
def test_acquire_holds_one_node_and_release_deletes_it(
    front: Front, zk_path: str, kind: Kind
) -> None:
    client = front.client()
    p = front.actor(kind.make(front, client, zk_path))
    assert p.do("acquire", SOON) is True
    held = nodes(client, kind.parents(zk_path))
    assert len(held) == (2 if kind is MULTI else 1)
    assert p.do("is_held") is True
    p.do("release")
    assert nodes(client, kind.parents(zk_path)) == []


@kinds()
def test_a_timed_out_acquire_returns_false_and_leaves_no_node(
    front: Front, zk_path: str, kind: Kind
) -> None:
    holder = front.actor(kind.blocker(front, front.client(), zk_path))
    assert holder.do("acquire", SOON) is True
    client = front.client()
    held = nodes(client, kind.parents(zk_path))
    waiter = front.actor(kind.make(front, client, zk_path))
    assert waiter.do("acquire", 0.2) is False
    assert waiter.do("acquire", 0) is False
    assert nodes(client, kind.parents(zk_path)) == held
    holder.do("release")


# Curator's semaphore is not re-entrant
@kinds(unless=lambda kind: not kind.reentrant)
def test_a_reentrant_acquire_is_counted_and_released_in_turn(
    front: Front, zk_path: str, kind: Kind
) -> None:
    client = front.client()
    p = front.actor(kind.make(front, client, zk_path))
    assert p.do("acquire", SOON) is True
    held = nodes(client, kind.parents(zk_path))
    assert p.do("acquire", 0) is True
    assert nodes(client, kind.parents(zk_path)) == held
    p.do("release")
    assert p.do("is_held") is True
    assert nodes(client, kind.parents(zk_path)) == held
    p.do("release")
    assert nodes(client, kind.parents(zk_path)) == []
    with pytest.raises(kind.not_owned):
        p.do("release")


@kinds()
def test_a_second_participant_waits_while_held_and_gets_it_on_release(
    front: Front, zk_path: str, kind: Kind
) -> None:
    observer = front.client()
    holder = front.actor(kind.blocker(front, front.client(), zk_path))
    waiter = front.actor(kind.make(front, front.client(), zk_path))
    assert holder.do("acquire", SOON) is True
    queued = len(nodes(observer, [kind.queue(zk_path)]))
    waiting = waiter.start("acquire", SOON)
    eventually(lambda: len(nodes(observer, [kind.queue(zk_path)])) > queued, what="queued")
    assert not waiting.done()
    holder.do("release")
    assert waiting.result() is True
    waiter.do("release")
    assert nodes(observer, kind.parents(zk_path)) == []


# readers share: they do not wait for one another
@kinds(unless=lambda kind: kind is READ)
def test_waiters_get_the_lock_in_the_order_they_queued(
    front: Front, zk_path: str, kind: Kind
) -> None:
    observer = front.client()
    holder = front.actor(kind.make(front, front.client(), zk_path), "holder")
    assert holder.do("acquire", SOON) is True

    def queued() -> int:
        return len(nodes(observer, [kind.queue(zk_path)]))

    before = queued()
    waiters: list[Actor] = []
    pending: list[Pending] = []
    for number in range(3):
        waiter = front.actor(kind.make(front, front.client(), zk_path), f"w{number}")
        pending.append(waiter.start("acquire", SOON))
        eventually(lambda: queued() > before + len(waiters), what="the next waiter queued")
        waiters.append(waiter)
    holder.do("release")
    for number, waiter in enumerate(waiters):
        assert pending[number].result() is True
        assert not any(later.done() for later in pending[number + 1 :])
        waiter.do("release")
    assert nodes(observer, kind.parents(zk_path)) == []


@kinds()
def test_a_node_deleted_on_the_server_ends_the_hold_and_tells_on_lost(
    front: Front, zk_path: str, kind: Kind
) -> None:
    observer = front.client()
    lost = Calls()
    p = front.actor(kind.make(front, front.client(), zk_path))
    p.do("on_lost", lost.on_lost)
    assert p.do("acquire", SOON) is True
    assert p.do("is_held") is True
    assert p.do("check") is None
    held = nodes(observer, kind.parents(zk_path))
    for path in held:
        observer.delete(path)
    assert lost.wait_for(len(held)) == ["lock node deleted"] * len(held)
    assert p.do("is_held") is False
    with pytest.raises(LockLostError) as lost_error:
        p.do("check")
    assert lost_error.value.path == lost_path(kind, zk_path, held)
    p.do("release")
    assert nodes(observer, kind.parents(zk_path)) == []


# a multi-lock has no token of its own: each member lock has one
@kinds(unless=lambda kind: not kind.tokens)
def test_the_fencing_token_grows_with_each_new_holder(
    front: Front, zk_path: str, kind: Kind
) -> None:
    first = front.actor(kind.make(front, front.client(), zk_path))
    second = front.actor(kind.make(front, front.client(), zk_path))
    assert first.do("acquire", SOON) is True
    token = first.do("fencing_token")
    first.do("release")
    assert second.do("acquire", SOON) is True
    assert second.do("fencing_token") > token
    second.do("release")


@kinds()
def test_a_holders_session_expiry_ends_the_hold_with_a_lost_notice(
    front: Front, zk_path: str, kind: Kind
) -> None:
    client, observer = front.client(), front.client()
    lost = Calls()
    p = front.actor(kind.make(front, client, zk_path))
    p.do("on_lost", lost.on_lost)
    assert p.do("acquire", SOON) is True
    held = nodes(observer, kind.parents(zk_path))
    members = len(held)
    expire_kazoo_session(client)
    # the standard policy ends the hold as the connection drops, before the expiry is known
    assert set(lost.wait_for(members)) <= {"connection suspended", "session expired"}
    eventually(lambda: client.connected, what="the client in a new session")
    assert p.do("is_held") is False
    with pytest.raises(LockLostError) as lost_error:
        p.do("check")
    assert lost_error.value.path == lost_path(kind, zk_path, held)
    p.do("release")
    assert nodes(observer, kind.parents(zk_path)) == []


@kinds()
def test_stopping_the_client_ends_a_wait_with_connection_closed(
    front: Front, zk_path: str, kind: Kind
) -> None:
    observer = front.client()
    holder = front.actor(kind.blocker(front, front.client(), zk_path))
    assert holder.do("acquire", SOON) is True
    queued = len(nodes(observer, [kind.queue(zk_path)]))
    client = front.client()
    waiter = front.actor(kind.make(front, client, zk_path))
    waiting = waiter.start("acquire", SOON)
    eventually(lambda: len(nodes(observer, [kind.queue(zk_path)])) > queued, what="queued")
    client.stop()
    with pytest.raises(ConnectionClosedError):
        waiting.result()
    holder.do("release")


@kinds()
@pytest.mark.parametrize(
    ("timeout", "error"), [(-1, ValueError), ("1", TypeError), (float("nan"), ValueError)]
)
def test_a_bad_timeout_is_refused_with_the_same_error(
    front: Front, zk_path: str, kind: Kind, timeout: object, error: type[Exception]
) -> None:
    client = front.client()
    p = front.actor(kind.make(front, client, zk_path))
    with pytest.raises(error):
        p.do("acquire", timeout)
    assert nodes(client, kind.parents(zk_path)) == []


@kinds()
def test_a_relative_path_or_a_client_of_the_wrong_type_is_refused(
    front: Front, zk_path: str, kind: Kind
) -> None:
    with pytest.raises(ValueError):
        kind.make(front, front.client(), "relative/path")
    with pytest.raises(TypeError):
        kind.make(front, "not a client", zk_path)


# a lease is released by closing it: there is no lease before acquire
@kinds(unless=lambda kind: kind is LEASE)
def test_releasing_a_lock_not_held_raises_not_owned(front: Front, zk_path: str, kind: Kind) -> None:
    p = front.actor(kind.make(front, front.client(), zk_path))
    with pytest.raises(kind.not_owned):
        p.do("release")
