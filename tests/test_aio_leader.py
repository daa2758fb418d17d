"""pycurator.aio's leader recipes against a real ZooKeeper server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

import pytest
from kazoo.client import KazooClient

from pycurator import aio
from pycurator.testing import ClientFactory, FaultProxy

from .aio_support import run, until
from .support import SOON, children, eventually


def test_a_latch_leads_and_hands_over_when_closed(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        first, second = aio.LeaderLatch(a, zk_path, "a"), aio.LeaderLatch(b, zk_path, "b")
        await first.start()
        assert await first.wait(SOON)
        await second.start()
        assert await second.wait(0.3) is False
        assert (await second.leader()).id == "a"
        await first.close()
        assert await second.wait(SOON)
        assert first.has_leadership() is False
        await second.close()
        with pytest.raises(RuntimeError):
            await second.wait(0)

    run(main())


def test_a_latch_started_twice_refuses_and_its_waiters_still_hear_the_election(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        first, second = aio.LeaderLatch(a, zk_path, "a"), aio.LeaderLatch(b, zk_path, "b")
        await first.start()
        assert await first.wait(SOON)
        await second.start()
        with pytest.raises(RuntimeError, match="more than once"):
            await second.start()
        waiting = asyncio.create_task(second.wait(SOON))
        await first.close()
        assert await waiting  # woken by the election the first start() began
        await second.close()

    run(main())


def test_a_selector_runs_lead_on_the_loop_and_cancels_it_when_the_term_ends(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        terms: list[str] = []
        cancelled: list[str] = []
        leading = {"a": asyncio.Event(), "b": asyncio.Event()}
        loop_thread = threading.get_ident()

        def lead_as(name: str) -> Callable[[aio.Leadership], Awaitable[None]]:
            async def lead(leadership: aio.Leadership) -> None:
                assert threading.get_ident() == loop_thread
                assert await leadership.is_held() and leadership.fencing_token > 0
                terms.append(name)
                leading[name].set()
                try:
                    await asyncio.Event().wait()  # lead until interrupted
                except asyncio.CancelledError:
                    cancelled.append(name)
                    raise

            return lead

        first = aio.LeaderSelector(a, zk_path, lead_as("a"), "a")
        second = aio.LeaderSelector(b, zk_path, lead_as("b"), "b")
        await first.start()
        await asyncio.wait_for(leading["a"].wait(), SOON)
        await second.start()
        await until(lambda: len(children(a, zk_path)) == 2, "the second selector queued")
        assert (await second.leader()).id == "a" and not second.has_leadership()
        first.interrupt_leadership()
        await asyncio.wait_for(leading["b"].wait(), SOON)
        assert terms == ["a", "b"] and cancelled == ["a"]
        await second.close()
        await until(lambda: cancelled == ["a", "b"], "the second lead cancelled on close")
        await first.close()

    run(main())
    eventually(lambda: children(a, zk_path) == [], what="every selector node gone")


def test_a_selector_requeued_while_its_term_ends_leads_again(zk: KazooClient, zk_path: str) -> None:
    async def main() -> None:
        terms: list[aio.Leadership] = []
        release = asyncio.Event()
        second = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            terms.append(leadership)
            if len(terms) == 2:
                second.set()
                return
            try:
                await asyncio.Event().wait()  # lead until cancelled
            finally:
                await release.wait()  # ``lead`` outlives its term's end

        selector = aio.LeaderSelector(zk, zk_path, lead, "a")
        await selector.start()
        await until(lambda: len(terms) == 1, "the first term leads")
        assert not selector.requeue()  # leading: already queued
        selector.interrupt_leadership()
        assert selector.requeue() is True  # owed once the ending term's node is gone
        assert selector.requeue() is False  # asked already
        await asyncio.sleep(0)
        assert not second.is_set() and len(children(zk, zk_path)) == 1
        release.set()
        await asyncio.wait_for(second.wait(), SOON)
        assert terms[1].fencing_token > terms[0].fencing_token
        assert await selector.close(SOON)

    run(main())
    eventually(lambda: children(zk, zk_path) == [], what="the selector's node gone")


def test_a_close_with_the_create_on_its_way_returns_once_the_node_it_made_is_gone(
    proxy: FaultProxy, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """The asyncio twin of the threaded selector's: the term's task, cancelled by close() while
    its create is on its way, deletes what the create made before close() returns True."""
    path = f"{zk_path}/leader"
    observer = zk_client_factory()
    observer.ensure_path(path)
    client = zk_client_factory(hosts=proxy.hosts)
    proxy.latency = 0.1  # the create is still on its way when close() is called

    async def lead(leadership: aio.Leadership) -> None:
        return None

    async def main() -> None:
        selector = aio.LeaderSelector(client, path, lead, "a")
        await selector.start()
        await asyncio.sleep(0.02)  # the term's task has sent its create
        assert await selector.close(SOON) is True

    run(main())
    made: list[str] = []
    assert observer.get_children(path, watch=lambda event: made.append(event.path)) == []
    proxy.latency = 0.0
    threading.Event().wait(0.5)  # a create or delete still on its way has landed by now
    assert made == [] and children(observer, path) == []
