"""The other Java lock systems' asyncio locks against each system's Java peer: a task waiting
behind a Java holder is woken by its release, and a Java waiter by the task's release."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator.aio import menagerie, zklocker, zkrecipes
from pycurator.testing import JavaSystems
from tests.aio_support import run, until
from tests.support import SOON

from .peers import SYSTEMS, java_peer, lock_path

Make = Callable[[KazooClient, str], Any]

#: Each system's Python lock on a path.
LOCKS: dict[str, Make] = {
    "zookeeper write lock": lambda client, path: zkrecipes.WriteLock(client, path),
    "menagerie lock": lambda client, path: menagerie.ReentrantZkLock(client, path),
    "menagerie write lock": lambda client, path: menagerie.ReentrantZkReadWriteLock(
        client, path
    ).write_lock(),
    "zklocker": lambda client, path: zklocker.ZkLocker(client, path, "aio"),
}


@pytest.mark.parametrize("system", SYSTEMS)
def test_an_asyncio_lock_and_the_java_peer_hand_over_both_ways(
    system: str, zk: KazooClient, zk_path: str, java_systems: JavaSystems
) -> None:
    path = lock_path(system, zk_path)
    zk.ensure_path(path)  # the Java systems make only the last level of their path
    lock, java = LOCKS[system](zk, path), java_peer(system, java_systems, path, "aio")
    woken = threading.Event()

    def java_wait() -> None:
        if java.acquire(3 * SOON):
            woken.set()

    async def scenario() -> None:
        assert java.acquire(SOON)
        queued = len(zk.get_children(path)) + 1
        waiter = asyncio.ensure_future(lock.acquire(3 * SOON))
        await until(lambda: len(zk.get_children(path)) == queued, "the task queued")
        assert not waiter.done()
        java.release()  # wakes the task: the node it watches is gone
        assert await waiter, "the task was not woken by the Java release"

        queued = len(zk.get_children(path)) + 1
        java_waiter = threading.Thread(target=java_wait, daemon=True)
        java_waiter.start()
        await until(lambda: len(zk.get_children(path)) == queued, "the Java waiter queued")
        await asyncio.sleep(0.3)
        assert not woken.is_set()  # the task holds: the Java waiter is kept out
        await lock.release()  # wakes the Java waiter
        await asyncio.get_running_loop().run_in_executor(None, woken.wait, 3 * SOON)
        assert woken.is_set(), "the Java waiter was not woken by the task's release"
        java_waiter.join(SOON)

    try:
        run(scenario())
    finally:
        if woken.is_set():
            java.release()
