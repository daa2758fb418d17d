"""Each row of the bad-input table in docs/errors.md: a clear error, and no node left behind."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, NoChildrenForEphemeralsError

from pycurator import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
)

ClientFactory = Callable[..., KazooClient]


def bad(value: object) -> Any:
    """A value of the wrong type, passed on as a caller without type checks would."""
    return value


#: Every recipe, built on a client and a path, as something with ``acquire(timeout)``.
RECIPES: dict[str, Callable[[KazooClient, str], Any]] = {
    "mutex": lambda client, path: InterProcessMutex(client, path),
    "read": lambda client, path: InterProcessReadWriteLock(client, path).read_lock(),
    "write": lambda client, path: InterProcessReadWriteLock(client, path).write_lock(),
    "semaphore": lambda client, path: InterProcessSemaphoreV2(client, path, 2),
    "semaphore mutex": lambda client, path: InterProcessSemaphoreMutex(client, path),
    "multi-lock": lambda client, path: InterProcessMultiLock(client, [path]),
}


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_bad_path_is_a_value_error(zk: KazooClient, recipe: str) -> None:
    with pytest.raises(ValueError, match="relative paths not allowed"):
        RECIPES[recipe](zk, "/locks/../etc")


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("timeout", [-1.0, math.nan])
def test_a_negative_or_nan_timeout_is_a_value_error(
    zk: KazooClient, zk_path: str, recipe: str, timeout: float
) -> None:
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        RECIPES[recipe](zk, f"{zk_path}/lock").acquire(timeout)
    assert zk.exists(zk_path) is None


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_client_not_started_or_stopped_is_refused(
    zk_server: Any, zk_client_factory: ClientFactory, zk_path: str, recipe: str
) -> None:
    never_started = KazooClient(hosts=zk_server.hosts)
    with pytest.raises(ConnectionClosedError, match="not started"):
        RECIPES[recipe](never_started, f"{zk_path}/lock").acquire(1)
    stopped = zk_client_factory()
    stopped.stop()
    with pytest.raises(ConnectionClosedError):
        RECIPES[recipe](stopped, f"{zk_path}/lock").acquire(1)
    assert zk_client_factory().exists(zk_path) is None


def test_node_data_over_zookeepers_limit_is_a_value_error(zk: KazooClient, zk_path: str) -> None:
    big = b"x" * (1024 * 1024)
    with pytest.raises(ValueError, match="ZooKeeper takes at most 1048575"):
        InterProcessMutex(zk, f"{zk_path}/lock", node_data=big)
    with pytest.raises(ValueError, match="ZooKeeper takes at most"):
        InterProcessReadWriteLock(zk, f"{zk_path}/lock", big)
    with pytest.raises(ValueError, match="ZooKeeper takes at most"):
        InterProcessSemaphoreV2(zk, f"{zk_path}/lock", 1, node_data=big)
    assert zk.exists(zk_path) is None


def test_a_lock_under_an_ephemeral_node_is_refused(zk: KazooClient, zk_path: str) -> None:
    zk.create(zk_path, ephemeral=True, makepath=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        InterProcessMutex(zk, f"{zk_path}/lock").acquire(1)
    with pytest.raises(NoChildrenForEphemeralsError):
        InterProcessMutex(zk, zk_path).acquire(1)
    assert zk.get_children(zk_path) == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda zk: InterProcessMutex(zk, bad(42)), "path must be a str"),
        (lambda zk: InterProcessMutex(zk, "/a", node_data=bad("text")), "node_data must be bytes"),
        (lambda zk: InterProcessReadWriteLock(zk, "/a", bad("text")), "lock_data must be bytes"),
        (lambda zk: InterProcessSemaphoreV2(zk, "/a", bad("3")), "max_leases must be an int"),
        (
            lambda zk: InterProcessSemaphoreV2(zk, "/a", 1).acquire_many(bad(1.5)),
            "qty must be an int",
        ),
        (lambda zk: InterProcessMutex(zk, "/a").acquire(bad("1")), "timeout must be a number"),
        (lambda zk: InterProcessMutex(object(), "/a"), "must be a kazoo KazooClient"),
        (lambda zk: InterProcessMutex(zk, "/a", connection_policy="x"), "connection_policy"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(
    zk: KazooClient, make: Callable[[KazooClient], Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        make(zk)
    assert zk.exists("/a") is None
