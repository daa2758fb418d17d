"""``FastThreadingHandler``: kazoo's ``select`` contract with a reused poller, sockets read in
blocks and written without a prior poll, watchers marked with ``runs_inline`` run on the
connection thread, a client that reconnects on it, and the ``PYCURATOR_TEST_HANDLER`` switch of
the test fixtures.

The recipes themselves run under it in ``tests/test_handlers.py`` (and the latch and selector
modules), and the whole suite runs on it with ``PYCURATOR_TEST_HANDLER=fast``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
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


# Sockets read in blocks: kazoo's wake-up pair (its reading end) and its server connection.


@pytest.fixture
def wake_pair() -> Iterator[tuple[FastThreadingHandler, Any, socket.socket]]:
    """The fast handler with kazoo's wake-up pair made by it: (handler, reading end, writer)."""
    handler = FastThreadingHandler()
    reader, writer = handler.create_socket_pair()
    yield handler, reader, writer
    reader.close()
    writer.close()


def kernel_readable(sock: Any) -> bool:
    """Whether the kernel itself has data (or a hang-up) for ``sock``, asked past the handler."""
    return bool(select.select([sock.fileno()], [], [], 0)[0])


def test_frames_that_arrived_together_are_taken_apart_from_one_read(
    wake_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, reader, writer = wake_pair
    writer.sendall(b"\0\0\0\3abc\0\0\0\2de")
    assert handler.select([reader], [], [], SOON) == ([reader], [], [])
    assert reader.recv(4) == b"\0\0\0\3"
    assert reader.pending() == 9  # the rest came with the same read
    assert not kernel_readable(reader)
    writer.close()  # what follows can only come from the buffer
    assert reader.recv(3) == b"abc"
    assert reader.recv(4) == b"\0\0\0\2"
    assert reader.recv(100) == b"de"  # no more than is buffered, without touching the socket
    assert reader.pending() == 0
    assert reader.recv(100) == b""  # then the end of the stream


def test_pending_is_what_is_buffered_or_one_when_select_saw_data(
    wake_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, reader, writer = wake_pair
    assert reader.pending() == 0
    writer.sendall(b"xyz")
    assert reader.pending() == 0  # pending() does not ask the kernel
    assert handler.select([reader], [], [], SOON) == ([reader], [], [])
    assert reader.pending() == 1
    assert reader.recv(1) == b"x"
    assert reader.pending() == 2
    assert reader.recv(2) == b"yz"
    assert reader.pending() == 0
    assert handler.select([reader], [], [], 0) == ([], [], [])
    # data the select saw is read by a recv on an empty buffer
    writer.sendall(b"late")
    assert handler.select([reader], [], [], SOON) == ([reader], [], [])
    assert reader.recv(100) == b"late"
    assert reader.pending() == 0


def test_select_reports_a_buffered_socket_readable_without_asking_the_kernel(
    wake_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, reader, writer = wake_pair
    writer.sendall(b"ab")
    assert handler.select([reader], [], [], SOON) == ([reader], [], [])
    assert reader.recv(1) == b"a"
    assert not kernel_readable(reader)
    assert handler.select([reader], [], [], 0) == ([reader], [], [])
    assert handler.select([reader], [], [], None) == ([reader], [], [])  # would block otherwise
    assert reader.recv(1) == b"b"
    assert handler.select([reader], [], [], 0) == ([], [], [])


def test_the_wake_up_pair_never_makes_a_writer_wait_and_loses_no_byte(
    wake_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, reader, writer = wake_pair
    sent = threading.Event()

    def burst() -> None:  # far more than the kernel buffer of the pair holds
        for _ in range(20_000):
            writer.send(b"\0")
        sent.set()

    threading.Thread(target=burst, daemon=True).start()
    assert sent.wait(SOON), "a writer waited on the full pair"
    received = 0
    while handler.select([reader], [], [], 0)[0]:
        chunk = reader.recv(1)
        assert chunk == b"\0"
        received += 1
    # each byte the kernel refused is owed, and may bring one real byte more to wake the
    # reader (kazoo reads a byte with no request behind it as a no-op)
    assert 20_000 <= received <= 40_000
    assert reader.pending() == 0


def test_a_hang_up_reads_as_the_end_of_the_stream(
    wake_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, reader, writer = wake_pair
    writer.close()
    assert handler.select([reader], [], [], SOON) == ([reader], [], [])
    assert reader.pending() == 1
    assert reader.recv(4) == b""
    assert reader.pending() == 0


@pytest.fixture
def tcp_pair() -> Iterator[tuple[FastThreadingHandler, Any, socket.socket]]:
    """(handler, a connection the handler made as kazoo does, the server's end of it), with
    small kernel buffers on both ends so that a few sends fill them."""
    handler = FastThreadingHandler()
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock = handler.create_connection(server.getsockname(), timeout=SOON)
        peer, _ = server.accept()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sock.setblocking(False)
    yield handler, sock, peer
    sock.close()
    peer.close()


def test_a_write_select_does_not_poll_and_send_waits_only_when_the_kernel_is_full(
    tcp_pair: tuple[FastThreadingHandler, Any, socket.socket],
) -> None:
    handler, sock, peer = tcp_pair
    wait = 0.5
    block = b"x" * 65536
    took = 0.0
    for _ in range(1000):  # the peer reads nothing: the buffers fill
        assert handler.select([], [sock], [], wait) == ([], [sock], [])
        started = time.monotonic()
        try:
            sock.send(block)
        except TimeoutError:
            took = time.monotonic() - started
            break
    else:
        pytest.fail("the kernel never refused data")
    assert wait * 0.9 <= took < SOON  # waited for the select's timeout, then gave up
    assert not select.select([], [sock.fileno()], [], 0)[1]
    assert handler.select([], [sock], [], 0) == ([], [sock], [])  # told writable all the same

    def drain() -> int:
        total = 0
        while data := peer.recv(65536):
            total += len(data)
        return total

    reading = Worker(drain)
    reading.start()
    assert handler.select([], [sock], [], SOON) == ([], [sock], [])
    assert sock.send(b"y" * 1000) > 0
    sock.shutdown(socket.SHUT_WR)
    assert reading.outcome() > 0


def test_a_tls_connection_is_not_wrapped(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    handler = FastThreadingHandler()
    with socket.create_server(("127.0.0.1", 0)) as server:

        def serve() -> None:
            conn, _ = server.accept()
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"hello")
                tls.recv(1)

        serving = Worker(serve)
        serving.start()
        sock = handler.create_connection(
            server.getsockname(),
            hostname="localhost",
            timeout=SOON,
            use_ssl=True,
            verify_certs=False,
        )
        try:
            assert isinstance(sock, ssl.SSLSocket)
            assert sock.recv(5) == b"hello"
        finally:
            sock.close()
        serving.outcome()


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
        pending = client.get_async(f"{zk_path}/missing")  # answered with NoNodeError
        assert link_inline(pending, callback) is fast
        if not fast:
            pending.wait(SOON)
            assert not done.wait(0.2) and ran == []  # nothing was arranged
            return
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
