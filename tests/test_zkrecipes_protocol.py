"""ZooKeeper's recipes on a scripted server (:mod:`tests.scripted`): what they do differently
from Curator's mutex and latch. ``WriteLock``'s ``x-<sessionId>-`` names, 0x12 0x34 data,
persistent directory and ``ZNodeName`` order; ``LeaderElectionSupport``'s ``n_`` offers, host
name data, persistent root and foreign children; and the recovery of a create whose answer was
lost, by the session's prefix, never adopting a node another acquire of the client claims."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import EventType, KazooState

from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._protocol.zkrecipes import ELECTION_DRIVER, ELECTION_NAMING
from pycurator._recipes import election
from pycurator._recipes.election import Election
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.reports import Reporter
from pycurator._recipes.zkrecipes import write_lock_engine

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
from .scripted_election import Call, ScriptedMonitor, Server

DIR = "/zk/locks"
SESSION = 72057646661894145
OTHER_SESSION = 72057646661894146
NEW_SESSION = SESSION + 7
DATA = b"\x12\x34"
LISTING = ListChildren(DIR, reduce=REDUCED)
RELIST = ListChildren(DIR)


def lock(seq: int, session: int = SESSION) -> str:
    return f"x-{session}-{seq:010d}"


def at(name: str, base: str = DIR) -> str:
    return f"{base}/{name}"


def create(session: int = SESSION) -> CreateNode:
    return CreateNode(at(f"x-{session}-"), DATA, None, CreateMode.EPHEMERAL_SEQUENTIAL)


def made(seq: int, session: int = SESSION) -> tuple[str, Any]:
    return at(lock(seq, session)), stat(seq * 10, session)


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


@pytest.fixture
def engine(client: KazooTransport) -> LockEngine:
    return write_lock_engine(client, DIR, None)


# -- WriteLock -----------------------------------------------------------------------------------


def test_the_node_is_x_session_dash_with_java_data_and_holds_when_first(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [Reply(create(), made(3)), Reply(LISTING, [lock(3), "config", "notes-v2"])],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(3)), 30, SESSION)
    assert at(lock(3)) in server.claimed  # claimed by this acquire until deleted
    server.finish()


def test_a_missing_directory_is_made_persistent_with_its_parents(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=NoNodeError()),
            Reply(LISTING, error=NoNodeError()),
            Reply(CreateParent(DIR, CreateMode.PERSISTENT), error=NoNodeError()),
            Reply(CreateParent("/zk", CreateMode.PERSISTENT), ("/zk", stat(1))),
            Reply(CreateParent(DIR, CreateMode.PERSISTENT), (DIR, stat(2))),
            Reply(create(), made(3)),
            Reply(LISTING, [lock(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(3)), 30, SESSION)
    server.finish()


def test_a_foreign_numbered_child_ahead_is_waited_for_and_the_waiter_lists_before_holding(
    engine: LockEngine,
) -> None:
    foreign = "_c_0b9c-lock-0000000001"
    server = ScriptedServer(
        [
            Reply(create(), made(2)),
            Reply(LISTING, [foreign, lock(2), "config"]),
            Reply(GetData(at(foreign), watch=WATCHED), (b"", stat(10, 0))),
            Fire(at(foreign)),
            Reply(RELIST, [lock(2), "config"]),  # a listing, not an exists: Java's order rules
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(2)), 20, SESSION)
    server.finish()


def test_after_a_wrap_a_later_negative_node_is_ahead_of_ours(engine: LockEngine) -> None:
    wrapped = f"x-{OTHER_SESSION}--2147483648"
    server = ScriptedServer(
        [
            Reply(create(), made(2147483646)),
            Reply(LISTING, [lock(2147483645, OTHER_SESSION), lock(2147483646)]),
            Reply(GetData(at(lock(2147483645, OTHER_SESSION)), watch=WATCHED), (b"", stat(5))),
            Fire(at(lock(2147483645, OTHER_SESSION))),
            # a node made after ours took a negative number: Java puts it first, and so do we
            Reply(RELIST, [lock(2147483646), wrapped]),
            Reply(GetData(at(wrapped), watch=WATCHED), (b"", stat(6))),
            Timeout(),
            Forgets(at(wrapped)),
            Reply(DeleteNode(at(lock(2147483646)))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(30)) is None
    server.finish()


def test_a_predecessor_gone_before_its_watch_is_no_lost_wake_up(engine: LockEngine) -> None:
    # Java's bug 2: its exists() finds nothing, it returns false and waits on no live node
    server = ScriptedServer(
        [
            Reply(create(), made(3)),
            Reply(LISTING, [lock(1, OTHER_SESSION), lock(2, OTHER_SESSION), lock(3)]),
            Reply(GetData(at(lock(2, OTHER_SESSION)), watch=WATCHED), error=NoNodeError()),
            Reply(RELIST, [lock(1, OTHER_SESSION), lock(3)]),
            Reply(GetData(at(lock(1, OTHER_SESSION)), watch=WATCHED), (DATA, stat(10))),
            Fire(at(lock(1, OTHER_SESSION))),
            Reply(RELIST, [lock(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(3)), 30, SESSION)
    server.finish()


def test_each_change_of_the_node_ahead_renews_its_one_watch(engine: LockEngine) -> None:
    # Java's bug 4: each wake-up runs lock() again and registers one more watcher
    ahead = at(lock(2, OTHER_SESSION))
    server = ScriptedServer(
        [
            Reply(create(), made(3)),
            Reply(LISTING, [lock(2, OTHER_SESSION), lock(3)]),
            Reply(GetData(ahead, watch=WATCHED), (DATA, stat(20))),
            Fire(ahead, EventType.CHANGED),
            Reply(GetData(ahead, watch=WATCHED), (DATA, stat(20))),  # no listing, one watch
            Fire(ahead, EventType.CHANGED),
            Reply(GetData(ahead, watch=WATCHED), (DATA, stat(20))),
            Fire(ahead),
            Reply(RELIST, [lock(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(3)), 30, SESSION)
    server.finish()
    assert not any(server.watches.values())


def test_a_timeout_drops_the_watch_deletes_the_node_and_its_claim(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), made(3)),
            Reply(LISTING, [lock(2, OTHER_SESSION), lock(3)]),
            Reply(GetData(at(lock(2, OTHER_SESSION)), watch=WATCHED), (DATA, stat(20))),
            Timeout(),
            Forgets(at(lock(2, OTHER_SESSION))),
            Reply(DeleteNode(at(lock(3)))),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(30)) is None
    server.finish()
    assert server.claimed == {}
    assert not any(server.watches.values())


def test_a_lost_create_is_found_by_session_prefix_never_taking_another_acquires_node(
    engine: LockEngine,
) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            # node 3 is another acquire's of this client (claimed): not even looked at;
            # node 5 is another session's: its name does not start with our prefix
            Reply(RELIST, [lock(5, OTHER_SESSION), lock(4), lock(3), "config"]),
            Reply(NodeExists(at(lock(4))), stat(40, SESSION)),
            Reply(RELIST, [lock(3), lock(4), lock(5, OTHER_SESSION)]),
            Reply(GetData(at(lock(3)), watch=WATCHED), (DATA, stat(30, SESSION))),
            Timeout(),
            Forgets(at(lock(3))),
            Reply(DeleteNode(at(lock(4)))),
        ],
        session=SESSION,
    )
    other_acquire = object()
    server.claimed[at(lock(3))] = other_acquire
    assert server.run(engine.acquire_steps(30)) is None  # waited behind the other acquire
    server.finish()
    assert server.claimed == {at(lock(3)): other_acquire}


def test_a_lost_create_made_nothing_so_a_new_node_is_made(engine: LockEngine) -> None:
    server = ScriptedServer(
        [
            Reply(create(), error=ConnectionLoss(), disconnects=True),
            Reply(LISTING, error=ConnectionLoss()),
            State(KazooState.CONNECTED),
            Reply(RELIST, [lock(2, OTHER_SESSION)]),
            Reply(create(), made(3)),
            Reply(LISTING, [lock(3)]),
        ],
        session=SESSION,
    )
    assert server.run(engine.acquire_steps(None)) == LockNode(at(lock(3)), 30, SESSION)
    server.finish()


# -- LeaderElectionSupport -----------------------------------------------------------------------

ROOT = "/zk/election"
HOST = "host-1.example"
OFFERS = ListChildren(ROOT)


def offer(seq: int) -> str:
    return f"n_{seq:010d}"


def offer_create() -> CreateNode:
    return CreateNode(at("n_", ROOT), HOST.encode(), None, CreateMode.EPHEMERAL_SEQUENTIAL)


def offered(seq: int, session: int = SESSION) -> tuple[str, Any]:
    return at(offer(seq), ROOT), stat(seq * 10, session)


class Participant:
    """One ``LeaderElectionSupport`` participant on a scripted server, and what it hears."""

    def __init__(self, client: KazooTransport, monkeypatch: pytest.MonkeyPatch) -> None:
        self.heard: list[tuple[str, object]] = []
        self.server: Server | None = None
        engine = LockEngine(
            client,
            ROOT,
            ELECTION_DRIVER,
            data=HOST.encode(),
            naming=ELECTION_NAMING,
        )
        self.election = Election(
            engine,
            "standard",
            lambda node, monitor: self.heard.append(("elected", node.path)),
            lambda reason: self.heard.append(("deposed", reason)),
            reporter=Reporter("latch", ROOT),
        )
        monkeypatch.setattr(election, "HoldMonitor", self._monitor)

    def _monitor(self, client: KazooTransport, *args: Any, **kwargs: Any) -> ScriptedMonitor:
        assert self.server is not None
        return ScriptedMonitor(self.server, *args, **kwargs)

    def play(self, *script: Any, claimed: dict[str, object] | None = None) -> Server:
        self.server = server = Server(script, session=SESSION)
        server.claimed.update(claimed or {})
        assert server.run(self.election.steps()) == "closed"
        server.finish()
        return server

    def stop(self) -> Call:
        return Call(lambda: self.election.stop("closed"))


@pytest.fixture
def participant(client: KazooTransport, monkeypatch: pytest.MonkeyPatch) -> Participant:
    return Participant(client, monkeypatch)


def test_an_offer_is_n_with_the_host_name_in_a_root_made_persistent(
    participant: Participant,
) -> None:
    server = participant.play(
        Reply(offer_create(), error=NoNodeError()),
        Reply(OFFERS, error=NoNodeError()),
        Reply(
            CreateParent(ROOT, CreateMode.PERSISTENT), (ROOT, stat(1))
        ),  # Java requires the root; we make it
        Reply(offer_create(), offered(3)),
        # children that are not n_<int> take no part (Java's start() throws on them)
        Reply(OFFERS, ["config", offer(3), "n_notes", "lock-0000000001"]),
        participant.stop(),
        Reply(DeleteNode(at(offer(3), ROOT))),
    )
    assert participant.heard == [("elected", at(offer(3), ROOT)), ("deposed", "closed")]
    assert server.claimed == {}  # the claim went with the offer


def test_an_offer_watches_the_offer_before_its_own_past_foreign_children(
    participant: Participant,
) -> None:
    participant.play(
        Reply(offer_create(), offered(4)),
        Reply(OFFERS, [offer(4), "zk-notes-0000000003", offer(2), "config"]),
        Reply(GetData(at(offer(2), ROOT), watch=WATCHED), (b"other", stat(20, 9))),
        Fire(at(offer(2), ROOT)),
        Reply(OFFERS, [offer(4), "config"]),
        participant.stop(),
        Reply(DeleteNode(at(offer(4), ROOT))),
    )
    assert participant.heard == [("elected", at(offer(4), ROOT)), ("deposed", "closed")]


def test_after_an_expiry_a_new_offer_is_made_and_the_old_ones_claim_dropped(
    participant: Participant,
) -> None:
    server = participant.play(
        Reply(offer_create(), offered(3)),
        Reply(OFFERS, [offer(3)]),
        State(KazooState.LOST),
        State(KazooState.CONNECTED, session=NEW_SESSION),
        Reply(OFFERS, [offer(3)]),  # still listed, but the old session's
        Owes(at(offer(3), ROOT)),
        Reply(offer_create(), offered(5, NEW_SESSION)),
        Reply(OFFERS, [offer(5)]),
        participant.stop(),
        Reply(DeleteNode(at(offer(5), ROOT))),
    )
    assert participant.heard == [
        ("elected", at(offer(3), ROOT)),
        ("deposed", "session expired"),
        ("elected", at(offer(5), ROOT)),
        ("deposed", "closed"),
    ]
    assert server.claimed == {}


def test_a_lost_offer_is_found_among_the_sessions_unclaimed_offers_only(
    participant: Participant,
) -> None:
    mine_elsewhere = at(offer(1), ROOT)  # another participant's of this client
    server = participant.play(
        Reply(offer_create(), error=ConnectionLoss(), disconnects=True),
        Reply(OFFERS, error=ConnectionLoss()),
        State(KazooState.CONNECTED),
        Reply(OFFERS, [offer(2), offer(1), "config", offer(3)]),
        Reply(NodeExists(at(offer(2), ROOT)), stat(20, OTHER_SESSION)),  # not ours: untouched
        Reply(NodeExists(at(offer(3), ROOT)), stat(30, SESSION)),  # ours: the lost create's
        Reply(OFFERS, [offer(1), offer(2), offer(3)]),
        Reply(GetData(at(offer(2), ROOT), watch=WATCHED), (b"x", stat(20, OTHER_SESSION))),
        # the reconnect came during that step: it lists and watches again, once
        Reply(OFFERS, [offer(1), offer(2), offer(3)]),
        Reply(GetData(at(offer(2), ROOT), watch=WATCHED), (b"x", stat(20, OTHER_SESSION))),
        participant.stop(),
        Forgets(at(offer(2), ROOT)),
        Reply(DeleteNode(at(offer(3), ROOT))),
        claimed={mine_elsewhere: object()},
    )
    assert participant.heard == []
    assert list(server.claimed) == [mine_elsewhere]


def test_a_watch_that_fires_for_a_change_lists_again_and_watches_again(
    participant: Participant,
) -> None:
    participant.play(
        Reply(offer_create(), offered(4)),
        Reply(OFFERS, [offer(2), offer(4)]),
        Reply(GetData(at(offer(2), ROOT), watch=WATCHED), (b"a", stat(20, 9))),
        Fire(at(offer(2), ROOT), EventType.CHANGED),
        Reply(OFFERS, [offer(2), offer(4)]),
        Reply(GetData(at(offer(2), ROOT), watch=WATCHED), (b"b", stat(20, 9))),
        participant.stop(),
        Forgets(at(offer(2), ROOT)),
        Reply(DeleteNode(at(offer(4), ROOT))),
    )
    assert participant.heard == []


def test_a_create_between_an_expiry_and_the_next_session_waits_for_the_session_its_name_carries(
    engine: LockEngine,
) -> None:
    # kazoo has no session id between an expiry and the next session: the node is named with
    # the session it is made in, never with none
    server = ScriptedServer(
        [
            State(KazooState.CONNECTED, session=NEW_SESSION),
            Reply(create(NEW_SESSION), made(3, NEW_SESSION)),
            Reply(LISTING, [lock(3, NEW_SESSION)]),
        ],
        session=None,
        connected=False,
    )
    held = server.run(engine.acquire_steps(None))
    assert held == LockNode(at(lock(3, NEW_SESSION)), 30, NEW_SESSION)
    server.finish()
