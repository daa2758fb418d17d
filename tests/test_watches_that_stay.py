"""Watches that stay (ZooKeeper's ``addWatch``, which kazoo lacks), sent by the transport on
kazoo's connection loop and on pycurator's, against a real ZooKeeper (3.8 here: one mode per
path and session, ZOOKEEPER-4466, and no removal of one mode alone, ZOOKEEPER-4472): which
events each callback hears, beside kazoo's one-shot watchers of the same path; removal; a
dropped connection; the session's end; a chroot; the asyncio runner; a server without them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoWatcherError, UnimplementedError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent

from pycurator import reconnecting_retry
from pycurator._client.transport import transport_of
from pycurator._protocol.errors import UNFIXABLE, ServerFeatureError
from pycurator._protocol.requests import (
    AddWatch,
    AddWatchMode,
    GetData,
    ListChildren,
    NodeExists,
    RemoveWatches,
    Request,
    WatcherType,
)
from pycurator._protocol.steps import Steps
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run
from pycurator.aio._runner import run_async
from pycurator.handlers import FastThreadingHandler, use_lean_loop
from pycurator.testing import FaultProxy, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run as run_loop
from .aio_support import watched_paths
from .explorer.wire import WireServer
from .scripted import Reply, ScriptedServer
from .support import SOON, eventually

RECURSIVE, EXACT = AddWatchMode.PERSISTENT_RECURSIVE, AddWatchMode.PERSISTENT
#: A one-shot watch is told at most this long after its event (the events come in one stream).
QUIET = 0.3


class Heard:
    """A watch callback that records what it is told, and waits for it."""

    def __init__(self) -> None:
        self.events: list[WatchedEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: WatchedEvent) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def told(self) -> list[tuple[str, str | None]]:
        """What was told: each event's type and path (a state for a NONE event)."""
        with self._changed:
            return [
                (event.type, event.state if event.type == EventType.NONE else event.path)
                for event in self.events
            ]

    def wait_for(self, count: int, timeout: float = SOON) -> list[tuple[str, str | None]]:
        """What was told, once ``count`` events were (failing after ``timeout`` seconds)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.events) >= count, timeout):
                raise AssertionError(f"{count} events expected, told {self.told()}")
        return self.told()


def send(client: KazooClient, request: Request) -> Any:
    """``request`` sent through the client's transport, its answer awaited."""
    return run(transport_of(client), sent_steps(request))


def on_client(hosts: str, loop: str, **kwargs: Any) -> KazooClient:
    """A started client on ``loop``: kazoo's (with kazoo's handler) or pycurator's (the fast
    handler on the lean loop)."""
    handler = FastThreadingHandler() if loop == "lean" else SequentialThreadingHandler()
    client = KazooClient(
        hosts=hosts,
        handler=handler,
        timeout=10.0,
        connection_retry=reconnecting_retry(handler),
        **kwargs,
    )
    if loop == "lean":
        assert use_lean_loop(client)
    client.start(timeout=SOON)
    return client


@pytest.fixture(params=["kazoo", "lean"])
def loop(request: pytest.FixtureRequest) -> str:
    """The connection loop under test."""
    return str(request.param)


@pytest.fixture
def clients(zk_server: ZooKeeperTarget, loop: str) -> Iterator[Callable[..., KazooClient]]:
    """Makes started clients on ``loop`` (of ``hosts``, the test server's by default)."""
    made: list[KazooClient] = []

    def make(hosts: str | None = None, **kwargs: Any) -> KazooClient:
        client = on_client(hosts or zk_server.hosts, loop, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.stop()
        client.close()


@pytest.fixture
def client(clients: Callable[..., KazooClient]) -> KazooClient:
    return clients()


def test_a_recursive_watch_hears_the_node_and_every_node_below_until_removed(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    zk.ensure_path(zk_path)
    heard = Heard()
    assert send(client, AddWatch(zk_path, heard)) is None
    zk.create(f"{zk_path}/a/b", b"1", makepath=True)
    zk.set(f"{zk_path}/a/b", b"2")
    zk.set(zk_path, b"x")
    zk.delete(f"{zk_path}/a/b")
    # a creation told as its own (no children change), in the order the server made them
    assert heard.wait_for(5) == [
        (EventType.CREATED, f"{zk_path}/a"),
        (EventType.CREATED, f"{zk_path}/a/b"),
        (EventType.CHANGED, f"{zk_path}/a/b"),
        (EventType.CHANGED, zk_path),
        (EventType.DELETED, f"{zk_path}/a/b"),
    ]
    assert send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, heard)) is None
    zk.set(zk_path, b"y")
    assert client.exists(zk_path) is not None  # the event would have come before this answer
    assert len(heard.told()) == 5
    eventually(lambda: zk_path not in watched_paths(client), what="the server's watch gone")


