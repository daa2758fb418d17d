"""pytest fixtures on a real ZooKeeper.

The server is, in this order: the ensemble named by ``PYCURATOR_TEST_ZK_HOSTS``; a
testcontainers ZooKeeper when a Docker engine answers; a local Java process from Debian's jars.
The tests create and delete nodes, so they never use ``PYCURATOR_ZK_HOSTS``, the command line's
ensemble (possibly production): an ensemble is used only when its own variable names it.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler

from .._connect import reconnecting_retry
from ._curator import CLASSPATH_ENV, classpath_curator_version, shutdown
from ._ensemble import ZooKeeperEnsemble
from ._fourletter import assert_no_ephemerals
from ._helpers import ClientFactory, CuratorFactory
from ._local import TTL_NODES
from ._server import ZooKeeperServer
from ._systems import JavaSystems

#: The ensemble the tests run against, named explicitly for them.
HOSTS_ENV = "PYCURATOR_TEST_ZK_HOSTS"
#: The command line's default ensemble, which the tests never use.
CLI_HOSTS_ENV = "PYCURATOR_ZK_HOSTS"
TEST_ROOT = "/pycurator-tests"
#: ``fast``: the fixtures' clients run on :class:`pycurator.handlers.FastThreadingHandler`;
#: ``lean``: on it and pycurator's connection loop (:func:`pycurator.handlers.use_lean_loop`)
#: (unset or ``threading``: kazoo's default handler).
HANDLER_ENV = "PYCURATOR_TEST_HANDLER"

Backend = Literal["ensemble", "docker", "local"]


def docker_available(timeout: float = 2.0) -> bool:
    """True when a Docker engine answers a ping."""
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def choose_backend(
    environ: dict[str, str] | os._Environ[str], docker_ok: Callable[[], bool] = docker_available
) -> Backend:
    """Where the tests' ZooKeeper comes from: the ensemble named by ``PYCURATOR_TEST_ZK_HOSTS``
    in ``environ``, Docker, or local; ``PYCURATOR_ZK_HOSTS`` plays no part."""
    if environ.get(HOSTS_ENV, "").strip():
        return "ensemble"
    if docker_ok():
        return "docker"
    return "local"


#: The ini option that bounds the orphan audit's wait, in seconds.
ORPHAN_WAIT_OPTION = "pycurator_orphan_wait"
DEFAULT_ORPHAN_WAIT = 30.0


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the kit's ini options."""
    parser.addini(
        ORPHAN_WAIT_OPTION,
        "seconds zk_no_orphans waits for ephemeral nodes to go (sessions of killed processes "
        f"end only with their timeout); default {DEFAULT_ORPHAN_WAIT:g}",
        default=str(DEFAULT_ORPHAN_WAIT),
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Name the Java Curator the cross-language fixtures load (read from its jar, without
    starting a JVM), and say which ensemble variable the run ignores when only the command
    line's is set."""
    lines = []
    version = classpath_curator_version()
    source = CLASSPATH_ENV if os.environ.get(CLASSPATH_ENV) else "Debian's jars"
    if version is not None:
        lines.append(f"pycurator: Java Curator {version} ({source})")
    elif os.environ.get(CLASSPATH_ENV):
        lines.append(f"pycurator: no Curator recipes jar on {CLASSPATH_ENV}")
    if os.environ.get(CLI_HOSTS_ENV, "").strip() and not os.environ.get(HOSTS_ENV, "").strip():
        lines.append(
            f"pycurator: {CLI_HOSTS_ENV} is the command line's ensemble and is not used by "
            f"the tests; set {HOSTS_ENV} to run them against an ensemble"
        )
    return lines


@dataclass
class ZooKeeperTarget:
    """The server the tests use: its connect string, and the local server if it is one."""

    hosts: str
    backend: Backend
    local: ZooKeeperServer | None = None


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperTarget]:
    """The session's ZooKeeper (see the module doc for where it comes from)."""
    backend = choose_backend(os.environ)
    if backend == "ensemble":
        yield ZooKeeperTarget(os.environ[HOSTS_ENV].strip(), backend)
    elif backend == "docker":
        from testcontainers.core.container import DockerContainer

        container = DockerContainer("zookeeper:3.8").with_exposed_ports(2181)
        container.with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
        container.with_env("JVMFLAGS", f"-Dznode.container.checkIntervalMs=100 {TTL_NODES}")
        with container:
            host = container.get_container_host_ip()
            port = container.get_exposed_port(2181)
            _wait_until_serving(f"{host}:{port}")
            yield ZooKeeperTarget(f"{host}:{port}", backend)
    else:
        with ZooKeeperServer() as server:
            yield ZooKeeperTarget(server.hosts, backend, server)


