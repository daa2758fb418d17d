"""A queued (not leading) selector through connection trouble follows Curator's rules: under the
``standard`` policy a suspended connection ends the queued attempt, under ``session`` only the
session's end does; the selector then leads only if requeued (or with ``auto_requeue``)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import pytest

from pycurator import LeaderSelector, Leadership, aio
from pycurator.testing import ClientFactory, FaultProxy, expire_kazoo_session

from .aio_support import run, until
from .support import SOON, STEADY_RECONNECT, children, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


class Turn:
    """A ``lead`` that leads until told to give up."""

    def __init__(self) -> None:
        self.led = threading.Event()
        self.give_up = threading.Event()

    def __call__(self, leadership: Leadership) -> None:
        self.led.set()
        while not self.give_up.is_set() and not leadership.lost_event.is_set():
            self.give_up.wait(0.05)


@pytest.fixture
def selectors() -> Iterator[list[LeaderSelector]]:
    made: list[LeaderSelector] = []
    yield made
    for selector in made:
        with contextlib.suppress(RuntimeError):  # closed by the test
            selector.close(SOON)


def queue_behind_a_leader(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    path: str,
    selectors: list[LeaderSelector],
    **options: object,
) -> tuple[Turn, LeaderSelector, Turn]:
    """A leader on a direct connection, and a selector queued behind it through ``proxy``."""
    leader_turn, queued_turn = Turn(), Turn()
    leader = LeaderSelector(zk_client_factory(), path, leader_turn, "leader")
    client = zk_client_factory(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    queued = LeaderSelector(client, path, queued_turn, "queued", **options)  # type: ignore[arg-type]
    selectors += [leader, queued]
    leader.start()
    assert leader_turn.led.wait(SOON)
    queued.start()
    eventually(lambda: len(children(client, path)) == 2, what="queued behind the leader")
    eventually(lambda: queued.our_path is not None, what="the queued selector knows its node")
    return leader_turn, queued, queued_turn


def test_a_connection_blip_ends_a_queued_attempt_under_the_standard_policy(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    zk_path: str,
    selectors: list[LeaderSelector],
) -> None:
    path = f"{zk_path}/leader"
    leader_turn, queued, queued_turn = queue_behind_a_leader(
        zk_client_factory, proxy, path, selectors
    )
    observer = zk_client_factory()
    proxy.drop_connections()
    eventually(lambda: len(children(observer, path)) == 1, what="the queued node deleted")
    leader_turn.give_up.set()
    eventually(lambda: children(observer, path) == [], what="the leader's term over")
    assert not queued_turn.led.wait(0.5)  # out of the queue: it does not lead
    assert queued.requeue() is True
    assert queued_turn.led.wait(SOON)


def test_a_connection_blip_keeps_a_queued_attempt_under_the_session_policy(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    zk_path: str,
    selectors: list[LeaderSelector],
) -> None:
    path = f"{zk_path}/leader"
    leader_turn, queued, queued_turn = queue_behind_a_leader(
        zk_client_factory, proxy, path, selectors, connection_policy="session"
    )
    node = queued.our_path
    proxy.drop_connections()
    leader_turn.give_up.set()
    assert queued_turn.led.wait(SOON)
    assert queued.our_path == node  # the same place in the queue
    assert queued.requeue() is False  # already leading


def test_a_session_expiry_ends_a_queued_attempt_under_the_session_policy(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    zk_path: str,
    selectors: list[LeaderSelector],
) -> None:
    path = f"{zk_path}/leader"
    leader_turn, queued, queued_turn = queue_behind_a_leader(
        zk_client_factory, proxy, path, selectors, connection_policy="session"
    )
    expire_kazoo_session(queued.client)
    leader_turn.give_up.set()
    assert not queued_turn.led.wait(1.0)
    assert queued.requeue() is True
    assert queued_turn.led.wait(SOON)


def test_auto_requeue_queues_again_after_the_blip_ended_the_attempt(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    zk_path: str,
    selectors: list[LeaderSelector],
) -> None:
    path = f"{zk_path}/leader"
    leader_turn, queued, queued_turn = queue_behind_a_leader(
        zk_client_factory, proxy, path, selectors, auto_requeue=True
    )
    node = queued.our_path
    proxy.drop_connections()
    eventually(lambda: queued.our_path not in (None, node), what="queued again with a new node")
    leader_turn.give_up.set()
    assert queued_turn.led.wait(SOON)
    assert queued.requeue() is False


@pytest.mark.parametrize("policy", ["standard", "session"])
def test_an_asyncio_queued_selector_follows_the_same_rule_through_a_blip(
    zk_client_factory: ClientFactory,
    proxy: FaultProxy,
    zk_path: str,
    selectors: list[LeaderSelector],
    policy: str,
) -> None:
    """As the threaded selector: a blip ends the queued attempt under ``standard`` (it leads
    once requeued), and keeps its place under ``session``."""
    path = f"{zk_path}/leader"
    leader_turn = Turn()
    leader = LeaderSelector(zk_client_factory(), path, leader_turn, "leader")
    selectors.append(leader)
    leader.start()
    assert leader_turn.led.wait(SOON)
    client = zk_client_factory(hosts=proxy.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    observer = zk_client_factory()

    async def main() -> None:
        led = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            led.set()
            await leadership.lost_event.wait()

        queued = aio.LeaderSelector(
            client,
            path,
            lead,
            "queued",
            connection_policy=policy,  # type: ignore[arg-type]
        )
        await queued.start()
        await until(lambda: queued.our_path is not None, "queued behind the leader")
        node = queued.our_path
        proxy.drop_connections()
        if policy == "standard":
            await until(lambda: len(children(observer, path)) == 1, "the queued node deleted")
        leader_turn.give_up.set()
        if policy == "standard":
            await until(lambda: children(observer, path) == [], "the leader's term over")
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(led.wait(), 0.5)  # out of the queue: it does not lead
            assert queued.requeue() is True
        await asyncio.wait_for(led.wait(), SOON)
        if policy == "session":
            assert queued.our_path == node  # the same place in the queue
            assert queued.requeue() is False  # already leading
        assert await queued.close(SOON) is True

    run(main())