def test_a_persistent_watch_hears_its_node_and_its_children_changes_only(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    heard = Heard()
    send(client, AddWatch(zk_path, heard, EXACT))
    zk.create(zk_path, b"1")
    zk.create(f"{zk_path}/child")
    zk.set(f"{zk_path}/child", b"x")  # below: not this watch's
    zk.set(zk_path, b"2")
    zk.delete(f"{zk_path}/child")
    zk.delete(zk_path)
    assert heard.wait_for(5) == [
        (EventType.CREATED, zk_path),
        (EventType.CHILD, zk_path),
        (EventType.CHANGED, zk_path),
        (EventType.CHILD, zk_path),
        (EventType.DELETED, zk_path),
    ]
    zk.create(zk_path)  # it stays on a path with no node
    assert heard.wait_for(6)[-1] == (EventType.CREATED, zk_path)


@pytest.mark.parametrize(
    "one_shot",
    [
        lambda path, watch: GetData(path, watch),
        lambda path, watch: NodeExists(path, watch),
        lambda path, watch: ListChildren(path, watch),
    ],
    ids=["getData", "exists", "getChildren"],
)
@pytest.mark.parametrize("mode", [RECURSIVE, EXACT], ids=["recursive", "persistent"])
def test_a_one_shot_watch_of_the_same_path_hears_its_event_once_and_the_watch_stays(
    client: KazooClient,
    zk: KazooClient,
    zk_path: str,
    one_shot: Callable[[str, Any], Request],
    mode: AddWatchMode,
) -> None:
    """The server sends one event per path and change: both kinds of watch hear it. On a
    server before 3.9, a one-shot watch set there would end the watch that stays as it fires
    (ZOOKEEPER-4466); the client keeps it alone instead, where the watch that stays hears what
    it would."""
    zk.create(zk_path)
    stays, once = Heard(), Heard()
    send(client, AddWatch(zk_path, stays, mode))
    send(client, one_shot(zk_path, once))
    change: Callable[[], Any] = (
        (lambda: zk.create(f"{zk_path}/c-", sequence=True))
        if isinstance(one_shot(zk_path, None), ListChildren)
        else (lambda: zk.set(zk_path, b"x"))
    )
    change()
    assert once.wait_for(1)[0][1] == zk_path
    change()
    change()
    assert len(stays.wait_for(3)) == 3  # the watch that stays heard all three
    assert client.exists(zk_path) is not None
    assert len(once.told()) == 1


def test_removing_one_callback_leaves_the_others_and_the_last_has_the_server_drop_the_watch(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path)
    first, second = Heard(), Heard()
    send(client, AddWatch(zk_path, first))
    send(client, AddWatch(zk_path, second))
    send(client, AddWatch(zk_path, second))  # once per path and mode, as Java's client
    send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, first))
    with pytest.raises(NoWatcherError):
        send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, first))
    with pytest.raises(NoWatcherError):  # another mode's
        send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT, second))
    zk.set(zk_path, b"x")
    assert second.wait_for(1) == [(EventType.CHANGED, zk_path)]
    assert zk_path in watched_paths(client)
    send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE))  # every callback
    eventually(lambda: zk_path not in watched_paths(client), what="the server's watch gone")
    assert first.told() == [] and len(second.told()) == 1


