"""Leaving an election with Java Curator as the next participant, and queued attempts through
a connection blip or a session's end in both languages: the rules pycurator follows are
Curator's, and its shutdown never lets Java lead while a Python leader's ``lead`` still runs."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pycurator import LeaderSelector, Leadership, aio
from pycurator.testing import (
    CURATOR,
    ClientFactory,
    FaultProxy,
    curator_client,
    expire_kazoo_session,
    expire_session,
    jclass,
    leader_class,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.aio_support import run
from tests.support import SOON, STEADY_RECONNECT, children, eventually

pytestmark = pytest.mark.usefixtures("no_orphans")


class JavaTurns:
    """A Curator ``LeaderSelector`` on ``path`` whose listener is Curator's recommended one
    (``LeaderSelectorListenerAdapter``: a connection error state cancels the attempt, queued
    or leading), and that notes when it began to lead."""

    def __init__(self, curator: Any, path: str, participant_id: str) -> None:
        import jpype

        self.led = threading.Event()
        self.led_at: float | None = None
        self._give_up = threading.Event()
        cancel = leader_class("CancelLeadershipException")

        def take(client: Any) -> None:
            self.led_at = time.monotonic()
            self.led.set()
            self._give_up.wait(SOON)

        def state_changed(client: Any, state: Any) -> None:
            if client.getConnectionStateErrorPolicy().isErrorState(state):
                raise cancel()

        listener = jpype.JProxy(
            "org.apache.curator.framework.recipes.leader.LeaderSelectorListener",
            dict={"takeLeadership": take, "stateChanged": state_changed},
        )
        self.java = leader_class("LeaderSelector")(curator, path, listener)
        self.java.setId(participant_id)

    def give_up(self) -> None:
        self._give_up.set()


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for selector in made:
        with contextlib.suppress(Exception):
            selector.close()


def test_java_leads_only_after_a_closed_python_leaders_lead_returned(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str, closing: list[Any]
) -> None:
    path = f"{zk_path}/leader"
    python_client = zk_client_factory()
    started = threading.Event()
    returned: list[float] = []

    def lead(leadership: Leadership) -> None:
        started.set()
        leadership.lost_event.wait()
        time.sleep(1.0)  # finishing its work after the term ended
        returned.append(time.monotonic())

    python = LeaderSelector(python_client, path, lead, "python")
    python.start()
    assert started.wait(SOON)
    java = JavaTurns(curator, path, "java")
    closing.append(java.java)
    java.java.start()
    eventually(lambda: len(children(python_client, path)) == 2, what="java queued")
    assert python.close() is True
    python_client.stop()  # the usual shutdown: close, then stop
    assert java.led.wait(SOON)
    assert java.led_at is not None and returned and java.led_at >= returned[0]
    java.give_up()


def test_java_leads_only_after_an_awaited_close_ended_the_python_lead(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str, closing: list[Any]
) -> None:
    path = f"{zk_path}/leader"
    python_client = zk_client_factory()
    java = JavaTurns(curator, path, "java")
    closing.append(java.java)
    ended: list[float] = []

    async def main() -> None:
        started = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.shield(asyncio.sleep(0.5))  # a last write before letting go
                ended.append(time.monotonic())

        python = aio.LeaderSelector(python_client, path, lead, "python")
        await python.start()
        await asyncio.wait_for(started.wait(), SOON)
        java.java.start()
        while len(children(python_client, path)) < 2:
            await asyncio.sleep(0.02)
        assert await python.close() is True

    run(main())
    python_client.stop()
    assert java.led.wait(SOON)
    assert java.led_at is not None and ended and java.led_at >= ended[0]
    java.give_up()


def test_a_blip_ends_the_queued_attempts_of_both_languages_alike(
    zk_client_factory: ClientFactory,
    front: FaultProxy,
    zk_path: str,
    closing: list[Any],
) -> None:
    """Curator's standard error policy cancels a queued selector's attempt on SUSPENDED, and
    pycurator's standard policy does the same: after a blip neither leads until requeued."""
    path = f"{zk_path}/leader"
    give_up, led = threading.Event(), threading.Event()

    def leader_lead(leadership: Leadership) -> None:
        give_up.wait(SOON)

    def python_lead(leadership: Leadership) -> None:
        led.set()

    leader = LeaderSelector(zk_client_factory(), path, leader_lead, "leader")
    closing.append(leader)
    leader.start()
    eventually(leader.has_leadership, what="the leader leads")
    python_client = zk_client_factory(
        hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT
    )
    python = LeaderSelector(python_client, path, python_lead, "python")
    closing.append(python)
    with curator_client(front.hosts) as java_client:
        java = JavaTurns(java_client, path, "java")
        python.start()
        java.java.start()
        observer = zk_client_factory()
        eventually(lambda: len(children(observer, path)) == 3, what="both queued")
        front.drop_connections()
        eventually(lambda: len(children(observer, path)) == 1, what="both queued nodes deleted")
        give_up.set()
        eventually(lambda: children(observer, path) == [], what="the leader's term over")
        assert not led.wait(0.5) and not java.led.wait(0.5)  # out of the queue: nobody leads
        assert python.requeue() is True and bool(java.java.requeue()) is True
        eventually(lambda: led.is_set() or java.led.is_set(), what="a requeued selector leads")
        java.give_up()
        java.java.close()
    assert python.close(SOON)


