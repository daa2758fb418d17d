"""A client whose chroot does not exist yet: every recipe makes it, as Curator makes its namespace
(container nodes with the client's default ACL), and an error making it reaches the caller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE, make_acl, make_digest_acl

from pycurator import InterProcessMutex, menagerie, zkrecipes
from pycurator._client.transport import transport_of
from pycurator._protocol.parents import parents_steps
from pycurator._threads.runner import run
from pycurator.testing import ClientFactory
from pycurator.testing.pytest_plugin import ZooKeeperTarget
from pycurator.zklocker import ZkLocker

from .recipes import RECIPES, Recipe
from .support import SOON, Worker, children, eventually

AUTH = [("digest", "owner:secret")]
OWNER_ACL = [make_digest_acl("owner", "secret", all=True)]


def chrooted(
    zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, chroot: str, **kwargs: Any
) -> KazooClient:
    """A started client with ``chroot``; kazoo warns at start that the chroot is missing."""
    with pytest.warns(UserWarning, match="No chroot path exists"):
        return zk_client_factory(hosts=zk_server.hosts + chroot, **kwargs)


def assert_empty_parent(client: KazooClient, path: str) -> None:
    """``path`` is an empty, non-ephemeral node (the server's stat does not tell a container from
    a persistent node: the tests see containers by their reaping)."""
    stat = client.exists(path)
    assert stat is not None, path
    assert (stat.ephemeralOwner, stat.dataLength) == (0, 0), path


@pytest.mark.parametrize("recipe", RECIPES, ids=repr)
def test_every_recipe_makes_a_missing_chroot(
    recipe: Recipe,
    zk: KazooClient,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
    zk_no_orphans: None,
) -> None:
    chroot = f"{zk_path}/app"
    client = chrooted(zk_server, zk_client_factory, chroot)
    lock = recipe.make(client, "/locks/one")
    assert lock.acquire(timeout=SOON)
    try:
        for path in (zk_path, chroot, f"{chroot}/locks"):
            assert_empty_parent(zk, path)
            acls, _ = zk.get_acls(path)
            assert list(acls) == OPEN_ACL_UNSAFE
        assert any(
            children(zk, f"{chroot}{parent}") for parent in recipe.node_parents("/locks/one")
        )
        other = recipe.blocker(zk_client_factory(hosts=zk_server.hosts + chroot), "/locks/one")
        assert other.acquire(timeout=0.3) is False
    finally:
        lock.release()
    # Containers all the way up: the server reaps the chroot too once it is empty again.
    eventually(lambda: zk.exists(zk_path) is None, what="chroot containers reaped")


def test_a_chroot_several_levels_deep_is_made_level_by_level(
    zk: KazooClient, zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    chroot = f"{zk_path}/a/b/c"
    first = InterProcessMutex(chrooted(zk_server, zk_client_factory, chroot), "/lock")
    second = InterProcessMutex(chrooted(zk_server, zk_client_factory, chroot), "/lock")
    with first:
        for path in (f"{zk_path}/a", f"{zk_path}/a/b", chroot, f"{chroot}/lock"):
            assert_empty_parent(zk, path)
        assert second.acquire(timeout=0.3) is False

        def take_and_release() -> bool:
            held = second.acquire(timeout=SOON)
            if held:
                second.release()
            return held

        waiter = Worker(take_and_release)
        waiter.start()
    assert waiter.outcome() is True
    eventually(lambda: zk.exists(zk_path) is None, what="chroot containers reaped")


def test_the_chroot_takes_the_clients_default_acl_not_the_locks(
    zk: KazooClient, zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    default = [make_acl("world", "anyone", read=True, write=True, create=True, delete=True)]
    run(transport_of(zk), parents_steps(f"{zk_path}/app"))
    chroot = f"{zk_path}/app"
    client = chrooted(zk_server, zk_client_factory, chroot, auth_data=AUTH, default_acl=default)
    with InterProcessMutex(client, "/locks/one", acl=OWNER_ACL):
        assert list(zk.get_acls(chroot)[0]) == default
        assert list(client.get_acls("/locks")[0]) == OWNER_ACL


def test_a_chroot_the_acl_refuses_gives_the_servers_error_and_leaves_nothing(
    zk: KazooClient, zk_server: ZooKeeperTarget, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    read_only = [make_acl("world", "anyone", read=True)]
    zk.create(zk_path, makepath=True)
    zk.create(f"{zk_path}/closed", acl=read_only)
    chroot = f"{zk_path}/closed/app"
    try:
        for recipe in RECIPES:
            lock = recipe.make(chrooted(zk_server, zk_client_factory, chroot), "/locks/one")
            with pytest.raises(NoAuthError):
                lock.acquire(timeout=SOON)
            assert children(zk, f"{zk_path}/closed") == [], recipe
    finally:
        zk.delete(zk_path, recursive=True)


#: The other Java lock systems' locks: their directories are persistent, as Java makes them.
OTHER_SYSTEMS: dict[str, Callable[[KazooClient, str], Any]] = {
    "zookeeper write lock": lambda client, path: zkrecipes.WriteLock(client, path),
    "menagerie lock": lambda client, path: menagerie.ReentrantZkLock(client, path),
    "menagerie write lock": lambda client, path: menagerie.ReentrantZkReadWriteLock(
        client, path
    ).write_lock(),
    "zklocker": lambda client, path: ZkLocker(client, path, "k"),
}


@pytest.mark.parametrize("system", OTHER_SYSTEMS)
def test_the_other_systems_locks_make_a_missing_chroot_and_a_persistent_directory(
    system: str,
    zk: KazooClient,
    zk_server: ZooKeeperTarget,
    zk_client_factory: ClientFactory,
    zk_path: str,
) -> None:
    chroot = f"{zk_path}/app"
    client = chrooted(zk_server, zk_client_factory, chroot)
    lock = OTHER_SYSTEMS[system](client, "/locks/one")
    assert lock.acquire(timeout=SOON)
    try:
        assert children(zk, f"{chroot}/locks/one")
        stat = zk.exists(f"{chroot}/locks/one")
        assert stat is not None and stat.ephemeralOwner == 0
    finally:
        lock.release()
    assert zk.exists(f"{chroot}/locks/one") is not None  # persistent: Java expects it there
