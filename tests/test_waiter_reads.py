"""A thread that waits for its answer on pycurator's connection loop reads the socket itself
while nobody else reads it (``read_answer``, :mod:`pycurator._client.kazoo_internals.reading`):
its answer then wakes no other thread. What it reads for others reaches them; its deadline
holds; a drop, a stop or an interruption while it reads ends the connection as a failed read
of the loop's does, and the client goes on."""

from __future__ import annotations

import signal
import socket
import statistics
import threading
import time
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss
from kazoo.protocol.states import KazooState

from pycurator import connect
from pycurator._client import kazoo_internals
from pycurator._client.kazoo_internals import reading, uses_lean_loop
from pycurator._client.transport import transport_of
from pycurator._protocol.deadline import Deadline, DeadlineExpired
from pycurator._protocol.requests import GetData
from pycurator._protocol.steps import Await, OnAnswer, Outcome, Send, Steps, link_inline
from pycurator._threads.runner import run
from pycurator.testing import FaultProxy
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, STEADY_RECONNECT, eventually

pytestmark = pytest.mark.skipif(not reading.WAITERS_READ, reason="waiters read with epoll only")


def started(clients: list[KazooClient], hosts: str) -> KazooClient:
    """A ``connect()`` client (pycurator's loop), stopped at the end."""
    client = connect(hosts, connect_timeout=SOON, connection_retry=STEADY_RECONNECT.copy())
    clients.append(client)
    assert uses_lean_loop(client)
    return client


def read_by(path: str, readers: list[int], timeout: float = SOON) -> Steps[Any]:
    """The data of ``path``; ``readers`` gets the thread that read its answer (an inline
    callback runs where the answer is read)."""

    def told(outcome: Outcome) -> None:
        readers.append(threading.get_ident())

    answer = yield Send(GetData(path))
    yield OnAnswer(answer, told, inline=True)
    data, _ = yield Await(answer, Deadline(timeout))
    return data


