"""``FastThreadingHandler``: kazoo's ``select`` contract with a reused poller, a client that
reconnects on it, and the ``PYCURATOR_TEST_HANDLER`` switch of the test fixtures.

The recipes themselves run under it in ``tests/test_handlers.py`` (and the latch and selector
modules), and the whole suite runs on it with ``PYCURATOR_TEST_HANDLER=fast``.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import KazooState

from pycurator import InterProcessMutex
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import ClientFactory, FaultProxy
from pycurator.testing.pytest_plugin import HANDLER_ENV, ZooKeeperTarget, handler_from_env

from .support import SOON, Worker

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
