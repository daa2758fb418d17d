"""ZooKeeper's recipes across languages: pycurator's ``zkrecipes`` against Java's ``WriteLock``
and ``LeaderElectionSupport`` (the test kit's peers) on one server, both directions.

Exclusion, FIFO order across languages, a waiter of one language woken by a holder of the
other, either side's session expiry, foreign children; and Java's bug 3 (a cancelled
``WriteLock`` waiter takes the lock later) shown exactly, beside a Python waiter that was
cancelled the same way and never does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import zkrecipes
from pycurator._protocol.zkrecipes import WRITE_LOCK_DRIVER
from pycurator.aio import zkrecipes as aio_zkrecipes
from pycurator.testing import ClientFactory, JavaSystems, expire_kazoo_session, jclass
from pycurator.testing._peers import system_class
from tests.parity.fronts import FRONTS, Front
from tests.parity.observe import Calls
from tests.support import SOON, Worker, children, eventually

#: How long a participant that must not get the lock tries.
BRIEF = 0.5


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    """pycurator's side, from threads or from asyncio tasks."""
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


@pytest.fixture
def threads(zk_client_factory: ClientFactory) -> Iterator[Front]:
    """pycurator's side, from threads."""
    made = Front("threads", zk_client_factory)
    yield made
    made.close()


@pytest.fixture
def base(zk: KazooClient, zk_path: str) -> Iterator[str]:
    """``zk_path``, whose parent exists (Java makes only the last element)."""
    zk.ensure_path(zk_path.rsplit("/", 1)[0])
    yield zk_path
    zk.delete(zk_path, recursive=True)


def recipes(front: Front) -> ModuleType:
    return aio_zkrecipes if front.name == "asyncio" else zkrecipes


def write_lock(front: Front, path: str, client: KazooClient | None = None) -> Any:
    return front.actor(recipes(front).WriteLock(client or front.client(), path))


def sessions(zk: KazooClient, path: str) -> list[int]:
    """The session each lock node under ``path`` names, in queue (sequence) order."""
    names = sorted(children(zk, path), key=lambda name: name[-10:])
    return [int(m.group(1)) for n in names if (m := re.fullmatch(r"x-(-?\d+)-\d{10}", n))]


# -- WriteLock -------------------------------------------------------------------------------------


def test_the_write_locks_order_is_javas_znode_name_order() -> None:
    znode_name = system_class(
        "org.apache.zookeeper.recipes.lock.ZNodeName", "zookeeper-recipes-lock.jar"
    )
    names = [
        "x-72057646661894145-0000000007",
        "x-72057646661894145--2147483648",
        "x--9-0000000003",
        "x--9--0000000003",
        "x-5-0000000003",
        "_c_0b9c-lock-0000000001",
        "config",
        "notes-v2",
        "x-\uff5e-0000000002",
        "x-\U0001f600-0000000002",
        "lock-+12",
        "-4",
        "--4",
    ]
    ordered = jclass("java.util.TreeSet")()
    for name in names:
        ordered.add(znode_name(f"/dir/{name}"))  # WriteLock sorts full paths
    java = [str(z.getName()).removeprefix("/dir/") for z in ordered]
    assert WRITE_LOCK_DRIVER.sort(names) == java


