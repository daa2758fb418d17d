"""ZkLocker's protocol on a scripted server (:mod:`tests.scripted`): what it does differently
from Curator's mutex. Its names (Java's, with the session id and no protection), the parent
made PERSISTENT, Java's null data and OPEN_ACL_UNSAFE, foreign children of the parent, the
overlapping keys, and a create whose answer was lost found again by its session's prefix
without taking a node another acquire of the client has claimed or one of another key.
The same protocol runs on a real server in test_zklocker.py."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.security import OPEN_ACL_UNSAFE

from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol.deadline import Deadline
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.zklocker import zklocker_engine
from pycurator.zklocker import ZkLocker

from .scripted import (
    REDUCED,
    WATCHED,
    Fire,
    Forgets,
    Owes,
    Reply,
    ScriptedServer,
    State,
    Timeout,
    stat,
)

PARENT = "/parent"
SESSION = 72057646661894145
OTHER = 72057646661894146
#: Children of the parent no ZkLocker made: Java ignores the first two, and throws on the third.
FOREIGN = ["config", "_c_0b9c-lock-0000000001", "dlk-notes"]

LISTING = ListChildren(PARENT, reduce=REDUCED)
RELIST = ListChildren(PARENT)


def name(seq: int, session: int = SESSION, key: str | None = "k") -> str:
    return f"dlk-{session}-{seq:010d}" if key is None else f"dlk-{key}-{session}-{seq:010d}"


def path(node: str) -> str:
    return f"{PARENT}/{node}"


def create(key: str | None = "k", session: int = SESSION) -> CreateNode:
    """Our create: Java's name before the sequence, Java's null data, OPEN_ACL_UNSAFE."""
    head = f"dlk-{session}-" if key is None else f"dlk-{key}-{session}-"
    return CreateNode(path(head), None, list(OPEN_ACL_UNSAFE), CreateMode.EPHEMERAL_SEQUENTIAL)


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


def engine(client: KazooTransport, key: str | None = "k") -> LockEngine:
    return zklocker_engine(client, PARENT, key)


def test_the_node_is_javas_and_holds_first_among_foreign_children(client: KazooTransport) -> None:
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [*FOREIGN, name(3), name(4, OTHER)]),
        ],
        session=SESSION,
    )
    assert server.run(engine(client).acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_keyless_node_is_named_with_the_session_alone(client: KazooTransport) -> None:
    server = ScriptedServer(
        [
            Reply(create(None), (path(name(3, key=None)), stat(30, SESSION))),
            Reply(LISTING, [name(3, key=None)]),
        ],
        session=SESSION,
    )
    held = server.run(engine(client, None).acquire_steps(None))
    assert held == LockNode(path(name(3, key=None)), 30, SESSION)
    server.finish()


def test_a_negative_session_id_is_written_as_javas_signed_long(client: KazooTransport) -> None:
    negative = -8935141660703064063
    ours = f"dlk-k-{negative}-0000000003"
    server = ScriptedServer(
        [
            Reply(create(session=negative), (path(ours), stat(30, negative))),
            Reply(LISTING, [ours]),
        ],
        session=negative,
    )
    assert server.run(engine(client).acquire_steps(None)) == LockNode(path(ours), 30, negative)
    server.finish()


def test_a_missing_parent_is_made_persistent_and_the_create_sent_again(
    client: KazooTransport,
) -> None:
    deep = zklocker_engine(client, "/app/locks", "k")
    head = f"/app/locks/dlk-k-{SESSION}-"
    ours = f"dlk-k-{SESSION}-0000000000"
    acl = list(OPEN_ACL_UNSAFE)
    server = ScriptedServer(
        [
            Reply(
                CreateNode(head, None, acl, CreateMode.EPHEMERAL_SEQUENTIAL), error=NoNodeError()
            ),
            Reply(ListChildren("/app/locks", reduce=REDUCED), error=NoNodeError()),
            Reply(CreateParent("/app/locks", CreateMode.PERSISTENT, acl), error=NoNodeError()),
            Reply(CreateParent("/app", CreateMode.PERSISTENT, acl), ("/app", stat(1))),
            Reply(CreateParent("/app/locks", CreateMode.PERSISTENT, acl), ("/app/locks", stat(2))),
            Reply(
                CreateNode(head, None, acl, CreateMode.EPHEMERAL_SEQUENTIAL),
                (f"/app/locks/{ours}", stat(3, SESSION)),
            ),
            Reply(ListChildren("/app/locks", reduce=REDUCED), [ours]),
        ],
        session=SESSION,
    )
    assert server.run(deep.acquire_steps(None)) == LockNode(f"/app/locks/{ours}", 3, SESSION)
    server.finish()


def test_a_keyed_waiter_waits_for_a_lower_keyless_node_and_its_own_key(
    client: KazooTransport,
) -> None:
    keyless = name(1, OTHER, None)  # Java's keyless locker counts our node: we wait for it
    other_key = name(2, OTHER, "j")  # independent of key k in both languages
    same_key = name(3, OTHER)
    server = ScriptedServer(
        [
            Reply(create(), (path(name(4)), stat(40, SESSION))),
            Reply(LISTING, [*FOREIGN, keyless, other_key, same_key, name(4)]),
            Reply(GetData(path(same_key), watch=WATCHED), (None, stat(30, OTHER))),
            Fire(path(same_key)),
            Reply(RELIST, [*FOREIGN, keyless, other_key, name(4)]),
            Reply(GetData(path(keyless), watch=WATCHED), (None, stat(10, OTHER))),
            Fire(path(keyless)),
            # the last node ahead of ours gone: one exists of our node, no listing
            Reply(NodeExists(path(name(4))), stat(40, SESSION)),
        ],
        session=SESSION,
    )
    assert server.run(engine(client).acquire_steps(None)) == LockNode(path(name(4)), 40, SESSION)
    server.finish()
    assert not any(server.watches.values())


def test_a_key_waits_for_the_key_that_starts_its_name_and_not_the_reverse(
    client: KazooTransport,
) -> None:
    # Java's "a" counts "dlk-a-b-..." (its prefix "dlk-a-" starts it): a-b waits for a's node
    a_node = name(1, OTHER, "a")
    server = ScriptedServer(
        [
            Reply(create("a-b"), (path(name(2, key="a-b")), stat(20, SESSION))),
            Reply(LISTING, [a_node, name(2, key="a-b")]),
            Reply(GetData(path(a_node), watch=WATCHED), (None, stat(10, OTHER))),
            Timeout(),
            Forgets(path(a_node)),
            Reply(DeleteNode(path(name(2, key="a-b")))),
        ],
        session=SESSION,
    )
    assert server.run(engine(client, "a-b").acquire_steps(5)) is None
    server.finish()


def test_a_failed_acquire_leaves_no_node_unlike_javas_try_lock(client: KazooTransport) -> None:
    # Java's tryLock returns false and keeps its node in the queue (bug 1)
    server = ScriptedServer(
        [
            Reply(create(), (path(name(2)), stat(20, SESSION))),
            Reply(LISTING, [name(1, OTHER), name(2)]),
            Reply(DeleteNode(path(name(2)))),
        ],
        session=SESSION,
    )
    assert server.run(engine(client).acquire_steps(0)) is None
    server.finish()


def test_a_lost_create_is_found_by_its_sessions_prefix_but_not_another_acquires_node(
    client: KazooTransport,
) -> None:
    eng = engine(client)
    claimed = name(2)  # another acquire of this client made it, with the same name
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # a key that starts with "k-<session>" makes names that start with our prefix
            Reply(RELIST, [claimed, name(3, key=f"k-{SESSION}"), name(4), name(5, OTHER)]),
            Reply(NodeExists(path(name(4))), stat(40, SESSION)),
            # ours: both nodes before it count (Java's "dlk-k-" starts both names)
            Reply(RELIST, [claimed, name(3, key=f"k-{SESSION}"), name(4), name(5, OTHER)]),
            Reply(GetData(path(name(3, key=f"k-{SESSION}")), watch=WATCHED), (None, stat(3))),
            Timeout(),
            Forgets(path(name(3, key=f"k-{SESSION}"))),
            Reply(DeleteNode(path(name(4)))),
        ],
        session=SESSION,
    )
    server.claimed[path(claimed)] = Deadline(None)  # the other acquire's claim
    assert server.run(eng.acquire_steps(30)) is None
    server.finish()
    assert server.claimed == {path(claimed): server.claimed[path(claimed)]}  # ours went


def test_a_lost_create_of_an_earlier_session_is_not_found(client: KazooTransport) -> None:
    earlier = name(2, OTHER)  # our prefix under the session we had before: not ours now
    server = ScriptedServer(
        [
            Reply(create(session=OTHER), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED, session=SESSION),
            Reply(RELIST, [earlier]),
            Reply(NodeExists(path(earlier)), stat(20, OTHER)),
            # a new session makes a new name: created again, under it
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [earlier, name(3)]),
            Reply(GetData(path(earlier), watch=WATCHED), (None, stat(20, OTHER))),
            Fire(path(earlier)),
            Reply(NodeExists(path(name(3))), stat(30, SESSION)),
        ],
        session=OTHER,
    )
    assert server.run(engine(client).acquire_steps(None)) == LockNode(path(name(3)), 30, SESSION)
    server.finish()


def test_a_lost_create_not_found_in_time_is_swept_by_session_and_claim(
    client: KazooTransport,
) -> None:
    claimed = name(2)
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [claimed, name(4)], late=True),  # the look outlasts the deadline
            # then, in the background: our session's unclaimed node of our name is deleted
            Reply(RELIST, [claimed, name(3, key=f"k-{SESSION}"), name(4), name(5, OTHER)]),
            Reply(NodeExists(path(name(4))), stat(40, SESSION)),
            Owes(path(name(4))),
        ],
        session=SESSION,
    )
    server.claimed[path(claimed)] = Deadline(None)
    assert server.run(engine(client).acquire_steps(5)) is None
    server.finish()


def test_an_expiry_mid_wait_queues_again_under_the_new_sessions_name(
    client: KazooTransport,
) -> None:
    new = SESSION + 7
    ours_again = name(6, new)
    server = ScriptedServer(
        [
            Reply(create(), (path(name(3)), stat(30, SESSION))),
            Reply(LISTING, [name(2, OTHER), name(3)]),
            Reply(GetData(path(name(2, OTHER)), watch=WATCHED), (None, stat(20, OTHER))),
            State(KazooState.LOST),
            Reply(RELIST, error=ConnectionLoss()),
            State(KazooState.CONNECTED, session=new),
            Reply(RELIST, [name(2, OTHER)]),  # our node went with the session
            Reply(DeleteNode(path(name(3))), error=NoNodeError()),
            Reply(create(session=new), (path(ours_again), stat(60, new))),
            Reply(LISTING, [ours_again]),
        ],
        session=SESSION,
    )
    assert server.run(engine(client).acquire_steps(None)) == LockNode(path(ours_again), 60, new)
    server.finish()


@pytest.mark.parametrize(
    ("parent", "key", "error"),
    [
        ("parent", "k", ValueError),
        ("/", "k", ValueError),
        ("/parent/", "k", ValueError),
        ("/parent", "", ValueError),
        ("/parent", "a/b", ValueError),
        ("/parent", "a-", ValueError),
        ("/parent", 7, TypeError),
    ],
)
def test_bad_input_is_refused_before_anything_is_sent(
    client: KazooTransport, parent: str, key: object, error: type
) -> None:
    with pytest.raises(error):
        ZkLocker(client.client, parent, key)  # type: ignore[arg-type]
