"""``pycurator.connect()``: a started kazoo client set up as Curator's builder sets up one (the fast
handler, reconnection for ever, Curator's retry, the namespace made as Curator makes it), and a
clear error with nothing left running when it cannot connect in time."""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import math
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.retry import KazooRetry, RetryFailedError
from kazoo.security import OPEN_ACL_UNSAFE, make_acl, make_digest_acl

import pycurator
from pycurator import ConnectTimeout, InterProcessMutex, TLSOptions, connect
from pycurator.handlers import FastThreadingHandler
from pycurator.testing import FaultProxy, ZooKeeperServer, four_letter_word, split_hosts
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, eventually, restart_behind

AUTH = [("digest", "owner:secret")]
OWNER_ACL = [make_digest_acl("owner", "secret", all=True)]
#: Anyone may read it and set its ACL, nobody may create below it.
NO_CREATE = [make_acl("world", "anyone", read=True, admin=True)]

#: The handlers connect() is tested under: its default (None: the fast one) and kazoo's own.
HANDLERS: dict[str, Callable[[], Any]] = {
    "default": lambda: None,
    "kazoo": SequentialThreadingHandler,
}


@pytest.fixture
def connected() -> Iterator[Callable[..., KazooClient]]:
    """``connect`` whose clients are stopped and closed after the test."""
    clients: list[KazooClient] = []

    def make(*args: Any, **kwargs: Any) -> KazooClient:
        client = connect(*args, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in reversed(clients):
        client.stop()
        client.close()


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that is bound but not listening: every connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


#: What kazoo's own handler opens for each ``select`` and keeps while it waits, seconds at a
#: time when its client is idle: the fixtures' clients in this process come and go with one,
#: under a number that moves as other descriptors open and close. (kazoo closes it when the
#: call returns; the fast handler, ``connect()``'s, polls without one.)
SELECT_EPOLL = "anon_inode:[eventpoll]"


def open_descriptors() -> dict[str, str]:
    """The process's open descriptors, each with what it refers to (but kazoo's passing
    :data:`SELECT_EPOLL`)."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile (or the listing's own)
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target != SELECT_EPOLL:
                found[fd] = target
    return found


class Leftovers:
    """The process's threads and open descriptors, to compare before and after."""

    def __init__(self) -> None:
        self.threads = set(threading.enumerate())
        self.descriptors = open_descriptors()

    def new_descriptors(self) -> dict[str, str]:
        now = open_descriptors()
        return {fd: target for fd, target in now.items() if self.descriptors.get(fd) != target}

    def assert_none(self, descriptors: bool = True) -> None:
        """No new thread, and (unless ``descriptors`` is False) no new open descriptor once
        the other clients of the process are quiet again (it waits a bounded while for one
        they opened meanwhile). (A failure kazoo logs with its traceback keeps the failed
        socket referenced by pytest's log capture, so descriptors are counted only where
        kazoo logs none.)"""
        started = {t for t in threading.enumerate() if t.is_alive()} - self.threads
        assert not started, f"threads left running: {started}"
        if descriptors:
            try:
                eventually(lambda: not self.new_descriptors(), SOON, "no descriptor left open")
            except AssertionError:
                pytest.fail(f"descriptors left open: {self.new_descriptors()}")


def granted_timeout_ms(hosts: str, client: KazooClient) -> int:
    """The session timeout the server granted ``client``, from its ``cons`` listing."""
    sid = f"{client.client_id[0]:x}"
    listing = four_letter_word(*split_hosts(hosts)[0], "cons")
    match = re.search(rf"sid=0x0*{sid},[^)]*\bto=(\d+)", listing)
    assert match, listing
    return int(match.group(1))


def assert_container_levels(zk: KazooClient, levels: list[str], acl: list[Any]) -> None:
    """Each level exists, empty, not ephemeral, with ``acl``."""
    for level in levels:
        stat = zk.exists(level)
        assert stat is not None and (stat.ephemeralOwner, stat.dataLength) == (0, 0), level
        assert list(zk.get_acls(level)[0]) == acl, level


@pytest.mark.parametrize("handler", HANDLERS, ids=str)
def test_connect_returns_a_started_client_that_recipes_use(
    handler: str,
    connected: Callable[..., KazooClient],
    zk_server: ZooKeeperTarget,
    zk_path: str,
) -> None:
    client = connected(zk_server.hosts, handler=HANDLERS[handler]())
    assert type(client) is KazooClient and client.connected
    expected = FastThreadingHandler if handler == "default" else SequentialThreadingHandler
    assert type(client.handler) is expected
    lock = InterProcessMutex(client, f"{zk_path}/lock")
    with lock:
        assert lock.is_acquired_in_this_process()


def test_the_session_timeout_asked_for_is_30_s_unless_given(
    connected: Callable[..., KazooClient], zk_server: ZooKeeperTarget
) -> None:
    assert granted_timeout_ms(zk_server.hosts, connected(zk_server.hosts)) == 30_000
    given = connected(zk_server.hosts, session_timeout=12.5)
    assert granted_timeout_ms(zk_server.hosts, given) == 12_500


def tries_of(client: KazooClient) -> tuple[int, float]:
    """How often ``client.retry`` calls an operation that always loses its connection, and how
    long it takes to give up."""
    calls = []

    def lose() -> None:
        calls.append(time.monotonic())
        raise ConnectionLoss()

    start = time.monotonic()
    with pytest.raises(RetryFailedError):
        client.retry(lose)
    return len(calls), time.monotonic() - start


def test_operations_are_retried_as_curator_s_exponential_backoff_by_default(
    connected: Callable[..., KazooClient], zk_server: ZooKeeperTarget
) -> None:
    # ExponentialBackoffRetry(1000, 3): three retries after the first try, from a second apart
    tries, took = tries_of(connected(zk_server.hosts))
    assert tries == 4
    assert took > 0.6 * 3  # three waits, the first of 1 s less kazoo's jitter of up to 40%


def test_a_retry_given_is_the_client_s_command_retry(
    connected: Callable[..., KazooClient], zk_server: ZooKeeperTarget
) -> None:
    client = connected(zk_server.hosts, retry=KazooRetry(max_tries=2, delay=0.01))
    assert tries_of(client)[0] == 2


@pytest.mark.parametrize("handler", HANDLERS, ids=str)
def test_the_namespace_is_made_at_once_as_containers_open_to_all(
    handler: str,
    connected: Callable[..., KazooClient],
    zk: KazooClient,
    zk_server: ZooKeeperTarget,
    zk_path: str,
) -> None:
    namespace = f"{zk_path[1:]}/apps/billing"
    client = connected(zk_server.hosts, namespace=namespace, handler=HANDLERS[handler]())
    levels = [zk_path, f"{zk_path}/apps", f"{zk_path}/apps/billing"]
    assert_container_levels(zk, levels, OPEN_ACL_UNSAFE)
    assert client.chroot == f"/{namespace}"
    client.create("/config", b"x")
    assert zk.get(f"/{namespace}/config")[0] == b"x"
    client.delete("/config")
    # containers: the server reaps them once they had children and are empty again
    eventually(lambda: zk.exists(zk_path) is None, SOON, "the namespace's containers reaped")


def test_the_namespace_s_levels_get_the_client_s_default_acl(
    connected: Callable[..., KazooClient], zk: KazooClient, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    zk.create(zk_path, makepath=True)
    owner = connected(
        zk_server.hosts,
        namespace=f"{zk_path[1:]}/app",
        auth=AUTH,
        default_acl=OWNER_ACL,
    )
    assert list(zk.get_acls(zk_path)[0]) == OPEN_ACL_UNSAFE  # it existed: untouched
    assert list(owner.get_acls("/")[0]) == OWNER_ACL
    with pytest.raises(NoAuthError):
        zk.get_children(f"{zk_path}/app")
    owner.delete("/")


def test_a_namespace_stacks_on_the_chroot_of_the_hosts(
    connected: Callable[..., KazooClient], zk: KazooClient, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    zk.create(zk_path, makepath=True)
    client = connected(f"{zk_server.hosts}{zk_path}/", namespace="billing")
    assert client.chroot == f"{zk_path}/billing"
    assert_container_levels(zk, [f"{zk_path}/billing"], OPEN_ACL_UNSAFE)


def test_an_existing_namespace_needs_no_right_to_create_above_it(
    connected: Callable[..., KazooClient], zk: KazooClient, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    zk.create(f"{zk_path}/app", makepath=True)
    zk.set_acls(zk_path, NO_CREATE)
    try:
        with pytest.raises(NoAuthError):  # not NodeExistsError: creating it first would fail
            zk.create(f"{zk_path}/app")
        client = connected(zk_server.hosts, namespace=f"{zk_path[1:]}/app")
        assert client.get_children("/") == []
    finally:
        zk.set_acls(zk_path, OPEN_ACL_UNSAFE)


def test_a_namespace_the_server_refuses_raises_its_error_and_leaves_nothing_running(
    zk: KazooClient, zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    zk.create(zk_path, makepath=True, acl=NO_CREATE)
    try:
        before = Leftovers()
        with pytest.raises(NoAuthError):
            connect(zk_server.hosts, namespace=f"{zk_path[1:]}/app")
        before.assert_none()
        assert zk.get_children(zk_path) == []
    finally:
        zk.set_acls(zk_path, OPEN_ACL_UNSAFE)


@pytest.mark.parametrize("namespace", ["/billing", "a//b", "a/", "a/../b", "a/\x01"])
def test_an_invalid_namespace_is_refused_as_curator_refuses_it(namespace: str) -> None:
    before = Leftovers()
    with pytest.raises(ValueError, match=r"^Invalid namespace: "):
        connect("127.0.0.1:2181", namespace=namespace)
    before.assert_none()


@pytest.mark.parametrize("handler", HANDLERS, ids=str)
def test_no_server_is_a_connect_timeout_naming_the_hosts_with_nothing_left_running(
    handler: str, refusing_port: int
) -> None:
    hosts = f"127.0.0.1:{refusing_port}"
    before = Leftovers()
    start = time.monotonic()
    with pytest.raises(ConnectTimeout) as raised:
        connect(hosts, connect_timeout=1.5, handler=HANDLERS[handler]())
    assert time.monotonic() - start < 1.5 + SOON / 4
    refused = os.strerror(errno.ECONNREFUSED)
    assert (
        str(raised.value)
        == f"cannot connect to ZooKeeper at {hosts} within 1.5s: {hosts}: {refused}"
    )
    assert (raised.value.hosts, raised.value.timeout) == (hosts, 1.5)
    assert isinstance(raised.value, TimeoutError)
    before.assert_none()


def test_tls_to_a_server_that_does_not_speak_it_is_a_connect_timeout(
    zk_server: ZooKeeperTarget,
) -> None:
    before = Leftovers()
    with pytest.raises(ConnectTimeout):
        connect(zk_server.hosts, connect_timeout=1.5, tls=TLSOptions(verify_certs=False))
    before.assert_none(descriptors=False)


def test_tls_options_are_kazoo_s_ssl_arguments() -> None:
    options = TLSOptions(ca="ca.pem", certfile="c.pem", keyfile="k.pem", keyfile_password="pw")
    assert options.kazoo_arguments() == {
        "use_ssl": True,
        "ca": "ca.pem",
        "certfile": "c.pem",
        "keyfile": "k.pem",
        "keyfile_password": "pw",
        "verify_certs": True,
    }
    assert TLSOptions(check_hostname=True).kazoo_arguments()["check_hostname"] is True


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"timeout": 5}, TypeError, "give session_timeout= instead"),
        ({"auth_data": AUTH}, TypeError, "give auth= instead"),
        ({"command_retry": KazooRetry()}, TypeError, "give retry= instead"),
        ({"use_ssl": True}, TypeError, "give tls= instead"),
        ({"session_timeout": 0}, ValueError, "session_timeout must be a finite number"),
        ({"connect_timeout": float("nan")}, ValueError, "connect_timeout must be a finite"),
        ({"connect_timeout": 1e10}, ValueError, "connect_timeout must be a finite number of"),
        ({"connect_timeout": math.inf}, ValueError, "at most 1000000000, not inf"),
        ({"session_timeout": 1e10}, ValueError, "session_timeout must be a finite number of"),
        ({"session_timeout": 2_147_484}, ValueError, "at most 2147483, not 2147484"),
        ({"connect_timeout": "15"}, TypeError, "connect_timeout must be a number of seconds"),
        ({"tls": "yes"}, TypeError, "tls must be True, False or a TLSOptions"),
        ({"namespace": 7}, TypeError, "namespace must be a str"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    before = Leftovers()
    with pytest.raises(error, match=re.escape(message)):
        connect("127.0.0.1:2181", **kwargs)
    before.assert_none()


def test_connect_is_exported_with_its_error_and_options() -> None:
    assert {"connect", "ConnectTimeout", "TLSOptions"} <= set(pycurator.__all__)
    assert issubclass(ConnectTimeout, pycurator.PyCuratorError)


@pytest.fixture
def own_server() -> Iterator[tuple[ZooKeeperServer, FaultProxy]]:
    """A server of this test's own, which the test stops and starts, and a proxy before it."""
    with ZooKeeperServer() as server, FaultProxy(server.hosts) as proxy:
        yield server, proxy


def test_the_client_reconnects_soon_after_a_long_outage_ends(
    connected: Callable[..., KazooClient],
    own_server: tuple[ZooKeeperServer, FaultProxy],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kazoo")
    server, proxy = own_server
    client = connected(proxy.hosts)
    back = threading.Event()
    client.add_listener(lambda state: back.set() if state == KazooState.CONNECTED else None)
    server.stop()
    eventually(lambda: not client.connected, SOON, "the client saw the server go")
    # kazoo's own policy doubles its wait up to an hour: 12 s into an outage it waits 3 to 18 s
    # between attempts; connect()'s waits 1.4 s at most (a second, give or take its jitter)
    time.sleep(12)  # the outage itself
    back.clear()
    # held back while the server starts: one met then, before its database is loaded, would
    # be neither answered nor closed, and the client would wait out its 30 s handshake
    # (docs/operations.md, "Reconnecting"), which no retry policy bounds
    restart_behind(proxy, server)
    assert back.wait(SOON), "not reconnected"
    attempts = [r.created for r in caplog.records if r.getMessage().startswith("Connecting to")]
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    # the bound on what the policy decides, with room for a busy machine's scheduling
    assert len(attempts) >= 8 and max(gaps) < 3.0, gaps
