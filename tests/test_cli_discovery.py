"""``pycurator register`` and ``pycurator services`` as a user runs them: an instance
registered exactly as long as its command runs (gone when the command ends, when the CLI is
killed, on a signal passed on), bad input refused before anything is written, the services and
their instances listed as a table and as JSON, a closed output ended quietly. Real processes
on a real server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator.cli import EXIT_UNAVAILABLE, EXIT_USAGE, CliError, build_parser, cmd_register
from pycurator.discovery import JsonInstanceSerializer, ServiceDiscovery, ServiceInstance
from pycurator.testing import ZooKeeperServer, free_port
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import ends_within, python_command, run_cli, start_cli
from .support import SOON, Worker, eventually
from .test_cli_views import Lines

#: The command: prints its instance's node, then waits for ever.
PRINT_NODE_THEN_SLEEP = (
    "import os, time; print(os.environ['PYCURATOR_SERVICE_NODE'], "
    "os.environ['PYCURATOR_SERVICE_ID'], flush=True); time.sleep(60)"
)
#: The command: prints its instance's node, exits 42 on SIGTERM.
PRINT_NODE_EXIT_ON_TERM = (
    "import os, signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(42)); "
    "print(os.environ['PYCURATOR_SERVICE_NODE'], os.environ['PYCURATOR_SERVICE_ID'], "
    "flush=True); time.sleep(60)"
)
#: However slow the machine, the command exits this soon after what ends it.
EXIT_BOUND = 20.0


def first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    reader = Worker(process.stdout.readline)
    reader.start()
    line: str = reader.outcome(SOON)
    return line.strip()


def left(zk: KazooClient, path: str) -> list[str]:
    """The children of ``path``: none once the server reaped it, an empty container."""
    try:
        return list(zk.get_children(path))
    except NoNodeError:
        return []


def register(hosts: str, base: str, *options: str, code: str) -> subprocess.Popen[str]:
    return start_cli(
        "register", "--hosts", hosts, "--base", base, "billing", "--port", "8080",
        *options, "--", *python_command(code),
    )  # fmt: skip


def test_register_keeps_the_instance_while_its_command_runs_and_not_a_moment_longer(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    code = (
        "import os, sys; from kazoo.client import KazooClient; "
        "zk = KazooClient(os.environ['PYCURATOR_SERVICE_HOSTS']); zk.start(); "
        "print(zk.get(os.environ['PYCURATOR_SERVICE_NODE'])[0].decode()); sys.exit(3)"
    )
    result = run_cli(
        "register", "--hosts", zk_server.hosts, "--base", zk_path, "billing", "--port", "8080",
        "--address", "10.0.0.5", "--id", "b-1", "--payload", '{"zone": "a"}',
        "--uri-spec", "{scheme}://{address}:{port}", "--", *python_command(code),
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    read = JsonInstanceSerializer().deserialize(result.stdout.strip().encode())
    assert (read.name, read.id, read.address, read.port) == ("billing", "b-1", "10.0.0.5", 8080)
    assert read.payload == {"zone": "a"} and read.build_uri_spec() == "http://10.0.0.5:8080"
    assert left(zk, f"{zk_path}/billing") == []


def test_a_query_and_services_see_what_register_registers(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, processes: list[Any]
) -> None:
    process = register(zk_server.hosts, zk_path, code=PRINT_NODE_THEN_SLEEP)
    processes.append(process)
    node, instance_id = first_line(process).split()
    assert node == f"{zk_path}/billing/{instance_id}"
    (found,) = ServiceDiscovery(zk, zk_path).query_for_instances("billing")
    assert found.id == instance_id and found.port == 8080
    assert zk.exists(node).ephemeralOwner != 0
    listed = run_cli("services", "--hosts", zk_server.hosts, "--base", zk_path)
    assert listed.stdout.splitlines() == ["NAME     INSTANCES", "billing  1"], listed.stderr
    process.kill()


def test_a_killed_register_takes_its_command_and_its_instance_with_it(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, processes: list[Any]
) -> None:
    process = register(
        zk_server.hosts, zk_path, "--session-timeout", "2", code=PRINT_NODE_THEN_SLEEP
    )
    processes.append(process)
    node, _ = first_line(process).split()
    command = process_children(process.pid)
    process.kill()
    assert all(ends_within(pid, SOON) for pid in command)
    eventually(lambda: zk.exists(node) is None, SOON, what="the instance gone with the session")


def process_children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux)."""
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as listed:
        return [int(child) for child in listed.read().split()]


