"""ZkLocker on a real server, from threads (``pycurator.zklocker``) and from asyncio tasks
(``pycurator.aio.zklocker``): each scenario written once and run on both front ends, as the
parity suite does (``tests/parity/``). Java's names and data, exclusion, FIFO, a timeout that
leaves no node, re-entry, the keys that overlap, one watch per waiter, the lost notice on
expiry, the fencing token."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE

from pycurator import LockLostError, LockNotOwnedError
from pycurator._protocol.deadline import FIRST_TRY_WAIT
from pycurator.aio import zklocker as aio_zklocker
from pycurator.testing import ClientFactory, FaultProxy, expire_kazoo_session
from pycurator.zklocker import ZkLocker

from .aio_support import watched_paths
from .parity.actors import Actor, Pending
from .parity.fronts import FRONTS, Front
from .parity.observe import Calls
from .support import SOON, STEADY_RECONNECT, children, eventually

#: What a call may take beyond its timeout on a loaded machine.
SLACK = 5.0


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    """One front end, its participants and clients cleaned up after the test."""
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


@pytest.fixture
def parent(zk: KazooClient, zk_path: str) -> str:
    """The lockers' parent, with an unrelated persistent child, as Java's /parent has."""
    zk.create(f"{zk_path}/config", b"x", makepath=True)
    return zk_path


def locker(front: Front, parent: str, key: str | None = "k", client: Any = None) -> Actor:
    """A participant of ``front`` with a ZkLocker of its own client (or ``client``)."""
    cls = aio_zklocker.ZkLocker if front.name == "asyncio" else ZkLocker
    return front.actor(cls(client or front.client(), parent, key), f"locker {key}")


def lockers(client: KazooClient, parent: str) -> list[str]:
    """The parent's ZkLocker nodes, in the order they were made."""
    return sorted((c for c in children(client, parent) if c.startswith("dlk-")), key=seq)


