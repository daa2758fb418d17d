"""The ``front`` fixture: each parity scenario runs once per front end, and once per server: the
test ZooKeeper, and the explorer's in-memory model of one on a loopback port
(:mod:`tests.explorer.wire`), where the same scenarios run with no ZooKeeper process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pycurator.testing import ClientFactory
from pycurator.testing.pytest_plugin import _clients_on

from ..explorer.wire import WireServer
from .fronts import FRONTS, Front

#: Where a scenario's clients connect: ``zookeeper``, the tests' real server; ``model``, the
#: in-memory one.
SERVERS = ["zookeeper", "model"]


@pytest.fixture(scope="session")
def wire_server() -> Iterator[WireServer]:
    """The in-memory ZooKeeper, one for the run (each scenario has a path of its own)."""
    with WireServer() as server:
        yield server


@pytest.fixture(params=SERVERS)
def zk_client_factory(request: pytest.FixtureRequest) -> Iterator[ClientFactory]:
    """The kit's client factory, on the real server or on the model; on the model, a request it
    could not serve fails the scenario."""
    if request.param == "zookeeper":
        with _clients_on(request.getfixturevalue("zk_server").hosts) as make:
            yield make
        return
    model: WireServer = request.getfixturevalue("wire_server")
    seen = len(model.failures)
    with _clients_on(model.hosts) as make:
        yield make
    assert model.failures[seen:] == [], "the model could not serve a request"


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest, zk_client_factory: ClientFactory) -> Iterator[Front]:
    """One front end, its participants and clients cleaned up after the test."""
    made = Front(request.param, zk_client_factory)
    yield made
    made.close()


@pytest.fixture
def both_fronts(zk_client_factory: ClientFactory) -> Iterator[list[Front]]:
    """Both front ends at once, for a scenario that compares their answers."""
    made = [Front(name, zk_client_factory) for name in FRONTS]
    yield made
    for front in made:
        front.close()