def test_a_watch_removed_while_a_one_shot_watch_waits_on_it_serves_it_then_goes(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path)
    stays, once = Heard(), Heard()
    send(client, AddWatch(zk_path, stays))
    send(client, GetData(zk_path, once))  # kept by the client alone
    send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, stays))
    assert zk_path in watched_paths(client)  # kept for the one-shot watch
    zk.set(zk_path, b"x")
    assert once.wait_for(1) == [(EventType.CHANGED, zk_path)]
    eventually(lambda: zk_path not in watched_paths(client), what="the kept watch gone")
    assert stays.told() == []


def test_a_one_shot_watch_forgotten_leaves_the_watch_that_stays(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    """A data watch dropped on a server before 3.9 drops every watch of its path: the client
    asks for no such drop where a watch that stays is set."""
    zk.create(zk_path)
    stays, once = Heard(), Heard()
    send(client, GetData(zk_path, once))  # set on the server: before the watch that stays
    send(client, AddWatch(zk_path, stays))
    transport_of(client).forget_watch(zk_path, once)
    assert client.exists(zk_path) is not None
    zk.set(zk_path, b"x")
    zk.set(zk_path, b"y")
    assert stays.wait_for(2) == [(EventType.CHANGED, zk_path)] * 2
    assert once.told() == []


def test_a_dropped_connection_is_told_and_the_watch_is_set_again_before_anything_else(
    zk_server: ZooKeeperTarget, clients: Callable[..., KazooClient], zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path)
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = clients(proxy.hosts)
        heard = Heard()
        send(client, AddWatch(zk_path, heard))
        proxy.blackhole()
        proxy.drop_connections()
        assert heard.wait_for(1) == [(EventType.NONE, KeeperState.CONNECTING)]
        # a write queued while the connection is down is sent after the watch is set again
        write = client.set_async(zk_path, b"while down")
        proxy.heal()
        write.get(timeout=SOON)
        told = heard.wait_for(3)
        assert told[:2] == [
            (EventType.NONE, KeeperState.CONNECTING),
            (EventType.NONE, KeeperState.CONNECTED),
        ]
        assert told[2] == (EventType.CHANGED, zk_path)
        zk.create(f"{zk_path}/after")
        assert heard.wait_for(4)[3] == (EventType.CREATED, f"{zk_path}/after")
        assert zk_path in watched_paths(client)


def test_the_sessions_end_is_told_last_and_ends_the_watch(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path)
    heard = Heard()
    send(client, AddWatch(zk_path, heard))
    expire_kazoo_session(client)  # its connection closed first: a drop, then the expiry
    eventually(
        lambda: heard.told()[-1:] == [(EventType.NONE, KeeperState.EXPIRED_SESSION)],
        what="the expiry told",
    )
    told = heard.told()
    assert set(told[:-1]) <= {(EventType.NONE, KeeperState.CONNECTING)}
    eventually(lambda: client.connected, what="a new session")
    zk.set(zk_path, b"x")
    assert client.exists(zk_path) is not None
    assert heard.told() == told
    with pytest.raises(NoWatcherError):
        send(client, RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, heard))


def test_a_stop_is_told_as_the_sessions_end(
    clients: Callable[..., KazooClient], zk_path: str
) -> None:
    client = clients()
    client.ensure_path(zk_path)
    heard = Heard()
    send(client, AddWatch(zk_path, heard))
    client.stop()
    assert heard.wait_for(1) == [(EventType.NONE, KeeperState.CLOSED)]


def test_paths_are_the_clients_own_under_a_chroot(
    zk_server: ZooKeeperTarget, clients: Callable[..., KazooClient], zk: KazooClient, zk_path: str
) -> None:
    zk.ensure_path(zk_path)
    client = clients(zk_server.hosts + zk_path)
    heard = Heard()
    send(client, AddWatch("/", heard))
    zk.create(f"{zk_path}/a")
    zk.create(f"{zk_path}x")  # a sibling of the chroot: not below it
    assert heard.wait_for(1) == [(EventType.CREATED, "/a")]
    send(client, RemoveWatches("/", WatcherType.PERSISTENT_RECURSIVE, heard))
    zk.delete(f"{zk_path}x")


