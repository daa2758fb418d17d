"""The shared value's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

``SharedValue``'s steps and callbacks (:mod:`pycurator._recipes.shared_value`) against a script
of the server's answers: the node made with the seed (container parents), read with a watch,
read again on every change and reconnect (in the background, on the runner's transport), each
change told once, in zxid order; versioned writes as Curator 5.7+ makes them.
"""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.protocol.states import EventType, KazooState, ZnodeStat

from pycurator import IllegalTrySetVersionError, UnknownOutcomeError
from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol.requests import CreateNode, CreateParent, GetData, NodeExists, SetData
from pycurator._recipes.shared_value import UNREAD, SharedValueSteps, VersionedValue

from .scripted import WATCHED, Entry, Forgets, Reply, ScriptedServer, State, stat

PATH = "/app/value"
SEED = b"seed"


def node(version: int, zxid: int) -> ZnodeStat:
    return ZnodeStat(1, zxid, 0, 0, version, 0, 0, 0, 4, 0, 1)


def read(value: bytes, version: int, zxid: int) -> Reply:
    """The node read with our watch: ``value`` at ``version``, written at ``zxid``."""
    return Reply(GetData(PATH, watch=WATCHED), (value, node(version, zxid)))


@pytest.fixture
def client() -> KazooTransport:
    return transport_of(KazooClient(hosts="127.0.0.1:1", timeout=10.0))


class Started:
    """A shared value started on a node that exists (holding ``a`` at version 2, zxid 20), its
    news recorded: ``told`` (each change) and ``states`` (each connection state)."""

    def __init__(self, client: KazooTransport, *script: Entry) -> None:
        self.server = ScriptedServer(
            [Reply(CreateNode(PATH, SEED), error=NodeExistsError()), read(b"a", 2, 20), *script]
        )
        self.shared = SharedValueSteps(client, PATH, SEED)
        self.told: list[VersionedValue[bytes]] = []
        self.states: list[str] = []
        self.shared.on_change = self.told.append
        self.shared.on_state = self.states.append
        self.server.run(self.shared.start_steps())


def test_start_makes_the_node_with_the_seed_and_container_parents(client: KazooTransport) -> None:
    server = ScriptedServer(
        [
            Reply(CreateNode(PATH, SEED), error=NoNodeError()),
            Reply(CreateParent("/app"), ("/app", stat(1))),
            Reply(CreateNode(PATH, SEED), (PATH, node(0, 5))),
            read(SEED, 0, 5),
        ]
    )
    shared = SharedValueSteps(client, PATH, SEED)
    assert shared.current == VersionedValue(UNREAD, SEED, UNREAD)  # the seed, before a read
    server.run(shared.start_steps())
    assert shared.current == VersionedValue(0, SEED, 5)
    assert server.listeners  # following the connection


def test_a_change_by_anyone_is_read_again_and_told_once(client: KazooTransport) -> None:
    started = Started(client, read(b"b", 3, 30), read(b"c", 4, 40))
    started.server.fire(PATH, EventType.CHANGED)
    assert started.shared.current == VersionedValue(3, b"b", 30)
    assert started.told == [VersionedValue(3, b"b", 30)]
    started.server.fire(PATH, EventType.CHANGED)
    assert started.told[-1] == VersionedValue(4, b"c", 40)


def test_a_reconnect_reads_again_and_tells_only_what_is_new(client: KazooTransport) -> None:
    started = Started(client, read(b"a", 2, 20), read(b"z", 9, 90))
    started.server.change(KazooState.SUSPENDED)
    started.server.change(KazooState.CONNECTED)  # nothing changed meanwhile: nothing told
    assert started.told == []
    started.server.change(KazooState.SUSPENDED)
    started.server.change(KazooState.CONNECTED)  # changed while we were away
    assert started.told == [VersionedValue(9, b"z", 90)]
    assert started.states == ["SUSPENDED", "CONNECTED"] * 2