def seq(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def queued(zk: KazooClient, parent: str, count: int) -> Callable[[], bool]:
    """Whether ``count`` ZkLocker nodes are under ``parent``."""
    return lambda: len(lockers(zk, parent)) == count


def watches_only(client: KazooClient, path: str) -> Callable[[], bool]:
    """Whether ``client``'s session watches ``path`` and nothing else."""
    return lambda: watched_paths(client) == [path]


@pytest.mark.parametrize("key", ["k", "a-b", None])
def test_the_node_is_named_and_made_as_javas_and_release_deletes_it(
    front: Front, zk: KazooClient, parent: str, key: str | None
) -> None:
    client = front.client()
    p = locker(front, parent, key, client)
    assert p.do("acquire", SOON) is True
    session = client.client_id[0]
    # /parent's counter counts the unrelated child too, as in Java
    expected = f"dlk-{session}-0000000001" if key is None else f"dlk-{key}-{session}-0000000001"
    assert lockers(zk, parent) == [expected]
    data, stat = zk.get(f"{parent}/{expected}")
    assert data in (None, b"")  # Java's null: no data
    assert stat.dataLength == 0
    assert stat.ephemeralOwner == session
    assert zk.get_acls(f"{parent}/{expected}")[0] == list(OPEN_ACL_UNSAFE)
    assert p.do("fencing_token") == stat.czxid
    assert p.do("is_held") is True
    p.do("release")
    assert children(zk, parent) == ["config"]


def test_a_missing_parent_is_made_persistent_at_every_level(
    front: Front, zk: KazooClient, zk_path: str
) -> None:
    p = locker(front, f"{zk_path}/app/locks")
    assert p.do("acquire", SOON) is True
    for level in (zk_path, f"{zk_path}/app", f"{zk_path}/app/locks"):
        assert zk.exists(level).ephemeralOwner == 0
    p.do("release")
    assert zk.exists(f"{zk_path}/app/locks") is not None  # Java never deletes its parent


def test_a_timed_out_acquire_returns_false_and_leaves_no_node(
    front: Front, zk: KazooClient, parent: str
) -> None:
    holder = locker(front, parent)
    assert holder.do("acquire", SOON) is True
    held = lockers(zk, parent)
    waiter = locker(front, parent)
    assert waiter.do("acquire", 0.2) is False
    assert waiter.do("acquire", 0) is False  # Java's tryLock would leave its node (bug 1)
    assert lockers(zk, parent) == held
    holder.do("release")


def test_a_reentrant_acquire_is_counted_and_released_in_turn(
    front: Front, zk: KazooClient, parent: str
) -> None:
    p = locker(front, parent)
    assert p.do("acquire", SOON) is True
    held = lockers(zk, parent)
    assert p.do("acquire", 0) is True
    assert lockers(zk, parent) == held
    p.do("release")
    assert p.do("is_held") is True
    p.do("release")
    assert lockers(zk, parent) == []
    with pytest.raises(LockNotOwnedError):
        p.do("release")


def test_waiters_get_the_lock_in_the_order_they_queued_each_watching_one_node(
    front: Front, zk: KazooClient, parent: str
) -> None:
    holder = locker(front, parent)
    assert holder.do("acquire", SOON) is True
    waiters: list[Actor] = []
    pending: list[Pending] = []
    clients: list[KazooClient] = []
    for number in range(3):
        clients.append(front.client())
        waiters.append(locker(front, parent, client=clients[-1]))
        pending.append(waiters[-1].start("acquire", SOON))
        eventually(queued(zk, parent, number + 2), what="the next queued")
    queue = [f"{parent}/{name}" for name in lockers(zk, parent)]
    for client, ahead in zip(clients, queue, strict=False):  # no herd: one watch each
        eventually(watches_only(client, ahead), what="its one watch")
    holder.do("release")
    for number, waiter in enumerate(waiters):
        assert pending[number].result() is True
        assert not any(later.done() for later in pending[number + 1 :])
        waiter.do("release")
    assert children(zk, parent) == ["config"]


#: (holder's key, waiter's key, whether the waiter waits): the keys that overlap in Java.
MIXED = [
    ("k", None, True),  # Java's keyless counts every keyed node: so does ours
    (None, "k", True),  # Java's keyed ignores keyless nodes; ours waits (Java's keyless sees it)
    ("a", "a-b", True),  # Java's "a" counts "a-b"'s nodes; "a-b" waits for "a"
    ("a-b", "a", True),
    ("a", "b", False),  # distinct keys are independent
    ("a-b", "a-c", False),
]


@pytest.mark.parametrize(("holder_key", "waiter_key", "waits"), MIXED)
def test_keys_that_overlap_in_java_exclude_each_other(
    front: Front, zk: KazooClient, parent: str, holder_key: str | None, waiter_key: str, waits: bool
) -> None:
    holder = locker(front, parent, holder_key)
    assert holder.do("acquire", SOON) is True
    waiter = locker(front, parent, waiter_key)
    assert waiter.do("acquire", 0.3) is (not waits)
    if waits:
        waiting = waiter.start("acquire", SOON)
        eventually(queued(zk, parent, 2), what="queued")
        assert not waiting.done()
        holder.do("release")
        assert waiting.result() is True
    else:
        holder.do("release")
    waiter.do("release")
    assert lockers(zk, parent) == []


def test_a_holders_session_expiry_ends_the_hold_with_a_lost_notice(
    front: Front, zk: KazooClient, parent: str
) -> None:
    client = front.client()
    lost = Calls()
    p = locker(front, parent, client=client)
    p.do("on_lost", lost.on_lost)
    assert p.do("acquire", SOON) is True
    waiter = locker(front, parent)
    waiting = waiter.start("acquire", SOON)
    eventually(queued(zk, parent, 2), what="queued")
    expire_kazoo_session(client)
    assert set(lost.wait_for(1)) <= {"connection suspended", "session expired"}
    assert waiting.result() is True  # the expired holder's node went with its session
    eventually(lambda: client.connected, what="the client in a new session")
    assert p.do("is_held") is False
    with pytest.raises(LockLostError):
        p.do("check")
    p.do("release")
    waiter.do("release")
    assert lockers(zk, parent) == []


def test_the_fencing_token_grows_with_each_new_holder(front: Front, parent: str) -> None:
    first, second = locker(front, parent), locker(front, parent)
    assert first.do("acquire", SOON) is True
    token = first.do("fencing_token")
    first.do("release")
    assert second.do("acquire", SOON) is True
    assert second.do("fencing_token") > token
    second.do("release")


def test_two_lockers_on_one_client_are_two_parties(
    front: Front, zk: KazooClient, parent: str
) -> None:
    client = front.client()
    first, second = locker(front, parent, client=client), locker(front, parent, client=client)
    assert first.do("acquire", SOON) is True
    waiting = second.start("acquire", SOON)
    eventually(queued(zk, parent, 2), what="queued")
    session = client.client_id[0]
    assert all(name.startswith(f"dlk-k-{session}-") for name in lockers(zk, parent))
    assert not waiting.done()
    first.do("release")
    assert waiting.result() is True
    second.do("release")


def test_a_waiters_expiry_queues_it_again_under_its_new_sessions_name(
    front: Front, zk: KazooClient, parent: str
) -> None:
    holder = locker(front, parent)
    assert holder.do("acquire", SOON) is True
    client = front.client()
    waiter = locker(front, parent, client=client)
    waiting = waiter.start("acquire", SOON)
    eventually(queued(zk, parent, 2), what="queued")
    old = client.client_id[0]
    expire_kazoo_session(client)  # Java's waiter would hang on 127.0.0.1:2181 (bug 5)
    eventually(lambda: client.connected and client.client_id[0] != old, what="a new session")
    new = client.client_id[0]
    eventually(
        lambda: any(name.startswith(f"dlk-k-{new}-") for name in lockers(zk, parent)),
        what="queued again under the new session's name",
    )
    assert not waiting.done()
    holder.do("release")
    assert waiting.result() is True
    assert [name.split("-")[2] for name in lockers(zk, parent)] == [str(new)]
    waiter.do("release")


def test_a_server_that_stops_answering_does_not_hold_acquire_past_its_deadline(
    front: Front, zk: KazooClient, parent: str, zk_server: Any
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = front.client(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
        p = locker(front, parent, client=client)
        made: list[str] = []
        zk.get_children(parent, watch=lambda event: made.append(event.type))
        proxy.blackhole()  # the connection stays up; nothing is answered
        start = time.monotonic()
        assert p.do("acquire", 1.0) is False
        assert time.monotonic() - start < max(1.0, FIRST_TRY_WAIT) + SLACK
        proxy.heal()  # the create on its way lands now, and is deleted again
        eventually(lambda: made != [], what="the late create reached the server")
        eventually(queued(zk, parent, 0), what="the late create undone")
        assert client.connected
    assert children(zk, parent) == ["config"]


@pytest.mark.parametrize(("key", "error"), [("", ValueError), ("a/b", ValueError), (1, TypeError)])
def test_a_bad_key_is_refused_and_nothing_is_made(
    front: Front, zk: KazooClient, zk_path: str, key: object, error: type[Exception]
) -> None:
    cls = aio_zklocker.ZkLocker if front.name == "asyncio" else ZkLocker
    with pytest.raises(error):
        cls(front.client(), zk_path, key)  # type: ignore[arg-type]
    assert zk.exists(zk_path) is None
