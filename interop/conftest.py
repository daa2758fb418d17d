"""Fixtures for the cross-language tests (``curator`` and ``curator_factory`` come from the
kit's pytest plugin)."""

from __future__ import annotations

import pytest

from pycurator.testing import CuratorFactory, java_revocation_listener, lock_class


@pytest.fixture
def no_orphans(curator_factory: CuratorFactory, zk_no_orphans: None) -> None:
    """``zk_no_orphans``, audited before the test's Curator clients close too."""


#: A class of Curator's lock recipes by its simple name (``pycurator.testing.lock_class``).
java_class = lock_class

__all__ = ["CuratorFactory", "java_class", "java_revocation_listener"]