def test_a_java_holder_wakes_a_python_waiter_and_the_nodes_are_alike(
    front: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    java = java_systems.write_lock(base)
    python_client = front.client()
    python = write_lock(front, base, python_client)
    assert java.acquire(SOON)
    assert python.do("acquire", BRIEF) is False
    waiting = python.start("acquire", SOON)
    eventually(lambda: len(children(zk, base)) == 2, what="the Python waiter queued")
    assert sessions(zk, base) == [java.session_id, python_client.client_id[0]]
    assert {zk.get(f"{base}/{name}")[0] for name in children(zk, base)} == {b"\x12\x34"}
    assert not waiting.done()
    java.release()
    assert waiting.result() is True
    assert not java.is_held()
    python.do("release")
    assert children(zk, base) == []


def test_a_python_holder_wakes_a_java_waiter(
    front: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    python = write_lock(front, base)
    java = java_systems.write_lock(base)
    assert python.do("acquire", SOON) is True
    assert java.acquire(BRIEF) is False  # Java's lock() answers false at once: it queues
    waiting = Worker(lambda: java.acquire(SOON))
    waiting.start()
    eventually(lambda: len(children(zk, base)) == 2, what="the Java waiter queued")
    assert not java.is_held()
    python.do("release")
    assert waiting.outcome() is True and java.is_held()
    java.release()
    # the watcher of the attempt that timed out above is still registered, and may run
    # lock() again once released, making a node (WriteLock's bug 3): its session ends here
    java.close()
    eventually(lambda: children(zk, base) == [], what="no node left")


def test_waiters_of_both_languages_are_served_in_the_order_they_queued(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    first, last = write_lock(threads, base), write_lock(threads, base)
    java = java_systems.write_lock(base)
    assert first.do("acquire", SOON) is True
    java_waiting = Worker(lambda: java.acquire(SOON))
    java_waiting.start()
    eventually(lambda: len(children(zk, base)) == 2, what="Java queued second")
    last_waiting = last.start("acquire", SOON)
    eventually(lambda: len(children(zk, base)) == 3, what="Python queued third")
    first.do("release")
    assert java_waiting.outcome() is True
    assert not last_waiting.done()  # Python's second waiter stays behind Java
    java.release()
    assert last_waiting.result() is True
    last.do("release")


def test_a_java_holders_expiry_hands_the_lock_to_python(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    java = java_systems.write_lock(base)
    python = write_lock(threads, base)
    assert java.acquire(SOON)
    waiting = python.start("acquire", SOON)
    eventually(lambda: len(children(zk, base)) == 2, what="the Python waiter queued")
    java.expire()
    assert waiting.result() is True
    assert java.is_held()  # Java is never told: isOwner() compares cached strings
    python.do("release")


def test_a_python_holders_expiry_tells_its_lost_notice_and_hands_the_lock_to_java(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    client = threads.client()
    lost = Calls()
    python = write_lock(threads, base, client)
    python.do("on_lost", lost.on_lost)
    java = java_systems.write_lock(base)
    assert python.do("acquire", SOON) is True
    waiting = Worker(lambda: java.acquire(SOON))
    waiting.start()
    eventually(lambda: len(children(zk, base)) == 2, what="the Java waiter queued")
    expire_kazoo_session(client)
    assert lost.wait_for(1)[0] in ("connection suspended", "session expired")
    assert waiting.outcome() is True and java.is_held()
    assert python.do("is_held") is False
    python.do("release")
    java.release()


def test_foreign_children_count_alike_numbered_ones_block_both_others_neither(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    zk.create(f"{base}/config", b"", makepath=True)  # no number: sorts last for both
    java, python = java_systems.write_lock(base), write_lock(threads, base)
    assert java.acquire(SOON)
    assert python.do("acquire", BRIEF) is False
    java.release()
    assert python.do("acquire", SOON) is True
    assert java.acquire(BRIEF) is False
    python.do("release")
    eventually(lambda: java.is_held(), what="Java woken by the Python release")
    java.release()
    # a foreign child with a number after its last '-' competes by it, for Java and for us
    zk.create(f"{base}/_c_0b9c-lock-0000000001", b"")
    assert java.acquire(BRIEF) is False
    assert python.do("acquire", BRIEF) is False
    assert sorted(children(zk, base)) == ["_c_0b9c-lock-0000000001", "config"]
    java.close()  # its cancelled wait still watches the foreign child (bug 3): end it first


def test_javas_bug_3_a_cancelled_java_waiter_takes_the_lock_later_a_python_one_never(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, base: str
) -> None:
    holder = write_lock(threads, base)
    java = java_systems.write_lock(base)
    python_client = threads.client()
    python = write_lock(threads, base, python_client)
    assert holder.do("acquire", SOON) is True
    # both wait, time out and are cancelled: Java's acquire calls unlock(), deleting its node
    assert java.acquire(BRIEF) is False
    assert python.do("acquire", BRIEF) is False
    assert len(children(zk, base)) == 1 and not java.is_held()
    holder.do("release")
    # Java's LockWatcher on the holder's node was never removed: its lock() runs again, makes
    # a new node and takes the lock that nobody asked for any more
    eventually(lambda: java.is_held(), what="the cancelled Java waiter holds")
    assert sessions(zk, base) == [java.session_id]
    # the Python waiter cancelled the same way has no node and no watch, and holds nothing
    assert python.do("is_held") is False
    assert python_client.client_id[0] not in sessions(zk, base)
    late = write_lock(threads, base)
    assert late.do("acquire", BRIEF) is False  # a correct Python side: it waits for Java
    waiting = late.start("acquire", SOON)
    java.release()
    assert waiting.result() is True
    late.do("release")


# -- LeaderElectionSupport -------------------------------------------------------------------------


def election(front: Front, root: str, host: str, client: KazooClient | None = None) -> Any:
    return front.actor(recipes(front).LeaderElection(client or front.client(), root, host))


def test_a_java_leader_is_seen_by_both_and_hands_over_to_python(
    front: Front, java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    java = java_systems.leader_election(zk_path, "java-host")
    python = election(front, zk_path, "python-hôst")
    java.start()
    assert java.wait(SOON)
    python.do("start")
    eventually(lambda: len(children(zk, zk_path)) == 2, what="the Python offer made")
    assert python.do("wait", BRIEF) is False
    assert python.do("leader") == java.leader() == "java-host"
    waiting = python.start("wait", SOON)
    java.close()
    assert waiting.result() is True
    assert python.do("leader") == "python-hôst"
    python.do("close")
    assert children(zk, zk_path) == []


def test_a_python_leader_is_seen_by_both_and_hands_over_to_java(
    front: Front, java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    python = election(front, zk_path, "python-host")
    python.do("start")  # the root is made here (Java needs it to exist)
    assert python.do("wait", SOON) is True
    java = java_systems.leader_election(zk_path, "java-host")
    java.start()
    assert java.wait(BRIEF) is False
    assert java.leader() == python.do("leader") == "python-host"
    python.do("close")
    assert java.wait(SOON)
    assert java.leader() == "java-host"


def test_a_foreign_child_breaks_javas_start_and_python_ignores_it(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/config", b"", makepath=True)
    python = election(threads, zk_path, "python-host")
    python.do("start")
    assert python.do("wait", SOON) is True
    java = java_systems.leader_election(zk_path, "java-host")
    with pytest.raises(Exception, match="NumberFormatException"):
        java.start()  # Integer.valueOf("nfig"): not a KeeperException, so it escapes start()
    assert not java.has_leadership()
    assert python.do("has_leadership") is True
    assert python.do("leader") == "python-host"
    python.do("close")


def test_a_python_leaders_expiry_tells_its_lost_notice_and_java_leads(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    client = threads.client()
    lost = Calls()
    python = election(threads, zk_path, "python-host", client)
    python.do("on_lost", lost.on_lost)
    python.do("start")
    assert python.do("wait", SOON) is True
    java = java_systems.leader_election(zk_path, "java-host")
    java.start()
    old = python.do("our_path")
    expire_kazoo_session(client)
    assert lost.wait_for(1)[0] in ("connection suspended", "session expired")
    assert java.wait(SOON)
    # a new offer in the new session, queued behind Java's
    eventually(lambda: python.do("our_path") not in (None, old), what="a new Python offer")
    assert zk.exists(python.do("our_path")).ephemeralOwner == client.client_id[0]
    assert python.do("has_leadership") is False
    assert python.do("leader") == java.leader() == "java-host"
    java.close()
    assert python.do("wait", SOON) is True
    python.do("close")


def test_a_java_leaders_expiry_lets_python_lead_while_java_still_thinks_it_leads(
    threads: Front, java_systems: JavaSystems, zk: KazooClient, zk_path: str
) -> None:
    python = election(threads, zk_path, "python-host")
    python.do("start")
    assert python.do("wait", SOON) is True
    python.do("close")  # the root now exists; Java's offer comes first
    java = java_systems.leader_election(zk_path, "java-host")
    java.start()
    assert java.wait(SOON)
    python = election(threads, zk_path, "python-host")
    python.do("start")
    assert python.do("wait", BRIEF) is False
    java.expire()
    assert python.do("wait", SOON) is True
    assert java.has_leadership()  # LeaderElectionSupport has no expiry handling
    python.do("close")