def _wait_until_serving(hosts: str, timeout: float = 60.0) -> None:
    client = KazooClient(hosts=hosts)
    try:
        client.start(timeout=timeout)
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk_path(request: pytest.FixtureRequest) -> str:
    """A fresh absolute base path for this test (not created)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:60].strip("-.") or "test"
    return f"{TEST_ROOT}/{name}-{uuid.uuid4().hex[:8]}"


def handler_from_env() -> Any:
    """The handler :data:`HANDLER_ENV` names for the fixtures' clients, or None for kazoo's."""
    name = os.environ.get(HANDLER_ENV, "").strip()
    if name in ("", "threading"):
        return None
    if name in ("fast", "lean"):
        from ..handlers import FastThreadingHandler

        return FastThreadingHandler()
    raise pytest.UsageError(
        f"{HANDLER_ENV} must be 'threading' or 'fast' (or 'lean': the fast handler on "
        f"pycurator's connection loop), not {name!r}"
    )


@pytest.fixture
def zk_client_factory(zk_server: ZooKeeperTarget) -> Iterator[ClientFactory]:
    """Makes started kazoo clients on the test server; all are stopped and closed afterwards.

    Unless told otherwise, a client reconnects as :func:`pycurator.connect`'s does (within a
    second or so of a server's return, :func:`pycurator.reconnecting_retry`): kazoo's default
    waits up to about as long again as an outage lasted, so a test that stops its server would
    wait on chance."""
    with _clients_on(zk_server.hosts) as make:
        yield make


@contextlib.contextmanager
def _clients_on(hosts: str) -> Iterator[ClientFactory]:
    """What :func:`zk_client_factory` gives, on the server at ``hosts``."""
    clients: list[KazooClient] = []

    def make(**kwargs: Any) -> KazooClient:
        kwargs.setdefault("hosts", hosts)
        kwargs.setdefault("timeout", 10.0)
        handler = kwargs.get("handler") or handler_from_env() or SequentialThreadingHandler()
        kwargs["handler"] = handler
        if "connection_retry" not in kwargs:
            kwargs["connection_retry"] = reconnecting_retry(handler)
        client = KazooClient(**kwargs)
        if os.environ.get(HANDLER_ENV, "").strip() == "lean":
            from ..handlers import use_lean_loop

            use_lean_loop(client)
        clients.append(client)
        client.start(timeout=30)
        return client

    try:
        yield make
    finally:
        for client in reversed(clients):
            try:
                client.stop()
            finally:
                client.close()


@pytest.fixture
def zk_no_orphans(
    request: pytest.FixtureRequest,
    zk_server: ZooKeeperTarget,
    zk_path: str,
    zk_client_factory: ClientFactory,
) -> Iterator[None]:
    """After the test, and before its clients close, the servers' ``dump`` must show no
    ephemeral node under ``zk_path``: once a scenario is over no one holds or waits, so such a
    node is an orphan. Sessions of killed processes are given the ini option
    ``pycurator_orphan_wait`` seconds to end (default 30; set it near your session timeout)."""
    raw = str(request.config.getini(ORPHAN_WAIT_OPTION))
    try:
        wait = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{ORPHAN_WAIT_OPTION} must be seconds, not {raw!r}") from None
    yield
    assert_no_ephemerals(zk_server.hosts, zk_path, wait)


@pytest.fixture
def zk(zk_client_factory: ClientFactory) -> KazooClient:
    """One started kazoo client on the test server."""
    return zk_client_factory()


@pytest.fixture
def curator_factory(zk_server: ZooKeeperTarget) -> Iterator[CuratorFactory]:
    """Makes started Java Curator clients on the test server (keyword arguments go to
    :func:`~pycurator.testing.new_curator`); all are closed afterwards, each after the Java
    recipe peers made on it (:class:`~pycurator.testing.JavaCuratorCache` and its kin). Needs
    JPype: without it the first call raises ``ImportError`` with the install command."""
    from ._curator import new_curator

    clients: list[Any] = []

    def make(**options: Any) -> Any:
        client = new_curator(zk_server.hosts, **options)
        clients.append(client)
        return client

    yield make
    from ._java_calls import close_recipe_peers_on

    for client in reversed(clients):
        close_recipe_peers_on(client)  # their waits end, their listeners go quiet
        client.close()


@pytest.fixture
def curator(curator_factory: CuratorFactory) -> Any:
    """One started Java Curator client on the test server, closed after the test."""
    return curator_factory()


@pytest.fixture
def java_systems(zk_server: ZooKeeperTarget) -> Iterator[JavaSystems]:
    """Makes Java peers of the other lock systems on the test server, each with its own
    session and thread: ``java_systems(JavaReentrantZkLock, path)`` or
    ``java_systems.reentrant_lock(path)`` (see :class:`~pycurator.testing.JavaSystems`); every
    peer is closed afterwards. Needs JPype, and menagerie's and ZkLocker's jars for theirs."""
    systems = JavaSystems(zk_server.hosts)
    yield systems
    systems.close()


@pytest.fixture(scope="session")
def zk_partitionable_ensemble() -> Iterator[ZooKeeperEnsemble]:
    """A local 3-member ensemble whose links can be cut, started once for the session; use
    :func:`zk_ensemble`, which heals it around each test."""
    with ZooKeeperEnsemble(3, partitions=True, sync_limit=2) as ensemble:
        yield ensemble


@pytest.fixture
def zk_ensemble(zk_partitionable_ensemble: ZooKeeperEnsemble) -> Iterator[ZooKeeperEnsemble]:
    """The session's partitionable ensemble (:class:`~pycurator.testing.ZooKeeperEnsemble`
    with ``partitions=True``; a cut-off leader stops serving after 2 ticks of 500 ms), with
    every link healed and every member serving before and after the test: a test may cut
    links, and stop or kill members."""
    ensemble = zk_partitionable_ensemble
    ensemble.heal()
    ensemble.start()
    yield ensemble
    ensemble.heal()
    ensemble.start()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close what the kit opened and shut the JVM down once the session's fixtures are torn
    down, before pytest's ``faulthandler`` plugin unconfigures: disabling it puts back the
    signal handlers from before the JVM started, and a JVM that then reaches a safepoint (as it
    does while it exits) dies of the SIGSEGV it uses for its own polling."""
    shutdown()
