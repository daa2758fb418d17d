"""The kit's worker process: ``python -m pycurator.testing.worker LANGUAGE ROLE HOSTS PATH``.

It takes ``ROLE`` at ``PATH`` once, with pycurator (``python``) or Java Curator through JPype
(``java``), sends the event ``held`` with the node it holds, and holds until killed or until
its standard input closes; then it releases and sends ``released``. Start it with
:meth:`pycurator.testing.WorkerProcess.hold`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient

from .. import (
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
)
from ._curator import new_curator
from ._java import (
    JavaLatch,
    JavaMutex,
    JavaReadWriteLock,
    JavaSemaphore,
    JavaSemaphoreMutex,
)
from ._worker import emit

#: What a worker can take. Each maps a client, a path and the options to a start function
#: that blocks until held and returns the node and a function that lets go.
Holder = Callable[[Any, str, argparse.Namespace], tuple[str, Callable[[], None]]]


def _lock(make: Callable[[Any, str], Any]) -> Holder:
    def hold(client: Any, path: str, options: argparse.Namespace) -> tuple[str, Callable[[], None]]:
        lock = make(client, path)
        lock.acquire()
        return str(lock.lock_path), lock.release

    return hold


def _lease(make: Callable[[Any, str, int], Any]) -> Holder:
    def hold(client: Any, path: str, options: argparse.Namespace) -> tuple[str, Callable[[], None]]:
        lease = make(client, path, options.max_leases).acquire()
        return str(lease.path), lease.close

    return hold


def _latch(make: Callable[[Any, str, str], Any]) -> Holder:
    def hold(client: Any, path: str, options: argparse.Namespace) -> tuple[str, Callable[[], None]]:
        latch = make(client, path, options.id)
        latch.start()
        latch.wait()
        return str(latch.our_path), latch.close

    return hold


def _python_semaphore_mutex(client: Any, path: str) -> Any:
    class _Held:  # the node of a semaphore mutex is its lease's
        def __init__(self) -> None:
            self.mutex = InterProcessSemaphoreMutex(client, path)

        def acquire(self) -> None:
            self.mutex.acquire()
            assert self.mutex.lease is not None
            self.lock_path = self.mutex.lease.path

        def release(self) -> None:
            self.mutex.release()

    return _Held()


#: (language, role) -> how to take it.
ROLES: dict[tuple[str, str], Holder] = {
    ("python", "mutex"): _lock(InterProcessMutex),
    ("java", "mutex"): _lock(JavaMutex),
    ("python", "write"): _lock(lambda c, p: InterProcessReadWriteLock(c, p).write_lock()),
    ("java", "write"): _lock(lambda c, p: JavaReadWriteLock(c, p).write_lock()),
    ("python", "read"): _lock(lambda c, p: InterProcessReadWriteLock(c, p).read_lock()),
    ("java", "read"): _lock(lambda c, p: JavaReadWriteLock(c, p).read_lock()),
    ("python", "semaphore-mutex"): _lock(_python_semaphore_mutex),
    ("java", "semaphore-mutex"): _lock(JavaSemaphoreMutex),
    ("python", "lease"): _lease(InterProcessSemaphoreV2),
    ("java", "lease"): _lease(JavaSemaphore),
    ("python", "latch"): _latch(LeaderLatch),
    ("java", "latch"): _latch(JavaLatch),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycurator.testing.worker")
    parser.add_argument("language", choices=("python", "java"))
    parser.add_argument("role", choices=sorted({role for _, role in ROLES}))
    parser.add_argument("hosts")
    parser.add_argument("path")
    parser.add_argument("--session-ms", type=int, default=2000)
    parser.add_argument("--max-leases", type=int, default=1)
    parser.add_argument("--id", help="a latch's participant id (default: LANGUAGE-worker)")
    options = parser.parse_args(argv)
    if options.id is None:
        options.id = f"{options.language}-worker"
    client: Any
    if options.language == "python":
        client = KazooClient(hosts=options.hosts, timeout=options.session_ms / 1000)
        client.start(timeout=30)
    else:
        client = new_curator(options.hosts, session_timeout_ms=options.session_ms)
    emit("started")
    node, let_go = ROLES[options.language, options.role](client, options.path, options)
    emit("held", node=node)
    sys.stdin.read()
    let_go()
    emit("released", node=node)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
