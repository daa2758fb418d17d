"""Holders that die or expire: the lock passes to the next waiter, across languages."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pycurator import InterProcessMutex
from pycurator.testing import ClientFactory, JavaMutex, WorkerProcess, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from tests.support import SOON, Worker, children, eventually

#: After each scenario, no lock node is left in the server's dump of ephemerals by session.
pytestmark = pytest.mark.usefixtures("no_orphans")


@pytest.mark.parametrize("language", ["python", "java"])
def test_a_holder_killed_with_sigkill_passes_the_lock_on(
    language: str,
    zk_server: ZooKeeperTarget,
    curator: Any,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    path = f"{zk_path}/lock"
    observer = zk_client_factory()
    with WorkerProcess.hold(language, "mutex", zk_server.hosts, path, session_ms=2000) as worker:
        assert worker.wait_for("held", timeout=60)["event"] == "held"
        # the next waiter is of the other language
        if language == "python":
            next_lock = JavaMutex(curator, path)

            def next_waiter() -> bool:
                held = next_lock.acquire(60)
                next_lock.release()
                return held
        else:
            python_lock = InterProcessMutex(zk_client_factory(), path)

            def next_waiter() -> bool:
                held = python_lock.acquire(timeout=60)
                python_lock.release()
                return held

        waiter = Worker(next_waiter)
        waiter.start()
        eventually(lambda: len(children(observer, path)) == 2, what="next waiter queued")
        worker.kill()
        assert waiter.outcome(timeout=60) is True  # once the dead holder's session times out
    assert children(observer, path) == []


def test_a_python_holders_expiry_lets_a_java_waiter_in(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    holder_client = zk_client_factory()
    holder = InterProcessMutex(holder_client, path)
    java = JavaMutex(curator, path)
    got = threading.Event()
    assert holder.acquire()

    def java_waits() -> None:
        assert java.acquire(60)
        got.set()
        java.release()

    waiter = Worker(java_waits)
    waiter.start()
    eventually(lambda: len(children(holder_client, path)) == 2, what="java queued")
    expire_kazoo_session(holder_client)
    assert holder.lost_event.wait(SOON)
    assert got.wait(SOON)
    waiter.outcome()
    holder.release()  # lost: no error, nothing of Java's deleted
    assert children(zk_client_factory(), path) == []