def test_a_read_older_than_the_value_had_changes_nothing(client: KazooTransport) -> None:
    started = Started(client, read(b"old", 1, 10))
    started.server.fire(PATH, EventType.CHANGED)
    assert started.shared.current == VersionedValue(2, b"a", 20)
    assert started.told == []


def test_a_deleted_node_is_watched_until_it_is_made_again(client: KazooTransport) -> None:
    started = Started(
        client,
        Reply(GetData(PATH, watch=WATCHED), error=NoNodeError()),
        Reply(NodeExists(PATH, WATCHED), None),
        read(b"again", 0, 50),
    )
    started.server.fire(PATH, EventType.DELETED)
    assert started.told == [] and started.shared.current.value == b"a"
    started.server.fire(PATH, EventType.CREATED)
    assert started.told == [VersionedValue(0, b"again", 50)]


def test_our_own_write_is_told_to_our_listeners_by_the_watch(client: KazooTransport) -> None:
    started = Started(client, Reply(SetData(PATH, b"mine"), node(3, 30)), read(b"mine", 3, 30))
    started.server.run(started.shared.set_steps(b"mine"))
    assert started.shared.current == VersionedValue(3, b"mine", 30)
    assert started.told == []
    started.server.fire(PATH, EventType.CHANGED)
    assert started.told == [VersionedValue(3, b"mine", 30)]


def test_try_set_writes_at_the_version_read(client: KazooTransport) -> None:
    started = Started(client, Reply(SetData(PATH, b"b", 2), node(3, 30)))
    assert started.server.run(started.shared.try_set_steps(VersionedValue(2, b"a", 20), b"b"))
    assert started.shared.current == VersionedValue(3, b"b", 30)


def test_try_set_over_a_stale_value_is_false_at_once(client: KazooTransport) -> None:
    started = Started(client)
    assert not started.server.run(started.shared.try_set_steps(VersionedValue(2, b"a", 19), b"b"))
    assert not started.server.run(started.shared.try_set_steps(VersionedValue(2, b"x", 20), b"b"))
    assert started.server.sent[-1] == GetData(
        PATH, watch=started.shared._on_event
    )  # nothing written


def test_try_set_refused_by_the_server_reads_the_value_again(client: KazooTransport) -> None:
    started = Started(
        client, Reply(SetData(PATH, b"b", 2), error=BadVersionError()), read(b"c", 3, 30)
    )
    assert not started.server.run(started.shared.try_set_steps(VersionedValue(2, b"a", 20), b"b"))
    assert started.shared.current == VersionedValue(3, b"c", 30)


def test_try_set_at_an_overflowed_version_is_refused_as_curator_5_7_does(
    client: KazooTransport,
) -> None:
    server = ScriptedServer(
        [Reply(CreateNode(PATH, SEED), error=NodeExistsError()), read(b"a", -1, 20)]
    )
    shared = SharedValueSteps(client, PATH, SEED)
    server.run(shared.start_steps())
    with pytest.raises(IllegalTrySetVersionError, match=r"overflowed Stat\.version -1"):
        server.run(shared.try_set_steps(shared.current, b"b"))


def test_try_set_whose_lost_answer_cannot_be_settled_says_so(client: KazooTransport) -> None:
    started = Started(
        client,
        Reply(SetData(PATH, b"b", 2), error=ConnectionLoss(), disconnects=True),
        State(KazooState.CONNECTED),
        read(b"b", 3, 30),  # a reconnect reads again, in the background
        Reply(SetData(PATH, b"b", 2), error=BadVersionError()),
        Reply(GetData(PATH), (b"b", node(3, 30))),
    )
    with pytest.raises(UnknownOutcomeError, match="try_set at /app/value"):
        started.server.run(started.shared.try_set_steps(VersionedValue(2, b"a", 20), b"b"))


def test_close_stops_the_news_and_drops_the_watch(client: KazooTransport) -> None:
    started = Started(client, Forgets(PATH))
    started.server.run(started.shared.close_steps())
    started.server.finish()
    assert not started.shared.active
    with pytest.raises(RuntimeError, match="not started"):
        started.server.run(started.shared.set_steps(b"b"))
