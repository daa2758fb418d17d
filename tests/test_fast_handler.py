"""``FastThreadingHandler``: kazoo's ``select`` contract with a reused poller, watchers marked
with ``runs_inline`` run on the connection thread, a client that reconnects on it, and the
``PYCURATOR_TEST_HANDLER`` switch of the test fixtures. Its sockets (read in blocks, written
without a prior poll) are in ``tests/test_fast_handler_sockets.py``.

The recipes themselves run under it in ``tests/test_handlers.py`` (and the latch and selector
modules), and the whole suite runs on it with ``PYCURATOR_TEST_HANDLER=fast``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import KazooState, WatchedEvent

from pycurator import InterProcessMutex, InterProcessReadWriteLock
from pycurator.handlers import FastThreadingHandler, link_inline, runs_inline
from pycurator.testing import ClientFactory, FaultProxy
from pycurator.testing.pytest_plugin import HANDLER_ENV, ZooKeeperTarget, handler_from_env

from .aio_support import watched_paths
from .support import SOON, RequestCounter, Worker, children, eventually

#: kazoo's handler and ours must answer ``select`` alike.
HANDLER_TYPES = (SequentialThreadingHandler, FastThreadingHandler)


@pytest.fixture(params=HANDLER_TYPES, ids=lambda kind: kind.__name__)
def handler(request: pytest.FixtureRequest) -> Any:
    return request.param()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_select_reports_the_ready_objects_it_was_given(
    handler: Any, pair: tuple[socket.socket, socket.socket]
) -> None:
    left, right = pair
    assert handler.select([left, right], [], [], 0) == ([], [], [])
    right.sendall(b"x")
    assert handler.select([left, right], [], [], SOON) == ([left], [], [])
    assert handler.select([], [left], [], SOON) == ([], [left], [])
    assert handler.select([left.fileno()], [], [], SOON) == ([left.fileno()], [], [])
    left.recv(1)
    assert handler.select([left], [], [], 0.001) == ([], [], [])


def test_select_reports_a_hang_up_as_readable(
    handler: Any, pair: tuple[socket.socket, socket.socket]
) -> None:
    left, right = pair
    right.close()
    assert handler.select([left], [], [], SOON)[0] == [left]
    assert left.recv(1) == b""


def test_select_rejects_a_closed_descriptor_and_a_bad_timeout(handler: Any) -> None:
    left, right = socket.socketpair()
    fd = left.fileno()
    assert handler.select([fd], [], [], 0) == ([], [], [])  # a poller for it is now kept
    right.close()
    left.close()
    with pytest.raises(ValueError):
        handler.select([fd], [], [], 0)
    with pytest.raises(ValueError, match="non-negative"):
        handler.select([], [], [], -1)
    with pytest.raises(TypeError, match="number"):
        handler.select([], [], [], "1")


def test_threads_may_select_on_the_same_descriptors_at_once(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    handler = FastThreadingHandler()
    entered = threading.Event()

    def wait_for_data() -> Any:
        entered.set()
        return handler.select([left], [], [], SOON)

    waiting = Worker(wait_for_data)
    waiting.start()
    assert entered.wait(SOON)
    # the same descriptor set from another thread while the first may be blocked in poll:
    # one shared poll object would raise "concurrent poll() invocation"
    for _ in range(50):
        assert handler.select([left], [], [], 0) == ([], [], [])
    right.sendall(b"x")
    assert waiting.outcome() == ([left], [], [])


def test_the_pollers_a_thread_keeps_stay_few(handler: Any) -> None:
    pairs = [socket.socketpair() for _ in range(20)]
    try:
        for left, _ in pairs:
            assert handler.select([left], [], [], 0) == ([], [], [])
        if isinstance(handler, FastThreadingHandler):
            assert len(handler._pollers.cache) <= 8
    finally:
        for left, right in pairs:
            left.close()
            right.close()


def test_a_client_on_the_handler_reconnects_and_locks_again(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = KazooClient(hosts=proxy.hosts, timeout=10.0, handler=FastThreadingHandler())
        states: list[KazooState] = []
        reconnected = threading.Event()

        def listen(state: KazooState) -> None:
            states.append(state)
            if state == KazooState.CONNECTED and KazooState.SUSPENDED in states:
                reconnected.set()

        client.add_listener(listen)
        client.start(timeout=SOON)
        try:
            lock = InterProcessMutex(client, zk_path)
            assert lock.acquire(SOON)
            lock.release()
            proxy.drop_connections()
            assert reconnected.wait(SOON), states
            assert lock.acquire(SOON)
            lock.release()
        finally:
            client.stop()
            client.close()


def test_the_fixtures_clients_take_the_handler_named_in_the_environment(
    zk_client_factory: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HANDLER_ENV, "fast")
    assert isinstance(zk_client_factory().handler, FastThreadingHandler)
    given = SequentialThreadingHandler()
    assert zk_client_factory(handler=given).handler is given
    monkeypatch.setenv(HANDLER_ENV, "threading")
    assert type(zk_client_factory().handler) is SequentialThreadingHandler
    monkeypatch.delenv(HANDLER_ENV)
    assert handler_from_env() is None


def test_an_unknown_handler_name_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HANDLER_ENV, "tornado")
    with pytest.raises(pytest.UsageError, match=f"{HANDLER_ENV} must be 'threading' or 'fast'"):
        handler_from_env()


def test_the_suite_handler_switch_is_documented() -> None:
    docs = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "benchmarks.md")
    with open(docs) as page:
        assert HANDLER_ENV in page.read()


# Watchers marked with runs_inline, on a real client.


@contextlib.contextmanager
def client_and_connection_thread(
    zk_server: ZooKeeperTarget, handler: Any
) -> Iterator[tuple[KazooClient, threading.Thread]]:
    """A started client on ``handler`` and its connection thread: the thread kazoo calls its
    state listeners on (here: CONNECTED, as it starts). Stopped and closed afterwards."""
    client = KazooClient(hosts=zk_server.hosts, timeout=10.0, handler=handler)
    connected: list[threading.Thread] = []

    def listen(state: KazooState) -> None:
        if state == KazooState.CONNECTED:
            connected.append(threading.current_thread())

    client.add_listener(listen)
    client.start(timeout=SOON)
    try:
        assert connected, "no CONNECTED state seen"
        client.remove_listener(listen)
        yield client, connected[0]
    finally:
        client.stop()
        client.close()


def thread_recorder(seen: list[threading.Thread], done: threading.Event) -> Callable[..., None]:
    """A watcher that records the thread it runs on in ``seen`` and sets ``done``."""

    def watcher(event: WatchedEvent) -> None:
        seen.append(threading.current_thread())
        done.set()

    return watcher


def test_a_marked_watcher_runs_on_the_connection_thread_under_the_fast_handler_only(
    handler: Any, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    with client_and_connection_thread(zk_server, handler) as (client, connection_thread):
        client.ensure_path(zk_path)
        path = f"{zk_path}/node"
        inline: list[threading.Thread] = []
        queued: list[threading.Thread] = []
        inline_done, queued_done = threading.Event(), threading.Event()
        assert client.exists(path, watch=runs_inline(thread_recorder(inline, inline_done))) is None
        assert client.exists(path, watch=thread_recorder(queued, queued_done)) is None
        client.create(path)
        assert inline_done.wait(SOON) and queued_done.wait(SOON)
        assert queued[0] is not connection_thread  # kazoo's callback worker
        assert queued[0] is not threading.current_thread()
        if isinstance(handler, FastThreadingHandler):
            assert inline[0] is connection_thread
        else:
            assert inline[0] is queued[0]


def test_a_marked_watcher_that_raises_is_logged_and_the_client_goes_on(
    zk_server: ZooKeeperTarget, zk_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    handler = FastThreadingHandler()
    with client_and_connection_thread(zk_server, handler) as (client, connection_thread):
        client.ensure_path(zk_path)
        path = f"{zk_path}/node"

        @runs_inline
        def failing(event: WatchedEvent) -> None:
            raise RuntimeError("watcher broke")

        later: list[threading.Thread] = []
        later_done = threading.Event()

        def failures() -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.name == "pycurator.handlers"]

        with caplog.at_level(logging.ERROR, logger="pycurator.handlers"):
            assert client.exists(path, watch=failing) is None
            client.create(path, b"v")
            eventually(lambda: bool(failures()), what="the failure logged")
        [record] = failures()
        assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
        assert client.get(path)[0] == b"v"
        assert client.exists(path, watch=runs_inline(thread_recorder(later, later_done)))
        client.delete(path)
        assert later_done.wait(SOON)
        assert later[0] is connection_thread


def test_a_callback_linked_inline_runs_where_the_answer_is_read_and_once(
    handler: Any, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    with client_and_connection_thread(zk_server, handler) as (client, connection_thread):
        client.ensure_path(zk_path)
        ran: list[tuple[threading.Thread, Any]] = []
        done = threading.Event()

        def callback(result: Any) -> None:
            ran.append((threading.current_thread(), result))
            done.set()

        fast = isinstance(handler, FastThreadingHandler)
        if not fast:
            pending = client.get_async(f"{zk_path}/missing")
            assert link_inline(pending, callback) is False
            pending.wait(SOON)
            assert not done.wait(0.2) and ran == []  # nothing was arranged
            return
        # The connection thread is held in an earlier answer's inline callback, so the next
        # answer cannot be read before its callback is linked, however slow this thread is.
        holding, release = threading.Event(), threading.Event()

        def hold(_: Any) -> None:
            if threading.current_thread() is connection_thread:
                holding.set()
                release.wait(SOON)

        for _ in range(100):  # an answer read before its link runs here instead: ask again
            assert link_inline(client.exists_async(zk_path), hold) is True
            if holding.wait(0.5):
                break
        assert holding.is_set()
        try:
            pending = client.get_async(f"{zk_path}/missing")  # answered with NoNodeError
            assert link_inline(pending, callback) is True
        finally:
            release.set()
        assert done.wait(SOON)
        [(thread, result)] = ran
        assert thread is connection_thread and result is pending
        assert isinstance(pending.exception, NoNodeError)
        # answered already: at once, on the caller's thread
        answered = client.exists_async(zk_path)
        answered.wait(SOON)
        assert link_inline(answered, callback) is True
        assert ran[1] == (threading.current_thread(), answered)


def test_a_callback_linked_inline_that_raises_is_logged(
    zk_server: ZooKeeperTarget, zk_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with client_and_connection_thread(zk_server, FastThreadingHandler()) as (client, _):

        def failing(result: Any) -> None:
            raise RuntimeError("callback broke")

        with caplog.at_level(logging.ERROR, logger="pycurator.handlers"):
            result = client.exists_async("/")
            link_inline(result, failing)
            assert result.get(SOON) is not None
            eventually(
                lambda: any(r.name == "pycurator.handlers" for r in caplog.records),
                what="the failure logged",
            )
        assert client.exists("/") is not None


@pytest.mark.parametrize("recipe", ["mutex", "write lock"])
def test_the_waiters_first_request_after_the_deletion_is_sent_by_the_thread_that_reads_it(
    handler: Any,
    recipe: str,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    """The mutex waiter right behind the holder confirms its node (``exists``), the write
    lock's waiter lists again: sent by its watcher, not by the waiting thread, and only once."""
    path = f"{zk_path}/lock"

    def lock_on(client: KazooClient) -> Any:
        if recipe == "mutex":
            return InterProcessMutex(client, path)
        return InterProcessReadWriteLock(client, path).write_lock()

    holder = lock_on(zk_client_factory())
    assert holder.acquire(timeout=SOON)
    with client_and_connection_thread(zk_server, handler) as (client, connection_thread):
        waiter = lock_on(client)
        counter = RequestCounter(client)
        waiting: list[threading.Thread] = []

        def wait() -> None:
            waiting.append(threading.current_thread())
            assert waiter.acquire(timeout=SOON)
            waiter.release()

        worker = Worker(wait)
        try:
            worker.start()
            eventually(lambda: counter.counts["GetData"] == 1, what="the waiter watching")
            # its watch set on the server: a release before it (the GetData answered with no
            # node) has the waiting thread itself look again, rightly
            eventually(
                lambda: any(f"{path}/" in p for p in watched_paths(client)),
                what="the watch on the holder's node",
            )
            holder.release()
            worker.outcome()
        finally:
            counter.close()
    after = counter.senders[[kind for kind, _ in counter.senders].index("GetData") + 1 :]
    expected = "Exists" if recipe == "mutex" else "GetChildren"
    assert [kind for kind, _ in after] == [expected, "Delete"]
    [(_, sender), (_, releaser)] = after
    assert releaser is waiting[0] and sender is not waiting[0]
    if isinstance(handler, FastThreadingHandler):
        assert sender is connection_thread


