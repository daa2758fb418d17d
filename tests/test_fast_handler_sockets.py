"""``FastThreadingHandler``'s sockets: kazoo's wake-up pair and its server connection read in
blocks (``pending()`` telling what is buffered), a wake-up writer that never waits, writes
without a prior poll, and a TLS connection left as kazoo made it."""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pycurator.handlers import FastThreadingHandler

from .support import SOON, Worker, self_signed_certificate

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
    cert, key = self_signed_certificate(tmp_path)
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