def test_a_signal_to_register_reaches_the_command_and_the_instance_is_unregistered(
    zk_server: ZooKeeperTarget,
    zk: KazooClient,
    zk_path: str,
    processes: list[Any],
) -> None:
    code = PRINT_NODE_EXIT_ON_TERM
    process = subprocess.Popen(
        [*start_cli_args(zk_server.hosts, zk_path), "--", *python_command(code)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    processes.append(process)
    node, _ = first_line(process).split()
    process.send_signal(signal.SIGTERM)  # as a supervisor sends it
    _, stderr = process.communicate(timeout=SOON)
    assert process.returncode == 42, stderr
    assert zk.exists(node) is None  # unregistered before the exit, not with the session


def start_cli_args(hosts: str, base: str) -> list[str]:
    return [sys.executable, "-m", "pycurator", "register", "--hosts", hosts, "--base", base,
            "billing", "--port", "8080"]  # fmt: skip


@pytest.fixture
def own_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.close()


def test_register_keeps_its_command_through_an_outage_and_exits_on_time_after_it(
    own_server: ZooKeeperServer, processes: list[Any]
) -> None:
    code = (
        "import os, sys, time; print(os.environ['PYCURATOR_SERVICE_NODE'], 'x', flush=True); "
        "sys.stdin.readline(); sys.exit(5)"
    )
    process = subprocess.Popen(
        [*start_cli_args(own_server.hosts, "/services"), "--", *python_command(code)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
    )  # fmt: skip
    processes.append(process)
    first_line(process)
    own_server.stop()
    time.sleep(1.0)
    assert process.poll() is None  # an outage is no reason to stop the service
    began = time.monotonic()
    _, stderr = process.communicate("done\n", timeout=EXIT_BOUND)
    assert process.returncode == 5, stderr
    assert time.monotonic() - began < EXIT_BOUND


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["a/b", "--port", "1"], "bad NAME: service name 'a/b' contains '/'"),
        (["billing", "--port", "70000"], "at most 65535"),
        (["billing", "--port", "1", "--payload", "{bad"], "bad --payload: not JSON"),
        (["billing", "--port", "1", "--uri-spec", "{x"], "bad --uri-spec"),
        (["billing", "--port", "1", "--id", ".."], "bad --id"),
        (["billing", "--port", "1", "--base", "rel"], "bad --base"),
        (["billing"], "--port"),
    ],
)
def test_bad_input_to_register_is_a_usage_error_before_anything_connects(
    options: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = f"127.0.0.1:{free_port()}"  # nothing there: a check after connecting would say so
    try:
        args = build_parser().parse_args(["register", "--hosts", hosts, *options])
    except SystemExit as exit:
        status, message = exit.code, capsys.readouterr().err
    else:
        args.command = ["true"]
        with pytest.raises(CliError) as refused:
            cmd_register(args, sys.stderr)
        status, message = refused.value.status, str(refused.value)
    assert status == EXIT_USAGE and says in message, message


def test_register_without_a_server_exits_69() -> None:
    hosts = f"127.0.0.1:{free_port()}"
    result = run_cli(
        "register", "--hosts", hosts, "--connect-timeout", "1", "billing", "--port", "1",
        "--", "true",
    )  # fmt: skip
    assert result.returncode == EXIT_UNAVAILABLE, result.stderr


def test_services_lists_the_instances_of_a_service_and_names_an_unreadable_node(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    one = ServiceInstance("billing", id="b-1", address="10.0.0.5", port=8080, ssl_port=8443)
    with ServiceDiscovery(zk, zk_path) as discovery:
        discovery.register_service(one)
        zk.create(f"{zk_path}/billing/bad", b"not json")
        table = run_cli("services", "--hosts", zk_server.hosts, "--base", zk_path, "billing")
        document = run_cli(
            "services", "--hosts", zk_server.hosts, "--base", zk_path, "billing", "--json"
        )
        zk.delete(f"{zk_path}/billing/bad")
    header, row, unreadable = table.stdout.splitlines()
    assert header.split() == [
        "ID",
        "ADDRESS",
        "PORT",
        "SSL",
        "TYPE",
        "ENABLED",
        "REGISTERED",
        "URI",
    ]
    assert row.split()[:6] == ["b-1", "10.0.0.5", "8080", "8443", "DYNAMIC", "yes"]
    assert unreadable.startswith(f"unreadable: {zk_path}/billing/bad: ")
    found = json.loads(document.stdout)
    (instance,) = found["instances"]
    assert (instance["id"], instance["sslPort"], instance["enabled"]) == ("b-1", 8443, True)
    assert [entry["node"] for entry in found["unreadable"]] == [f"{zk_path}/billing/bad"]


def test_services_whose_output_is_closed_ends_quietly(
    zk_server: ZooKeeperTarget, zk_path: str
) -> None:
    process = start_cli("services", "--hosts", zk_server.hosts, "--base", zk_path, "--json")
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=SOON)
    assert (process.returncode, stderr) == (128 + signal.SIGPIPE, "")


def test_services_watch_prints_the_instances_again_at_each_change_until_a_signal(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, processes: list[Any]
) -> None:
    with ServiceDiscovery(zk, zk_path) as discovery:
        discovery.register_service(ServiceInstance("billing", id="b-1", port=8080))
        options = ("--hosts", zk_server.hosts, "--base", zk_path, "billing", "--watch")
        table = start_cli("services", *options)
        document = start_cli("services", *options, "--json")
        processes += [table, document]
        rows, documents = Lines(table), Lines(document)
        rows.until(lambda line: line.startswith("b-1 "))
        first = json.loads(documents.until(lambda line: line.startswith("{")))
        assert [i["id"] for i in first["instances"]] == ["b-1"]
        assert first["connection"] == "connected"
        discovery.register_service(ServiceInstance("billing", id="b-2", port=8081))
        rows.until(lambda line: line.startswith("b-2 "))
        second = json.loads(documents.until(lambda line: line.startswith("{")))
        assert [i["id"] for i in second["instances"]] == ["b-1", "b-2"]
        zk.create(f"{zk_path}/billing/bad", b"not json")
        rows.until(lambda line: line.startswith(f"unreadable: {zk_path}/billing/bad: "))
        third = json.loads(documents.until(lambda line: line.startswith("{")))
        assert [u["node"] for u in third["unreadable"]] == [f"{zk_path}/billing/bad"]
        zk.delete(f"{zk_path}/billing/bad")
        discovery.unregister_service(ServiceInstance("billing", id="b-1"))
        fourth = json.loads(documents.until(lambda line: line.startswith("{")))
        if fourth["unreadable"]:  # the deletion of bad, told before the unregister
            fourth = json.loads(documents.until(lambda line: line.startswith("{")))
        assert ([i["id"] for i in fourth["instances"]], fourth["unreadable"]) == (["b-2"], [])
    for process, how in ((table, signal.SIGINT), (document, signal.SIGTERM)):
        process.send_signal(how)
        _, stderr = process.communicate(timeout=SOON)
        assert (process.returncode, stderr) == (0, "")


def test_services_watch_needs_a_name() -> None:
    done = run_cli("services", "--hosts", "127.0.0.1:1", "--watch")
    assert done.returncode == EXIT_USAGE and "--watch needs NAME" in done.stderr
