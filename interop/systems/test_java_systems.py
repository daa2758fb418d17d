"""The test kit's Java peers of the other lock systems (ZooKeeper's WriteLock and
LeaderElectionSupport, menagerie, ZkLocker): two peers of one system exclude each other on a
real server, and each names its nodes as the seed-systems README says."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pycurator.testing import (
    SEED_SYSTEMS_ENV,
    JavaLeaderElection,
    JavaReentrantZkLock,
    JavaSystems,
    JavaZkLocker,
    JavaZkRecipesWriteLock,
    JavaZkSemaphore,
    curator_version,
    jclass,
    seed_systems_dir,
)
from pycurator.testing._peers import LockPeer
from pycurator.testing._zkrecipes import JavaWriteLock
from tests.support import SOON, children, eventually

#: How long a peer that must not get the lock tries.
BRIEF = 0.5
#: A class of each system the peers drive, and of the libraries they need.
SYSTEM_CLASSES = (
    "org.apache.zookeeper.recipes.lock.WriteLock",
    "org.apache.zookeeper.recipes.leader.LeaderElectionSupport",
    "org.menagerie.locks.ReentrantZkLock",
    "org.menagerie.locks.ReentrantZkReadWriteLock",
    "org.menagerie.latches.ZkSemaphore",
    "com.fankux.zklocker.ZkLocker",
    "org.apache.log4j.Logger",
    "com.google.common.collect.Lists",
)


class Waiter:
    """``peer.acquire(timeout)`` in a thread of its own."""

    def __init__(self, peer: LockPeer | JavaZkSemaphore, timeout: float | None = SOON) -> None:
        self.result: bool | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(peer, timeout), daemon=True)
        self._thread.start()

    def _run(self, peer: LockPeer | JavaZkSemaphore, timeout: float | None) -> None:
        try:
            self.result = peer.acquire(timeout)
        except BaseException as exc:  # reported by outcome()
            self.error = exc

    def finish(self) -> None:
        self._thread.join(2 * SOON)
        assert not self._thread.is_alive(), "the waiter's acquire did not return"

    def outcome(self) -> bool | None:
        self.finish()
        if self.error is not None:
            raise self.error
        return self.result


def owners(zk: KazooClient, parent: str, names: list[str]) -> list[int]:
    return [zk.get(f"{parent}/{name}")[1].ephemeralOwner for name in names]


def contend(
    first: LockPeer,
    second: LockPeer,
    zk: KazooClient,
    parent: str,
    pattern: Callable[[LockPeer], str],
    mine: Callable[[str], bool] = lambda name: True,
) -> None:
    """``first`` holds; ``second`` cannot take the lock, then queues behind ``first`` (each
    node named ``pattern(peer)``, owned by the peer's session) and holds once ``first``
    releases; in the end no node of theirs is left."""
    assert first.acquire(SOON) and first.is_held()
    assert second.acquire(BRIEF) is False and not second.is_held()
    waiter = Waiter(second)

    def queued() -> list[str]:
        return sorted((n for n in children(zk, parent) if mine(n)), key=lambda n: n[-10:])

    eventually(lambda: len(queued()) == 2, what="both peers' nodes queued")
    nodes = queued()
    for node, peer in zip(nodes, (first, second), strict=True):
        assert re.fullmatch(pattern(peer), node), node
    assert owners(zk, parent, nodes) == [first.session_id, second.session_id]
    assert waiter.result is None and not second.is_held()
    first.release()
    assert waiter.outcome() is True and second.is_held() and not first.is_held()
    second.release()
    eventually(lambda: queued() == [], what="no node left")


def test_the_kits_jvm_loads_every_system_beside_curator() -> None:
    for name in SYSTEM_CLASSES:
        assert str(jclass(name).class_.getName()) == name
    assert curator_version() != "unknown"


@pytest.fixture
def zk_base(zk: KazooClient, zk_path: str) -> Iterator[str]:
    """``zk_path``'s parent exists (these systems create only the last element)."""
    zk.ensure_path(zk_path.rsplit("/", 1)[0])
    yield zk_path
    zk.delete(zk_path, recursive=True)


def test_two_zookeeper_write_locks_exclude_each_other(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    first, second = java_systems.write_lock(zk_base), java_systems(JavaWriteLock, zk_base)
    assert JavaZkRecipesWriteLock is JavaWriteLock
    contend(first, second, zk, zk_base, lambda peer: rf"x-{peer.session_id}-\d{{10}}")


def test_a_write_lock_node_carries_its_two_bytes_and_its_path(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    peer = java_systems.write_lock(zk_base)
    with peer:
        node = peer.lock_path
        assert node is not None and node.startswith(f"{zk_base}/x-{peer.session_id}-")
        assert zk.get(node)[0] == b"\x12\x34"
    assert children(zk, zk_base) == []


def test_two_reentrant_zk_locks_exclude_each_other(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    first, second = java_systems.reentrant_lock(zk_base), java_systems(JavaReentrantZkLock, zk_base)
    contend(first, second, zk, zk_base, lambda peer: r"lock-\d{10}")


def test_a_reentrant_zk_lock_is_reentrant_on_its_peer_and_tries_once_at_zero(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    first, second = java_systems.reentrant_lock(zk_base), java_systems.reentrant_lock(zk_base)
    assert first.acquire(0) and first.acquire(0)
    [node] = children(zk, zk_base)
    assert zk.get(f"{zk_base}/{node}")[0] == b""
    assert second.acquire(0) is False and children(zk, zk_base) == [node]
    first.release()
    assert first.is_held() and children(zk, zk_base) == [node]
    first.release()
    assert not first.is_held() and children(zk, zk_base) == []


def test_a_reentrant_zk_lock_peer_names_the_node_it_holds(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    peer = java_systems.reentrant_lock(zk_base)
    assert peer.lock_path is None
    assert peer.acquire(SOON) and peer.acquire(SOON)
    node = peer.lock_path
    assert node is not None and re.fullmatch(rf"{zk_base}/lock-\d{{10}}", node), node
    assert zk.get(node)[1].ephemeralOwner == peer.session_id
    peer.release()
    assert peer.lock_path == node
    peer.release()
    assert peer.lock_path is None and children(zk, zk_base) == []


def test_menagerie_writers_exclude_each_other_and_readers(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    one, two = java_systems.read_write_lock(zk_base), java_systems.read_write_lock(zk_base)
    contend(one.write_lock(), two.write_lock(), zk, zk_base, lambda peer: r"writeLock-\d{10}")
    contend(one.write_lock(), two.read_lock(), zk, zk_base, lambda peer: r"(write|read)Lock-\d{10}")


def test_menagerie_readers_share(java_systems: JavaSystems, zk: KazooClient, zk_base: str) -> None:
    one, two = java_systems.read_write_lock(zk_base), java_systems.read_write_lock(zk_base)
    assert one.read_lock().acquire(SOON) and two.read_lock().acquire(SOON)
    names = children(zk, zk_base)
    assert len(names) == 2 and all(re.fullmatch(r"readLock-\d{10}", n) for n in names)
    one.read_lock().release()
    two.read_lock().release()
    assert children(zk, zk_base) == []


def test_two_zk_semaphores_of_one_permit_exclude_each_other(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    first, second = java_systems.semaphore(zk_base, 1), java_systems.semaphore(zk_base, 1)
    assert first.acquire(SOON)
    assert second.acquire(BRIEF) is False and second.acquire(0) is False
    [node] = children(zk, zk_base)
    assert re.fullmatch(r"permit-\d{10}", node)
    assert owners(zk, zk_base, [node]) == [first.session.session_id]
    first.release()
    assert second.acquire(SOON)
    second.release()
    assert children(zk, zk_base) == []


def test_two_zk_lockers_exclude_each_other(java_systems: JavaSystems, zk: KazooClient) -> None:
    key = f"kit-{uuid.uuid4().hex[:8]}"
    first, second = java_systems.zk_locker(key), java_systems(JavaZkLocker, key)
    contend(
        first,
        second,
        zk,
        "/parent",
        lambda peer: rf"dlk-{key}-{peer.session_id}-\d{{10}}",
        lambda name: name.startswith(f"dlk-{key}-"),
    )


def test_a_zk_lockers_failed_try_leaves_its_node_until_released(
    java_systems: JavaSystems, zk: KazooClient
) -> None:
    key = f"kit-{uuid.uuid4().hex[:8]}"
    first, second = java_systems.zk_locker(key), java_systems.zk_locker(key)

    def mine() -> list[str]:
        return [n for n in children(zk, "/parent") if n.startswith(f"dlk-{key}-")]

    assert first.acquire(0)
    assert second.acquire(0) is False and len(mine()) == 2
    assert zk.get(f"/parent/{mine()[0]}")[0] in (None, b"")
    second.release()
    first.release()
    assert mine() == []


def test_two_leader_elections_elect_one_and_hand_over_on_close(
    java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    first = java_systems.leader_election(zk_path, "host-1")
    second = java_systems(JavaLeaderElection, zk_path, "host-2")
    first.start()
    assert first.wait(SOON) and first.has_leadership()
    second.start()
    assert second.wait(BRIEF) is False and not second.has_leadership()
    assert first.leader() == second.leader() == "host-1"
    names = sorted(children(zk, zk_path))
    assert [re.fullmatch(r"n_\d{10}", n) is not None for n in names] == [True, True]
    assert [zk.get(f"{zk_path}/{n}")[0] for n in names] == [b"host-1", b"host-2"]
    assert owners(zk, zk_path, names) == [first.session_id, second.session_id]
    first.close()
    assert second.wait(SOON) and second.leader() == "host-2"
    assert "READY_COMPLETE" in second.events and second.events[-1] == "ELECTED_COMPLETE"


@pytest.mark.parametrize("system", ["write_lock", "reentrant_lock"])
def test_a_holders_expired_session_hands_the_lock_on(
    system: str, java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    make = getattr(java_systems, system)
    first, second = make(zk_base), make(zk_base)
    assert first.acquire(SOON)
    waiter = Waiter(second)
    eventually(lambda: len(children(zk, zk_base)) == 2, what="the second peer queued")
    first.expire()
    assert waiter.outcome() is True
    second.release()
    assert children(zk, zk_base) == []


def test_the_peers_close_at_teardown_and_close_is_idempotent(
    java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    peer = java_systems.reentrant_lock(zk_base)
    assert peer.acquire(SOON)
    peer.close()
    peer.close()
    assert children(zk, zk_base) == []


@pytest.mark.parametrize("system", ["write_lock", "reentrant_lock", "semaphore", "zk_locker"])
def test_closing_a_waiting_peer_ends_its_wait_and_leaves_the_holder_alone(
    system: str, java_systems: JavaSystems, zk: KazooClient, zk_base: str
) -> None:
    key = f"kit-{uuid.uuid4().hex[:8]}"
    makers: dict[str, Callable[[], LockPeer | JavaZkSemaphore]] = {
        "write_lock": lambda: java_systems.write_lock(zk_base),
        "reentrant_lock": lambda: java_systems.reentrant_lock(zk_base),
        "semaphore": lambda: java_systems.semaphore(zk_base, 1),
        "zk_locker": lambda: java_systems.zk_locker(key),
    }
    make = makers[system]
    parent = "/parent" if system == "zk_locker" else zk_base

    def nodes() -> list[str]:
        return [n for n in children(zk, parent) if system != "zk_locker" or key in n]

    first, second = make(), make()
    assert first.acquire(SOON)
    waiter = Waiter(second, None)
    eventually(lambda: len(nodes()) == 2, what="the second peer queued")
    second.close()
    waiter.finish()  # with False, or with the error the recipe's wait ends with
    assert waiter.result is False or waiter.error is not None
    eventually(lambda: len(nodes()) == 1, what="the closed peer's node gone")
    assert owners(zk, parent, nodes()) == [first.session_id]
    first.release()
    assert nodes() == []


def test_a_missing_seed_systems_folder_is_told_when_a_peer_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SEED_SYSTEMS_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=SEED_SYSTEMS_ENV):
        JavaReentrantZkLock("127.0.0.1:1", "/never")
    with pytest.raises(FileNotFoundError, match=r"zklocker-1\.0\.0\.jar"):
        seed_systems_dir()
    monkeypatch.delenv(SEED_SYSTEMS_ENV)
    assert seed_systems_dir().name == "seed-systems"
