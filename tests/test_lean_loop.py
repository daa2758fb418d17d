"""pycurator's connection loop under ``KazooClient`` (``use_lean_loop``): who gets it, and that
it keeps kazoo's contract where the loop differs from kazoo's (requests written by their
callers, answers read in blocks, results woken through one lock): order, requests queued
without a session, drops in the middle of a write, a full socket, a fork, an unreachable
server."""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.handlers.gevent import SequentialGeventHandler
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.states import KazooState, KeeperState

from pycurator import connect
from pycurator._client import kazoo_internals
from pycurator._client.kazoo_internals import loop as kazoo_loop
from pycurator._client.kazoo_internals import releases
from pycurator._client.runtime import runtime_of
from pycurator._client.sockets import send_now
from pycurator.discovery import ServiceDiscovery, ServiceInstance
from pycurator.handlers import (
    FastThreadingHandler,
    link_inline,
    runs_inline,
    use_lean_loop,
    uses_lean_loop,
)
from pycurator.testing import FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, STEADY_RECONNECT, Worker, eventually

#: Data near ZooKeeper's default 1 MB limit on a request: a few of them fill a socket's buffers.
BIG = b"x" * 900_000


def lean_client(hosts: str, **kwargs: Any) -> KazooClient:
    """A ``KazooClient`` on the fast handler and the lean loop, reconnecting steadily."""
    handler = FastThreadingHandler()
    kwargs.setdefault("timeout", 10.0)
    kwargs.setdefault("connection_retry", STEADY_RECONNECT.copy())
    client = KazooClient(hosts=hosts, handler=handler, **kwargs)
    assert use_lean_loop(client)
    return client


def started(clients: list[KazooClient], hosts: str, **kwargs: Any) -> KazooClient:
    """A :func:`lean_client`, started and kept in ``clients`` to be stopped at the end."""
    client = lean_client(hosts, **kwargs)
    client.start(timeout=SOON)
    clients.append(client)
    return client


def test_connect_serves_its_clients_on_the_loop_unless_told_not_to(
    zk_server: ZooKeeperTarget, clients: list[KazooClient]
) -> None:
    lean = connect(zk_server.hosts)
    clients.append(lean)
    plain = connect(zk_server.hosts, lean_loop=False)
    clients.append(plain)
    assert uses_lean_loop(lean)
    assert not uses_lean_loop(plain)
    assert lean.exists("/") is not None


def test_a_client_built_by_hand_takes_the_loop_before_start_only(
    zk_server: ZooKeeperTarget, clients: list[KazooClient]
) -> None:
    built = KazooClient(hosts=zk_server.hosts, handler=FastThreadingHandler())
    assert not uses_lean_loop(built)
    assert use_lean_loop(built)
    assert use_lean_loop(built)  # a second call changes nothing
    built.start(timeout=SOON)
    clients.append(built)
    assert uses_lean_loop(built)
    late = KazooClient(hosts=zk_server.hosts)
    late.start(timeout=SOON)
    clients.append(late)
    with pytest.raises(RuntimeError, match="before the client is started"):
        use_lean_loop(late)


