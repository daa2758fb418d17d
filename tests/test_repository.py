"""The repository itself: what a fresh clone holds is the project's, on any machine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str) -> list[str]:
    """The lines ``git`` prints for ``args`` in this checkout (a test of a tree that is not a git
    checkout, such as an unpacked sdist, is skipped: there is no repository to check)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the repository's contents cannot be listed")
    result = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.splitlines()


def test_no_tracked_file_is_one_the_repository_ignores() -> None:
    # a virtual environment, a cache or a build tracked by mistake breaks or bloats every clone
    assert git("ls-files", "--cached", "--ignored", "--exclude-standard") == []


def test_every_tracked_symbolic_link_stays_inside_the_checkout() -> None:
    links = [line.split("\t", 1)[1] for line in git("ls-files", "-s") if line.startswith("120000")]
    for link in links:
        target = os.readlink(ROOT / link)
        assert not os.path.isabs(target), f"{link} points to a path of one machine: {target}"
        resolved = (ROOT / link).parent.joinpath(target).resolve()
        assert resolved.is_relative_to(ROOT), f"{link} points outside the checkout: {target}"
