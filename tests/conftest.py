"""Fixtures shared by the test modules."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from .support import SOON


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Started CLI processes; any still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=SOON)
