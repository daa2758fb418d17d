"""A network partition of a 3-node ensemble (the test kit cuts the links between members as
Jepsen does): a Python holder on the leader that is cut off, Java Curator waiters on the majority.
For the mutex, a latch and a semaphore, under either connection policy, the holder is told it
lost its hold before the waiter gets in, and once the partition heals nothing is left behind. A
Python client that reaches the majority within its session keeps its hold and its place."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex, InterProcessSemaphoreV2, LeaderLatch, connect
from pycurator._protocol.checks import ConnectionPolicy
from pycurator.testing import (
    JavaLatch,
    JavaMutex,
    JavaSemaphore,
    ZooKeeperEnsemble,
    assert_no_ephemerals,
    new_curator,
)
from tests.support import SOON, Worker, children, eventually

#: The session timeout on both sides, in seconds.
TIMEOUT = 6.0
#: How much later than the Java waiter's entry a session-policy holder may be told: its count
#: starts at its suspension, the majority's at its new leader's election (measured: the holder
#: told 0.07 to 1.2 s before, and on a loaded machine up to about a second after)
SESSION_MARGIN = 3.0
#: The recipes each scenario holds on the leader and waits for on the majority.
RECIPES = ("mutex", "latch", "semaphore")


def connected_session(client: KazooClient) -> int | None:
    """The session the client is connected in now, or None while it has no connection (kazoo's
    ``client_id`` is None then, and a connection may drop again between two reads); not
    ``kazoo_internals.session_of``, which names the session of a disconnected client too."""
    client_id = client.client_id
    return None if client_id is None else int(client_id[0])


class Clock:
    """When each recipe's Python holder was told, and when its Java waiter got in, in seconds
    from the cut."""

    def __init__(self) -> None:
        self.cut_at = 0.0
        self.told: dict[str, float] = {}
        self.got_in: dict[str, float] = {}

    def tell(self, recipe: str) -> Callable[..., None]:
        def lost(*_: object) -> None:
            self.told.setdefault(recipe, time.monotonic() - self.cut_at)

        return lost

    def entered(self, recipe: str) -> None:
        self.got_in[recipe] = time.monotonic() - self.cut_at


@pytest.mark.parametrize("policy", ["standard", "session"])
def test_a_holder_cut_off_with_its_leader_is_told_before_a_java_waiter_on_the_majority_gets_in(
    zk_ensemble: ZooKeeperEnsemble, policy: ConnectionPolicy
) -> None:
    ensemble = zk_ensemble  # the kit's: three members, a cut-off leader stops after 2 ticks
    leader = ensemble.leader()
    assert leader is not None
    majority = [member for member in ensemble.members if member != leader]
    base = f"/partition/{policy}"
    paths = {recipe: f"{base}/{recipe}" for recipe in RECIPES}
    observer = KazooClient(hosts=ensemble.hosts_of(*majority), timeout=TIMEOUT)
    observer.start(timeout=30)
    python = connect(ensemble.hosts_of(leader), session_timeout=TIMEOUT)
    java = new_curator(ensemble.hosts_of(*majority), session_timeout_ms=int(TIMEOUT * 1000))
    clock = Clock()
    workers: list[Worker] = []
    java_leases: list[Any] = []
    done = threading.Event()  # the Java mutex is released by the thread that holds it
    try:
        for path in paths.values():  # plain parents: a reaped container would stall Curator
            observer.ensure_path(path)
        mutex = InterProcessMutex(python, paths["mutex"], connection_policy=policy)
        assert mutex.acquire(SOON)
        mutex.on_lost(clock.tell("mutex"))
        latch = LeaderLatch(python, paths["latch"], "python", connection_policy=policy)
        latch.start()
        assert latch.wait(SOON)
        latch.on_lost(clock.tell("latch"))
        semaphore = InterProcessSemaphoreV2(python, paths["semaphore"], 1, connection_policy=policy)
        lease = semaphore.acquire(timeout=SOON)
        assert lease is not None
        lease.on_lost(clock.tell("semaphore"))
        old_session = python.client_id[0]

        java_mutex = JavaMutex(java, paths["mutex"])
        java_latch = JavaLatch(java, paths["latch"], "java")
        java_semaphore = JavaSemaphore(java, paths["semaphore"], 1)

        def wait_mutex() -> None:
            assert java_mutex.acquire(4 * SOON)
            clock.entered("mutex")
            done.wait(4 * SOON)
            java_mutex.release()

        def wait_latch() -> None:
            assert java_latch.wait(4 * SOON)
            clock.entered("latch")

        def wait_semaphore() -> None:
            java_lease = java_semaphore.acquire(4 * SOON)
            assert java_lease is not None
            clock.entered("semaphore")
            java_leases.append(java_lease)

        java_latch.start()
        workers = [Worker(wait) for wait in (wait_mutex, wait_latch, wait_semaphore)]
        for worker in workers:
            worker.start()
        eventually(
            lambda: (
                len(children(observer, paths["mutex"])) == 2
                and len(children(observer, paths["latch"])) == 2
                and len(children(observer, f"{paths['semaphore']}/leases")) == 2
            ),
            what="every Java waiter queued",
        )

        clock.cut_at = time.monotonic()
        ensemble.isolate(leader)
        for worker in workers[1:]:
            worker.outcome(4 * SOON)
        eventually(lambda: "mutex" in clock.got_in, 4 * SOON, what="the Java mutex held")
        eventually(lambda: set(clock.told) == set(RECIPES), SOON, what="every holder told")
        figures = {r: (round(clock.told[r], 2), round(clock.got_in[r], 2)) for r in RECIPES}
        print(f"\n{policy}: (told, waiter in) seconds after the cut: {figures}")
        if policy == "standard":  # told at the suspension, long before the session expires
            for recipe in RECIPES:
                assert clock.told[recipe] < clock.got_in[recipe], (recipe, figures)
        else:
            # told once the session timeout has passed since the suspension, as Curator tells
            # it: about when the majority expires the session (it counts from its own
            # election), within a second or so either way; never for the whole partition
            for recipe in RECIPES:
                assert TIMEOUT <= clock.told[recipe] < clock.got_in[recipe] + SESSION_MARGIN, (
                    recipe,
                    figures,
                )
        assert not mutex.is_held() and not latch.has_leadership()
        assert mutex.lost_event.is_set() and lease.lost_event.is_set()

        ensemble.heal()
        ensemble.wait_serving(list(ensemble.members))
        # the Python client goes on in a new session: its old session's nodes are all gone
        eventually(
            lambda: connected_session(python) not in (None, old_session),
            what="the Python client in a new session",
        )
        owners = {
            observer.exists(f"{parent}/{name}").ephemeralOwner
            for parent in [paths["mutex"], paths["latch"], f"{paths['semaphore']}/leases"]
            for name in children(observer, parent)
        }
        assert old_session not in owners
        mutex.release()
        lease.close()
        latch.close()
        done.set()
        workers[0].outcome()
        for java_lease in java_leases:
            java_lease.close()
        java_latch.close()
        java_leases.clear()
        assert_no_ephemerals(ensemble.hosts, base)
    finally:
        done.set()
        for java_lease in java_leases:
            java_lease.close()
        java.close()
        python.stop()
        python.close()
        observer.stop()
        observer.close()


@pytest.mark.parametrize("policy", ["standard", "session"])
def test_a_python_client_that_reaches_the_majority_in_its_session_keeps_its_place(
    zk_ensemble: ZooKeeperEnsemble, policy: ConnectionPolicy
) -> None:
    """Its leader cut off, the client goes on with a member of the majority before the session
    times out: the hold is the same node in the same session (kept under ``session``, lost at
    the suspension and then proved ours again under ``standard``), the Java waiter stays out, a
    Python waiter keeps its place in the queue, and nothing is left behind."""
    ensemble = zk_ensemble
    leader = ensemble.leader()
    assert leader is not None
    majority = [member for member in ensemble.members if member != leader]
    base = f"/partition-kept/{policy}"
    first_leader = ensemble.hosts_of(leader, *majority)  # tried in this order
    holder = connect(first_leader, session_timeout=TIMEOUT, randomize_hosts=False)
    waiter = connect(first_leader, session_timeout=TIMEOUT, randomize_hosts=False)
    java = new_curator(ensemble.hosts_of(*majority), session_timeout_ms=int(TIMEOUT * 1000))
    done = threading.Event()
    try:
        mutex = InterProcessMutex(holder, f"{base}/mutex", connection_policy=policy)
        assert mutex.acquire(SOON)
        node, session = mutex.lock_path, holder.client_id[0]
        queued = InterProcessMutex(waiter, f"{base}/mutex", connection_policy=policy)
        java_mutex = JavaMutex(java, f"{base}/mutex")
        got_in: list[str] = []

        def wait_python() -> None:
            assert queued.acquire(4 * SOON)
            got_in.append("python")
            done.wait(4 * SOON)
            queued.release()

        def wait_java() -> None:
            if java_mutex.acquire(4 * SOON):
                got_in.append("java")
                java_mutex.release()

        python_waiter = Worker(wait_python)
        python_waiter.start()
        eventually(lambda: len(children(holder, f"{base}/mutex")) == 2, what="Python queued")
        java_waiter = Worker(wait_java)
        java_waiter.start()
        eventually(lambda: len(children(holder, f"{base}/mutex")) == 3, what="Java queued")

        ensemble.isolate(leader)
        # the majority elects a new leader (its members drop their clients while they elect):
        # then both clients are with it, the holder in the session it had
        eventually(
            lambda: (
                ensemble.mode(leader) is None
                and ensemble.leader() in majority
                and connected_session(holder) == session
                and connected_session(waiter) is not None
            ),
            what="both Python clients with the majority, the holder in its session",
        )
        eventually(mutex.is_held, what="the hold ours, in the same session")
        assert mutex.lock_path == node
        if policy == "session":
            assert not mutex.lost_event.is_set()  # never counted as lost
        time.sleep(TIMEOUT)  # past the session timeout: nothing ends it now
        assert mutex.is_held() and got_in == []
        mutex.release()
        eventually(lambda: got_in == ["python"], what="the Python waiter next, in its place")
        done.set()
        python_waiter.outcome()
        java_waiter.outcome(4 * SOON)
        assert got_in == ["python", "java"]
        ensemble.heal()
        assert_no_ephemerals(ensemble.hosts, base)
    finally:
        done.set()
        java.close()
        for client in (holder, waiter):
            client.stop()
            client.close()
