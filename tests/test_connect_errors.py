"""What ``connect()`` says when it cannot connect: a connect string it cannot read is refused at
once, naming the problem; a server it cannot reach is named in the ``ConnectTimeout`` with the
last failure seen (refused, unknown host, TLS); and it prints nothing a program did not ask for."""

from __future__ import annotations

import errno
import logging
import os
import pickle
import select
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import ConnectTimeout, TLSOptions, _connect, connect
from pycurator._connect import KAZOO_LOGGER
from pycurator._connect_string import ConnectString
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, self_signed_certificate
from .test_connect import Leftovers

REFUSED = os.strerror(errno.ECONNREFUSED)
#: A name that never resolves: ``.invalid`` is reserved for that (RFC 2606).
UNKNOWN = "zk1.pycurator.invalid"


@pytest.fixture
def refused() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a port bound but not listening: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def unknown_host_error() -> str:
    """What the system says of :data:`UNKNOWN`, as kazoo will meet it."""
    try:
        socket.getaddrinfo(UNKNOWN, 2181, 0, 0, socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        return str(exc.strerror)
    pytest.skip(f"this system's DNS resolves {UNKNOWN}")


def timeout_of(hosts: str, **kwargs: Any) -> ConnectTimeout:
    """The ``ConnectTimeout`` of ``connect(hosts, ...)`` within 1.5 s, nothing left running."""
    before = Leftovers()
    with pytest.raises(ConnectTimeout) as raised:
        connect(hosts, connect_timeout=1.5, **kwargs)
    before.assert_none(descriptors=False)
    return raised.value


# -- a connect string it cannot read ---------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        ("", "empty connect string '': name the servers"),
        ("  ", "empty connect string '  '"),
        ("not a host string", "'not a host string' is not a host name or address (it has a"),
        ("zk1:2181,,zk2:2181", "bad connect string 'zk1:2181,,zk2:2181': server 2 of 3 is empty"),
        ("zk1:2181,", "server 2 of 2 is empty"),
        ("zk1:99999", "bad port in 'zk1:99999': give a whole number from 1 to 65535"),
        ("zk1:0", "bad port in 'zk1:0'"),
        ("zk1:", "bad port in 'zk1:'"),
        ("zk1:two", "bad port in 'zk1:two'"),
        (":2181", "no host before the port in ':2181'"),
        ("::1", "'::1' has more than one ':' (write IPv6 as [::1]:2181)"),
        ("[zk1]:2181", "'zk1' in '[zk1]:2181' is not an IPv6 address"),
        ("[::1:2181", "write an IPv6 address as [address]:port, not '[::1:2181'"),
        ("/app", "bad connect string '/app': no server before the chroot"),
        ("zk://zk1:2181", "a connect string has no scheme"),
        ("zk1:2181/app//locks", "bad chroot: Invalid path string '/app//locks'"),
    ],
)
def test_a_connect_string_it_cannot_read_is_refused_at_once_naming_the_problem(
    hosts: str, message: str
) -> None:
    before = Leftovers()
    with pytest.raises(ValueError) as raised:
        connect(hosts, connect_timeout=60)
    assert message in str(raised.value)
    before.assert_none()


@pytest.mark.parametrize("hosts", [None, b"zk1:2181", ["zk1:2181"]])
def test_hosts_that_are_not_a_str_are_a_type_error(hosts: object) -> None:
    with pytest.raises(TypeError, match="hosts must be a connect string, not "):
        connect(hosts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hosts", "servers", "chroot", "text"),
    [
        ("zk1:2181,zk2:2182", [("zk1", 2181), ("zk2", 2182)], "", "zk1:2181,zk2:2182"),
        (" zk1 , zk2:2182 ", [("zk1", 2181), ("zk2", 2182)], "", "zk1,zk2:2182"),
        ("[::1]:2182,[fe80::1]", [("::1", 2182), ("fe80::1", 2181)], "", "[::1]:2182,[fe80::1]"),
        ("zk1:2181/apps/billing/", [("zk1", 2181)], "/apps/billing", "zk1:2181/apps/billing"),
        ("zk1/", [("zk1", 2181)], "", "zk1"),
        (
            "zk_1.example.com,10.0.0.7:2181",
            [("zk_1.example.com", 2181), ("10.0.0.7", 2181)],
            "",
            None,
        ),
    ],
)
def test_a_connect_string_is_read_as_zookeepers_client_reads_it(
    hosts: str, servers: list[tuple[str, int]], chroot: str, text: str | None
) -> None:
    read = ConnectString.parse(hosts)
    assert (list(read.servers), read.chroot, read.text) == (servers, chroot, text or hosts)


