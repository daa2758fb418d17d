"""kazoo's private attributes that pycurator relies on (all touched in
pycurator._client.kazoo_internals), and the ways kazoo's connection uses a handler that pycurator's
fast handler relies on (named in pycurator._client.kazoo_internals's docstring), still behave as in
the kazoo releases that module names. A failure here means a kazoo release changed them: re-check
every function of pycurator._client.kazoo_internals and pycurator.handlers before anything else.

The handler's points are pinned on kazoo's own ``SequentialThreadingHandler``, recording what
kazoo's connection asks of it, so they test kazoo and not pycurator."""

from __future__ import annotations

import collections
import contextlib
import inspect
import queue
import re
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import kazoo.exceptions
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd
from kazoo.protocol.states import Callback, KazooState, WatchedEvent
from kazoo.security import OPEN_ACL_UNSAFE

from pycurator._client import kazoo_internals
from pycurator._client import sending as _sending
from pycurator._client.kazoo_internals import releases
from pycurator._client.records import CreateContainer, RemoveWatches
from pycurator._client.sending import prefixed
from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol.requests import DeleteNode, GetData, ListChildren, NodeExists, WatcherType
from pycurator.testing import FaultProxy, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, eventually

#: The installed kazoo, as (major, minor).
INSTALLED = releases.release(version("kazoo"))
ROOT = Path(__file__).resolve().parent.parent


def test_the_kazoo_release_is_of_a_minor_release_checked() -> None:
    assert releases.checked(), (
        f"{releases.unchecked()}: check every function of pycurator._client.kazoo_internals and "
        "its docstring's list of what the fast handler relies on, then add the minor release to "
        "kazoo_internals.releases.CHECKED (and pyproject.toml's range follows)"
    )


