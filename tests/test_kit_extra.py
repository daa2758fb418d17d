"""The test kit's extra: ``pip install 'pycurator-zk[testing]'`` brings what ``pycurator.testing``
runs on (docs/testing.md, "Installing the kit")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_testing_extra_brings_pytest_for_the_fixtures_and_jpype_for_the_java_peers() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {re.split(r"[<>=!~;\[ ]", requirement)[0].lower() for requirement in extras["testing"]}
    assert names == {"pytest", "jpype1"}
    assert "pip install '.[testing]'" in (ROOT / "docs" / "testing.md").read_text()
