"""The test kit's server is never the command line's ensemble unless named for the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .support import SOON


def collect(tmp_path: Path, **environ: str) -> str:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYCURATOR_ZK_HOSTS", "PYCURATOR_TEST_ZK_HOSTS")
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**env, **environ},
        capture_output=True,
        text=True,
        timeout=SOON,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_run_with_only_the_command_lines_ensemble_says_it_is_not_used(tmp_path: Path) -> None:
    out = collect(tmp_path, PYCURATOR_ZK_HOSTS="prod1:2181")
    assert (
        "PYCURATOR_ZK_HOSTS is the command line's ensemble and is not used by the tests; "
        "set PYCURATOR_TEST_ZK_HOSTS to run them against an ensemble"
    ) in out


def test_a_run_that_names_its_ensemble_says_nothing_about_it(tmp_path: Path) -> None:
    out = collect(tmp_path, PYCURATOR_ZK_HOSTS="prod1:2181", PYCURATOR_TEST_ZK_HOSTS="t:2181")
    assert "PYCURATOR_ZK_HOSTS" not in out