def test_the_declared_kazoo_range_is_the_releases_checked() -> None:
    """``pyproject.toml`` allows exactly the minor releases the runtime and these tests take as
    checked: one rule, read in both places."""
    declared = re.findall(r'"(kazoo[<>=!~][^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert declared == [releases.declared_range()]
    assert releases.checked("2.11.0") and releases.checked("2.11.7")
    assert not releases.checked("2.10.0") and not releases.checked("2.12.0")


def test_stopped_is_told_before_start_while_started_and_after_stop(
    zk_server: ZooKeeperTarget,
) -> None:
    client = KazooClient(hosts=zk_server.hosts)
    assert kazoo_internals.is_stopped(client)
    client.start(timeout=30)
    try:
        assert not kazoo_internals.is_stopped(client)
    finally:
        client.stop()
        client.close()
    assert kazoo_internals.is_stopped(client)


@pytest.mark.parametrize("children", [False, True])
def test_watchers_are_registered_per_server_path_and_can_be_discarded(
    zk: KazooClient, zk_path: str, children: bool
) -> None:
    zk.ensure_path(zk_path)
    seen: list[WatchedEvent] = []
    if children:
        zk.get_children(zk_path, watch=seen.append)
    else:
        zk.get(zk_path, watch=seen.append)
    assert kazoo_internals.watchers(zk, zk_path, children=children) == {seen.append}
    assert kazoo_internals.watchers(zk, zk_path, children=not children) == set()
    assert zk_path in kazoo_internals.watched_paths(zk, children=children)
    assert kazoo_internals.discard_watcher(zk, zk_path, seen.append, children=children) is False
    assert kazoo_internals.watchers(zk, zk_path, children=children) == set()
    assert zk_path not in kazoo_internals.watched_paths(zk, children=children)


def test_call_sends_a_request_kazoo_does_not_know(zk: KazooClient, zk_path: str) -> None:
    assert list(inspect.signature(KazooClient._call).parameters) == [
        "self",
        "request",
        "async_object",
    ]
    zk.ensure_path(zk_path)
    result = zk.handler.async_result()
    kazoo_internals.call(zk, CreateContainer(f"{zk_path}/box", b"", OPEN_ACL_UNSAFE), result)
    path, stat = result.get(timeout=SOON)
    assert path == f"{zk_path}/box" and stat.version == 0


def test_the_answer_is_what_the_request_objects_deserialize_returns_on_the_connection_thread(
    zk: KazooClient, zk_path: str
) -> None:
    zk.ensure_path(zk_path)
    for name in ("b", "a"):
        zk.create(f"{zk_path}/{name}")
    readers: list[str] = []

    def reduce(children: list[str]) -> str:
        readers.append(threading.current_thread().name)
        return ",".join(sorted(children))

    transport = transport_of(zk)
    result = transport.send(ListChildren(zk_path, reduce=reduce))
    assert result.get(timeout=SOON) == "a,b"
    assert readers and readers[0] != threading.current_thread().name
    with pytest.raises(NoNodeError):
        transport.send(ListChildren(f"{zk_path}/gone", reduce=reduce)).get(timeout=SOON)


def test_kazoo_reads_the_errors_it_knows_and_nowatcher_from_2_11() -> None:
    assert kazoo_internals.reads_error(NoNodeError.code)
    assert not kazoo_internals.reads_error(-999)
    assert kazoo_internals.reads_error(kazoo_internals.NO_WATCHER) is (INSTALLED >= (2, 11))
    assert not kazoo.exceptions.EXCEPTIONS.get(-999)  # asking left no entry behind


def test_remove_watches_is_sent_only_where_kazoo_reads_nowatcher(
    zk: KazooClient, zk_path: str
) -> None:
    """On kazoo 2.9 and 2.10 (below the floor, but installable with ``--no-deps``) the
    server's NOWATCHER answer would end the connection loop: pycurator sends nothing there."""
    zk.ensure_path(zk_path)
    assert _sending.CAN_REMOVE_WATCHES is kazoo_internals.reads_error(kazoo_internals.NO_WATCHER)
    if _sending.CAN_REMOVE_WATCHES:
        result = zk.handler.async_result()
        kazoo_internals.call(zk, RemoveWatches(prefixed(zk, zk_path)), result)
        with pytest.raises(kazoo.exceptions.NoWatcherError):
            result.get(timeout=SOON)
    removed = _sending.remove_watches(zk, zk_path, WatcherType.DATA)
    assert removed is _sending.CAN_REMOVE_WATCHES
    assert zk.exists(zk_path) is not None  # the connection lives on
    assert zk.connected


# How kazoo's connection uses a handler, recorded on kazoo's own handler.


class Recorded:
    """A socket of kazoo's whose ``send``, ``recv`` (and, for the server socket, ``pending``,
    always 0) calls are recorded in ``calls`` as (label, call, argument)."""

    def __init__(self, sock: Any, label: str, calls: list[tuple[str, str, Any]]) -> None:
        self._sock, self.label, self._calls = sock, label, calls

    def send(self, data: Any) -> int:
        self._calls.append((self.label, "send", bytes(data)))
        return int(self._sock.send(data))

    def recv(self, size: int) -> bytes:
        self._calls.append((self.label, "recv", size))
        return bytes(self._sock.recv(size))

    def __getattr__(self, name: str) -> Any:
        if name == "pending" and self.label == "server":
            return self._pending
        return getattr(self._sock, name)

    def _pending(self) -> int:
        self._calls.append((self.label, "pending", None))
        return 0


class CountingQueue(queue.Queue):  # type: ignore[type-arg]
    def __init__(self) -> None:
        super().__init__()
        self.done = 0

    def task_done(self) -> None:
        self.done += 1
        super().task_done()


class Answered(AsyncResult):  # type: ignore[misc]
    """kazoo's result, recording on which thread it was answered and how."""

    answers: list[tuple[str, threading.Thread]]

    def set(self, value: Any = None) -> None:
        self.answers.append(("set", threading.current_thread()))
        super().set(value)

    def set_exception(self, exception: BaseException) -> None:
        self.answers.append(("set_exception", threading.current_thread()))
        super().set_exception(exception)


class RecordingHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's own handler, recording what kazoo's connection asks of it."""

    queue_impl = CountingQueue

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, Any]] = []
        self.callbacks: list[Any] = []
        self.results: list[Answered] = []
        self.answers: list[tuple[str, threading.Thread]] = []

    def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        return Recorded(super().create_connection(*args, **kwargs), "server", self.calls)

    def create_socket_pair(self) -> tuple[Any, Any]:
        reader, writer = super().create_socket_pair()
        return Recorded(reader, "pair reader", self.calls), Recorded(writer, "pair", self.calls)

    def select(self, *args: Any, **kwargs: Any) -> Any:
        labels = [getattr(obj, "label", obj) for obj in args[0]]
        self.calls.append(("handler", "select", labels))
        return super().select(*args, **kwargs)

    def dispatch_callback(self, callback: Any) -> None:
        self.callbacks.append(callback)
        super().dispatch_callback(callback)

    def async_result(self) -> Any:
        result = Answered(self)
        result.answers = self.answers
        self.results.append(result)
        return result


@pytest.fixture
def recorded(zk_server: ZooKeeperTarget) -> Iterator[tuple[KazooClient, RecordingHandler]]:
    handler = RecordingHandler()
    client = KazooClient(hosts=zk_server.hosts, handler=handler)
    client.start(timeout=30)
    yield client, handler
    client.stop()
    client.close()


def calls_answering(
    recorded: tuple[KazooClient, RecordingHandler], requests: int = 1
) -> list[tuple[str, str, Any]]:
    """What kazoo asked of the handler and its sockets while ``requests`` requests were sent
    and answered one after the other."""
    client, handler = recorded
    handler.calls.clear()
    for _ in range(requests):
        assert client.exists("/") is not None
    return list(handler.calls)


def test_create_connection_makes_the_socket_kazoo_reads_and_writes(
    recorded: tuple[KazooClient, RecordingHandler],
) -> None:
    calls = [(label, call) for label, call, _ in calls_answering(recorded)]
    assert ("server", "send") in calls and ("server", "recv") in calls


def test_create_socket_pair_carries_one_wake_byte_per_queued_request_read_one_at_a_time(
    recorded: tuple[KazooClient, RecordingHandler],
) -> None:
    on_pair = [call for call in calls_answering(recorded, 3) if "pair" in call[0]]
    assert on_pair[::2] == [("pair", "send", kazoo_internals.WAKE_BYTE)] * 3
    assert on_pair[1::2] == [("pair reader", "recv", 1)] * 3


def test_pending_is_asked_before_the_connection_selects_for_a_reply(
    recorded: tuple[KazooClient, RecordingHandler],
) -> None:
    calls = calls_answering(recorded)
    asked = calls.index(("server", "pending", None))
    assert calls[asked + 1] == ("handler", "select", ["server"])  # pending() was 0


def test_dispatch_callback_receives_each_watch_event_as_a_callback_with_func_and_args(
    recorded: tuple[KazooClient, RecordingHandler], zk_path: str
) -> None:
    client, handler = recorded
    client.ensure_path(zk_path)
    seen: list[WatchedEvent] = []
    client.get(zk_path, watch=seen.append)
    client.set(zk_path, b"changed")
    eventually(lambda: bool(seen), what="the watch event")
    (callback,) = [c for c in handler.callbacks if c.func == seen.append]
    assert isinstance(callback, Callback)
    assert callback.args == (seen[0],)


def test_queue_impl_makes_both_work_queues_and_workers_tell_each_item_done(
    recorded: tuple[KazooClient, RecordingHandler], zk_path: str
) -> None:
    client, handler = recorded
    assert isinstance(handler.callback_queue, CountingQueue)
    assert isinstance(handler.completion_queue, CountingQueue)
    client.ensure_path(zk_path)
    ran = threading.Event()
    client.get(zk_path, watch=lambda event: ran.set())
    client.delete(zk_path)
    assert ran.wait(SOON)
    eventually(lambda: handler.callback_queue.done >= 1, what="task_done after the callback")


def test_async_result_answers_every_request_on_the_connection_thread(
    recorded: tuple[KazooClient, RecordingHandler], zk_path: str
) -> None:
    client, handler = recorded
    handler.results.clear()
    handler.answers.clear()
    assert client.exists("/") is not None
    with pytest.raises(NoNodeError):
        client.get(f"{zk_path}/missing")
    assert len(handler.results) == 2
    (ok, ok_thread), (failed, failed_thread) = handler.answers
    assert (ok, failed) == ("set", "set_exception")
    assert ok_thread is failed_thread is not threading.current_thread()


def test_select_is_given_the_server_socket_and_the_pairs_reading_end(
    recorded: tuple[KazooClient, RecordingHandler],
) -> None:
    assert ("handler", "select", ["server", "pair reader"]) in calls_answering(recorded)


def test_observe_calls_sees_each_request_until_restored(zk: KazooClient, zk_path: str) -> None:
    seen: list[str] = []
    restore = kazoo_internals.observe_calls(zk, lambda request: seen.append(type(request).__name__))
    zk.exists(zk_path)
    zk.get_children("/")
    restore()
    zk.exists(zk_path)
    assert seen == ["Exists", "GetChildren"]


@pytest.mark.parametrize("chroot", ["", "/app", "/app/deep"])
def test_the_requests_the_transport_makes_itself_are_those_of_kazoos_calls(chroot: str) -> None:
    # the transport makes the request of a plain path itself (no normalization of the chroot
    # and the path each time): it must queue what kazoo's own *_async call would
    client = KazooClient(hosts=f"127.0.0.1:1{chroot}")  # never started: nothing is sent
    transport = KazooTransport(client)

    def watch(event: WatchedEvent) -> None:
        pass

    paths = ["/", "/a", "/a/b-c_d.e", "/a/_c_x-lock-0000000001", "/a/.b", "/a//b", "/a/b/", "/a/."]
    for path in paths:
        calls: list[tuple[Any, Callable[[], Any]]] = [
            (ListChildren(path, watch), partial(client.get_children_async, path, watch=watch)),
            (ListChildren(path), partial(client.get_children_async, path)),
            (GetData(path, watch), partial(client.get_async, path, watch=watch)),
            (NodeExists(path, watch), partial(client.exists_async, path, watch=watch)),
            (DeleteNode(path), partial(client.delete_async, path)),
        ]
        for request, kazoos in calls:
            seen: list[Any] = []
            restore = kazoo_internals.observe_calls(client, seen.append)
            try:
                for call in (partial(transport.send, request), kazoos):
                    with contextlib.suppress(ValueError):  # kazoo's, for a relative path
                        call()
            finally:
                restore()
            if len(seen) == 2:
                assert seen[0] == seen[1] and type(seen[0]) is type(seen[1]), (path, request)
            else:  # refused by kazoo's normalization, both ways
                assert seen == [], (path, request)


def test_session_timeout_is_the_timeout_asked_for_in_seconds() -> None:
    client = KazooClient(hosts="127.0.0.1:1", timeout=7.25)
    try:
        assert kazoo_internals.session_timeout(client) == 7.25
    finally:
        client.close()


def test_follow_connects_sees_the_granted_timeout_and_may_end_the_session(
    zk_server: ZooKeeperTarget,
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = KazooClient(hosts=proxy.hosts, timeout=4.0)
        granted: list[float] = []
        ending = threading.Event()

        def before() -> None:
            if ending.is_set():
                ending.clear()
                raise kazoo.exceptions.SessionExpiredError("ended here")

        kazoo_internals.follow_connects(client, lambda: None, granted.append)
        kazoo_internals.follow_connects(client, before, granted.append)  # replaces, once
        states: list[str] = []

        def listener(state: str) -> bool:
            states.append(state)
            return False

        client.add_listener(listener)
        client.start(timeout=30)
        try:
            assert granted == [4.0]
            session = client.client_id[0]
            ending.set()
            proxy.drop_connections()
            eventually(lambda: len(granted) == 2 and client.connected, what="reconnected")
            assert states == ["CONNECTED", "SUSPENDED", "LOST", "CONNECTED"]
            assert client.client_id[0] != session
        finally:
            client.stop()
            client.close()


def test_async_result_may_be_subclassed_keeps_attributes_and_is_answered_by_set_only(
    zk: KazooClient,
) -> None:
    """What pycurator.handlers' inline-linked result relies on: its own attribute lives in the
    instance's ``__dict__``, and both kinds of answer go through the overridable methods."""
    answered: list[str] = []

    class Recording(AsyncResult):  # type: ignore[misc]
        def set(self, value: Any = None) -> None:
            answered.append("set")
            super().set(value)

        def set_exception(self, exception: BaseException) -> None:
            answered.append("set_exception")
            super().set_exception(exception)

    result = Recording(zk.handler)
    result.extra = "kept"
    assert result.__dict__["extra"] == "kept" and not result.ready()
    result.set(1)
    assert result.ready() and result.get() == 1
    failed = Recording(zk.handler)
    failed.set_exception(NoNodeError())
    assert failed.ready() and answered == ["set", "set_exception"]


def test_fileobj_to_fd_finds_a_sockets_descriptor() -> None:
    reading, writing = socket.socketpair()
    with reading, writing:
        assert fileobj_to_fd(reading) == reading.fileno()
        assert fileobj_to_fd(writing.fileno()) == writing.fileno()


def test_the_session_outlives_a_dropped_connection_and_ends_with_an_expiry(
    zk_server: ZooKeeperTarget,
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = KazooClient(hosts=proxy.hosts, timeout=10.0)
        client.start(timeout=30)
        transport = KazooTransport(client)
        told: dict[str, int | None] = {}
        changed = threading.Event()

        def listener(state: str) -> None:
            told[state] = kazoo_internals.session_of(client)
            changed.set()

        try:
            session = client.client_id[0]
            assert kazoo_internals.session_of(client) == transport.session_id() == session
            client.add_listener(listener)
            proxy.blackhole()
            proxy.drop_connections()
            assert changed.wait(SOON) and not client.connected
            # kazoo's public client_id says nothing while disconnected; the session lives on
            assert client.client_id is None
            assert told[KazooState.SUSPENDED] == transport.session_id() == session
            changed.clear()
            proxy.heal()
            assert changed.wait(SOON) and told[KazooState.CONNECTED] == session
            assert transport.session_id() == session
            expire_kazoo_session(client)
            assert told[KazooState.LOST] is None  # told LOST: no session
            eventually(lambda: transport.session_id() not in (None, session))
        finally:
            client.stop()
            client.close()
        assert transport.session_id() is None  # a stopped client has none


def test_the_connection_handler_has_the_members_the_lean_loop_builds_on() -> None:
    from kazoo.protocol import connection

    client = KazooClient(hosts="127.0.0.1:2181")
    handler = client._connection
    assert type(handler) is connection.ConnectionHandler
    for name in ("_socket", "_xid", "_rw_server", "_ro_mode", "_read_sock", "_write_sock"):
        assert hasattr(handler, name), name
    for name in ("_connection_routine", "connection_closed", "ping_outstanding"):
        assert hasattr(handler, name), name
    for name in ("retry_sleeper", "logger", "sasl_options", "handler", "client"):
        assert hasattr(handler, name), name
    signatures = {
        "_connect": ["host", "hostip", "port"],
        "_connect_attempt": ["host", "hostip", "port", "retry"],
        "_read_response": ["header", "buffer", "offset"],
        "_read_watch_event": ["buffer", "offset"],
        "_read_socket": ["read_timeout"],
        "_socket_error_handling": [],
        "start": [],
    }
    for name, parameters in signatures.items():
        method = getattr(connection.ConnectionHandler, name)
        assert list(inspect.signature(method).parameters)[1:] == parameters, name
    assert (connection.WATCH_XID, connection.PING_XID, connection.AUTH_XID) == (-1, -2, -4)
    for name in ("CLOSE_RESPONSE", "_SESSION_EXPIRED", "_CONNECTION_DROP", "RWServerAvailable"):
        assert hasattr(connection, name), name
    assert isinstance(client._queue, collections.deque)
    assert isinstance(client._pending, collections.deque)
    assert client._call.__func__ is KazooClient._call
    assert client.use_ssl is False


def test_a_connect_attempt_serves_after_connect_and_ends_on_the_close_read() -> None:
    """The lean loop serves a session from within ``_connect`` and hands kazoo's loop the close
    through ``_read_socket``; kazoo's ``_connect_attempt`` calls both, in that order, and ends
    on ``CLOSE_RESPONSE``."""
    from kazoo.protocol import connection

    source = inspect.getsource(connection.ConnectionHandler._connect_attempt)
    connect_at = source.index("self._connect(host, hostip, port)")
    read_at = source.index("self._read_socket(read_timeout)")
    assert connect_at < read_at
    assert "CLOSE_RESPONSE" in source[read_at:]
    assert "retry.reset()" in source[connect_at:read_at]
    assert "self._ro_mode" in inspect.getsource(connection.ConnectionHandler._send_ping)