def test_a_waiting_thread_reads_its_own_answer(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    client.create(zk_path, b"here", makepath=True)
    readers: list[int] = []
    for _ in range(20):
        assert run(transport_of(client), read_by(zk_path, readers)) == b"here"
    # the loop thread may have read one whose answer came while the waiter got ready
    assert readers.count(threading.get_ident()) >= 15


def test_threads_waiting_at_once_each_get_their_own_answers(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    """One thread reads at a time, for all: every answer goes to its own request."""
    client = started(clients, zk_server.hosts)
    for index in range(6):
        client.create(f"{zk_path}/n{index}", str(index).encode(), makepath=True)
    wrong: list[tuple[int, bytes]] = []
    readers: list[int] = []

    def ask(index: int) -> None:
        for _ in range(200):
            data = run(transport_of(client), read_by(f"{zk_path}/n{index}", readers))
            if data != str(index).encode():
                wrong.append((index, data))

    threads = [threading.Thread(target=ask, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10 * SOON)
        assert not thread.is_alive()
    assert wrong == []
    assert len(readers) == 1200
    waiters = {thread.ident for thread in threads}
    assert len(set(readers) & waiters) > 1  # waiters read for each other


def test_an_event_a_waiter_reads_reaches_its_watcher(
    zk_server: ZooKeeperTarget, zk: KazooClient, clients: list[KazooClient], zk_path: str
) -> None:
    client = started(clients, zk_server.hosts)
    client.create(zk_path, b"v0", makepath=True)
    heard = threading.Event()
    client.get(zk_path, watch=lambda event: heard.set())
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            run(transport_of(client), read_by(zk_path, []))

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        zk.set(zk_path, b"v1")
        assert heard.wait(SOON)
    finally:
        stop.set()
        asker.join(SOON)
    assert not asker.is_alive()


def test_a_thread_waiting_for_a_kazoo_call_reads_its_answer(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    """kazoo's own calls (``get``, ``set``, ``delete``...: a result the connection answers)
    are read by the thread that waits for them, as the runner's are; one kazoo answers
    through another's (``create``, on its callback worker) is still told to its waiter."""
    client = started(clients, zk_server.hosts)
    client.create(zk_path, b"here", makepath=True)
    readers: list[int] = []
    for _ in range(20):
        kazoo_internals.hold_sends(client)  # linked before it can be answered
        try:
            answer = client.get_async(zk_path)
            assert link_inline(answer, lambda _: readers.append(threading.get_ident()))
        finally:
            kazoo_internals.send_held(client)
        assert answer.get(timeout=SOON)[0] == b"here"
    assert len(readers) == 20
    assert readers.count(threading.get_ident()) >= 15
    took = []
    for index in range(21):
        began = time.monotonic()
        client.create(f"{zk_path}/n{index}", b"made")
        took.append(time.monotonic() - began)
    assert statistics.median(took) < reading.LOOK_AGAIN / 2  # it did not look again only then


def asking(
    clients: list[KazooClient], proxy: FaultProxy, path: str, kazoo: bool = False
) -> tuple[KazooClient, threading.Thread, list[BaseException | bytes]]:
    """A client through ``proxy`` that made ``path``, the proxy then made to answer nothing; a
    thread (not started) that reads ``path`` on it through the blocking runner (or, with
    ``kazoo``, through kazoo's own ``get``); and the list its answer or its error goes to."""
    client = started(clients, proxy.hosts)
    client.create(path, b"x", makepath=True)
    proxy.blackhole()
    outcome: list[BaseException | bytes] = []

    def ask() -> None:
        try:
            if kazoo:
                outcome.append(client.get_async(path).get(timeout=4 * SOON)[0])
            else:
                outcome.append(run(transport_of(client), read_by(path, [], timeout=4 * SOON)))
        except BaseException as exc:
            outcome.append(exc)

    return client, threading.Thread(target=ask), outcome


def test_a_waiter_reading_keeps_its_deadline(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    """The runner's deadline, and a kazoo call's timeout (not a read's time and then the
    wait's again); the answer that comes later is handled."""
    client = started(clients, proxy.hosts)
    client.create(zk_path, b"x", makepath=True)
    proxy.blackhole()
    try:
        began = time.monotonic()
        with pytest.raises(DeadlineExpired):
            run(transport_of(client), read_by(zk_path, [], timeout=0.5))
        assert 0.45 <= time.monotonic() - began < 0.5 + SOON / 2
        answer = client.get_async(zk_path)
        began = time.monotonic()
        with pytest.raises(client.handler.timeout_exception):
            answer.get(timeout=1.0)
        assert 0.95 <= time.monotonic() - began < 1.6
    finally:
        proxy.heal()
    assert answer.get(timeout=SOON)[0] == b"x"


@pytest.mark.parametrize("kazoo", [False, True], ids=["runner", "kazoo-call"])
def test_a_drop_while_a_waiter_reads_fails_its_request_and_the_client_goes_on(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str, kazoo: bool
) -> None:
    client, asker, outcome = asking(clients, proxy, zk_path, kazoo)
    began = time.monotonic()
    asker.start()
    time.sleep(0.3)  # the waiter reads (nothing comes)
    proxy.drop_connections()
    asker.join(2 * SOON)
    assert not asker.is_alive()
    assert time.monotonic() - began < 2 * SOON  # told of the drop, not of its deadline
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionLoss)
    proxy.heal()
    eventually(lambda: client.connected, what="reconnected")
    assert client.get(zk_path)[0] == b"x"


@pytest.mark.parametrize("kazoo", [False, True], ids=["runner", "kazoo-call"])
def test_a_stop_while_a_waiter_reads_ends_its_wait_at_once(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str, kazoo: bool
) -> None:
    client, asker, outcome = asking(clients, proxy, zk_path, kazoo)
    asker.start()
    time.sleep(0.3)
    began = time.monotonic()
    proxy.heal()  # the stop's close gets through, and the answer may come first
    client.stop()
    asker.join(SOON)
    assert not asker.is_alive()
    assert time.monotonic() - began < SOON
    assert len(outcome) == 1
    assert outcome[0] == b"x" or isinstance(outcome[0], (ConnectionLoss, ConnectionClosedError))


def test_an_interrupted_waiter_ends_the_connection_and_the_session_goes_on(
    zk_server: ZooKeeperTarget, clients: list[KazooClient], zk_path: str
) -> None:
    """What an interrupted waiter read may be half handled: the connection is ended (as a
    failed read ends it), the interruption raised, and the client reconnects in its session."""
    client = started(clients, zk_server.hosts)
    client.create(zk_path, b"x", makepath=True)
    session = client.client_id
    states: list[str] = []
    client.add_listener(states.append)
    connection: Any = client._connection
    frames = connection._read_frames
    interrupted = threading.get_ident()

    def interrupt_once(data: bytes) -> bytes | None:
        if threading.get_ident() == interrupted and not states:
            raise KeyboardInterrupt
        return frames(data)  # type: ignore[no-any-return]

    connection._read_frames = interrupt_once
    reader = connection._reader
    reader._frames = interrupt_once
    raised = False
    try:
        for _ in range(50):  # until the waiter reads (the loop thread may read an answer first)
            try:
                run(transport_of(client), read_by(zk_path, []))
            except KeyboardInterrupt:
                raised = True
                break
        assert raised
        eventually(lambda: KazooState.SUSPENDED in states and client.connected, what="back")
    finally:
        connection._read_frames = frames
    assert client.client_id == session
    assert run(transport_of(client), read_by(zk_path, [])) == b"x"


class Interrupted(BaseException):
    """Raised by the test's signal handler, as ``KeyboardInterrupt`` is by Python's."""


def test_an_interruption_while_a_waiter_waits_for_the_socket_keeps_the_connection(
    proxy: FaultProxy, clients: list[KazooClient], zk_path: str
) -> None:
    """Nothing was read: the connection stays, and the answer that comes later is handled."""
    assert threading.current_thread() is threading.main_thread()  # where handlers run
    client = started(clients, proxy.hosts)
    client.create(zk_path, b"x", makepath=True)
    states: list[str] = []
    client.add_listener(states.append)

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(0.3, signal.pthread_kill, (threading.get_ident(), signal.SIGUSR1))
    proxy.blackhole()
    try:
        timer.start()
        with pytest.raises(Interrupted):
            run(transport_of(client), read_by(zk_path, [], timeout=SOON))
    finally:
        timer.join()
        signal.signal(signal.SIGUSR1, previous)
        proxy.heal()
    assert run(transport_of(client), read_by(zk_path, [])) == b"x"
    assert states == []  # never suspended


def test_an_answer_another_thread_sets_ends_the_waiter_s_read_soon(
    zk_server: ZooKeeperTarget, clients: list[KazooClient]
) -> None:
    """An answer given through another's (set by a worker, not by whoever reads) is seen
    within :data:`~pycurator._client.kazoo_internals.reading.LOOK_AGAIN` of being set."""
    client = started(clients, zk_server.hosts)
    answer = client.handler.async_result()
    timer = threading.Timer(0.2, answer.set, ("set",))
    began = time.monotonic()
    timer.start()
    kazoo_internals.read_answer(client, answer, SOON)
    timer.join()
    assert answer.get_nowait() == "set"
    assert reading.LOOK_AGAIN <= 0.1
    assert time.monotonic() - began < 0.2 + 1.5  # not the SOON the read was allowed


class _NeverReady:
    """An answer that never comes, of the kind a waiter reads for (the fast handler's)."""

    link_inline = True

    def ready(self) -> bool:
        return False


def test_the_loop_thread_never_waits_for_a_waiter_s_read() -> None:
    """The loop thread woken by what arrives as a waiter begins to read leaves it to the
    waiter, which handles it, instead of waiting for the waiter's answer (its pings go on)."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    handled: list[tuple[int, bytes]] = []

    def frames(data: bytes) -> bytes:
        handled.append((threading.get_ident(), data))
        return b""

    reader = reading.SessionReader(ours, frames, b"")
    waiter = threading.Thread(target=reader.read_until, args=(_NeverReady(), 2.0))
    try:
        waiter.start()
        eventually(lambda: reader._reading.locked(), what="the waiter reads")
        theirs.sendall(b"frame")
        began = time.monotonic()
        reader.read()  # the loop thread's read, woken by the frame
        assert time.monotonic() - began < 0.5  # not the waiter's 2 s
        eventually(lambda: handled != [], what="the frame handled")
        assert handled == [(waiter.ident, b"frame")]
        waiter.join(2 * SOON)
        assert not waiter.is_alive()
        theirs.sendall(b"next")
        reader.read()  # nobody reads now: the loop thread does
        assert handled[1:] == [(threading.get_ident(), b"next")]
    finally:
        waiter.join(2 * SOON)
        reader.end()
        ours.close()
        theirs.close()


def test_what_arrives_wakes_the_loop_thread_once_until_it_is_read() -> None:
    """The loop thread is told once of what arrives: woken while a waiter reads (its read then
    left to the waiter), it sleeps on instead of being woken again and again, a spin that
    kept the waiter from the CPU for milliseconds. Whoever reads next lets the socket wake it
    again, and so does a wait that ends with nobody reading: nothing is left unread."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    handled: list[bytes] = []

    def frames(data: bytes) -> bytes:
        handled.append(data)
        return b""

    class _AnsweredBy:
        link_inline = True

        def __init__(self, frame: bytes) -> None:
            self.frame = frame

        def ready(self) -> bool:
            return self.frame in handled

    reader = reading.SessionReader(ours, frames, b"")
    try:
        theirs.sendall(b"one")
        assert reader.wait(SOON)
        began = time.monotonic()
        assert not reader.wait(0.3)  # told once, though still unread
        assert time.monotonic() - began >= 0.25
        assert reader.wait(SOON)  # the wait ended with nobody reading: told again
        reader.read()
        assert handled == [b"one"]
        theirs.sendall(b"two")
        assert reader.wait(SOON)  # the loop thread's read let it wake the loop again
        waiter = threading.Thread(target=reader.read_until, args=(_AnsweredBy(b"two"), SOON))
        waiter.start()
        waiter.join(2 * SOON)
        assert handled == [b"one", b"two"]
        theirs.sendall(b"three")
        assert reader.wait(SOON)  # and so did the waiter's
    finally:
        reader.end()
        ours.close()
        theirs.close()
