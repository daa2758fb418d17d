"""LeaderLatch on a real server: one leader, hand-over in queue order, watches, faults, input."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoChildrenForEphemeralsError

from pycurator import CloseMode, LeaderLatch, LockLostError, Participant
from pycurator._cores.latch import LatchCore
from pycurator._protocol.drivers import StandardDriver
from pycurator._protocol.waits import DELETE_WAIT
from pycurator._protocol.wire import LATCH_NAME, protected_id, sort_children
from pycurator._recipes.hold_monitor import HoldMonitor
from pycurator._recipes.lock_nodes import LockNode
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import (
    ClientFactory,
    FaultProxy,
    ZooKeeperServer,
    expire_kazoo_session,
    four_letter_word,
    paths_by_session,
    split_hosts,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import watched_paths
from .support import SOON, STEADY_RECONNECT, children, eventually, restart_behind

pytestmark = pytest.mark.usefixtures("zk_no_orphans")

U1 = "0f4e3b9e-8a51-4c1e-9d7a-31d3a1c0b7aa"
U2 = "5b2d4c1e-0a9f-4b7e-8c3d-2e1f0a9b8c7d"


def test_latch_children_sort_by_the_part_after_latch_and_each_watches_its_predecessor() -> None:
    names = [
        f"_c_{U1}-latch-0000000012",
        "latch-0000000010",  # an unprotected name (an old Curator) takes part too
        f"_c_{U2}-latch-0000000011",
    ]
    ordered = sort_children(names, LATCH_NAME)
    assert ordered == [names[1], names[2], names[0]]
    driver = StandardDriver(LATCH_NAME)
    assert driver.decide(ordered, names[1]).holds
    assert driver.decide(ordered, names[0]).watch == names[2]
    assert driver.decide(ordered, names[2]).watch == names[1]


class Recorder:
    """A latch listener that records what it hears, in order."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.changed = threading.Event()

    def is_leader(self) -> None:
        self.heard.append("is_leader")
        self.changed.set()

    def not_leader(self) -> None:
        self.heard.append("not_leader")
        self.changed.set()


@pytest.fixture
def latches() -> Iterator[list[LeaderLatch]]:
    """Latches a test starts; those still open are closed afterwards."""
    made: list[LeaderLatch] = []
    yield made
    for latch in made:
        with contextlib.suppress(RuntimeError):  # closed by the test already
            latch.close()


def start(made: list[LeaderLatch], latch: LeaderLatch) -> LeaderLatch:
    made.append(latch)
    latch.start()
    return latch


def queued(observer: KazooClient, path: str, count: int) -> None:
    eventually(lambda: len(children(observer, path)) == count, what=f"{count} latch nodes")


