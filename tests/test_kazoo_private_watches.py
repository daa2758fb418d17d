"""kazoo's private attributes that pycurator's watches that stay rely on (touched in
pycurator._client.kazoo_internals), on kazoo's connection loop and on pycurator's: every watch
event read is followed after kazoo's watchers have it, and a request can be queued ahead of those
queued while the connection was down. A failure here means a kazoo release changed them: see
tests/test_kazoo_private.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.serialization import SetData as WriteData
from kazoo.protocol.states import KazooState

from pycurator._client import kazoo_internals
from pycurator._client.sending import prefixed
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, eventually


@pytest.mark.parametrize("lean", [False, True], ids=["kazoo-loop", "lean-loop"])
def test_follow_watch_events_sees_each_event_after_kazoos_watchers_of_its_path(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, lean: bool
) -> None:
    client = KazooClient(hosts=zk_server.hosts)
    if lean:
        assert kazoo_internals.use_lean_loop(client)
    order: list[str] = []
    events: list[tuple[int, str]] = []

    def on_event(kind: int, server_path: str) -> None:
        order.append("followed")
        events.append((kind, server_path))

    client.start(timeout=SOON)
    try:
        kazoo_internals.follow_watch_events(client, lambda kind, path: None)
        kazoo_internals.follow_watch_events(client, on_event)  # replaces, once
        zk.create(zk_path, makepath=True)
        # kazoo's watcher is dispatched (queued) before the followed call runs
        client.exists(zk_path, watch=lambda event: order.append("kazoo's"))
        zk.set(zk_path, b"x")
        eventually(lambda: len(order) == 2, what="both told")
        assert events == [(3, zk_path)]  # NodeDataChanged, the server's path
    finally:
        client.stop()
        client.close()


@pytest.mark.parametrize("lean", [False, True], ids=["kazoo-loop", "lean-loop"])
def test_call_first_sends_ahead_of_the_requests_queued_while_connecting(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, lean: bool
) -> None:
    """Queued first from a listener told CONNECTED (on the connection thread, nothing sent yet),
    a write goes before one queued while the connection was down: the latter's data stays."""
    zk.create(zk_path, b"", makepath=True)
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        handler = FastThreadingHandler() if lean else SequentialThreadingHandler()
        client = KazooClient(hosts=proxy.hosts, handler=handler, timeout=10.0)
        if lean:
            assert kazoo_internals.use_lean_loop(client)
        first: list[Any] = []
        suspended = threading.Event()

        def listener(state: str) -> bool:
            if state == KazooState.SUSPENDED:
                suspended.set()
            elif state == KazooState.CONNECTED and suspended.is_set() and not first:
                result = client.handler.async_result()
                record = WriteData(prefixed(client, zk_path), b"first", -1)
                kazoo_internals.call_first(client, record, result)
                first.append(result)
            return False

        client.add_listener(listener)
        client.start(timeout=SOON)
        try:
            proxy.blackhole()
            proxy.drop_connections()
            assert suspended.wait(SOON)
            queued = client.set_async(zk_path, b"queued while down")
            proxy.heal()
            queued.get(timeout=SOON)
            eventually(lambda: bool(first) and first[0].ready(), what="the first write answered")
            first[0].get()
            assert zk.get(zk_path)[0] == b"queued while down"
        finally:
            client.stop()
            client.close()
