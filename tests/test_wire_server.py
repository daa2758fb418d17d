"""The in-memory ZooKeeper on a loopback port (:mod:`tests.explorer.wire`), on which the parity
scenarios run a second time: what it must do as ZooKeeper does for those runs to mean something.
Its clients are unchanged kazoo clients."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NoWatcherError, UnimplementedError
from kazoo.protocol.serialization import Connect, Create, int_struct
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from pycurator._client.transport import transport_of
from pycurator._protocol.requests import CreateMode, CreateNode, RemoveWatches
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run
from pycurator.testing import ClientFactory, expire_kazoo_session
from pycurator.testing.pytest_plugin import _clients_on

from .explorer.wire import WireServer
from .support import SOON, eventually


@pytest.fixture
def model() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server
        assert server.failures == []


@pytest.fixture
def clients(model: WireServer) -> Iterator[ClientFactory]:
    with _clients_on(model.hosts) as make:
        yield make


def drop_and_reconnect(model: WireServer, client: KazooClient) -> None:
    """Close ``client``'s connection on the server; return once it is back (the drop told)."""
    suspended = threading.Event()
    client.add_listener(lambda state: suspended.set() if state == KazooState.SUSPENDED else None)
    model.drop(client.client_id[0])
    assert suspended.wait(SOON), "the drop was not told"
    eventually(lambda: client.connected, what="reconnected")


def test_a_session_outlives_a_dropped_connection(model: WireServer, clients: ClientFactory) -> None:
    client, observer = clients(), clients()
    node = client.create("/held", ephemeral=True)
    session = client.client_id[0]
    drop_and_reconnect(model, client)
    assert client.client_id[0] == session
    assert observer.exists(node) is not None


def test_an_ended_session_is_refused_as_expired_and_its_ephemerals_are_gone(
    clients: ClientFactory,
) -> None:
    client, observer = clients(), clients()
    node = client.create("/held", ephemeral=True)
    old = client.client_id[0]
    expire_kazoo_session(client)  # a twin resumes the session (the first connection is closed)
    assert observer.exists(node) is None
    eventually(lambda: client.connected, what="back in a new session")
    assert client.client_id[0] != old


def test_a_watch_fires_once(clients: ClientFactory) -> None:
    client, other = clients(), clients()
    client.create("/parent")
    fired: list[WatchedEvent] = []
    told = threading.Event()

    def watch(event: WatchedEvent) -> None:
        fired.append(event)
        told.set()

    client.get_children("/parent", watch=watch)
    other.create("/parent/a")
    assert told.wait(SOON)
    other.create("/parent/b")
    assert client.get_children("/parent") is not None  # what was sent before has come
    assert [event.type for event in fired] == [EventType.CHILD]


def test_a_watch_goes_with_its_connection(model: WireServer, clients: ClientFactory) -> None:
    client = clients()
    client.exists("/watched", watch=lambda event: None)
    run(transport_of(client), sent_steps(RemoveWatches("/watched")))
    with pytest.raises(NoWatcherError):
        run(transport_of(client), sent_steps(RemoveWatches("/watched")))
    client.exists("/watched", watch=lambda event: None)
    drop_and_reconnect(model, client)
    with pytest.raises(NoWatcherError):
        run(transport_of(client), sent_steps(RemoveWatches("/watched")))


def test_a_transaction_is_all_or_nothing_and_fires_nothing_when_refused(
    clients: ClientFactory,
) -> None:
    client, other = clients(), clients()
    client.create("/data", b"before")
    changed = threading.Event()
    other.get("/data", watch=lambda event: changed.set())
    refused = client.transaction()
    refused.set_data("/data", b"after")
    refused.check("/missing", -1)
    results = refused.commit()
    assert [type(result).__name__ for result in results] == [
        "RolledBackError",
        "NoNodeError",
    ]
    assert client.get("/data")[0] == b"before"
    applied = client.transaction()
    applied.check("/data", 0)
    applied.set_data("/data", b"after")
    assert not any(isinstance(result, Exception) for result in applied.commit())
    assert changed.wait(SOON)
    assert client.get("/data")[0] == b"after"


def test_an_emptied_container_is_reaped(clients: ClientFactory) -> None:
    client = clients()
    container = CreateNode("/box", b"", mode=CreateMode.CONTAINER)
    run(transport_of(client), sent_steps(container))
    client.create("/box/item")
    client.delete("/box/item")
    eventually(lambda: client.exists("/box") is None, what="container reaped")
    with pytest.raises(NoNodeError):
        client.get_children("/box")


def test_a_session_not_heard_of_for_its_timeout_ends(
    model: WireServer, clients: ClientFactory
) -> None:
    observer = clients()
    host, port = model.hosts.split(":")
    with socket.create_connection((host, int(port))) as silent:
        connect = Connect(0, 0, 4000, 0, b"\0" * 16, False).serialize()
        silent.sendall(int_struct.pack(len(connect)) + connect)
        silent.recv(4096)
        create = int_struct.pack(1) + int_struct.pack(Create.type)
        create += Create("/silent", b"", [], 1).serialize()  # 1: ephemeral
        silent.sendall(int_struct.pack(len(create)) + create)
        eventually(lambda: observer.exists("/silent") is not None, what="node made")
        eventually(lambda: observer.exists("/silent") is None, timeout=SOON, what="session ended")


def test_a_request_it_does_not_serve_is_refused_as_unimplemented(clients: ClientFactory) -> None:
    client: KazooClient = clients()
    with pytest.raises(UnimplementedError):
        client.reconfig(joining="server.9=127.0.0.1:1:2", leaving=None, new_members=None)
    assert client.exists("/") is not None