def test_spaces_around_the_servers_are_ignored(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.ensure_path(zk_path)
    client = connect(f"  {zk_server.hosts.replace(',', ' , ')}{zk_path}/ ")
    try:
        assert client.chroot == zk_path
        assert client.get_children("/") == []
    finally:
        client.stop()
        client.close()


# -- a server it cannot reach ----------------------------------------------------------------


def test_a_refused_connection_is_named_with_its_server(refused: str) -> None:
    error = timeout_of(refused)
    assert (
        str(error) == f"cannot connect to ZooKeeper at {refused} within 1.5s: {refused}: {REFUSED}"
    )
    assert error.causes == {refused: REFUSED}


def test_a_host_that_does_not_resolve_is_named_with_the_system_s_reason() -> None:
    reason = unknown_host_error()
    error = timeout_of(UNKNOWN)
    assert error.causes == {f"{UNKNOWN}:2181": reason}
    assert str(error).endswith(f"within 1.5s: {UNKNOWN}:2181: {reason}")


def test_each_server_is_named_with_its_own_failure_in_the_connect_string_s_order(
    refused: str,
) -> None:
    reason = unknown_host_error()
    error = timeout_of(f"{UNKNOWN}:2181,{refused}/app")
    assert list(error.causes.items()) == [(f"{UNKNOWN}:2181", reason), (refused, REFUSED)]
    assert str(error).endswith(f": {UNKNOWN}:2181: {reason}; {refused}: {REFUSED}")


def test_a_connect_timeout_with_its_causes_survives_pickling(refused: str) -> None:
    error = timeout_of(refused)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), vars(copy)) == (str(error), vars(error))


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[Callable[[bool], str]]:
    """Start a TLS server with a self-signed certificate (``True``: it requires a client
    certificate) that closes every connection after the handshake; returns its hosts."""
    cert, key = self_signed_certificate(tmp_path)
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def drain(conn: socket.socket) -> None:
        """Read what the client sent until it closes (it does once it has read our alert), so
        that closing sends no reset that could overtake the alert."""
        while select.select([conn], [], [], SOON)[0] and os.read(conn.fileno(), 4096):
            pass

    def start(require_client_certificate: bool) -> str:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.load_cert_chain(cert, key)
        if require_client_certificate:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cert)
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.1)  # to see ``stop`` between connections

        def serve() -> None:
            with listener:
                while not stop.is_set():
                    try:
                        conn, _ = listener.accept()
                    except TimeoutError:
                        continue
                    conn.settimeout(SOON)
                    with context.wrap_socket(
                        conn, server_side=True, do_handshake_on_connect=False
                    ) as tls:
                        try:
                            tls.do_handshake()
                        except OSError:  # it failed, as the test means it to
                            if require_client_certificate:  # the client reads our alert
                                drain(tls)

        thread = threading.Thread(target=serve, name="tls-server")
        thread.start()
        threads.append(thread)
        return f"127.0.0.1:{listener.getsockname()[1]}"

    yield start
    stop.set()
    for thread in threads:
        thread.join(SOON)
        assert not thread.is_alive()


def test_a_server_certificate_not_trusted_is_named(tls_server: Callable[[bool], str]) -> None:
    hosts = tls_server(False)
    error = timeout_of(hosts, tls=True)  # the system's CAs: the self-signed one is not among them
    assert "CERTIFICATE_VERIFY_FAILED" in error.causes[hosts]
    assert f"{hosts}: [SSL: CERTIFICATE_VERIFY_FAILED]" in str(error)


def test_a_missing_client_certificate_is_named(tls_server: Callable[[bool], str]) -> None:
    hosts = tls_server(True)
    error = timeout_of(hosts, tls=TLSOptions(verify_certs=False))
    assert "CERTIFICATE_REQUIRED" in error.causes[hosts]


def test_tls_to_a_server_that_does_not_speak_it_names_a_failure(
    zk_server: ZooKeeperTarget,
) -> None:
    hosts = zk_server.hosts.split(",")[0]
    error = timeout_of(hosts, tls=TLSOptions(verify_certs=False))
    assert error.causes.get(hosts), error


# -- what it prints --------------------------------------------------------------------------

#: A program that connects to nothing, with some logging setup, then prints the error.
PROGRAM = """
import logging, sys
from pycurator import ConnectTimeout, connect
{setup}
logging.getLogger("pycurator.anything").warning("a warning of pycurator's")
try:
    connect(sys.argv[1], connect_timeout=1.0)
except ConnectTimeout as exc:
    print(exc)
"""


def run_program(setup: str, hosts: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(setup=setup), hosts],
        capture_output=True,
        text=True,
        timeout=3 * SOON,
    )


def test_a_program_that_configured_no_logging_gets_nothing_on_stderr(refused: str) -> None:
    result = run_program("", refused)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.strip().endswith(f"{refused}: {REFUSED}")


def test_a_program_that_configured_logging_gets_kazoo_s_records_below_kazoo(
    refused: str,
) -> None:
    result = run_program("logging.basicConfig(format='%(name)s: %(message)s')", refused)
    assert result.returncode == 0, result.stderr
    assert "pycurator.anything: a warning of pycurator's" in result.stderr
    assert f"{KAZOO_LOGGER}: Connection dropped: socket connection error: {REFUSED}" in (
        result.stderr
    )


def test_a_program_that_quieted_kazoo_keeps_it_quiet(refused: str) -> None:
    setup = "logging.basicConfig(); logging.getLogger('kazoo').setLevel(logging.CRITICAL)"
    result = run_program(setup, refused)
    assert result.returncode == 0, result.stderr
    assert "Connection" not in result.stderr
    assert result.stdout.strip().endswith(f"{refused}: {REFUSED}")


def test_kazoo_s_records_name_kazoo_s_line_as_their_origin(
    refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="kazoo"):
        timeout_of(refused)
    records = [r for r in caplog.records if r.name == KAZOO_LOGGER]
    assert records, caplog.records
    for record in records:  # not this adapter's line in pycurator
        assert record.pathname != _connect.__file__, record
        assert "kazoo" in Path(record.pathname).parts, record


def test_a_logger_given_gets_kazoo_s_records_and_the_causes_are_still_named(
    refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="app.zookeeper"):
        error = timeout_of(refused, logger=logging.getLogger("app.zookeeper"))
    assert error.causes == {refused: REFUSED}
    assert any(r.name == "app.zookeeper" for r in caplog.records)
