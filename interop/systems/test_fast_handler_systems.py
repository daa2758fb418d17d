"""The other Java lock systems' Python locks on pycurator's fast handler (the one ``connect()``
picks), against each system's Java peer: exclusion, and a waiter of each language woken by a
holder of the other. (The other interop modules run on kazoo's default handler and asyncio.)"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import menagerie, zkrecipes
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import ClientFactory, JavaSystems
from pycurator.zklocker import ZkLocker
from tests.support import SOON, eventually

from .peers import SYSTEMS, java_peer, lock_path

Make = Callable[[KazooClient, str], Any]

#: Each system's Python lock on a path.
LOCKS: dict[str, Make] = {
    "zookeeper write lock": lambda client, path: zkrecipes.WriteLock(client, path),
    "menagerie lock": lambda client, path: menagerie.ReentrantZkLock(client, path),
    "menagerie write lock": lambda client, path: menagerie.ReentrantZkReadWriteLock(
        client, path
    ).write_lock(),
    "zklocker": lambda client, path: ZkLocker(client, path, "fast"),
}


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_python_lock_on_the_fast_handler_and_the_java_peer_hand_over_both_ways(
    system: str,
    zk: KazooClient,
    zk_client_factory: ClientFactory,
    zk_path: str,
    java_systems: JavaSystems,
) -> None:
    path = lock_path(system, zk_path)
    zk.ensure_path(path)  # the Java systems make only the last level of their path
    client = zk_client_factory(handler=FastThreadingHandler())
    assert isinstance(client.handler, FastThreadingHandler)
    lock, java = LOCKS[system](client, path), java_peer(system, java_systems, path, "fast")

    assert java.acquire(SOON)
    held, let_go, released = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:  # the Python lock is owned by the thread that takes it
        if lock.acquire(3 * SOON):
            held.set()
            let_go.wait(3 * SOON)
            lock.release()
            released.set()

    waiter = threading.Thread(target=hold, daemon=True)
    before = len(zk.get_children(path))
    waiter.start()
    eventually(lambda: len(zk.get_children(path)) > before, what="the Python waiter queued")
    assert not held.is_set()
    java.release()  # wakes the Python waiter: the node it watches is gone
    assert held.wait(3 * SOON), "the Python waiter was not woken by the Java release"

    woken = threading.Event()

    def java_wait() -> None:
        if java.acquire(3 * SOON):
            woken.set()

    java_waiter = threading.Thread(target=java_wait, daemon=True)
    before = len(zk.get_children(path))
    java_waiter.start()
    eventually(lambda: len(zk.get_children(path)) > before, what="the Java waiter queued")
    assert not woken.wait(0.5)  # Python holds: the Java waiter is kept out
    let_go.set()  # the Python holder releases: wakes the Java waiter
    assert released.wait(SOON)
    assert woken.wait(3 * SOON), "the Java waiter was not woken by the Python release"
    java_waiter.join(SOON)
    waiter.join(SOON)
    java.release()