def test_one_leader_among_several_and_everyone_sees_the_same_participants(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    first = start(latches, LeaderLatch(zk_client_factory(), path, "a"))
    assert first.wait(SOON)
    observer = zk_client_factory()
    others = []
    for count, i in enumerate(("b", "c"), start=2):
        # A start returns before its node is made: b must be queued before c starts.
        others.append(start(latches, LeaderLatch(zk_client_factory(), path, i)))
        queued(observer, path, count)
    everyone = [first, *others]
    expected = [Participant("a", True), Participant("b", False), Participant("c", False)]
    for latch in everyone:
        eventually(lambda latch=latch: latch.our_path is not None)  # type: ignore[misc]
        assert latch.participants() == expected
        assert latch.leader() == Participant("a", True)
    assert [latch.has_leadership() for latch in everyone] == [True, False, False]
    assert not others[0].wait(0.1)
    name = first.our_path.rsplit("/", 1)[-1]  # type: ignore[union-attr]
    assert protected_id(name) is not None and name[40:50] == "latch-0000"
    data, stat = observer.get(first.our_path)
    assert data == b"a" and stat.ephemeralOwner == first.client.client_id[0]


def test_closing_the_leader_hands_over_in_queue_order(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    order = []
    for n in range(4):
        order.append(start(latches, LeaderLatch(zk_client_factory(), path, f"p{n}")))
        queued(observer, path, n + 1)
    for n, latch in enumerate(order):
        assert latch.wait(SOON)
        for later in order[n + 1 :]:
            assert not later.has_leadership()
        assert latch.leader() == Participant(f"p{n}", True)
        latch.close()
        assert not latch.has_leadership()
    assert children(observer, path) == []


def test_only_the_predecessor_is_watched(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    latches: list[LeaderLatch],
) -> None:
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    clients = [zk_client_factory() for _ in range(4)]
    for n, client in enumerate(clients):
        start(latches, LeaderLatch(client, path, f"p{n}"))
        queued(observer, path, n + 1)
    nodes = [f"{path}/{name}" for name in sort_children(children(observer, path), LATCH_NAME)]

    def watches() -> list[list[str]]:
        host, port = split_hosts(zk_server.hosts)[0]
        by_session = paths_by_session(four_letter_word(host, port, "wchc"))
        return [sorted(by_session.get(f"0x{c.client_id[0]:x}", [])) for c in clients]

    # the leader watches nothing of the latch's (its own node from the hold monitor at most);
    # each other participant watches the node right in front of it, and only that
    expected = [[nodes[n - 1]] if n else [] for n in range(4)]
    eventually(
        lambda: (
            [[p for p in w if p != nodes[0]] if n == 0 else w for n, w in enumerate(watches())]
            == expected
        ),
        what="each participant watching its predecessor only",
    )
    # closing a waiter drops its watch on the server too; so does the hand-over to the next
    latches[2].close()
    eventually(lambda: watches()[2] == [], what="a closed waiter's watch dropped")
    latches[0].close()
    assert latches[1].wait(SOON)
    eventually(lambda: watches()[3] == [nodes[1]], what="the last waiter now watches the leader")
    latches[1].close()
    assert latches[3].wait(SOON)
    latches[3].close()
    eventually(lambda: watches() == [[], [], [], []], what="no watch left after every close")


def test_listeners_hear_each_change_and_close_modes_decide_the_last_word(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    silent, notify = Recorder(), Recorder()
    first = LeaderLatch(zk_client_factory(), path, "silent")
    first.add_listener(silent)
    start(latches, first)
    assert first.wait(SOON)
    second = LeaderLatch(zk_client_factory(), path, "notify", close_mode=CloseMode.NOTIFY_LEADER)
    second.add_listener(notify)
    start(latches, second)
    eventually(lambda: silent.heard == ["is_leader"])
    first.close()  # SILENT: the listener hears nothing more
    assert first.lost_event.is_set()  # the notice is given whatever the mode
    eventually(lambda: notify.heard == ["is_leader"])
    second.close()  # NOTIFY_LEADER: not_leader() comes last
    eventually(lambda: notify.heard == ["is_leader", "not_leader"])
    assert silent.heard == ["is_leader"]


def test_a_leaders_session_expiry_hands_over_and_the_latch_rejoins_with_a_new_node(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    leader_client = zk_client_factory()
    leader = LeaderLatch(leader_client, path, "leader")
    heard = Recorder()
    reasons: list[str] = []
    leader.add_listener(heard)
    leader.on_lost(lambda latch, reason: reasons.append(reason))
    start(latches, leader)
    assert leader.wait(SOON)
    token = leader.fencing_token
    follower = start(latches, LeaderLatch(zk_client_factory(), path, "follower"))
    observer = zk_client_factory()
    queued(observer, path, 2)
    old_node = leader.our_path
    expire_kazoo_session(leader_client)
    assert leader.lost_event.wait(SOON)
    assert follower.wait(SOON)
    eventually(lambda: heard.heard == ["is_leader", "not_leader"])
    # the lost callbacks are told after the listeners, on the same worker
    eventually(lambda: bool(reasons), what="the lost callback told")
    assert len(reasons) == 1  # told once: the suspension came first, then the expiry
    with pytest.raises(LockLostError):
        leader.check()
    # the latch queues again, in its new session, behind the new leader
    eventually(
        lambda: leader.our_path not in (None, old_node) and len(children(observer, path)) == 2,
        what="the expired latch rejoined",
    )
    assert [p.id for p in follower.participants()] == ["follower", "leader"]
    follower.close()
    assert leader.wait(SOON)
    assert leader.fencing_token > token
    leader.check()
    eventually(lambda: heard.heard == ["is_leader", "not_leader", "is_leader"])


def test_a_deleted_leader_node_is_replaced_and_leadership_passes_on(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    leader = start(latches, LeaderLatch(zk_client_factory(), path, "a"))
    assert leader.wait(SOON)
    follower = start(latches, LeaderLatch(zk_client_factory(), path, "b"))
    observer = zk_client_factory()
    queued(observer, path, 2)
    node = leader.our_path
    observer.delete(node)
    assert follower.wait(SOON)
    assert leader.lost_event.wait(SOON)
    eventually(lambda: leader.our_path not in (None, node), what="a new node for the latch")
    queued(observer, path, 2)
    assert [p.id for p in observer_participants(leader)] == ["b", "a"]


def observer_participants(latch: LeaderLatch) -> list[Participant]:
    return latch.participants()


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


def test_a_dropped_connection_suspends_leadership_until_the_node_is_checked_again(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    leader = start(latches, LeaderLatch(client, path, "a"))
    assert leader.wait(SOON)
    node, session = leader.our_path, client.client_id[0]
    front.drop_connections()
    assert leader.lost_event.wait(SOON)  # standard policy: a suspended connection counts
    assert leader.wait(SOON)  # same session, same node, first again: leads again
    assert leader.our_path == node and client.client_id[0] == session
    assert not leader.lost_event.is_set()


def test_close_with_the_server_unreachable_returns_at_once_and_the_node_goes_later(
    front: FaultProxy, zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    observer = zk_client_factory()
    client = zk_client_factory(hosts=front.hosts, timeout=10.0, connection_retry=STEADY_RECONNECT)
    latch = start(latches, LeaderLatch(client, path, "a"))
    assert latch.wait(SOON)
    node = latch.our_path
    front.blackhole()
    front.drop_connections()
    eventually(lambda: not client.connected, what="client disconnected")
    began = time.monotonic()
    latch.close()
    assert time.monotonic() - began < DELETE_WAIT  # no wait for the server at all
    assert observer.exists(node) is not None
    front.heal()
    eventually(lambda: observer.exists(node) is None, what="the deferred delete went through")


def test_start_twice_close_twice_and_use_before_start_raise(
    zk: KazooClient, zk_path: str, latches: list[LeaderLatch]
) -> None:
    latch = LeaderLatch(zk, f"{zk_path}/election", "a")
    with pytest.raises(RuntimeError, match="not started"):
        latch.wait(0)
    with pytest.raises(RuntimeError, match="has not been started"):
        latch.close()
    start(latches, latch)
    with pytest.raises(RuntimeError, match="more than once"):
        latch.start()
    assert latch.wait(SOON)
    latch.close()
    with pytest.raises(RuntimeError, match="Already closed"):
        latch.close()
    with pytest.raises(RuntimeError, match="more than once"):
        latch.start()
    with pytest.raises(RuntimeError, match="closed"):
        latch.wait(0)
    assert not latch.has_leadership()
    with pytest.raises(LockLostError):
        _ = latch.fencing_token


def test_the_context_manager_starts_and_closes(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/election"
    with LeaderLatch(zk, path, "a") as latch:
        assert latch.wait(SOON)
        assert latch.participants() == [Participant("a", True)]
    assert not latch.has_leadership()
    assert children(zk, path) == []


def test_a_closed_latch_wakes_its_waiters(
    zk_client_factory: ClientFactory, zk_path: str, latches: list[LeaderLatch]
) -> None:
    path = f"{zk_path}/election"
    first = start(latches, LeaderLatch(zk_client_factory(), path, "a"))
    assert first.wait(SOON)
    second = start(latches, LeaderLatch(zk_client_factory(), path, "b"))
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(second.wait()))
    waiter.start()
    queued(zk_client_factory(), path, 2)
    second.close()
    waiter.join(SOON)
    assert result == [False]
    first.close()


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("election",), {}, ValueError, "must start with / character"),
        (("/a//b",), {}, ValueError, "empty node name"),
        (("/election", 7), {}, TypeError, "id must be a str"),
        (("/election", "\ud800"), {}, ValueError, "UTF-8"),
        (("/election", "x" * 0x100000), {}, ValueError, "node data"),
        (("/election",), {"close_mode": "silent"}, TypeError, "close_mode"),
        (("/election",), {"connection_policy": "lax"}, ValueError, "connection_policy"),
    ],
)
def test_bad_input_is_refused_before_anything_is_made(
    zk: KazooClient,
    zk_path: str,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    error: type[Exception],
    match: str,
) -> None:
    path = args[0]
    full = f"{zk_path}{path}" if isinstance(path, str) and path.startswith("/") else path
    with pytest.raises(error, match=match):
        LeaderLatch(zk, full, *args[1:], **kwargs)  # type: ignore[arg-type]
    assert zk.exists(zk_path) is None


def test_a_non_client_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="KazooClient"):
        LeaderLatch("zk", "/election")


def test_a_latch_under_an_ephemeral_node_raises_the_servers_error_from_wait(
    zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path, ephemeral=True, makepath=True)
    latch = LeaderLatch(zk, f"{zk_path}/election", "a")
    latch.start()
    try:
        with pytest.raises(NoChildrenForEphemeralsError):
            latch.wait(SOON)
    finally:
        latch.close()
    assert zk.get_children(zk_path) == []
    zk.delete(zk_path)


def test_a_path_that_is_not_a_str_is_a_type_error(zk: KazooClient) -> None:
    with pytest.raises(TypeError, match="path must be a str"):
        LeaderLatch(zk, 42)  # type: ignore[arg-type]


def test_a_server_restart_keeps_one_leader_and_the_same_queue(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    with ZooKeeperServer() as server, FaultProxy(server.hosts) as proxy:
        clients = [
            zk_client_factory(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
            for _ in range(2)
        ]
        leader = LeaderLatch(clients[0], "/election", "a")
        follower = LeaderLatch(clients[1], "/election", "b")
        try:
            leader.start()
            assert leader.wait(SOON)
            follower.start()
            queued(clients[0], "/election", 2)
            eventually(lambda: follower.our_path is not None, what="the follower's node known")
            nodes = (leader.our_path, follower.our_path)
            restart_behind(proxy, server)  # the sessions outlive the restart
            assert leader.lost_event.wait(SOON)  # suspended meanwhile (standard policy)
            assert leader.wait(SOON)
            assert not follower.has_leadership()
            assert (leader.our_path, follower.our_path) == nodes
            assert follower.participants() == [Participant("a", True), Participant("b", False)]
        finally:
            follower.close()
            leader.close()
        assert children(clients[0], "/election") == []


def test_under_the_fast_handler_latches_are_elected_on_the_thread_that_reads_the_news(
    zk_client_factory: ClientFactory, zk_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An election's steps resume where a lock's waiter is woken: on the connection thread that
    reads the create's answer (or the starting thread, if it was read already), the
    predecessor's deletion and the listing after it, with no hand-off to one of kazoo's
    workers on the way to leadership."""
    client = zk_client_factory(handler=FastThreadingHandler())
    elected_on: list[threading.Thread] = []
    elected = LatchCore._elected

    def recording(core: LatchCore, node: LockNode, monitor: HoldMonitor) -> None:
        elected_on.append(threading.current_thread())
        elected(core, node, monitor)

    monkeypatch.setattr(LatchCore, "_elected", recording)
    path = f"{zk_path}/election"
    first = LeaderLatch(client, path, "first")
    second = LeaderLatch(client, path, "second")
    first.start()
    assert first.wait(SOON)
    second.start()
    eventually(lambda: first.our_path in watched_paths(client), what="the second watching")
    first.close()
    assert second.wait(SOON)
    second.close()
    connection_thread = client._connection._connection_routine
    # the first may find its create answered before its steps look for the answer (a slow
    # starting thread): they go on at once on that thread, never on one of kazoo's workers
    assert elected_on[0] in (connection_thread, threading.current_thread())
    assert elected_on[1:] == [connection_thread]
