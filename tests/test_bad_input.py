"""Each row of the bad-input table in docs/errors.md: a clear error, and no node left behind."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, NoChildrenForEphemeralsError

from pycurator import (
    CreateMode,
    GroupMember,
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    NotALockNodeError,
    PersistentNode,
    attempt_revoke,
    menagerie,
    zkrecipes,
)
from pycurator._recipes.lock_nodes import MAX_NODE_DATA, REQUEST_ROOM
from pycurator.testing import ClientFactory
from pycurator.zklocker import ZkLocker


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
    "zookeeper write lock": lambda client, path: zkrecipes.WriteLock(client, path),
    "menagerie lock": lambda client, path: menagerie.ReentrantZkLock(client, path),
    "menagerie read": lambda client, path: menagerie.ReentrantZkReadWriteLock(
        client, path
    ).read_lock(),
    "menagerie semaphore": lambda client, path: menagerie.ZkSemaphore(client, path, 2),
    "zklocker": lambda client, path: ZkLocker(client, path, "k"),
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
    with pytest.raises(ValueError, match=r"ZooKeeper takes at most \d+ at .*jute\.maxbuffer"):
        InterProcessMutex(zk, f"{zk_path}/lock", node_data=big)
    with pytest.raises(ValueError, match="ZooKeeper takes at most"):
        InterProcessReadWriteLock(zk, f"{zk_path}/lock", big)
    with pytest.raises(ValueError, match="ZooKeeper takes at most"):
        InterProcessSemaphoreV2(zk, f"{zk_path}/lock", 1, node_data=big)
    assert zk.exists(zk_path) is None


def test_data_the_server_would_drop_the_connection_for_is_refused_and_up_to_it_is_taken(
    zk: KazooClient, zk_path: str
) -> None:
    """Data of ZooKeeper's limit itself makes a request over it, which the server answers by
    dropping the connection (at every try, for a kept node): refused, naming the limit at that
    path; data up to it is made."""
    lock_path, kept_path = f"{zk_path}/lock", f"{zk_path}/kept"
    with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
        InterProcessMutex(zk, lock_path, node_data=b"x" * MAX_NODE_DATA)
    with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
        PersistentNode(zk, kept_path, CreateMode.EPHEMERAL, data=b"x" * MAX_NODE_DATA)
    with pytest.raises(ValueError, match=r"payload is \d+ bytes"):
        GroupMember(zk, f"{zk_path}/group", "a", payload=b"x" * MAX_NODE_DATA)
    node = PersistentNode(zk, kept_path, CreateMode.EPHEMERAL, data=b"")
    with pytest.raises(ValueError, match=r"jute\.maxbuffer"):
        node.set_data(b"x" * MAX_NODE_DATA)
    assert zk.exists(zk_path) is None
    lock_most = MAX_NODE_DATA - REQUEST_ROOM - len(lock_path.encode())
    lock = InterProcessMutex(zk, lock_path, node_data=b"x" * lock_most)
    assert lock.acquire(30)
    [name] = zk.get_children(lock_path)
    assert len(zk.get(f"{lock_path}/{name}")[0]) == lock_most
    lock.release()
    with PersistentNode(zk, kept_path, CreateMode.EPHEMERAL, data=b"") as node:
        node.set_data(b"k" * (MAX_NODE_DATA - REQUEST_ROOM - len(kept_path.encode())))
        assert node.wait_for_initial_create(30)
    assert zk.connected


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
        (lambda zk: InterProcessReadWriteLock(zk, "/a", bad("text")), "node_data must be bytes"),
        (lambda zk: InterProcessSemaphoreV2(zk, "/a", bad("3")), "max_leases must be an int"),
        (
            lambda zk: InterProcessSemaphoreV2(zk, "/a", 1).acquire_many(bad(1.5)),
            "qty must be an int",
        ),
        (lambda zk: InterProcessMutex(zk, "/a").acquire(bad("1")), "timeout must be a number"),
        (lambda zk: InterProcessMutex(object(), "/a"), "must be a kazoo KazooClient"),
        (lambda zk: InterProcessMutex(zk, "/a", connection_policy="x"), "connection_policy"),  # type: ignore[arg-type]
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(
    zk: KazooClient, make: Callable[[KazooClient], Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        make(zk)
    assert zk.exists("/a") is None


# -- attempt_revoke: only a lock node is written -----------------------------------------------

SEQ = "0000000007"
PROTECTED = f"_c_{'0f4e3b9e-8a51-4c1e-9d7a-31d3a1c0b7aa'}-"


def make_node(client: KazooClient, path: str, ephemeral: bool) -> None:
    client.create(path, b"precious", ephemeral=ephemeral, makepath=True)


@pytest.mark.parametrize(
    ("name", "ephemeral"),
    [
        ("counter", False),  # an ordinary data node
        (f"{PROTECTED}lock-{SEQ}", False),  # named like a lock node, but persistent
        (f"lock-{SEQ}", False),
        ("session-marker", True),  # ephemeral, but no lock name
        (f"{PROTECTED}lock-", True),  # no sequence number
        (f"{PROTECTED}latch-{SEQ}", True),  # a leader latch, not a lock
    ],
)
def test_attempt_revoke_refuses_a_node_no_lock_made_and_writes_nothing(
    zk: KazooClient, zk_path: str, name: str, ephemeral: bool
) -> None:
    node = f"{zk_path}/{name}"
    make_node(zk, node, ephemeral)
    with pytest.raises(NotALockNodeError, match="Not a lock node") as caught:
        attempt_revoke(zk, node)
    assert caught.value.path == node
    assert zk.get(node)[0] == b"precious"


def test_attempt_revoke_refuses_zookeepers_own_nodes(zk: KazooClient) -> None:
    before = zk.get("/zookeeper/quota")
    with pytest.raises(NotALockNodeError):
        attempt_revoke(zk, "/zookeeper/quota")
    assert zk.get("/zookeeper/quota")[0] == before[0]


@pytest.mark.parametrize(
    "name",
    [
        f"{PROTECTED}lock-{SEQ}",
        f"lock-{SEQ}",
        f"{PROTECTED}__READ__{SEQ}",
        f"__WRIT__{SEQ}",
        f"{PROTECTED}lease-{SEQ}",
        f"{PROTECTED}lock--000000001",
    ],
)
def test_attempt_revoke_writes_to_an_ephemeral_lock_named_node(
    zk: KazooClient, zk_path: str, name: str
) -> None:
    node = f"{zk_path}/{name}"
    make_node(zk, node, ephemeral=True)
    attempt_revoke(zk, node)
    assert zk.get(node)[0] == b"__REVOKE__"
    attempt_revoke(zk, node)  # a second revoker, after the first write, still reaches it
    assert zk.get(node)[0] == b"__REVOKE__"


def test_attempt_revoke_of_a_real_lock_node_still_reaches_it(zk: KazooClient, zk_path: str) -> None:
    with InterProcessMutex(zk, zk_path) as lock:
        assert lock.lock_path is not None
        attempt_revoke(zk, lock.lock_path)
        assert zk.get(lock.lock_path)[0] == b"__REVOKE__"


def test_a_read_write_lock_given_node_data_and_its_old_name_is_a_type_error(
    zk: KazooClient, zk_path: str
) -> None:
    with pytest.raises(TypeError, match=r"give node_data or lock_data \(its former name\)"):
        InterProcessReadWriteLock(zk, zk_path, node_data=b"a", lock_data=b"b")
    assert not zk.exists(zk_path)
