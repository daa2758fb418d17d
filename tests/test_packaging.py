"""The artifacts a user installs: the wheel and the sdist, their contents and metadata."""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

import pytest

import pycurator

from .cli_support import run_cli

ROOT = Path(__file__).resolve().parent.parent
#: What the tests read besides ``tests/`` itself: the sdist must carry all of it.
TEST_INPUTS = ("tests", "docs", "bench", "interop", "compose")
TOP_FILES = ("LICENSE", "README.md", "mkdocs.yml", "pyproject.toml", "dev")


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist, and the wheel built from that sdist (as ``python -m build`` does)."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def wheel_metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def source_files(top: str) -> set[str]:
    """Files under ``top`` in this tree, bytecode and caches left out."""
    base = ROOT / top
    return {
        str(p.relative_to(ROOT))
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_version_has_one_source() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"pycurator {pycurator.__version__}"
    assert pycurator.__version__.count(".") == 2


def test_the_wheel_metadata_names_license_authors_urls_and_classifiers(
    artifacts: tuple[Path, Path],
) -> None:
    meta = wheel_metadata(artifacts[1])
    assert meta["Name"] == "pycurator-zk"
    assert meta["Version"] == pycurator.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"
    assert meta["Author"]
    assert meta.get_all("Project-URL")
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3" in classifiers
    assert meta["Requires-Dist"].startswith("kazoo")


def test_the_wheel_ships_the_package_typed_and_licensed_and_nothing_else(
    artifacts: tuple[Path, Path],
) -> None:
    with zipfile.ZipFile(artifacts[1]) as archive:
        names = archive.namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"pycurator", f"pycurator_zk-{pycurator.__version__}.dist-info"}
    assert "pycurator/py.typed" in names
    assert "pycurator/testing/pytest_plugin.py" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_the_sdist_carries_everything_its_tests_read(artifacts: tuple[Path, Path]) -> None:
    with tarfile.open(artifacts[0]) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()}
    expected = set(TOP_FILES).union(*(source_files(top) for top in TEST_INPUTS))
    assert not expected - members, sorted(expected - members)
    assert not [m for m in members if m.startswith(("site/", ".venv/")) or "__pycache__" in m]
    assert "Apache License" in (ROOT / "LICENSE").read_text()
