"""The ``front`` fixture: each parity scenario runs once per front end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pycurator.testing import ClientFactory

from .fronts import FRONTS, Front


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
