"""Every code sample in docs/ and README.md runs, against the test server.

Python samples of a page run top to bottom as one script in a fresh process. The connect string
``zk1:2181,zk2:2181,zk3:2181`` in a sample stands for the reader's ensemble; here it becomes the
test server's, with a chroot of its own per page. A block whose first line is ``# test_*.py`` is
a pytest file and runs with pytest. Every ``pycurator ...`` line of a shell sample must parse.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NotEmptyError

import pycurator
from pycurator.cli import build_parser
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
PLACEHOLDER = "zk1:2181,zk2:2181,zk3:2181"
PYTEST_FILE = re.compile(r"# (test_\w+\.py)\n")


def fenced(text: str, language: str) -> list[str]:
    """The bodies of the ```language blocks of a Markdown text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.M | re.S)


def missing_names(source: str) -> list[str]:
    """Names a sample imports from ``pycurator`` that this version does not have."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "pycurator":
            missing += [a.name for a in node.names if not hasattr(pycurator, a.name)]
    return missing


def pages_with(language: str) -> list[Path]:
    return [page for page in PAGES if fenced(page.read_text(), language)]


def test_the_python_samples_are_found() -> None:
    names = {page.name for page in pages_with("python")}
    assert {"README.md", "quickstart.md", "mutex.md", "kazoo.md", "testing.md"} <= names


@pytest.mark.parametrize("page", pages_with("python"), ids=lambda page: page.name)
def test_python_samples_run(
    page: Path, zk_server: ZooKeeperTarget, zk: KazooClient, tmp_path: Path
) -> None:
    blocks = fenced(page.read_text(), "python")
    missing = missing_names("\n".join(blocks))
    if missing:
        pytest.skip(f"pycurator has no {', '.join(sorted(set(missing)))} on this branch yet")
    chroot = f"/pycurator-docs/{page.stem}-{uuid.uuid4().hex[:8]}"
    zk.ensure_path(chroot)
    hosts = f"{zk_server.hosts}{chroot}"
    script: list[str] = []
    test_files: list[str] = []
    for block in blocks:
        match = PYTEST_FILE.match(block)
        if match:
            (tmp_path / match.group(1)).write_text(block)
            test_files.append(match.group(1))
        else:
            script.append(block.replace(PLACEHOLDER, hosts))
    try:
        if script:
            (tmp_path / "sample.py").write_text("\n".join(script))
            result = subprocess.run(
                [sys.executable, "sample.py"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=6 * SOON,
            )
            assert result.returncode == 0, result.stdout + result.stderr
        if test_files:
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *test_files],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=6 * SOON,
                env={**os.environ, "PYCURATOR_TEST_ZK_HOSTS": zk_server.hosts},
            )
            assert result.returncode == 0, result.stdout + result.stderr
    finally:
        remove(zk, chroot)


def remove(zk: KazooClient, path: str) -> None:
    """Delete ``path`` and below; nodes a sample made unreadable (ACLs) are containers that the
    server reaps once empty, so keep trying until they are gone."""
    deadline = time.monotonic() + SOON
    while True:
        try:
            zk.delete(path, recursive=True)
            return
        except (NoAuthError, NotEmptyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("page", pages_with("sh"), ids=lambda page: page.name)
def test_pycurator_command_lines_in_shell_samples_parse(page: Path) -> None:
    parser = build_parser()
    for block in fenced(page.read_text(), "sh"):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if not line.startswith("pycurator "):
                continue
            argv = shlex.split(line)[1:]
            if "--" in argv:
                argv = argv[: argv.index("--")]
            parser.parse_args(argv)  # exits (fails the test) on a bad command line