def test_the_asyncio_runner_sets_and_removes_a_watch_that_stays(
    client: KazooClient, zk: KazooClient, zk_path: str
) -> None:
    zk.create(zk_path)

    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[WatchedEvent] = asyncio.Queue()

        def on_event(event: WatchedEvent) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        transport = transport_of(client)
        await run_async(transport, sent_steps(AddWatch(zk_path, on_event)))
        zk.set(zk_path, b"1")
        zk.create(f"{zk_path}/child")
        told = [(await queue.get()).type, (await queue.get()).type]
        request = RemoveWatches(zk_path, WatcherType.PERSISTENT_RECURSIVE, on_event)
        await run_async(transport, sent_steps(request))
        return told

    assert run_loop(scenario()) == [EventType.CHANGED, EventType.CREATED]


def test_a_server_without_them_is_named_and_nothing_is_kept(loop: str, zk_path: str) -> None:
    """ZooKeeper before 3.6 answers ``addWatch`` UNIMPLEMENTED (here the in-memory server,
    played without them); a kazoo ``UnimplementedError`` too, which no retry fixes."""
    with WireServer(persistent_watches=False) as server:
        client = on_client(server.hosts, loop)
        try:
            with pytest.raises(ServerFeatureError) as refused:
                send(client, AddWatch("/watched", Heard()))
            assert str(refused.value) == (
                "the ZooKeeper server has no persistent watches (ZooKeeper 3.6 or later): /watched"
            )
            assert isinstance(refused.value, UnimplementedError)
            assert isinstance(refused.value, UNFIXABLE)
            with pytest.raises(NoWatcherError):
                send(client, RemoveWatches("/watched", WatcherType.PERSISTENT_RECURSIVE))
            assert client.exists("/") is not None  # the connection lives on
        finally:
            client.stop()
            client.close()


# -- the scripted server, which the protocols' tests play, tells them as the transport does ----


def test_the_scripted_server_tells_a_watch_that_stays_what_a_real_one_is_told() -> None:
    heard = Heard()
    watch = AddWatch("/a", heard)
    server = ScriptedServer(
        [
            Reply(watch),
            Reply(RemoveWatches("/a", WatcherType.PERSISTENT_RECURSIVE, heard)),
        ]
    )

    def steps_told() -> Steps[None]:
        yield from sent_steps(watch)
        server.fire("/a/b", EventType.CREATED)
        with pytest.raises(AssertionError, match="no watch on /a/b"):
            server.fire("/a/b", EventType.CHILD)  # no children change for a recursive watch
        server.failure = None
        server.change(KazooState.SUSPENDED)
        server.change(KazooState.CONNECTED)
        server.fire("/a", EventType.CHANGED)
        yield from sent_steps(RemoveWatches("/a", WatcherType.PERSISTENT_RECURSIVE, heard))

    server.run(steps_told())
    server.finish()
    assert heard.told() == [
        (EventType.CREATED, "/a/b"),
        (EventType.NONE, KeeperState.CONNECTING),
        (EventType.NONE, KeeperState.CONNECTED),
        (EventType.CHANGED, "/a"),
    ]
    assert server.staying == {}


def test_the_scripted_server_ends_a_watch_that_stays_with_the_session() -> None:
    heard = Heard()
    server = ScriptedServer([Reply(AddWatch("/a", heard, EXACT))])
    server.run(sent_steps(AddWatch("/a", heard, EXACT)))
    server.fire("/a", EventType.CHILD)
    server.change(KazooState.LOST)
    server.finish()
    assert heard.told() == [
        (EventType.CHILD, "/a"),
        (EventType.NONE, KeeperState.EXPIRED_SESSION),
    ]
    assert server.staying == {}
