"""Fixtures for the cross-language tests (``curator`` and ``curator_factory`` come from the
kit's pytest plugin), and the Java payload classes of the discovery tests (``interop/java``),
compiled before the JVM starts and put on its classpath."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycurator.testing import (
    CuratorFactory,
    FaultProxy,
    add_classpath,
    java_revocation_listener,
    lock_class,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

#: The Java sources of the payload classes (Spring Cloud's and Dubbo's, and one of our own).
JAVA_SOURCES = Path(__file__).resolve().parent / "java"
_compiled: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    """Compile ``interop/java`` with javac into a folder the JVM's classpath ends with (the JVM
    starts later, at the first Java call); a failure is told by ``java_payload_classes``."""
    sources = sorted(str(path) for path in JAVA_SOURCES.rglob("*.java"))
    folder = tempfile.mkdtemp(prefix="pycurator-java-")
    _compiled["folder"] = folder
    javac = shutil.which("javac")
    if javac is None:
        _compiled["error"] = "javac is not installed (a JDK: ./dev test installs one)"
        return
    result = subprocess.run(
        [javac, "-nowarn", "-d", folder, *sources], capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        _compiled["error"] = f"javac failed: {result.stderr.strip()}"
        return
    add_classpath(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    if "folder" in _compiled:
        shutil.rmtree(_compiled["folder"], ignore_errors=True)


@pytest.fixture(scope="session")
def java_payload_classes() -> str:
    """The folder of the compiled Java payload classes, on the JVM's classpath."""
    if "error" in _compiled:
        pytest.fail(f"the Java payload classes of interop/java are missing: {_compiled['error']}")
    return _compiled["folder"]


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    """A proxy in front of the test server's first member, for the faults a test makes."""
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


@pytest.fixture
def no_orphans(curator_factory: CuratorFactory, zk_no_orphans: None) -> None:
    """``zk_no_orphans``, audited before the test's Curator clients close too."""


#: A class of Curator's lock recipes by its simple name (``pycurator.testing.lock_class``).
java_class = lock_class

__all__ = ["CuratorFactory", "java_class", "java_revocation_listener"]
