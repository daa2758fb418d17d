"""pycurator.testing's Java adapters and worker processes: each behaves as its pycurator
counterpart on the same path, so a test can treat the two languages alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
)
from pycurator.testing import (
    ClientFactory,
    JavaMultiLock,
    JavaMutex,
    JavaReadWriteLock,
    JavaSemaphore,
    JavaSemaphoreMutex,
    WorkerProcess,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON, children, eventually

pytestmark = pytest.mark.usefixtures("no_orphans")

#: name -> (the Java adapter, the pycurator lock), each made from a client and a path.
LOCKS: dict[str, tuple[Callable[[Any, str], Any], Callable[[Any, str], Any]]] = {
    "mutex": (JavaMutex, InterProcessMutex),
    "write": (
        lambda c, p: JavaReadWriteLock(c, p).write_lock(),
        lambda c, p: InterProcessReadWriteLock(c, p).write_lock(),
    ),
    "semaphore-mutex": (JavaSemaphoreMutex, InterProcessSemaphoreMutex),
    "multi": (
        lambda c, p: JavaMultiLock(c, [f"{p}/a", f"{p}/b"]),
        lambda c, p: InterProcessMultiLock(c, [f"{p}/a", f"{p}/b"]),
    ),
}


@pytest.mark.parametrize("name", LOCKS)
def test_a_java_lock_adapter_excludes_its_pycurator_counterpart(
    name: str, curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    make_java, make_python = LOCKS[name]
    java, python = make_java(curator, zk_path), make_python(zk_client_factory(), zk_path)
    assert java.acquire(timeout=SOON)
    try:
        assert python.acquire(timeout=0.2) is False
        if name != "multi":
            node = java.lock_path
            assert node is not None and node.rsplit("/", 1)[1] in children(
                zk_client_factory(), node.rsplit("/", 1)[0]
            )
            assert java.fencing_token > 0
    finally:
        java.release()
    assert python.acquire(timeout=SOON)
    python.release()


def test_java_leases_count_with_pycurator_ones(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    java = JavaSemaphore(curator, zk_path, 2)
    python = InterProcessSemaphoreV2(zk_client_factory(), zk_path, 2)
    java_lease = java.acquire(timeout=SOON)
    python_lease = python.acquire(timeout=SOON)
    assert java_lease is not None and python_lease is not None
    try:
        assert java.acquire(timeout=0.2) is None
        assert java_lease.path.startswith(f"{zk_path}/leases/") and java_lease.fencing_token > 0
    finally:
        java_lease.close()
        python_lease.close()


@pytest.mark.parametrize("language", ["python", "java"])
@pytest.mark.parametrize("role", ["read", "write", "lease", "semaphore-mutex"])
def test_a_worker_holds_its_role_until_finished(
    language: str,
    role: str,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    observer = zk_client_factory()
    with WorkerProcess.hold(language, role, zk_server.hosts, zk_path) as worker:
        node = worker.wait_for("held", timeout=60)["node"]
        parent, name = node.rsplit("/", 1)
        assert parent.startswith(zk_path) and name in children(observer, parent)
    assert worker.process.returncode == 0
    eventually(lambda: name not in children(observer, parent), what="the worker's node deleted")
