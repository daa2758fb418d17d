"""Java Curator with the same digest credentials shares a protected lock with pycurator."""

from __future__ import annotations

from typing import Any

from kazoo.security import make_digest_acl

from pycurator import InterProcessMutex
from pycurator._client.transport import transport_of
from pycurator._protocol.parents import parents_steps
from pycurator._threads.runner import run
from pycurator.testing import ClientFactory, java_acquire
from tests.support import SOON, children

from .conftest import CuratorFactory, java_class


def test_java_and_python_with_the_same_credentials_share_a_protected_lock(
    curator_factory: CuratorFactory, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    # keep the shared test root open
    run(transport_of(zk_client_factory()), parents_steps(path))
    python_client = zk_client_factory(auth_data=[("digest", "locker:secret")])
    python = InterProcessMutex(
        python_client, path, acl=[make_digest_acl("locker", "secret", all=True)]
    )
    java_client: Any = curator_factory(digest="locker:secret")
    java = java_class("InterProcessMutex")(java_client, path)
    with python:
        assert java_acquire(java, 0.5) is False
    assert java_acquire(java, SOON)
    try:
        (name,) = children(python_client, path)
        acls, _ = python_client.get_acls(f"{path}/{name}")  # Java's node, Java's ACL
        assert [acl.id.id for acl in acls] == [make_digest_acl("locker", "secret", all=True).id.id]
        assert python.acquire(timeout=0.3) is False
    finally:
        java.release()
