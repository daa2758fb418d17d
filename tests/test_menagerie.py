"""menagerie's lock, read/write lock and semaphore on a real ZooKeeper, from threads
(``pycurator.menagerie``) and from asyncio tasks (``pycurator.aio.menagerie``): every lock
scenario of the parity suite, then what menagerie's recipes do of their own (names, empty
data, a persistent base, the downgrade's node, permits)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator._client.runtime import runtime_of
from pycurator.testing import ClientFactory

from .aio_support import watched_paths
from .parity import test_locks as parity
from .parity.actors import Actor
from .parity.fronts import FRONTS, Front
from .parity.kinds import Kind, LeaseLock
from .parity.observe import Calls, nodes
from .support import SOON, children, eventually


def menagerie(front: Front) -> ModuleType:
    """``pycurator.menagerie`` or ``pycurator.aio.menagerie``, as the front end is."""
    return importlib.import_module(f"{front.module.__name__}.menagerie")


def _rw(front: Front, client: KazooClient, path: str) -> Any:
    return menagerie(front).ReentrantZkReadWriteLock(client, path)


LOCK = Kind("lock", lambda front, client, path: menagerie(front).ReentrantZkLock(client, path))
READ = Kind(
    "read",
    lambda front, client, path: _rw(front, client, path).read_lock(),
    make_blocker=lambda front, client, path: _rw(front, client, path).write_lock(),
)
WRITE = Kind("write", lambda front, client, path: _rw(front, client, path).write_lock())
PERMIT = Kind(
    "permit",
    lambda front, client, path: LeaseLock(menagerie(front).ZkSemaphore(client, path, 1)),
    reentrant=False,
)
KINDS = [LOCK, READ, WRITE, PERMIT]


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


#: The parity suite's scenarios, and the kinds each does not apply to (readers share; a
#: permit is not re-entrant, and a lost lease names its node, not the base).
SCENARIOS: list[tuple[Callable[..., None], set[str]]] = [
    (parity.test_acquire_holds_one_node_and_release_deletes_it, set()),
    (parity.test_a_timed_out_acquire_returns_false_and_leaves_no_node, set()),
    (parity.test_a_reentrant_acquire_is_counted_and_released_in_turn, {"permit"}),
    (parity.test_a_second_participant_waits_while_held_and_gets_it_on_release, set()),
    (parity.test_waiters_get_the_lock_in_the_order_they_queued, {"read"}),
    (parity.test_a_node_deleted_on_the_server_ends_the_hold_and_tells_on_lost, {"permit"}),
    (parity.test_the_fencing_token_grows_with_each_new_holder, set()),
    (parity.test_a_holders_session_expiry_ends_the_hold_with_a_lost_notice, {"permit"}),
    (parity.test_stopping_the_client_ends_a_wait_with_connection_closed, set()),
    (parity.test_a_relative_path_or_a_client_of_the_wrong_type_is_refused, set()),
    (parity.test_releasing_a_lock_not_held_raises_not_owned, {"permit"}),
]


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [(s, k) for s, unless in SCENARIOS for k in KINDS if k.name not in unless],
    ids=lambda item: item.__name__.removeprefix("test_") if callable(item) else repr(item),
)
def test_every_lock_scenario(
    front: Front, zk_path: str, scenario: Callable[..., None], kind: Kind
) -> None:
    scenario(front, zk_path, kind)


def test_a_bad_timeout_is_refused(front: Front, zk_path: str) -> None:
    for kind in KINDS:
        parity.test_a_bad_timeout_is_refused_with_the_same_error(
            front, zk_path, kind, -1, ValueError
        )


def test_a_lock_node_is_named_as_menagerie_names_it_empty_under_a_persistent_base(
    front: Front, zk_path: str
) -> None:
    client = front.client()
    base = f"{zk_path}/deep/base"
    p = front.actor(menagerie(front).ReentrantZkLock(client, base))
    assert p.do("acquire", SOON) is True
    (name,) = children(client, base)
    assert name.startswith("lock-") and len(name) == len("lock-") + 10
    data, stat = client.get(f"{base}/{name}")
    assert data == b"" and stat.ephemeralOwner == client.client_id[0]
    assert client.get(base)[1].ephemeralOwner == 0
    assert client.get(f"{zk_path}/deep")[1].ephemeralOwner == 0
    p.do("release")
    assert children(client, base) == []
    assert client.exists(base) is not None  # menagerie never deletes its base


def test_children_java_cannot_parse_take_no_part(front: Front, zk_path: str) -> None:
    client = front.client()
    client.ensure_path(zk_path)
    for foreign in ("lockfoo", "lock-notes", "lock-99999999999", "config-0000000001"):
        client.create(f"{zk_path}/{foreign}")
    p = front.actor(menagerie(front).ReentrantZkLock(front.client(), zk_path))
    assert p.do("acquire", 0) is True
    assert p.do("participant_nodes") == [p.do("lock_path")]
    p.do("release")


def test_a_lock_child_of_a_lower_sequence_blocks_until_deleted(front: Front, zk_path: str) -> None:
    client = front.client()
    client.ensure_path(zk_path)
    client.create(f"{zk_path}/lockX-0000000000")  # a foreign node Java counts as ahead
    p = front.actor(menagerie(front).ReentrantZkLock(front.client(), zk_path))
    waiting = p.start("acquire", SOON)
    eventually(lambda: len(children(client, zk_path)) == 2, what="queued")
    assert not waiting.done()
    client.delete(f"{zk_path}/lockX-0000000000")
    assert waiting.result() is True
    p.do("release")


def test_readers_share_and_a_queued_writer_keeps_later_readers_behind(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    first = front.actor(_rw(front, front.client(), zk_path).read_lock(), "r1")
    writer = front.actor(_rw(front, front.client(), zk_path).write_lock(), "w")
    late = front.actor(_rw(front, front.client(), zk_path).read_lock(), "r2")
    assert first.do("acquire", SOON) is True
    writing = writer.start("acquire", SOON)
    eventually(lambda: len(children(observer, zk_path)) == 2, what="the writer queued")
    reading = late.start("acquire", SOON)
    eventually(lambda: len(children(observer, zk_path)) == 3, what="the late reader queued")
    assert not writing.done() and not reading.done()
    first.do("release")
    assert writing.result() is True
    assert not reading.done()
    writer.do("release")
    assert reading.result() is True
    late.do("release")
    assert children(observer, zk_path) == []


def test_a_downgrade_takes_the_write_nodes_sequence_and_its_release_deletes_it(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    rw = _rw(front, front.client(), zk_path)
    holder = front.actor(rw.write_lock(), "holder")
    reader = holder.view(rw.read_lock())
    other = front.actor(_rw(front, front.client(), zk_path).write_lock(), "other writer")
    assert holder.do("acquire", SOON) is True
    (write_node,) = children(observer, zk_path)
    assert reader.do("acquire", 0) is True
    downgrade = "readLock--" + write_node.removeprefix("writeLock-")
    assert sorted(children(observer, zk_path)) == [downgrade, write_node]
    assert observer.get(f"{zk_path}/{downgrade}")[1].ephemeralOwner != 0
    waiting = other.start("acquire", SOON)
    eventually(lambda: len(children(observer, zk_path)) == 3, what="the writer queued")
    holder.do("release")  # the write lock: the downgrade's node still keeps the writer out
    assert children(observer, zk_path).count(downgrade) == 1
    assert not waiting.done()
    reader.do("release")
    assert waiting.result() is True
    other.do("release")
    assert children(observer, zk_path) == []


def test_a_permit_holds_while_fewer_than_permits_are_ahead(front: Front, zk_path: str) -> None:
    observer, client = front.client(), front.client()
    semaphore = menagerie(front).ZkSemaphore(front.client(), zk_path, 2)
    a, b = (front.actor(LeaseLock(semaphore), name) for name in "ab")
    c = front.actor(LeaseLock(menagerie(front).ZkSemaphore(client, zk_path, 2)), "c")
    counts = a.view(semaphore)
    assert counts.do("available_permits") == 2
    assert a.do("acquire", SOON) is True
    assert counts.do("available_permits") == 1
    assert b.do("acquire", SOON) is True
    assert c.do("acquire", 0) is False
    assert counts.do("available_permits") == 0
    assert counts.do("participant_nodes") == sorted(children(observer, zk_path))
    assert len(children(observer, zk_path)) == 2
    waiting = c.start("acquire", SOON)
    eventually(lambda: len(children(observer, zk_path)) == 3, what="queued")
    holders = sorted(f"{zk_path}/{name}" for name in children(observer, zk_path))[:2]
    eventually(lambda: sorted(watched_paths(client)) == holders, what="both holders watched")
    # the release of the first permit, not of the node just ahead, wakes the waiter
    a.do("release")
    assert waiting.result() is True
    # the waiter watched both holders' nodes; none of its watches is left (the removal is
    # sent as the acquire returns, and the server answers it a moment later)
    lease_path = c.do("lease").path
    eventually(lambda: set(watched_paths(client)) <= {lease_path}, what="the waiter's watches gone")
    b.do("release")
    c.do("release")
    assert children(observer, zk_path) == []


def test_a_lost_permit_is_told(front: Front, zk_path: str) -> None:
    observer = front.client()
    lost = Calls()
    p: Actor = front.actor(LeaseLock(menagerie(front).ZkSemaphore(front.client(), zk_path, 1)))
    p.do("on_lost", lost.on_lost)
    assert p.do("acquire", SOON) is True
    (name,) = children(observer, zk_path)
    observer.delete(f"{zk_path}/{name}")
    assert lost.wait_for(1) == ["lock node deleted"]
    assert p.do("is_held") is False
    p.do("release")
    assert nodes(observer, [zk_path]) == []


@pytest.mark.parametrize("kind", KINDS, ids=repr)
def test_a_released_node_drops_its_claim(front: Front, zk_path: str, kind: Kind) -> None:
    """A menagerie name does not tell which acquire made it, so each node is claimed by its
    acquire until it is deleted: a release (or a timed-out acquire) leaves no claim behind."""
    client = front.client()
    claims = runtime_of(client).claims
    blocker = front.actor(kind.blocker(front, front.client(), zk_path))
    p = front.actor(kind.make(front, client, zk_path))
    assert blocker.do("acquire", SOON) is True
    assert p.do("acquire", 0.1) is False
    assert claims == {}
    blocker.do("release")
    assert p.do("acquire", SOON) is True
    assert list(claims) == [f"{zk_path}/{name}" for name in children(client, zk_path)]
    p.do("release")
    assert claims == {}
