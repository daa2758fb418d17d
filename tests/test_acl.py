"""Locks protected by an ACL, on a real server with digest authentication."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from pycurator import InterProcessMutex, attempt_revoke
from pycurator._client.transport import transport_of
from pycurator._protocol.parents import parents_steps
from pycurator._threads.runner import run
from pycurator.testing import ClientFactory

from .support import SOON, children

ACL = [make_digest_acl("locker", "secret", all=True)]
AUTH = [("digest", "locker:secret")]


@pytest.fixture(autouse=True)
def open_base(zk: KazooClient, zk_path: str) -> None:
    """The test's base path and its ancestors as open containers, so that the protected parents
    the locks make start below it and the shared test root stays open to every other test."""
    run(transport_of(zk), parents_steps(f"{zk_path}/lock"))


def test_nodes_and_container_parents_carry_the_acl(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory(auth_data=AUTH)
    lock = InterProcessMutex(client, f"{zk_path}/a/lock", acl=ACL)
    with lock:
        assert lock.lock_path is not None
        for path in (f"{zk_path}/a", f"{zk_path}/a/lock", lock.lock_path):
            acls, _ = client.get_acls(path)
            assert list(acls) == ACL


def test_a_client_without_rights_can_neither_take_delete_nor_revoke(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    owner = InterProcessMutex(zk_client_factory(auth_data=AUTH), path, acl=ACL)
    stranger = zk_client_factory()
    with owner:
        assert owner.lock_path is not None
        with pytest.raises(NoAuthError):
            InterProcessMutex(stranger, path).acquire(timeout=SOON)
        with pytest.raises(NoAuthError):
            stranger.delete(owner.lock_path)
        with pytest.raises(NoAuthError):
            attempt_revoke(stranger, owner.lock_path)
        assert owner.is_held()
    assert children(zk_client_factory(auth_data=AUTH), path) == []


def test_a_client_with_rights_takes_the_lock_in_turn(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    first = InterProcessMutex(zk_client_factory(auth_data=AUTH), path, acl=ACL)
    second = InterProcessMutex(zk_client_factory(auth_data=AUTH), path, acl=ACL)
    with first:
        assert second.acquire(timeout=0.3) is False
    assert second.acquire(timeout=SOON)
    second.release()
