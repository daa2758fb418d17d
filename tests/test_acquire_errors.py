"""No node outlives an error in acquire: the node is deleted before the error reaches the caller.

A parent that lets anyone create and delete children but not list them makes the create succeed
and the listing after it fail with ``NoAuthError``, an error no retry can fix. Each recipe meets
such a parent at each place it keeps nodes (a semaphore's internal lock and its leases, each of
a multi-lock's members).
"""

from __future__ import annotations

import pytest
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl, make_digest_acl

from pycurator.testing import ClientFactory

from .recipes import RECIPES, Recipe
from .support import SOON, children

AUTH = [("digest", "admin:secret")]
#: Anyone may create and delete children; only the admin may list them.
NO_READ = [
    make_acl("world", "anyone", create=True, delete=True),
    make_digest_acl("admin", "secret", all=True),
]

CASES = [
    pytest.param(recipe, index, id=f"{recipe.name}-{index}")
    for recipe in RECIPES
    for index in range(len(recipe.node_parents("/p")))
]


@pytest.mark.parametrize(("recipe", "unreadable"), CASES)
def test_an_error_after_the_create_deletes_the_node_and_reaches_the_caller_unchanged(
    recipe: Recipe, unreadable: int, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    path = f"{zk_path}/lock"
    parents = recipe.node_parents(path)
    admin = zk_client_factory(auth_data=AUTH)
    unreadable_path = parents[unreadable]
    # only that node is unreadable: kazoo's makepath would give its parents (the suite's shared
    # root included, when it was just reaped) the same ACL
    admin.ensure_path(unreadable_path.rsplit("/", 1)[0])
    admin.create(unreadable_path, acl=NO_READ)
    lock = recipe.make(zk_client_factory(), path)

    with pytest.raises(NoAuthError):
        lock.acquire(timeout=SOON)

    for parent in parents:
        assert children(admin, parent) == [], parent
