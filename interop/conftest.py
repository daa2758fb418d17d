"""Fixtures for the cross-language tests: Curator clients on the tests' ZooKeeper server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pycurator.testing import java_revocation_listener, lock_class, new_curator
from pycurator.testing.pytest_plugin import ZooKeeperTarget

CuratorFactory = Callable[..., Any]


@pytest.fixture
def curator_factory(zk_server: ZooKeeperTarget) -> Iterator[CuratorFactory]:
    """Makes started Java Curator clients on the test server; all are closed afterwards."""
    clients: list[Any] = []

    def make(**options: Any) -> Any:
        client = new_curator(zk_server.hosts, **options)
        clients.append(client)
        return client

    yield make
    for client in reversed(clients):
        client.close()


@pytest.fixture
def curator(curator_factory: CuratorFactory) -> Any:
    """One started Java Curator client on the test server."""
    return curator_factory()


@pytest.fixture
def no_orphans(curator_factory: CuratorFactory, zk_no_orphans: None) -> None:
    """``zk_no_orphans``, audited before the test's Curator clients close too."""


#: A class of Curator's lock recipes by its simple name (``pycurator.testing.lock_class``).
java_class = lock_class

__all__ = ["CuratorFactory", "java_class", "java_revocation_listener"]
