"""The asyncio counters and barriers where a task is cancelled: an increment cancelled before
its write took it is not applied, and a member cancelled while it enters leaves no node."""

from __future__ import annotations

import asyncio

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import aio
from pycurator.testing import FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, ClientFactory, children


def test_an_increment_cancelled_while_it_waits_for_a_write_is_not_applied(
    zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str, zk_server: ZooKeeperTarget
) -> None:
    path = f"{zk_path}/counter"
    with FaultProxy(zk_server.hosts.split(",")[0], latency=0.05) as proxy:
        far = zk_client_factory(hosts=proxy.hosts)

        async def scenario() -> None:
            counter = aio.DistributedAtomicLong(far, path, KazooRetry(max_tries=3))
            first = asyncio.ensure_future(counter.increment())
            await asyncio.sleep(0.02)  # its write under way, 50 ms away
            second = asyncio.ensure_future(counter.increment())
            await asyncio.sleep(0)  # it waits for the next write
            second.cancel()
            with pytest.raises(asyncio.CancelledError):
                await second
            result = await asyncio.wait_for(first, SOON)
            assert (result.succeeded, result.pre_value, result.post_value) == (True, 0, 1)
            assert (await counter.get()).pre_value == 1

        asyncio.run(scenario())
    assert zk.get(path)[0] == (1).to_bytes(8, "big")


def test_a_member_cancelled_while_it_enters_leaves_no_node(zk: KazooClient, zk_path: str) -> None:
    path = f"{zk_path}/double"

    async def scenario() -> None:
        member = aio.DistributedDoubleBarrier(zk, path, 2)
        entering = asyncio.ensure_future(member.enter())
        for _ in range(100):
            if children(zk, path):
                break
            await asyncio.sleep(0.02)
        assert len(children(zk, path)) == 1  # in, waiting for another
        entering.cancel()
        with pytest.raises(asyncio.CancelledError):
            await entering
        assert not member.entered

    asyncio.run(scenario())
    assert children(zk, path) == []
