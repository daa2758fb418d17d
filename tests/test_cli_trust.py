"""The command refuses what is not a lock: ``revoke`` writes only to lock nodes, ``inspect``
calls only Curator's ephemeral nodes holders or waiters."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from pycurator import InterProcessMutex, InterProcessSemaphoreV2
from pycurator.cli import EXIT_REFUSED
from pycurator.testing import ClientFactory
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .cli_support import run_cli
from .support import SOON, Worker, children, eventually
from .test_cli import one_error_line

SEQ = "0000000003"
PROTECTED = "_c_0f4e3b9e-8a51-4c1e-9d7a-31d3a1c0b7aa-"


@pytest.mark.parametrize(
    ("name", "ephemeral"),
    [
        ("counter", False),
        (f"{PROTECTED}lock-{SEQ}", False),
        ("worker-1", True),
    ],
)
def test_revoke_refuses_a_node_that_is_not_a_lock_node_and_leaves_it_unchanged(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, name: str, ephemeral: bool
) -> None:
    node = f"{zk_path}/app/{name}"
    zk.create(node, b"42", ephemeral=ephemeral, makepath=True)
    result = run_cli("revoke", "--hosts", zk_server.hosts, node)
    assert result.returncode == EXIT_REFUSED
    assert f"refused: {node} is not a lock node" in one_error_line(result.stderr)
    assert zk.get(node)[0] == b"42"


def test_revoke_refuses_zookeepers_quota_node(zk_server: ZooKeeperTarget, zk: KazooClient) -> None:
    before = zk.get("/zookeeper/quota")[0]
    result = run_cli("revoke", "--hosts", zk_server.hosts, "/zookeeper/quota")
    assert result.returncode == EXIT_REFUSED
    assert "is not a lock node" in one_error_line(result.stderr)
    assert zk.get("/zookeeper/quota")[0] == before


def test_revoke_of_a_semaphores_path_points_to_inspect(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    lease = InterProcessSemaphoreV2(zk, zk_path, 2).acquire(SOON)
    assert lease is not None
    with lease:
        result = run_cli("revoke", "--hosts", zk_server.hosts, zk_path)
    assert result.returncode == EXIT_REFUSED
    assert (
        f"{zk_path} is a semaphore's path, not one of its nodes; 'pycurator inspect {zk_path}'"
        in (one_error_line(result.stderr))
    )


def inspect_json(hosts: str, path: str) -> dict[str, Any]:
    result = run_cli("inspect", "--json", "--hosts", hosts, path)
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    return view


def test_inspect_of_the_root_says_it_is_not_a_lock(zk_server: ZooKeeperTarget) -> None:
    view = inspect_json(zk_server.hosts, "/")
    assert view["layout"] == "not-a-lock"
    assert view["participants"] == []
    assert "zookeeper" in view["ignored"]
    table = run_cli("inspect", "--hosts", zk_server.hosts, "/").stdout
    assert table.startswith("/: not a lock (")
    assert "holder" not in table


def test_inspect_calls_no_persistent_child_a_holder(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    data = f"{zk_path}/app"
    for name in ("counter", "config"):
        zk.create(f"{data}/{name}", b"1", makepath=True)
    view = inspect_json(zk_server.hosts, data)
    assert view["layout"] == "not-a-lock"
    assert view["participants"] == []
    assert sorted(view["ignored"]) == ["config", "counter"]


def test_inspect_shows_a_persistent_lock_named_child_as_blocking_curators_queue(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    """Curator sorts every child of a lock path: a persistent ``..-lock-<seq>`` is at the head
    of the queue for good, and no lock node behind it ever holds."""
    data = f"{zk_path}/app"
    blocker = f"{PROTECTED}lock-{SEQ}"
    for name in ("counter", blocker):
        zk.create(f"{data}/{name}", b"1", makepath=True)
    view = inspect_json(zk_server.hosts, data)
    assert view["layout"] == "mutex"
    assert [(p["kind"], p["state"]) for p in view["participants"]] == [("other", "blocking")]
    assert (view["holder_count"], view["waiting"]) == (0, 0)
    assert view["blocked_by"] == [f"{data}/{blocker}"]
    assert "a persistent node no session will ever delete" in view["note"]
    assert view["ignored"] == ["counter"]


def test_inspect_reads_past_a_child_whose_acl_refuses_its_data(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    """A node only its owner may read (next to a lock, or anywhere under ``/``) is listed as
    ignored, not an error that hides the lock."""
    owner = zk_client_factory(auth_data=[("digest", "owner:secret")])
    zk.ensure_path(zk_path)  # not by makepath, which would give zk_path the owner's ACL too
    owner.create(f"{zk_path}/private", b"x", acl=[make_digest_acl("owner", "secret", all=True)])
    with pytest.raises(NoAuthError):
        zk.get(f"{zk_path}/private")
    with InterProcessMutex(zk, zk_path) as lock:
        view = inspect_json(zk_server.hosts, zk_path)
        assert view["layout"] == "mutex"
        assert [(p["node"], p["state"]) for p in view["participants"]] == [
            (lock.lock_path, "holder")
        ]
        assert view["ignored"] == ["private"]


def test_inspect_of_a_lock_ignores_what_is_not_a_lock_node(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str
) -> None:
    zk.create(f"{zk_path}/aaa-notes", b"persistent", makepath=True)
    with InterProcessMutex(zk, zk_path) as lock:
        assert lock.lock_path is not None
        view = inspect_json(zk_server.hosts, zk_path)
        assert view["layout"] == "mutex"
        assert [(p["node"], p["state"]) for p in view["participants"]] == [
            (lock.lock_path, "holder")
        ]
        assert view["ignored"] == ["aaa-notes"]
        table = run_cli("inspect", "--hosts", zk_server.hosts, zk_path).stdout
        assert "1 holder(s), 0 waiting" in table
        assert "1 other child(ren), not lock nodes, ignored: aaa-notes" in table


@pytest.mark.parametrize("part", ["leases", "locks"])
def test_inspect_of_a_semaphores_inner_node_points_at_the_semaphore(
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    part: str,
) -> None:
    lease = InterProcessSemaphoreV2(zk_client_factory(), zk_path, 1).acquire()
    assert lease is not None
    # a second client queues: its node in locks/ waits for the lease
    waiter = Worker(lambda: InterProcessSemaphoreV2(zk_client_factory(), zk_path, 1).acquire(SOON))
    waiter.start()
    try:
        eventually(lambda: len(children(zk, f"{zk_path}/locks")) == 1, what="a waiter queued")
        view = inspect_json(zk_server.hosts, f"{zk_path}/{part}")
        assert view["layout"] == "not-a-lock"
        assert view["participants"] == []
        assert f"semaphore at {zk_path}: inspect {zk_path}" in view["note"]
        table = run_cli("inspect", "--hosts", zk_server.hosts, f"{zk_path}/{part}").stdout
        assert table.startswith(f"{zk_path}/{part}: not a lock (this is the {part} node of ")
        assert re.search(r"\); [12] child\(ren\): _c_", table), table
        assert "not lock nodes" not in table, table
    finally:
        lease.close()
        second = waiter.outcome(SOON)
        assert second is not None
        second.close()
