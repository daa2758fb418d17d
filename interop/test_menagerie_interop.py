"""pycurator's menagerie recipes against Java menagerie (the test kit's peers), both
directions: exclusion, FIFO across languages, a waiter of one language woken by a holder of
the other, the downgrade, expiry of either side, and the Java bugs that reach a Python peer
(the downgrade's leaked node, the semaphore's lost wake-up and its release of others'
permits), each shown exactly."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.aio import menagerie as aio_menagerie
from pycurator.menagerie import ReentrantZkLock, ReentrantZkReadWriteLock, ZkSemaphore
from pycurator.testing import (
    ClientFactory,
    JavaSystems,
    expire_kazoo_session,
    four_letter_word,
    paths_by_session,
)
from tests.aio_support import run
from tests.parity.actors import Actor, Pending, ThreadUnit
from tests.support import SOON, children, eventually

#: How long a participant that must not get the lock (yet) is given.
BRIEF = 0.5


class Background:
    """``call()`` in a thread of its own: a Java or Python acquire that waits."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.done_event = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.value = call()
        except BaseException as exc:  # reported by result()
            self.error = exc
        finally:
            self.done_event.set()

    def done(self) -> bool:
        return self.done_event.is_set()

    def result(self, timeout: float = 2 * SOON) -> Any:
        assert self.done_event.wait(timeout), "the acquire did not return"
        if self.error is not None:
            raise self.error
        return self.value


@pytest.fixture
def base(zk: KazooClient, zk_path: str) -> Iterator[str]:
    """The base node, made first (menagerie makes only its last level)."""
    zk.ensure_path(zk_path)
    yield zk_path


Party = Callable[[Any], Actor]


@pytest.fixture
def party() -> Iterator[Party]:
    """Python participants, each acting from a thread of its own (a lock is held per
    thread): ``p = party(lock); p.do("acquire", 1.0); p.start("acquire", ...)``."""
    units: list[ThreadUnit] = []

    def make(target: Any) -> Actor:
        units.append(ThreadUnit(f"python party {len(units) + 1}"))
        return Actor(units[-1], target, f"python party {len(units)}")

    yield make
    busy = [unit for unit in units if not unit.close()]
    assert busy == [], f"{len(busy)} Python participants still busy"


def watched_by(zk: KazooClient, session_id: int) -> list[str]:
    """The paths the server holds data watches on for ``session_id`` (``wchc``)."""
    host, port = zk.hosts[0]
    return paths_by_session(four_letter_word(host, port, "wchc")).get(f"0x{session_id:x}", [])


def queued(zk: KazooClient, base: str, count: int) -> None:
    eventually(lambda: len(children(zk, base)) == count, what=f"{count} nodes queued")


# -- ReentrantZkLock ---------------------------------------------------------------------------


