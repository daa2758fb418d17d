"""ZooKeeper's recipes on a real server, from threads and from asyncio tasks alike (each
scenario runs on both front ends): what they write, how foreign children count, and the
election's leader, hand-over and expiry. What every lock shares (exclusion, FIFO, timeouts,
re-entry, the lost notice, the fencing token) runs for ``WriteLock`` in tests/parity/."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import LockLostError, zkrecipes
from pycurator.aio import zkrecipes as aio_zkrecipes
from pycurator.testing import ClientFactory, expire_kazoo_session

from .parity.fronts import FRONTS, Front
from .parity.observe import Calls, nodes
from .support import SOON, children, eventually


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


def recipes(front: Front) -> ModuleType:
    """The front end's module of ZooKeeper's recipes."""
    return aio_zkrecipes if front.name == "asyncio" else zkrecipes


def write_lock(front: Front, client: KazooClient, path: str) -> Any:
    return recipes(front).WriteLock(client, path)


def election(front: Front, client: KazooClient, root: str, host: str) -> Any:
    return recipes(front).LeaderElection(client, root, host)


# -- WriteLock -------------------------------------------------------------------------------------


def test_a_write_lock_node_is_named_and_filled_as_javas_under_a_persistent_dir(
    front: Front, zk_path: str
) -> None:
    client, observer = front.client(), front.client()
    holder = front.actor(write_lock(front, client, f"{zk_path}/dir"))
    assert holder.do("acquire", SOON) is True
    [name] = children(observer, f"{zk_path}/dir")
    session = client.client_id[0]
    assert name.startswith(f"x-{session}-") and len(name) == len(f"x-{session}-") + 10
    data, stat = observer.get(f"{zk_path}/dir/{name}")
    assert data == b"\x12\x34" and stat.ephemeralOwner == session
    assert holder.do("lock_path") == f"{zk_path}/dir/{name}"
    holder.do("release")
    assert observer.exists(f"{zk_path}/dir").ephemeralOwner == 0  # persistent, not a container
    assert observer.exists(zk_path).ephemeralOwner == 0


def test_a_foreign_child_with_a_number_blocks_one_without_never_does(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    observer.create(f"{zk_path}/config", b"", makepath=True)
    observer.create(f"{zk_path}/notes-v2", b"")
    p = front.actor(write_lock(front, front.client(), zk_path))
    assert p.do("acquire", SOON) is True  # the unnumbered children sort last
    p.do("release")
    # Java's ZNodeName numbers any child by the tail after its last '-'
    observer.create(f"{zk_path}/_c_0b9c-lock-0000000001", b"")
    assert p.do("acquire", 0.2) is False
    waiting = p.start("acquire", SOON)
    observer.delete(f"{zk_path}/_c_0b9c-lock-0000000001")
    assert waiting.result() is True
    p.do("release")
    assert sorted(children(observer, zk_path)) == ["config", "notes-v2"]


def test_two_locks_on_one_client_queue_apart_and_share_no_node(front: Front, zk_path: str) -> None:
    client = front.client()  # one session: both nodes carry the same x-<sessionId>- prefix
    a = front.actor(write_lock(front, client, zk_path))
    b = front.actor(write_lock(front, client, zk_path))
    assert a.do("acquire", SOON) is True
    assert b.do("acquire", 0.2) is False
    waiting = b.start("acquire", SOON)
    eventually(lambda: len(children(client, zk_path)) == 2, what="b queued")
    a.do("release")
    assert waiting.result() is True
    assert a.do("is_held") is False
    assert len(children(client, zk_path)) == 1
    b.do("release")


def test_a_write_lock_is_not_revocable(front: Front, zk_path: str) -> None:
    lock = write_lock(front, front.client(), zk_path)
    with pytest.raises(TypeError, match="no revocation"):
        lock.make_revocable(lambda _: None)


# -- LeaderElection ------------------------------------------------------------------------------


def test_the_first_offer_leads_its_host_name_is_the_leader_and_closing_hands_over(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    root = f"{zk_path}/root"  # missing: made persistent (Java requires it)
    a = front.actor(election(front, front.client(), root, "host-a"), "a")
    b = front.actor(election(front, front.client(), root, "hôst-b"), "b")
    with pytest.raises(RuntimeError):
        a.do("wait", 0)  # not started
    assert a.do("leader") is None
    a.do("start")
    assert a.do("wait", SOON) is True
    assert a.do("has_leadership") is True
    token = a.do("fencing_token")
    b.do("start")
    eventually(lambda: len(children(observer, root)) == 2, what="b offered")
    assert b.do("wait", 0.2) is False
    assert b.do("leader") == "host-a"
    [first, second] = sorted(children(observer, root))
    assert first.startswith("n_") and len(first) == 12
    assert observer.get(f"{root}/{second}")[0] == "hôst-b".encode()
    waiting = b.start("wait", SOON)
    a.do("close")
    assert waiting.result() is True
    assert b.do("leader") == "hôst-b"
    assert b.do("fencing_token") > token
    with pytest.raises(RuntimeError):
        a.do("wait", 0)  # closed
    b.do("close")
    assert children(observer, root) == []
    assert observer.exists(root).ephemeralOwner == 0


def test_foreign_children_of_the_root_take_no_part(front: Front, zk_path: str) -> None:
    observer = front.client()
    observer.create(f"{zk_path}/config", b"x", makepath=True)
    observer.create(f"{zk_path}/n_notes", b"x")
    a = front.actor(election(front, front.client(), zk_path, "host-a"))
    a.do("start")
    assert a.do("wait", SOON) is True
    assert a.do("leader") == "host-a"
    a.do("close")
    assert sorted(children(observer, zk_path)) == ["config", "n_notes"]


def test_an_expiry_tells_the_lost_notice_and_a_new_offer_leads_in_the_new_session(
    front: Front, zk_path: str
) -> None:
    client, observer = front.client(), front.client()
    lost = Calls()
    a = front.actor(election(front, client, zk_path, "host-a"))
    a.do("on_lost", lost.on_lost)
    a.do("start")
    assert a.do("wait", SOON) is True
    old = a.do("our_path")
    expire_kazoo_session(client)
    assert lost.wait_for(1)[0] in ("connection suspended", "session expired")
    eventually(lambda: client.connected, what="the client in a new session")
    assert a.do("wait", SOON) is True
    new = a.do("our_path")
    assert new != old
    assert observer.exists(new).ephemeralOwner == client.client_id[0]
    a.do("check")
    a.do("close")
    with pytest.raises(LockLostError):
        a.do("check")
    assert nodes(observer, [zk_path]) == []


def test_bad_arguments_are_refused_before_anything_is_sent(front: Front, zk_path: str) -> None:
    client = front.client()
    not_text: Any = b"host"
    with pytest.raises(TypeError, match="host_name"):
        election(front, client, zk_path, not_text)
    with pytest.raises(ValueError):
        election(front, client, "relative/root", "host")
    with pytest.raises(ValueError):
        write_lock(front, client, "relative/dir")
    assert client.exists(zk_path) is None
