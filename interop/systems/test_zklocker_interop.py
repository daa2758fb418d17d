"""pycurator's ZkLocker against Java's ZkLocker (``com.fankux.zklocker.ZkLocker``) on a real
server, under Java's ``/parent`` beside an unrelated persistent child: exclusion both ways, FIFO
across languages, a waiter of one language woken by a holder of the other, the expiry of
either side, the keys that overlap in Java (each mixed case, exactly), and the Java bugs a
correct Python side still meets: a failed Java ``tryLock``'s node (bug 1), a keyless Java
locker beside a keyed one (bug 2), a child Java cannot parse (bug 3)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from pycurator.testing import ClientFactory, JavaSystems, JavaZkLocker, expire_kazoo_session
from pycurator.testing._peers import LockPeer
from pycurator.zklocker import JAVA_PARENT, ZkLocker
from tests.parity.actors import Actor, ThreadUnit
from tests.support import SOON, children, eventually

#: How long a party that must not get the lock tries.
BRIEF = 0.5


class JavaWaiter:
    """``peer.acquire(SOON)`` in a thread of its own."""

    def __init__(self, peer: LockPeer) -> None:
        self.result: bool | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(peer,), daemon=True)
        self._thread.start()

    def _run(self, peer: LockPeer) -> None:
        try:
            self.result = peer.acquire(SOON)
        except BaseException as exc:  # reported by outcome()
            self.error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def outcome(self) -> bool | None:
        self._thread.join(2 * SOON)
        assert not self._thread.is_alive(), "the Java waiter's acquire did not return"
        if self.error is not None:
            raise self.error
        return self.result


class Parties:
    """Both languages' lockers under ``/parent``: Java peers, and Python lockers each on a
    client and a thread of its own (a Python hold belongs to its thread)."""

    def __init__(self, java: JavaSystems, clients: ClientFactory, zk: KazooClient) -> None:
        self.zk = zk
        self._java = java
        self._clients = clients
        self._units: list[ThreadUnit] = []

    def java(self, key: str | None) -> JavaZkLocker:
        return self._java.zk_locker(key)

    def python(self, key: str | None, client: KazooClient | None = None) -> Actor:
        unit = ThreadUnit(f"python {key}")
        self._units.append(unit)
        return Actor(unit, ZkLocker(client or self._clients(), JAVA_PARENT, key), f"py {key}")

    def nodes(self) -> list[str]:
        """The ZkLocker nodes under /parent, in the order they were made."""
        names = [
            n
            for n in children(self.zk, JAVA_PARENT)
            if n.startswith("dlk-") and n.rsplit("-", 1)[1].isdigit()
        ]
        return sorted(names, key=lambda n: int(n.rsplit("-", 1)[1]))

    def queued(self, count: int) -> Callable[[], bool]:
        return lambda: len(self.nodes()) == count

    def close(self) -> None:
        busy = [unit for unit in self._units if not unit.close()]
        assert busy == [], "a Python party was still busy"


@pytest.fixture
def parties(
    java_systems: JavaSystems, zk_client_factory: ClientFactory, zk: KazooClient
) -> Iterator[Parties]:
    """/parent with an unrelated persistent child, and no ZkLocker node left from elsewhere
    (a keyless locker counts every one)."""
    zk.ensure_path(f"{JAVA_PARENT}/config")
    made = Parties(java_systems, zk_client_factory, zk)
    eventually(made.queued(0), what="no ZkLocker node under /parent")
    yield made
    java_systems.close()
    made.close()
    eventually(made.queued(0), what="no node left")
    assert "config" in children(zk, JAVA_PARENT)


def unique() -> str:
    return f"k{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_a_python_holder_excludes_a_java_waiter_and_wakes_it(parties: Parties, keyed: bool) -> None:
    key = unique() if keyed else None
    py, java = parties.python(key), parties.java(key)
    assert py.do("acquire", SOON) is True
    assert java.acquire(BRIEF) is False  # interrupted, then unlock()ed: its node goes
    eventually(parties.queued(1), what="the Java node gone")
    waiter = JavaWaiter(java)
    eventually(parties.queued(2), what="the Java waiter queued")
    assert not waiter.done()
    py.do("release")
    assert waiter.outcome() is True
    java.release()


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_a_java_holder_excludes_a_python_waiter_and_wakes_it(parties: Parties, keyed: bool) -> None:
    key = unique() if keyed else None
    java, py = parties.java(key), parties.python(key)
    assert java.acquire(SOON) is True
    assert py.do("acquire", BRIEF) is False
    assert py.do("acquire", 0) is False
    assert len(parties.nodes()) == 1  # a Python try leaves nothing
    waiting = py.start("acquire", SOON)
    eventually(parties.queued(2), what="the Python waiter queued")
    assert not waiting.done()
    java.release()
    assert waiting.result() is True
    py.do("release")


def test_waiters_of_both_languages_are_served_in_the_order_they_queued(
    parties: Parties,
) -> None:
    key = unique()
    holder = parties.java(key)
    assert holder.acquire(SOON) is True
    py1, java2, py3 = parties.python(key), parties.java(key), parties.python(key)
    first = py1.start("acquire", SOON)
    eventually(parties.queued(2), what="py1 queued")
    second = JavaWaiter(java2)
    eventually(parties.queued(3), what="java2 queued")
    third = py3.start("acquire", SOON)
    eventually(parties.queued(4), what="py3 queued")
    holder.release()
    assert first.result() is True
    assert not second.done() and not third.done()
    py1.do("release")
    assert second.outcome() is True
    assert not third.done()
    java2.release()
    assert third.result() is True
    py3.do("release")


def test_a_python_holders_expiry_hands_the_lock_to_a_java_waiter(
    parties: Parties, zk_client_factory: ClientFactory
) -> None:
    key = unique()
    client = zk_client_factory()
    py, java = parties.python(key, client), parties.java(key)
    lost: list[str] = []
    py.do("on_lost", lambda _lock, reason: lost.append(reason))
    assert py.do("acquire", SOON) is True
    waiter = JavaWaiter(java)
    eventually(parties.queued(2), what="the Java waiter queued")
    expire_kazoo_session(client)
    assert waiter.outcome() is True
    eventually(lambda: bool(lost), what="the lost notice")
    assert py.do("is_held") is False
    py.do("release")
    java.release()


def test_a_java_holders_expiry_hands_the_lock_to_a_python_waiter(parties: Parties) -> None:
    # Java is never told (its bug 5): it still thinks it holds; the Python waiter is right
    key = unique()
    java, py = parties.java(key), parties.python(key)
    assert java.acquire(SOON) is True
    waiting = py.start("acquire", SOON)
    eventually(parties.queued(2), what="the Python waiter queued")
    java.expire()
    assert waiting.result() is True
    assert java.is_held() is True
    py.do("release")
    java.release()  # its delete fails on the expired session, and is swallowed


def test_a_failed_java_try_lock_leaves_a_node_that_blocks_a_python_waiter(
    parties: Parties,
) -> None:
    key = unique()
    holder, trier, py = parties.java(key), parties.java(key), parties.python(key)
    assert holder.acquire(SOON) is True
    assert trier.acquire(0) is False  # tryLock: false, and its node stays queued (bug 1)
    waiting = py.start("acquire", SOON)
    eventually(parties.queued(3), what="the Python waiter queued behind both")
    stale = parties.nodes()[1]
    assert stale.startswith(f"dlk-{key}-{trier.session_id}-")
    holder.release()
    eventually(parties.queued(2), what="the holder's node gone")
    # nobody holds, yet the stale node is first: the lock stays taken
    assert parties.python(key).do("acquire", BRIEF) is False
    assert not waiting.done()
    trier.release()  # unlock() deletes it: only then
    assert waiting.result() is True
    py.do("release")


def test_a_child_java_cannot_parse_breaks_java_and_not_python(parties: Parties) -> None:
    key = unique()
    notes = f"{JAVA_PARENT}/dlk-{key}-notes"
    parties.zk.create(notes, b"")
    try:
        java, py = parties.java(key), parties.python(key)
        assert py.do("acquire", SOON) is True  # the child is ignored
        with pytest.raises(Exception, match="获取锁异常"):  # NumberFormatException, 10 times
            java.acquire()
        assert len(parties.nodes()) == 2  # and Java's failed lock() keeps its node
        py.do("release")
        later = parties.python(key)
        assert later.do("acquire", BRIEF) is False  # blocked by that node
        java.release()
        assert later.do("acquire", SOON) is True
        later.do("release")
    finally:
        parties.zk.delete(notes)


#: Each mixed case of keys, exactly: (first holder's language and key, then the second's,
#: and whether the second waits). "a"/"a-b" stand for a key and a key that it starts.
#: The second holds at once, beside the first, only where it is a Java locker whose filter
#: does not count the first's node (Java's bug 2): a Python second always waits for it.
MIXED = [
    ("java", "K", "python", None, True),  # keyless counts every keyed node
    ("python", None, "java", "K", False),  # Java's keyed ignores keyless: both hold (bug 2)
    ("python", "K", "java", None, True),
    ("java", None, "python", "K", True),  # Python waits: Java's keyless counts its node
    ("java", "a", "python", "a-b", True),  # Python waits: Java's "a" counts its node
    ("python", "a", "java", "a-b", False),  # Java's "a-b" ignores "a": both hold (bug 2)
    ("python", "a-b", "java", "a", True),  # Java's "a" counts "a-b"'s node
    ("java", "a-b", "python", "a", True),
    ("java", "a", "python", "b", False),  # distinct keys: independent in both languages
    ("python", "a", "java", "b", False),
]


def key_of(template: str | None, base: str) -> str | None:
    """The table's key for this test: ``a`` and ``K`` a fresh key, ``a-b`` one it starts,
    ``b`` one unrelated to it."""
    if template is None:
        return None
    return {"K": base, "a": base, "a-b": f"{base}-b", "b": f"{base}b"}[template]


@pytest.mark.parametrize(("first", "first_key", "second", "second_key", "waits"), MIXED)
def test_mixed_keys_hold_or_wait_exactly_as_the_table_says(
    parties: Parties,
    first: str,
    first_key: str | None,
    second: str,
    second_key: str | None,
    waits: bool,
) -> None:
    base = unique()
    holders = []
    for language, template in ((first, first_key), (second, second_key)):
        key = key_of(template, base)
        holders.append(parties.java(key) if language == "java" else parties.python(key))

    def acquire(party: JavaZkLocker | Actor, timeout: float) -> bool:
        if isinstance(party, Actor):
            return bool(party.do("acquire", timeout))
        return party.acquire(timeout)

    def release(party: JavaZkLocker | Actor) -> None:
        if isinstance(party, Actor):
            party.do("release")
        else:
            party.release()

    assert acquire(holders[0], SOON) is True
    assert acquire(holders[1], BRIEF) is (not waits)
    if waits:
        release(holders[0])
        assert acquire(holders[1], SOON) is True
        release(holders[1])
    else:
        release(holders[1])
        release(holders[0])


def test_a_python_locker_queued_between_java_keyless_and_keyed_keeps_them_apart(
    parties: Parties,
) -> None:
    # Java alone: a keyed locker holds beside a lower keyless holder (bug 2)
    key = unique()
    keyless, keyed = parties.java(None), parties.java(key)
    assert keyless.acquire(SOON) is True
    assert keyed.acquire(SOON) is True
    keyed.release()
    # a Python locker of that key queued between them: it waits for the keyless node, and
    # the Java keyed locker counts the Python node, so it waits behind it
    py = parties.python(key)
    waiting = py.start("acquire", SOON)
    eventually(parties.queued(2), what="the Python locker queued")
    java_waiter = JavaWaiter(keyed)
    eventually(parties.queued(3), what="the Java keyed locker queued")
    assert not waiting.done() and not java_waiter.done()
    keyless.release()
    assert waiting.result() is True
    assert not java_waiter.done()
    py.do("release")
    assert java_waiter.outcome() is True
    keyed.release()
