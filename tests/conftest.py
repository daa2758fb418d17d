"""Fixtures shared by the test modules."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from pycurator.testing import ZooKeeperServer

from .support import SOON, java_with


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
