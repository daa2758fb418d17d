"""Fixtures shared by the test modules."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from pycurator._protocol.events import LockEventKind
from pycurator.testing import FaultProxy, ZooKeeperServer
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .scripted_election import Scene, reported, scene_maker
from .support import SOON, java_with


@pytest.fixture
def proxy(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    """A fault proxy in front of the session's server (a module may make its own)."""
    with FaultProxy(zk_server.hosts.split(",")[0]) as fault_proxy:
        yield fault_proxy


@pytest.fixture
def clients() -> Iterator[list[KazooClient]]:
    """Clients to stop and close at the end (a module may make its own)."""
    made: list[KazooClient] = []
    yield made
    for client in made:
        client.stop()
        client.close()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Started CLI processes; any still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=SOON)


@pytest.fixture(scope="session")
def ttl_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A server with TTL nodes off, as ZooKeeper starts by default (the kit's have them on)."""
    with ZooKeeperServer(java=java_with(tmp_path_factory.mktemp("java"), False)) as server:
        yield server


@pytest.fixture
def scene(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Scene]:
    """Makes the scenes of the election's scripted tests (see
    :func:`tests.scripted_election.scene_maker`)."""
    return scene_maker(monkeypatch)


@pytest.fixture
def events() -> Iterator[list[LockEventKind]]:
    """The kinds of the events reported on a scene's election path, in order."""
    with reported() as kinds:
        yield kinds