def test_a_reply_larger_than_a_read_block_keeps_the_connection(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(handler=FastThreadingHandler())
    states: list[KazooState] = []
    client.add_listener(states.append)
    big = bytes(range(256)) * 3000  # 768,000 bytes: twelve read blocks
    path = f"{zk_path}/big"
    client.create(path, big, makepath=True)
    try:
        # several large replies and small ones behind each other in the socket
        replies = [client.get_async(path) for _ in range(4)]
        small = [client.exists_async(zk_path) for _ in range(20)]
        assert all(reply.get(SOON)[0] == big for reply in replies)
        assert all(answer.get(SOON) is not None for answer in small)
        assert client.get(path)[0] == big
    finally:
        client.delete(path)
    assert states == []


def test_a_lock_in_a_chroot_reports_the_clients_paths(
    handler: Any,
    zk: KazooClient,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    zk_no_orphans: None,
) -> None:
    zk.ensure_path(zk_path)
    client = zk_client_factory(hosts=zk_server.hosts + zk_path, handler=handler)
    lock = InterProcessMutex(client, "/locks/one")
    assert lock.acquire(SOON)
    try:
        held = lock.lock_path
        assert held is not None and held.startswith("/locks/one/"), held
        assert lock.participant_nodes() == [held]
        assert client.exists(held) is not None
        assert children(zk, f"{zk_path}/locks/one") == [held.rsplit("/", 1)[1]]
        assert lock.is_held()
    finally:
        lock.release()
    eventually(lambda: not children(zk, f"{zk_path}/locks/one"), what="our node deleted")
