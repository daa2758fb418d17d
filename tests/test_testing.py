"""pycurator.testing: where the tests' ZooKeeper comes from, and the local server's lifecycle."""

from __future__ import annotations

import inspect
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import pycurator
import pycurator.testing
from pycurator.testing import (
    SOON,
    WorkerProcess,
    ZooKeeperEnsemble,
    ZooKeeperServer,
    ZooKeeperServerError,
    assert_no_ephemerals,
    ephemerals_by_session,
    four_letter_word,
    free_port,
    free_ports,
    parse_dump,
    paths_by_session,
    split_hosts,
)
from pycurator.testing._local import QUORUM_MAIN, java_command
from pycurator.testing._server import PORT_FLOOR
from pycurator.testing.pytest_plugin import ZooKeeperTarget, choose_backend, docker_available

from .support import STEADY_RECONNECT, eventually


def test_public_names_are_sorted_and_complete() -> None:
    assert pycurator.__all__ == sorted(pycurator.__all__)
    public = {
        name
        for name, value in vars(pycurator).items()
        if name.isidentifier() and not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public - {"annotations"} == set(pycurator.__all__)


def test_testing_public_names_are_complete() -> None:
    names = pycurator.testing.__all__  # sorted as ruff's RUF022 sorts it: constants first
    assert len(names) == len(set(names))
    public = {
        name
        for name, value in vars(pycurator.testing).items()
        if name.isidentifier() and not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public - {"annotations"} == set(names)


def test_backend_order_is_ensemble_then_docker_then_local() -> None:
    assert choose_backend({"PYCURATOR_TEST_ZK_HOSTS": "zk1:2181"}, lambda: True) == "ensemble"
    assert choose_backend({"PYCURATOR_TEST_ZK_HOSTS": "  "}, lambda: True) == "docker"
    assert choose_backend({}, lambda: False) == "local"


def test_the_command_lines_ensemble_variable_never_points_the_tests_at_an_ensemble() -> None:
    cli_only = {"PYCURATOR_ZK_HOSTS": "prod1:2181,prod2:2181"}
    assert choose_backend(cli_only, lambda: False) == "local"
    assert choose_backend(cli_only, lambda: True) == "docker"
    both = {**cli_only, "PYCURATOR_TEST_ZK_HOSTS": "test1:2181"}
    assert choose_backend(both, lambda: False) == "ensemble"


def test_split_hosts_reads_a_connect_string() -> None:
    assert split_hosts("h1:2181,h2:2182/chroot") == [("h1", 2181), ("h2", 2182)]
    assert split_hosts("[::1]:2183") == [("::1", 2183)]


def test_dump_is_read_as_ephemeral_nodes_by_session() -> None:
    text = (
        "SessionTracker dump:\nSession Sets (1)/(1):\n1 expire at now:\n\t0x1\n"
        "ephemeral nodes dump:\nSessions with Ephemerals (2):\n0x1:\n\t/locks/a\n"
        "0x2:\n\t/b\n\t/c\nConnections dump:\n\tip: /127.0.0.1:1 sessionId: 0x1\n"
    )
    assert parse_dump(text) == {"0x1": ["/locks/a"], "0x2": ["/b", "/c"]}


def test_wchc_is_read_as_watched_paths_by_session() -> None:
    text = "0x10001b981ef0000\n\t/locks/a\n\t/locks/b\n0x10001b981ef0001\n\t/c\n"
    assert paths_by_session(text) == {
        "0x10001b981ef0000": ["/locks/a", "/locks/b"],
        "0x10001b981ef0001": ["/c"],
    }


def test_the_servers_dump_names_each_ephemeral_nodes_session(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/lock/a", ephemeral=True, makepath=True)
    zk.create(f"{zk_path}-other/b", ephemeral=True, makepath=True)
    session = f"0x{zk.client_id[0]:x}"
    assert ephemerals_by_session(zk_server.hosts, under=zk_path) == {session: [f"{zk_path}/lock/a"]}
    with pytest.raises(AssertionError, match=f"left under {zk_path}, by session: .*{session}"):
        assert_no_ephemerals(zk_server.hosts, zk_path, wait=0.2)
    zk.delete(f"{zk_path}/lock/a")
    zk.delete(f"{zk_path}-other/b")
    assert ephemerals_by_session(zk_server.hosts, under=zk_path) == {}


def test_local_server_serves_restarts_with_its_data_and_cleans_up() -> None:
    server = ZooKeeperServer()
    with server:
        assert four_letter_word(server.host, server.port, "ruok") == "imok"
        # a short session: a client that meets the server still starting retries soon
        client = KazooClient(hosts=server.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT)
        client.start(timeout=30)
        try:
            client.create("/kept", b"data")
            server.restart()
            eventually(lambda: client.connected, what="client reconnected after restart")
            assert client.get("/kept")[0] == b"data"
        finally:
            client.stop()
            client.close()
        pid = server.pid
        data_dir = server.data_dir
    assert pid is not None
    assert not server.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # signal 0: does the process exist?
    assert not data_dir.exists()


def test_stop_keeps_a_servers_data_and_close_removes_it() -> None:
    server = ZooKeeperServer()
    try:
        server.start()
        client = KazooClient(hosts=server.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT)
        client.start(timeout=30)
        try:
            client.create("/kept", b"data")
        finally:
            client.stop()
            client.close()
        server.stop()
        assert not server.running and server.data_dir.exists()
        server.start()
        client = KazooClient(hosts=server.hosts, timeout=4.0, connection_retry=STEADY_RECONNECT)
        client.start(timeout=30)
        try:
            assert client.get("/kept")[0] == b"data"
        finally:
            client.stop()
            client.close()
    finally:
        server.close()
    assert not server.running and not server.data_dir.exists()
    server.close()  # again: harmless


def test_server_and_ensemble_share_their_lifecycle() -> None:
    for cls in (ZooKeeperServer, ZooKeeperEnsemble):
        for name in ("start", "stop", "kill", "close", "__enter__", "__exit__"):
            assert callable(getattr(cls, name)), (cls, name)
    ensemble = ZooKeeperEnsemble(3)
    ensemble.close()
    ensemble.close()  # closing twice, or before starting, is harmless


def test_a_free_port_is_below_the_range_outgoing_connections_take_their_local_ends_from() -> None:
    """A port handed out for a server to bind later is not one a connection's local end may
    take meanwhile (which would fail the server's start), and nothing listens on it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {free_port() for _ in range(50)}
    assert len(ports) > 40  # spread, not one port again and again
    for port in ports:
        assert PORT_FLOOR <= port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_an_ensembles_ports_are_all_different_even_when_the_random_picks_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member whose quorum and election ports are one port does not start ("Invalid
    config"), so an ensemble's ports are chosen together, each held until all are chosen:
    with a random pick that is the same every time, the nine ports still differ."""
    # the pick repeated: a port that is free now (a fixed one may be held by a parallel test)
    repeated = next(port for port in range(PORT_FLOOR + 17, PORT_FLOOR + 1000) if _free(port))
    monkeypatch.setattr(
        "pycurator.testing._server.secrets.randbelow", lambda _below: repeated - PORT_FLOOR
    )
    ensemble = ZooKeeperEnsemble(3)
    try:
        ports = [*ensemble.client_ports.values()]
        ports += [port for pair in ensemble._quorum_ports.values() for port in pair]
        assert len(ports) == 9
        assert len(set(ports)) == 9
        assert repeated in ports
    finally:
        ensemble.close()
    assert len(set(free_ports(5))) == 5


def test_an_ensemble_that_does_not_serve_in_time_says_what_each_member_said_and_ends() -> None:
    """The error names every member still waiting, whether its process runs, and its log's
    end (a member that lost a port or whose election stalls says why there), and nothing of
    the ensemble is left running."""
    ensemble = ZooKeeperEnsemble(3, start_timeout=0.01)  # no JVM serves that soon
    with pytest.raises(ZooKeeperServerError, match=r"members \[1, 2, 3\] do not serve") as told:
        ensemble.__enter__()
    assert str(told.value).count("the end of its log") == 3
    left = [
        cmdline
        for cmdline in Path("/proc").glob("[0-9]*/cmdline")
        if str(ensemble._dir) in _read(cmdline)
    ]
    assert left == [] and not ensemble._dir.exists()


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:  # the process ended meanwhile
        return ""


def test_container_check_interval_reaches_the_server(zk_server: ZooKeeperTarget) -> None:
    if zk_server.local is None:
        pytest.skip("the interval is set only on a server this suite starts itself")
    assert "-Dznode.container.checkIntervalMs=100" in zk_server.local.command()


def test_local_servers_and_ensembles_enable_ttl_nodes(zk_server: ZooKeeperTarget) -> None:
    """``createTTL`` needs ``zookeeper.extendedTypesEnabled`` on the server (servers and
    ensemble members share :func:`java_command`); with it, a server id above 254 is refused, so
    an ensemble stops at 254 members. interop/test_java_nodes.py makes TTL nodes there."""
    flag = "-Dzookeeper.extendedTypesEnabled=true"
    if zk_server.local is not None:
        assert flag in zk_server.local.command()
    member = java_command(
        java="java",
        classpath="zookeeper.jar",
        container_check_interval_ms=None,
        main_class=QUORUM_MAIN,
        config=Path("zoo1.cfg"),
    )
    assert flag in member
    with pytest.raises(ValueError, match="1 to 254 members"):
        ZooKeeperEnsemble(255)


@pytest.mark.docker
def test_testcontainers_backend_runs_zookeeper_when_docker_answers() -> None:
    if not docker_available():
        pytest.skip("no Docker engine answers on this machine; the local server is used instead")
    from testcontainers.core.container import DockerContainer

    with DockerContainer("zookeeper:3.8").with_exposed_ports(2181) as container:
        hosts = f"{container.get_container_host_ip()}:{container.get_exposed_port(2181)}"
        client = KazooClient(hosts=hosts)
        client.start(timeout=60)
        try:
            assert client.get_children("/") is not None
        finally:
            client.stop()
            client.close()


WORKER = (
    "import sys\n"
    "from pycurator.testing import emit\n"
    "print('not an event', flush=True)\n"
    "emit('started', pid=__import__('os').getpid())\n"
    "sys.stdin.read()\n"
    "emit('stopping')\n"
)


def test_a_worker_process_speaks_json_events_and_can_be_paused_resumed_and_finished() -> None:
    seen: list[str] = []
    worker = WorkerProcess(
        [sys.executable, "-c", WORKER], on_event=lambda e: seen.append(e["event"])
    )
    try:
        assert worker.wait_for("started", timeout=SOON)["pid"] == worker.pid
        worker.pause()
        eventually(lambda: _state(worker.pid) == "T", what="worker stopped")
        worker.resume()
        eventually(lambda: _state(worker.pid) != "T", what="worker running again")
    finally:
        worker.finish(timeout=SOON)
    assert seen == ["started", "stopping"]
    assert worker.process.returncode == 0 and not worker.alive()
    worker.finish()  # again: harmless


def test_a_killed_worker_ends_its_wait_with_an_error() -> None:
    worker = WorkerProcess([sys.executable, "-c", WORKER])
    try:
        worker.wait_for("started", timeout=SOON)
        worker.kill()
        with pytest.raises(RuntimeError, match="exited before 'stopping'"):
            worker.wait_for("stopping", timeout=SOON)
    finally:
        worker.finish()
    assert worker.process.returncode == -signal.SIGKILL


def _state(pid: int) -> str:
    """The process's state letter from /proc (``T`` when stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_java_curator_without_jpype_says_how_to_install_it() -> None:
    """The kit imports without JPype; reaching for Java then names the command that installs it."""
    program = (
        "import sys; sys.modules['jpype'] = None\n"
        "from pycurator.testing import new_curator\n"
        "try:\n"
        "    new_curator('localhost:1')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=SOON
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'pycurator-zk[interop]'" in result.stdout
