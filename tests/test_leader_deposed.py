"""A leader cut off from ZooKeeper is told so on time, and leads again once reconnected, from
threads and from asyncio tasks alike, on a real server behind a fault proxy (docs/leader.md,
"Connection trouble"): under the ``standard`` policy at once (``lost_event`` set, then
``not_leader()`` and the ``on_lost`` callbacks), under the ``session`` policy a session timeout
after the suspension, even when the leader's steps were listing the children again as the
connection went (the explorer found such a leader told only once the connection was back, or
never). The same protocol runs on a scripted server in test_election_protocol.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

import pycurator.aio.zkrecipes
import pycurator.zkrecipes
from pycurator._protocol.transport import SESSION_EXPIRED
from pycurator.testing import ClientFactory, FaultProxy

from .parity.actors import Actor
from .parity.fronts import FRONTS, Front
from .support import SOON, STEADY_RECONNECT, cut, eventually, session_of

pytestmark = pytest.mark.usefixtures("zk_no_orphans")

#: How long after the cut a ``standard``-policy leader may be told ("at once": kazoo hears the
#: connection closed at once; the rest allows a loaded machine's threads and loop).
AT_ONCE = 2.0
#: The session timeout of a ``session``-policy leader's client, in seconds (granted as asked).
TIMEOUT = 4.0
#: How late after its session timeout such a leader may be told (a noisy machine's timer); the
#: leader's listing, had it waited for the connection, would be told only once it came back.
LATE = 3.0
#: Seconds each chunk takes through the proxy while the leader lists again: its listing is
#: still on its way when the connection is cut.
SLOW = 0.5


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    """One front end; its participants and clients cleaned up after the test."""
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


class Told:
    """What a leader's user is told, each with when: its listener's calls and its ``on_lost``
    callbacks (on whatever thread or loop the front end runs them)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self._changed = threading.Condition()

    def _add(self, what: str) -> None:
        with self._changed:
            self.calls.append((what, time.monotonic()))
            self._changed.notify_all()

    def is_leader(self) -> None:
        self._add("is_leader")

    def not_leader(self) -> None:
        self._add("not_leader")

    def on_lost(self, _leader: Any, reason: str) -> None:
        self._add(f"lost: {reason}")

    def when(self, what: str, nth: int = 1, timeout: float = SOON) -> float:
        """When ``what`` was told the ``nth`` time; AssertionError after ``timeout``."""

        def times() -> list[float]:
            return [at for told, at in self.calls if told == what]

        with self._changed:
            if not self._changed.wait_for(lambda: len(times()) >= nth, timeout):
                raise AssertionError(f"{what} not told {nth} times within {timeout}s: {self}")
            return times()[nth - 1]

    def __repr__(self) -> str:
        return repr([what for what, _ in self.calls])


def leader_of(front: Front, recipe: str, client: KazooClient, path: str, **options: Any) -> Any:
    """``recipe`` (``LeaderLatch``, or ZooKeeper's ``LeaderElection``) of ``front``, leading."""
    if recipe == "LeaderElection":
        module = pycurator.aio.zkrecipes if front.name == "asyncio" else pycurator.zkrecipes
        return module.LeaderElection(client, path, "a")
    return front.make("LeaderLatch", client, path, "a", **options)


def lost_event_set(leader: Any) -> bool:
    return bool(leader.lost_event.is_set())


def start(actor: Actor, told: Told, listens: bool) -> None:
    if listens:
        actor.do("add_listener", told)
    actor.do("on_lost", told.on_lost)
    actor.do("start")
    assert actor.do("wait", SOON) is True


@pytest.mark.parametrize("recipe", ["LeaderLatch", "LeaderElection"])
def test_a_leader_cut_off_is_told_at_once_and_leads_again_on_its_node_once_back(
    front: Front, proxy: FaultProxy, zk_path: str, recipe: str
) -> None:
    client = front.client(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    listens = recipe == "LeaderLatch"
    told = Told()
    leader = front.actor(leader_of(front, recipe, client, f"{zk_path}/election"))
    start(leader, told, listens)
    node, session = leader.do("our_path"), session_of(client)
    began = cut(proxy)
    lost = told.when("lost: connection suspended")
    assert lost - began < AT_ONCE
    assert leader.do(lost_event_set)
    assert leader.do("has_leadership") is False
    if listens:
        assert told.when("not_leader") <= lost  # the listeners first, then the callbacks
    proxy.heal()
    # the same session, the same node, first again: it leads again by itself
    assert leader.do("wait", SOON) is True
    assert (leader.do("our_path"), session_of(client)) == (node, session)
    assert not leader.do(lost_event_set)
    if listens:
        told.when("is_leader", 2)
        assert [what for what, _ in told.calls] == [
            "is_leader",
            "not_leader",
            "lost: connection suspended",
            "is_leader",
        ]
    leader.do("close")


def test_a_session_leader_listing_again_as_it_is_cut_off_is_told_when_its_session_ends(
    front: Front, proxy: FaultProxy, zk_path: str
) -> None:
    client = front.client(hosts=proxy.hosts, timeout=TIMEOUT, connection_retry=STEADY_RECONNECT)
    told = Told()
    path = f"{zk_path}/election"
    leader = front.actor(leader_of(front, "LeaderLatch", client, path, connection_policy="session"))
    start(leader, told, True)
    node, session = leader.do("our_path"), session_of(client)
    states: list[str] = []
    client.add_listener(states.append)
    proxy.latency = SLOW
    proxy.drop_connections()  # the session policy leads on through a suspension
    back = [KazooState.SUSPENDED, KazooState.CONNECTED]
    eventually(lambda: states[-2:] == back, what="suspended, then reconnected")
    time.sleep(SLOW / 2)  # the leader lists the children again, as Curator's latch does
    began = cut(proxy)  # as its listing is still on its way
    lost = told.when(f"lost: {SESSION_EXPIRED}", timeout=TIMEOUT + LATE)
    assert TIMEOUT - 0.2 <= lost - began <= TIMEOUT + LATE
    assert told.when("not_leader") <= lost
    assert leader.do(lost_event_set) and leader.do("has_leadership") is False
    proxy.latency = 0.0
    proxy.heal()
    # the session was given up: the latch rejoins in a new one, with a new node, and leads
    assert leader.do("wait", SOON) is True
    assert session_of(client) != session and leader.do("our_path") != node
    assert told.when("is_leader", 2) > lost
    assert not leader.do(lost_event_set)
    eventually(lambda: client.exists(node) is None, what="the old session's node gone")
    leader.do("close")