@contextlib.contextmanager
def session_policy_curator(hosts: str) -> Iterator[tuple[Any, threading.Event]]:
    """A started Curator client built as ``new_curator`` builds one, but with
    ``SessionConnectionStateErrorPolicy`` (only LOST is an error state), and an event set once
    its connection state listeners were told LOST; the client is closed on exit."""
    import jpype

    lost = threading.Event()
    states = jclass(f"{CURATOR}.framework.state.ConnectionState")

    def state_changed(client: Any, state: Any) -> None:
        if state == states.LOST:
            lost.set()

    client = (
        jclass(f"{CURATOR}.framework.CuratorFrameworkFactory")
        .builder()
        .connectString(hosts)
        .sessionTimeoutMs(10_000)
        .connectionTimeoutMs(10_000)
        .retryPolicy(jclass(f"{CURATOR}.retry.ExponentialBackoffRetry")(100, 10))
        .ensembleTracker(False)
        .connectionStateErrorPolicy(
            jclass(f"{CURATOR}.framework.state.SessionConnectionStateErrorPolicy")()
        )
        .build()
    )
    try:
        client.getConnectionStateListenable().addListener(
            jpype.JProxy(
                f"{CURATOR}.framework.state.ConnectionStateListener",
                dict={"stateChanged": state_changed},
            )
        )
        client.start()
        unit = jclass("java.util.concurrent.TimeUnit")
        assert client.blockUntilConnected(int(SOON * 1000), unit.MILLISECONDS)
        yield client, lost
    finally:
        client.close()


def test_a_session_expiry_ends_the_queued_attempts_of_both_languages_under_the_session_policy(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    closing: list[Any],
) -> None:
    """Curator's ``testKillSessionThenCloseShouldElectNewLeader`` rule for a queued selector,
    under the policy where only the session's end is an error: a Java selector (its client's
    ``SessionConnectionStateErrorPolicy``) and a Python one (``connection_policy="session"``),
    queued behind a leader, leave the queue when their sessions expire, do not lead when the
    leader's term ends, and lead in turn once requeued."""
    path = f"{zk_path}/leader"
    observer = zk_client_factory()
    give_up, led, python_done = threading.Event(), threading.Event(), threading.Event()

    def leader_lead(leadership: Leadership) -> None:
        give_up.wait(SOON)

    def python_lead(leadership: Leadership) -> None:
        led.set()
        python_done.wait(SOON)

    leader = LeaderSelector(zk_client_factory(), path, leader_lead, "leader")
    closing.append(leader)
    leader.start()
    eventually(leader.has_leadership, what="the leader leads")
    python_client = zk_client_factory()
    python = LeaderSelector(python_client, path, python_lead, "python", connection_policy="session")
    closing.append(python)
    with session_policy_curator(zk_server.hosts) as (java_client, java_lost):
        java = JavaTurns(java_client, path, "java")
        try:
            python.start()
            java.java.start()
            eventually(lambda: len(children(observer, path)) == 3, what="both queued")
            expire_kazoo_session(python_client)
            expire_session(zk_server.hosts, *session_of(java_client))
            assert java_lost.wait(SOON)
            eventually(lambda: len(children(observer, path)) == 1, what="both queued nodes gone")
            give_up.set()
            eventually(lambda: children(observer, path) == [], what="the leader's term over")
            assert not led.wait(1.0) and not java.led.is_set()  # out of the queue: nobody leads
            assert python.requeue() is True
            assert led.wait(SOON)
            assert bool(java.java.requeue()) is True
            eventually(lambda: len(children(observer, path)) == 2, what="java queued again")
            assert not java.led.is_set()  # behind the Python leader
            python_done.set()
            assert java.led.wait(SOON)
        finally:
            java.give_up()
            with contextlib.suppress(Exception):  # already closed
                java.java.close()
    assert python.close(SOON) and leader.close(SOON)
    eventually(lambda: children(observer, path) == [], what="nothing left on the server")