def test_a_python_and_a_java_lock_exclude_each_other_and_name_their_nodes_alike(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    java = java_systems.reentrant_lock(base)
    client = zk_client_factory()
    python = party(ReentrantZkLock(client, base))
    assert java.acquire(SOON)
    assert python.do("acquire", BRIEF) is False
    waiting = python.start("acquire", SOON)
    queued(zk, base, 2)
    names = sorted(children(zk, base))
    assert [n[:-10] for n in names] == ["lock-", "lock-"]
    assert [zk.get(f"{base}/{n}")[0] for n in names] == [b"", b""]
    assert [zk.get(f"{base}/{n}")[1].ephemeralOwner for n in names] == [
        java.session_id,
        client.client_id[0],
    ]
    assert not waiting.done()
    java.release()  # a Java holder's release wakes the Python waiter
    assert waiting.result() is True
    assert java.acquire(BRIEF) is False
    java_waiting = Background(lambda: java.acquire(SOON))
    queued(zk, base, 2)
    python.do("release")  # and a Python holder's wakes the Java waiter
    assert java_waiting.result() is True
    java.release()
    assert children(zk, base) == []


def test_waiters_of_both_languages_are_served_in_queue_order(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    holder = party(ReentrantZkLock(zk_client_factory(), base))
    assert holder.do("acquire", SOON)
    first_java = java_systems.reentrant_lock(base)
    python = party(ReentrantZkLock(zk_client_factory(), base))
    last_java = java_systems.reentrant_lock(base)
    waits: list[Background | Pending] = [Background(lambda: first_java.acquire(SOON))]
    queued(zk, base, 2)
    waits.append(python.start("acquire", SOON))
    queued(zk, base, 3)
    waits.append(Background(lambda: last_java.acquire(SOON)))
    queued(zk, base, 4)
    releases = [first_java.release, lambda: python.do("release"), last_java.release]
    holder.do("release")
    for number, release in enumerate(releases):
        assert waits[number].result() is True
        assert not any(later.done() for later in waits[number + 1 :])
        release()
    assert children(zk, base) == []


def test_an_asyncio_lock_and_a_java_lock_exclude_each_other(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    java = java_systems.reentrant_lock(base)
    lock = aio_menagerie.ReentrantZkLock(zk_client_factory(), base)

    async def scenario() -> None:
        assert await lock.acquire(SOON)
        assert java.acquire(BRIEF) is False
        await lock.release()
        assert java.acquire(SOON) is True
        assert await lock.acquire(BRIEF) is False

    run(scenario())
    java.release()
    assert children(zk, base) == []


def test_a_java_holders_expiry_hands_the_lock_to_a_python_waiter(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    java = java_systems.reentrant_lock(base)
    python = party(ReentrantZkLock(zk_client_factory(), base))
    assert java.acquire(SOON)
    waiting = python.start("acquire", SOON)
    queued(zk, base, 2)
    java.expire()
    assert waiting.result() is True
    assert java.is_held()  # menagerie's hasLock() never hears of the expiry
    python.do("release")


def test_a_python_holders_expiry_is_told_and_hands_the_lock_to_a_java_waiter(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    client = zk_client_factory()
    lock = ReentrantZkLock(client, base)
    lost = threading.Event()
    lock.on_lost(lambda _lock, _reason: lost.set())
    python = party(lock)
    java = java_systems.reentrant_lock(base)
    assert python.do("acquire", SOON)
    waiting = Background(lambda: java.acquire(SOON))
    queued(zk, base, 2)
    expire_kazoo_session(client)
    assert waiting.result() is True
    assert lost.wait(SOON) and python.do("is_held") is False
    python.do("release")
    java.release()
    assert children(zk, base) == []


# -- ReentrantZkReadWriteLock ------------------------------------------------------------------


def test_readers_of_both_languages_share_and_writers_wait_for_them(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    java = java_systems.read_write_lock(base)
    reader = party(ReentrantZkReadWriteLock(zk_client_factory(), base).read_lock())
    writer = party(ReentrantZkReadWriteLock(zk_client_factory(), base).write_lock())
    assert java.read_lock().acquire(SOON)
    assert reader.do("acquire", BRIEF) is True
    assert writer.do("acquire", BRIEF) is False
    writing = writer.start("acquire", SOON)
    queued(zk, base, 3)
    java.read_lock().release()
    with pytest.raises(AssertionError):
        writing.result(BRIEF)  # the Python reader still reads
    reader.do("release")
    assert writing.result() is True
    assert java.write_lock().acquire(BRIEF) is False
    assert java.read_lock().acquire(BRIEF) is False
    java_writing = Background(lambda: java.write_lock().acquire(SOON))
    queued(zk, base, 2)
    writer.do("release")
    assert java_writing.result() is True
    java.write_lock().release()
    assert children(zk, base) == []


def test_a_python_downgrade_keeps_a_java_writer_out_until_the_read_lock_is_released(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    rw = ReentrantZkReadWriteLock(zk_client_factory(), base)
    writer = party(rw.write_lock())
    reader = writer.view(rw.read_lock())
    java = java_systems.read_write_lock(base)
    assert writer.do("acquire", SOON)
    assert reader.do("acquire", 0)
    (write_node,) = [n for n in children(zk, base) if n.startswith("writeLock-")]
    assert f"readLock--{write_node[-10:]}" in children(zk, base)
    writing = Background(lambda: java.write_lock().acquire(SOON))
    queued(zk, base, 3)
    writer.do("release")
    assert not writing.done_event.wait(BRIEF)
    reader.do("release")
    assert writing.result() is True
    java.write_lock().release()
    assert children(zk, base) == []


def test_a_java_downgrades_leaked_node_blocks_a_python_writer_until_its_session_ends(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    """menagerie's bug: its read lock's release deletes the sequential node it already
    deleted, not ``readLock--<seq>``, which stays until the session ends."""
    java = java_systems.read_write_lock(base)
    rw = ReentrantZkReadWriteLock(zk_client_factory(), base)
    writer = party(rw.write_lock())
    reader = party(rw.read_lock())
    assert java.write_lock().acquire(SOON)
    assert java.read_lock().acquire(SOON)
    java.read_lock().release()
    java.write_lock().release()
    (leaked,) = children(zk, base)
    assert leaked.startswith("readLock--")
    assert zk.get(f"{base}/{leaked}")[1].ephemeralOwner == java.session_id
    assert writer.do("acquire", BRIEF) is False
    assert reader.do("acquire", BRIEF) is True  # readers are not kept out
    reader.do("release")
    writing = writer.start("acquire", SOON)
    queued(zk, base, 2)
    java.close()  # the session ends: only then the leaked node goes
    assert writing.result() is True
    writer.do("release")
    assert children(zk, base) == []


# -- ZkSemaphore -------------------------------------------------------------------------------


def test_permits_are_shared_across_languages_and_a_python_waiter_wakes_on_any_grant(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    first, second = java_systems.semaphore(base, 2), java_systems.semaphore(base, 2)
    python = ZkSemaphore(zk_client_factory(), base, 2)
    assert first.acquire(SOON) and second.acquire(SOON)
    assert python.acquire(BRIEF) is None
    assert children(zk, base) == [n for n in children(zk, base) if n.startswith("permit-")]
    waiting = Background(lambda: python.acquire(SOON))
    queued(zk, base, 3)
    holders = [f"{base}/{name}" for name in sorted(children(zk, base))[:2]]
    session = python.client.client_id[0]
    eventually(lambda: sorted(watched_by(zk, session)) == holders, what="both holders watched")
    # menagerie's release() deletes the lowest permit node: the first's; not the node just
    # ahead of the waiter, which a Java waiter alone would watch
    first.release()
    lease = waiting.result()
    assert lease is not None and lease.is_held()
    assert zk.get(lease.path)[0] == b""
    lease.close()
    second.release()
    assert children(zk, base) == []


def test_a_java_waiter_misses_a_release_ahead_of_its_predecessor(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    """menagerie's bug 1: a Java waiter watches only the node just before its own."""
    semaphore = ZkSemaphore(zk_client_factory(), base, 2)
    lowest, next_one = semaphore.acquire(SOON), semaphore.acquire(SOON)
    assert lowest is not None and next_one is not None
    java = java_systems.semaphore(base, 2)
    waiting = Background(lambda: java.acquire(SOON))
    queued(zk, base, 3)
    # the Java waiter watches the node just before its own, and that one alone
    eventually(
        lambda: watched_by(zk, java.session_id) == [next_one.path], what="the Java waiter's watch"
    )
    lowest.close()  # a permit is free: the Java waiter should hold, and does not wake
    assert not waiting.done_event.wait(2 * BRIEF)
    next_one.close()  # its predecessor's deletion wakes it
    assert waiting.result() is True
    java.release()
    assert children(zk, base) == []


def test_a_java_release_deletes_a_python_holders_permit_and_the_python_side_is_told(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    """menagerie's bug 4: ``release()`` deletes the lowest permit nodes, whoever holds them."""
    semaphore = ZkSemaphore(zk_client_factory(), base, 2)
    lease = semaphore.acquire(SOON)
    assert lease is not None
    lost: list[str] = []
    told = threading.Event()

    def on_lost(_lease: Any, reason: str) -> None:
        lost.append(reason)
        told.set()

    lease.on_lost(on_lost)
    java = java_systems.semaphore(base, 2)
    assert java.acquire(SOON)
    (java_node,) = [n for n in children(zk, base) if f"{base}/{n}" != lease.path]
    java.release()
    assert told.wait(SOON) and lost == ["lock node deleted"]
    assert not lease.is_held()
    # the Java node stays: Java believes it returned its permit, the server counts it
    assert children(zk, base) == [java_node]
    other = semaphore.acquire(SOON)
    assert other is not None and semaphore.acquire(BRIEF) is None
    lease.close()  # returning a lost lease is harmless
    other.close()
    java.close()
    assert children(zk, base) == []


def test_a_java_permit_holders_expiry_grants_a_python_waiter(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    java = java_systems.semaphore(base, 1)
    semaphore = aio_menagerie.ZkSemaphore(zk_client_factory(), base, 1)
    assert java.acquire(SOON)

    async def scenario() -> None:
        assert await semaphore.acquire(BRIEF) is None
        waiting = asyncio.ensure_future(semaphore.acquire(SOON))
        java.expire()
        lease = await waiting
        assert lease is not None and await lease.is_held()
        await lease.close()

    run(scenario())
    assert children(zk, base) == []


def test_a_python_permit_holders_expiry_is_told_and_grants_a_java_waiter(
    java_systems: JavaSystems, zk: KazooClient, zk_client_factory: ClientFactory, base: str
) -> None:
    client = zk_client_factory()
    lease = ZkSemaphore(client, base, 1).acquire(SOON)
    assert lease is not None
    java = java_systems.semaphore(base, 1)
    waiting = Background(lambda: java.acquire(SOON))
    queued(zk, base, 2)
    expire_kazoo_session(client)
    assert waiting.result() is True
    eventually(lambda: not lease.is_held(), what="the lease lost")
    java.release()
    assert children(zk, base) == []


def test_a_child_java_cannot_parse_breaks_java_acquires_and_not_python_ones(
    java_systems: JavaSystems,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    base: str,
    party: Party,
) -> None:
    """``lock-notes`` passes menagerie's ``lock`` filter and has no ``int`` tail: Java's sort
    throws, and the node its failed acquire made stays (menagerie's bug 3) until its session
    ends, ahead of everyone who comes later."""
    zk.create(f"{base}/lock-notes")
    python = party(ReentrantZkLock(zk_client_factory(), base))
    assert python.do("acquire", SOON) is True
    python.do("release")
    java = java_systems.reentrant_lock(base)
    with pytest.raises(Exception, match="NumberFormatException"):
        java.acquire(SOON)
    (left,) = [n for n in children(zk, base) if n != "lock-notes"]
    assert zk.get(f"{base}/{left}")[1].ephemeralOwner == java.session_id
    assert python.do("acquire", BRIEF) is False
    waiting = python.start("acquire", SOON)
    java.close()
    assert waiting.result() is True
    python.do("release")
    assert children(zk, base) == ["lock-notes"]
