"""InterProcessMultiLock: pycurator and Java Curator 5.x multi-locks on the same paths."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from pycurator import InterProcessMultiLock, InterProcessMutex
from pycurator.testing import ClientFactory, java_acquire, jclass
from tests.support import SOON, Worker, children, eventually

from .conftest import CuratorFactory, java_class


def java_multi(client: Any, paths: list[str]) -> Any:
    return java_class("InterProcessMultiLock")(client, jclass("java.util.Arrays").asList(paths))


def test_a_java_held_path_makes_python_time_out_holding_none(
    curator: Any, zk: KazooClient, zk_path: str
) -> None:
    paths = [f"{zk_path}/a", f"{zk_path}/b", f"{zk_path}/c"]
    java = java_class("InterProcessMutex")(curator, paths[1])
    python = InterProcessMultiLock(zk, paths)
    assert java_acquire(java, SOON)
    try:
        assert python.acquire(timeout=0.5) is False
        assert [len(children(zk, path)) for path in paths] == [0, 1, 0]
    finally:
        java.release()
    assert python.acquire(timeout=SOON)
    assert [len(children(zk, path)) for path in paths] == [1, 1, 1]
    python.release()


def _excludes(
    first: tuple[Callable[[], bool], Callable[[], None]],
    second: tuple[Callable[[], bool], Callable[[], None]],
    observer: KazooClient,
    paths: list[str],
) -> None:
    """``first`` holds; ``second`` times out, then queues and gets in once ``first`` releases."""
    assert first[0]()
    got = threading.Event()

    def wait_then_release() -> None:
        assert second[0]()
        got.set()
        second[1]()

    try:
        waiter = Worker(wait_then_release)
        waiter.start()
        eventually(lambda: len(children(observer, paths[0])) == 2, what="second queued")
        assert not got.wait(0.5)
    finally:
        first[1]()
    assert got.wait(SOON)
    waiter.outcome()
    assert [children(observer, path) for path in paths] == [[], []]


def test_java_and_python_multi_locks_exclude_each_other_both_ways(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    paths = [f"{zk_path}/alice", f"{zk_path}/bob"]
    observer = zk_client_factory()
    java = java_multi(curator_factory(), paths)
    python = InterProcessMultiLock(zk_client_factory(), paths)
    as_java = (lambda: java_acquire(java, SOON), java.release)
    as_python = (lambda: python.acquire(timeout=SOON), python.release)
    _excludes(as_java, as_python, observer, paths)
    _excludes(as_python, as_java, observer, paths)


def test_a_python_multi_lock_of_lock_objects_excludes_the_java_one(
    curator: Any, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    paths = [f"{zk_path}/alice", f"{zk_path}/bob"]
    client = zk_client_factory()
    python = InterProcessMultiLock([InterProcessMutex(client, path) for path in paths])
    java = java_multi(curator, paths)
    _excludes(
        (lambda: python.acquire(timeout=SOON), python.release),
        (lambda: java_acquire(java, SOON), java.release),
        zk_client_factory(),
        paths,
    )
