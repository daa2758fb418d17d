"""The test kit's safe defaults: its server is never the command line's ensemble unless named
for the tests, and its orphan audit waits as long as the run says."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from pycurator.testing.pytest_plugin import ZooKeeperTarget

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


LEAKY_TEST = """
import pytest

@pytest.mark.usefixtures("zk_no_orphans")
def test_leaks(zk, zk_path):
    zk.create(zk_path + "/leaked", ephemeral=True, makepath=True)
"""


def test_the_orphan_audit_waits_as_long_as_the_ini_option_says(
    tmp_path: Path, zk_server: ZooKeeperTarget
) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\npycurator_orphan_wait = 0.5\n")
    env = {k: v for k, v in os.environ.items() if k != "PYCURATOR_ZK_HOSTS"}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_leaky.py"],
        cwd=tmp_path,
        env={**env, "PYCURATOR_TEST_ZK_HOSTS": zk_server.hosts},
        capture_output=True,
        text=True,
        timeout=3 * SOON,
    )
    took = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ephemeral nodes left under" in result.stdout
    assert "/leaked" in result.stdout
    # the default would wait 30 s; startup on a loaded machine takes a few
    assert took < 25, f"the audit waited {took:.1f}s, not about 0.5 s"
