"""compose/docker-compose.yml is a valid 3-node ZooKeeper 3.8 ensemble, and the README points
the tests and the demo at it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose" / "docker-compose.yml"


def services() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(document, dict)
    found: dict[str, dict[str, Any]] = document["services"]
    return found


def host_ports() -> list[int]:
    ports = []
    for service in services().values():
        (mapping,) = service["ports"]
        host, container = str(mapping).split(":")
        assert container == "2181"
        ports.append(int(host))
    return ports


def test_three_zookeeper_38_services_with_distinct_ids() -> None:
    found = services()
    assert sorted(found) == ["zk1", "zk2", "zk3"]
    assert {s["image"] for s in found.values()} == {"zookeeper:3.8"}
    assert sorted(s["environment"]["ZOO_MY_ID"] for s in found.values()) == ["1", "2", "3"]


def test_four_letter_words_are_enabled_on_every_node() -> None:
    for service in services().values():
        assert service["environment"]["ZOO_4LW_COMMANDS_WHITELIST"] == "*"


def test_zoo_servers_names_every_service_with_its_id() -> None:
    for service in services().values():
        servers = dict(
            entry.split("=", 1) for entry in service["environment"]["ZOO_SERVERS"].split()
        )
        expected = {f"server.{i}": f"zk{i}:2888:3888;2181" for i in (1, 2, 3)}
        assert servers == expected
    for name, service in services().items():
        assert service["hostname"] == name
        assert service["environment"]["ZOO_MY_ID"] == name.removeprefix("zk")


def test_each_node_publishes_its_client_port_on_its_own_host_port() -> None:
    ports = host_ports()
    assert len(set(ports)) == 3


def test_readme_and_compose_file_name_the_published_ports() -> None:
    hosts = ",".join(f"127.0.0.1:{port}" for port in host_ports())
    assert f"PYCURATOR_TEST_ZK_HOSTS={hosts} ./dev test" in (ROOT / "README.md").read_text()
    assert f"PYCURATOR_TEST_ZK_HOSTS={hosts} ./dev test" in COMPOSE.read_text()


def compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_accepts_the_file() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("no Docker Compose on this machine; the structure is checked above")
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert not re.search(r"(?i)error", result.stderr)