def test_kazoo_s_own_handler_is_served_too(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = KazooClient(hosts=zk_server.hosts, handler=SequentialThreadingHandler())
    assert use_lean_loop(client)
    client.start(timeout=SOON)
    clients.append(client)
    client.create(zk_path, b"v", makepath=True)
    assert client.get(zk_path)[0] == b"v"
    client.delete(zk_path)


def test_tls_and_green_handlers_keep_kazoo_s_loop() -> None:
    tls = KazooClient(hosts="127.0.0.1:2181", use_ssl=True, verify_certs=False)
    green = KazooClient(hosts="127.0.0.1:2181", handler=SequentialGeventHandler())
    assert not use_lean_loop(tls)
    assert not use_lean_loop(green)
    assert not uses_lean_loop(tls) and not uses_lean_loop(green)


def test_an_unchecked_kazoo_release_keeps_kazoo_s_loop_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(releases, "CHECKED", ("0.1",))
    monkeypatch.setattr(releases, "_told", False)
    with caplog.at_level(logging.WARNING, logger="pycurator"):
        for _ in range(2):
            client = KazooClient(hosts="127.0.0.1:2181", handler=FastThreadingHandler())
            assert not use_lean_loop(client)
    told = [r for r in caplog.records if "own connection loop" in r.getMessage()]
    assert len(told) == 1, caplog.records
    assert "kazoo>=0.1,<0.2" in told[0].getMessage()


def test_ten_thousand_pipelined_requests_are_answered_in_order(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    client.ensure_path(zk_path)
    made = [client.create_async(f"{zk_path}/n-", sequence=True) for _ in range(10_000)]
    names = [result.get(timeout=SOON) for result in made]
    assert names == sorted(names)
    assert len(set(names)) == 10_000
    client.delete(zk_path, recursive=True)


def test_requests_made_without_a_session_are_sent_in_order_once_it_is_made(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    client = lean_client(proxy.hosts)
    clients.append(client)
    proxy.blackhole()
    client.start_async()
    eventually(lambda: client.client_state == KeeperState.CONNECTING, what="connecting")
    parent = client.create_async(zk_path, makepath=True)
    made = [client.create_async(f"{zk_path}/n-", sequence=True) for _ in range(5)]
    assert not client.connected and not parent.ready()
    proxy.heal()
    assert parent.get(timeout=SOON) == zk_path
    names = [result.get(timeout=SOON) for result in made]
    assert names == sorted(names) and len(set(names)) == 5
    client.delete(zk_path, recursive=True)


def test_a_drop_in_the_middle_of_writes_fails_them_and_the_client_goes_on(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, proxy.hosts)
    client.create(zk_path, makepath=True)
    outcomes: list[str] = []
    going = threading.Event()
    dropped = threading.Event()

    def write() -> None:
        going.set()
        while not dropped.is_set():
            try:
                client.set_async(zk_path, BIG).get(timeout=SOON)
                outcomes.append("set")
            except ConnectionLoss:
                outcomes.append("lost")

    def told_after(count: int) -> Callable[[], bool]:
        return lambda: len(outcomes) > count

    writers = [threading.Thread(target=write) for _ in range(3)]
    for writer in writers:
        writer.start()
    assert going.wait(SOON)
    eventually(lambda: "set" in outcomes, what="a write through")
    # dropped until a write in flight is lost (under load a drop may find none in flight);
    # between two drops a write is told, so that each drop comes while the writers write on
    # the connection it ends (a wait for the last write told to be a set was met at once)
    for _ in range(30):
        proxy.drop_connections()
        eventually(lambda: client.connected, what="reconnected")
        if "lost" in outcomes:
            break
        eventually(told_after(len(outcomes)), what="a write told again")
    dropped.set()
    for writer in writers:
        writer.join(SOON)
        assert not writer.is_alive()
    assert "lost" in outcomes
    # the connection serves on: no answer went to the wrong request
    client.set(zk_path, b"after")
    assert client.get(zk_path)[0] == b"after"
    client.delete(zk_path)


def test_writes_bigger_than_the_socket_takes_wait_for_room_and_all_arrive(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    client.ensure_path(zk_path)
    paths = [f"{zk_path}/{i}" for i in range(40)]  # 36 MB in one burst from two threads
    halves = (paths[::2], paths[1::2])
    results: list[Any] = []

    def burst(part: list[str]) -> None:
        results.extend(client.create_async(path, BIG + path.encode()) for path in part)

    threads = [threading.Thread(target=burst, args=(half,)) for half in halves]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SOON)
    assert sorted(result.get(timeout=SOON) for result in results) == sorted(paths)
    for path in paths[:3]:
        assert client.get(path)[0] == BIG + path.encode()
    client.delete(zk_path, recursive=True)


def test_a_forked_child_never_writes_on_the_parent_s_connection(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    pid = os.fork()
    if pid == 0:  # the child: a request it makes must not reach the parent's session
        try:
            client.create_async(zk_path, b"child")
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    # a frame the child wrote would have been answered to the parent under an xid it did not
    # send, ending its connection loop
    for _ in range(20):
        assert client.exists("/") is not None
    assert client.exists(zk_path) is None
    assert client.connected


def test_an_unreachable_server_fails_pending_requests_and_the_client_comes_back(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    client = lean_client(proxy.hosts, timeout=4.0)
    states: list[KazooState] = []
    client.add_listener(states.append)
    client.start(timeout=SOON)
    clients.append(client)
    proxy.blackhole()
    waiting = client.exists_async(zk_path)
    with pytest.raises(ConnectionLoss):
        waiting.get(timeout=SOON)
    # kazoo fails the pending requests first, then tells its listeners
    eventually(lambda: KazooState.SUSPENDED in states, what="SUSPENDED told")
    proxy.heal()
    eventually(lambda: client.connected, what="reconnected")
    assert client.exists(zk_path) is None
    assert states[-1] == KazooState.CONNECTED


def test_a_watcher_run_on_the_loop_thread_may_send_requests(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    answered = threading.Event()
    seen: list[Any] = []

    def got(result: Any) -> None:
        seen.append(result.get_nowait())
        answered.set()

    @runs_inline
    def on_created(event: Any) -> None:
        # on the connection thread: the request is written once the loop has read its batch
        assert link_inline(client.get_async(event.path), got)

    client.exists(zk_path, watch=on_created)
    client.create(zk_path, b"seen", makepath=True)
    assert answered.wait(SOON)
    assert seen[0][0] == b"seen"
    client.delete(zk_path)


def test_stop_ends_the_session_and_fails_later_requests(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    client = lean_client(zk_server.hosts)
    client.start(timeout=SOON)
    client.create(zk_path, ephemeral=True, makepath=True)
    client.stop()
    client.close()
    assert client.state == KazooState.LOST
    checker = KazooClient(hosts=zk_server.hosts)
    checker.start(timeout=SOON)
    try:
        assert checker.exists(zk_path) is None  # the session closed, its node with it
    finally:
        checker.stop()
        checker.close()
    with pytest.raises(Exception, match="closed"):
        client.exists(zk_path)


@pytest.mark.parametrize(
    ("hook", "ends_session"),
    [(kazoo_loop._CONNECTION_DROP, False), (kazoo_loop._SESSION_EXPIRED, True)],
    ids=["drop", "expiry"],
)
def test_kazoo_s_test_hooks_end_an_idle_connection_as_its_loop_does(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], hook: Any, ends_session: bool
) -> None:
    """A hook is queued by a user's thread while the loop waits in its receive: the writer
    itself ends the connection, and the loop, woken, ends it as kazoo's loop would."""
    client = started(clients, zk_server.hosts)
    states: list[KazooState] = []
    client.add_listener(states.append)
    session = client.client_id
    kazoo_internals.call(client, hook, client.handler.async_result())
    expected = KazooState.LOST if ends_session else KazooState.SUSPENDED
    eventually(lambda: expected in states and client.connected, what="ended and reconnected")
    assert (client.client_id != session) is ends_session
    assert client.exists("/") is not None


def test_stop_on_an_idle_connection_is_quick(zk_server: ZooKeeperTarget) -> None:
    """The loop waits in one receive until the next ping; the close that ``stop()`` queues is
    sent by the stopping thread, so ``stop()`` does not wait for that ping."""
    client = lean_client(zk_server.hosts, timeout=30.0)
    client.start(timeout=SOON)
    client.exists("/")  # the loop is now in a receive of about 10 s
    began = time.monotonic()
    try:
        client.stop()
    finally:
        client.close()
    assert time.monotonic() - began < 3.0
    assert client.state == KazooState.LOST


def test_a_send_never_waits_and_fails_as_the_socket_does() -> None:
    """The loop's writers send with :func:`send_now`: what has room at once, 0 when the socket
    is full, an ``OSError`` (no signal) once the peer is gone."""
    mine, peer = socket.socketpair()
    try:
        assert send_now(mine, b"abc") == 3
        assert peer.recv(16) == b"abc"
        sent = [send_now(mine, b"x" * 65536) for _ in range(100)]
        assert sent[-1] == 0  # full: nothing written, nothing waited for
        peer.close()
        with pytest.raises(OSError):
            send_now(mine, b"more")
    finally:
        mine.close()
        peer.close()


def test_a_client_restarts_on_the_loop(zk_server: ZooKeeperTarget, zk_path: str) -> None:
    client = lean_client(zk_server.hosts)
    client.start(timeout=SOON)
    try:
        client.restart()
        assert uses_lean_loop(client)
        with pytest.raises(NoNodeError):
            client.get(zk_path)
    finally:
        client.stop()
        client.close()


def test_a_result_waits_on_its_own_lock_and_times_out_as_kazoo_s() -> None:
    handler = FastThreadingHandler()
    handler.start()
    try:
        result = handler.async_result()
        with pytest.raises(KazooTimeoutError):
            result.get(timeout=0.05)
        assert not result.wait(0.01)
        linked = threading.Event()
        result.rawlink(lambda _: linked.set())
        waiters = [threading.Thread(target=result.wait, args=(SOON,)) for _ in range(3)]
        for waiter in waiters:
            waiter.start()
        threading.Timer(0.05, result.set, args=("answer",)).start()
        for waiter in waiters:
            waiter.join(SOON)
            assert not waiter.is_alive()
        assert result.get(timeout=SOON) == "answer" and result.successful()
        assert linked.wait(SOON)  # on kazoo's completion worker
        failed = handler.async_result()
        failed.set_exception(ConnectionLoss())
        with pytest.raises(ConnectionLoss):
            failed.get()
        assert isinstance(failed.exception, ConnectionLoss) and not failed.successful()
    finally:
        handler.stop()


@pytest.mark.parametrize("runtime_first", [True, False])
def test_the_runtime_hears_the_granted_session_timeout_on_the_loop(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], runtime_first: bool
) -> None:
    """The loop serves a session from within kazoo's ``_connect``: the runtime's hooks (the
    timeout granted, a session given up) are called around the handshake all the same, whether
    the runtime was made before the loop was chosen or after."""
    if zk_server.local is None:
        pytest.skip("the server's bounds are known of a local server only")
    shortest = 2 * zk_server.local.tick_time_ms / 1000.0  # ZooKeeper's minSessionTimeout
    client = KazooClient(
        hosts=zk_server.hosts, timeout=shortest / 2, handler=FastThreadingHandler()
    )
    clients.append(client)
    if runtime_first:
        runtime_of(client)
    assert use_lean_loop(client)
    runtime = runtime_of(client)
    assert runtime.session_timeout() == shortest / 2  # the one asked for, until an answer
    client.start(timeout=SOON)
    assert runtime.session_timeout() == shortest  # raised by the server


def _watch_event(kind: int, path: str) -> bytes:
    """A watch notification's body as the server writes it: the reply header (the watch xid),
    then type, state and path."""
    encoded = path.encode()
    return (
        struct.pack("!iqi", -1, -1, 0)
        + struct.pack("!iii", kind, 3, len(encoded))  # state: SyncConnected
        + encoded
    )


def test_a_watch_event_is_read_once_for_kazoo_s_watchers_and_the_follower(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop reads a notification as kazoo does (a data change pops the path's data
    watchers, a deletion its data and child watchers, a child change its child watchers; each
    told a ``WatchedEvent`` of the path without the chroot), then tells the follower the
    server's type and path; an unknown type is logged and told to no watcher; nothing is told
    to watchers once the client is stopped."""
    client = KazooClient(hosts="127.0.0.1:1/app", handler=FastThreadingHandler())
    assert use_lean_loop(client)
    told: list[Any] = []
    followed: list[tuple[int, str]] = []

    @runs_inline
    def watcher(event: Any) -> None:
        told.append((event.type, event.path))

    kazoo_internals.follow_watch_events(client, lambda kind, path: followed.append((kind, path)))
    connection = client._connection
    assert "_read_watch_event" not in vars(connection)  # not wrapped: one read for both
    client._stopped.clear()  # as while the client runs
    client._data_watchers["/app/a"].add(watcher)
    client._child_watchers["/app/a"].add(watcher)
    connection._read_watch_event(_watch_event(3, "/app/a"), 16)  # changed
    assert told == [("CHANGED", "/a")] and "/app/a" not in client._data_watchers
    assert "/app/a" in client._child_watchers
    client._data_watchers["/app/a"].add(watcher)
    connection._read_watch_event(_watch_event(2, "/app/a"), 16)  # deleted
    assert told[1:] == [("DELETED", "/a"), ("DELETED", "/a")]
    assert "/app/a" not in client._child_watchers
    client._child_watchers["/app/a"].add(watcher)
    client._data_watchers["/app/a"].add(watcher)
    connection._read_watch_event(_watch_event(4, "/app/a"), 16)  # children changed
    assert told[3:] == [("CHILD", "/a")] and "/app/a" in client._data_watchers
    with caplog.at_level(logging.WARNING):
        connection._read_watch_event(_watch_event(9, "/app/a"), 16)
    assert "unknown event 9" in caplog.text and len(told) == 4
    client._stopped.set()
    connection._read_watch_event(_watch_event(3, "/app/a"), 16)
    assert len(told) == 4 and "/app/a" not in client._data_watchers
    assert followed == [(3, "/app/a"), (2, "/app/a"), (4, "/app/a"), (9, "/app/a"), (3, "/app/a")]


def test_watch_events_followed_on_kazoo_s_loop_are_still_followed_on_pycurator_s() -> None:
    """A client whose watch events were followed on kazoo's loop (the watches that stay, made
    before the client took pycurator's loop) keeps its follower when it takes the loop."""
    client = KazooClient(hosts="127.0.0.1:1", handler=FastThreadingHandler())
    followed: list[tuple[int, str]] = []
    kazoo_internals.follow_watch_events(client, lambda kind, path: followed.append((kind, path)))
    assert "_read_watch_event" in vars(client._connection)  # kazoo's reader, wrapped
    assert use_lean_loop(client)
    client._connection._read_watch_event(_watch_event(3, "/a"), 16)
    assert followed == [(3, "/a")]


def counted_writes(client: KazooClient) -> list[bytes]:
    """What the client's loop writes on its socket from now on, one entry a write."""
    connection = client._connection
    write = connection._send
    writes: list[bytes] = []

    def counted(sock: socket.socket, data: bytes) -> None:
        writes.append(data)
        write(sock, data)

    connection._send = counted
    return writes


def test_requests_a_thread_holds_are_written_together_in_order_once_sent(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    """Held by one thread, not by the others: another thread's request is written and
    answered meanwhile."""
    client = started(clients, zk_server.hosts)
    client.ensure_path(zk_path)
    writes = counted_writes(client)
    kazoo_internals.hold_sends(client)
    try:
        made = [client.create_async(f"{zk_path}/n-", sequence=True) for _ in range(3)]
        watched = client.exists_async(f"{zk_path}/n-0000000002", watch=lambda _: None)
        other = Worker(lambda: client.exists(zk_path))
        other.start()
        assert other.outcome() is not None
        assert len(writes) == 1
        assert not any(result.ready() for result in [*made, watched])
    finally:
        kazoo_internals.send_held(client)
    names = [result.get(timeout=SOON) for result in made]
    assert names == [f"{zk_path}/n-000000000{i}" for i in range(3)]
    assert watched.get(timeout=SOON) is not None  # sent behind the creates
    assert len(writes) == 2
    kazoo_internals.send_held(client)  # holding nothing: writes nothing
    assert len(writes) == 2


def test_requests_held_while_the_connection_is_lost_are_sent_in_order_once_it_is_back(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, proxy.hosts)
    client.ensure_path(zk_path)
    kazoo_internals.hold_sends(client)
    try:
        made = [client.create_async(f"{zk_path}/n-", sequence=True) for _ in range(3)]
        proxy.blackhole()
        proxy.drop_connections()
        eventually(lambda: not client.connected, what="the connection lost")
        made += [client.create_async(f"{zk_path}/n-", sequence=True) for _ in range(2)]
    finally:
        kazoo_internals.send_held(client)
    assert not any(result.ready() for result in made)
    proxy.heal()
    names = [result.get(timeout=SOON) for result in made]
    assert names == [f"{zk_path}/n-000000000{i}" for i in range(5)]


def test_a_registration_writes_its_create_and_the_watch_on_its_node_at_once(
    zk_server: ZooKeeperTarget, zk: KazooClient, clients: list[KazooClient], zk_path: str
) -> None:
    """The runner holds a run of sends, one behind the other, until its next other step: a
    registration costs one write, and its node is watched (another's delete is heard)."""
    client = started(clients, zk_server.hosts)
    with ServiceDiscovery(client, zk_path) as discovery:
        # made first, with the parents, and kept: the parent container is never emptied
        discovery.register_service(ServiceInstance(name="billing", id="stays", port=8081))
        writes = counted_writes(client)
        discovery.register_service(ServiceInstance(name="billing", id="one", port=8080))
        assert len(writes) == 1
        node = f"{zk_path}/billing/one"
        assert zk.exists(node) is not None
        zk.delete(node)
        eventually(lambda: zk.exists(node) is not None, what="the node made again")
