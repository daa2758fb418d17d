"""The kept node (Curator's ``PersistentNode``) behaves the same from threads and from asyncio
tasks: made in the background, made again when deleted and after an expiry under its first name
with the latest data, found there and given our data, deleted on close, never two of one node
(CURATOR-154, -190, -297, -483 are scenarios here; -498 is in the protocol's tests)."""

from __future__ import annotations

import functools
import re
import time

import pytest
from kazoo.client import KazooClient

from pycurator import CreateMode
from pycurator.testing import expire_kazoo_session

from ..support import SOON, eventually
from .fronts import Front
from .observe import nodes

#: Curator's protected name: ``_c_``, a random (version 4) UUID, ``-``, then the name given.
PROTECTED = re.compile(
    r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-(?P<name>.+)"
)
EPHEMERAL, PERSISTENT = CreateMode.EPHEMERAL, CreateMode.PERSISTENT
EPHEMERAL_SEQUENTIAL = CreateMode.EPHEMERAL_SEQUENTIAL


def data_of(client: KazooClient, path: str) -> bytes | None:
    """The node's data, None while there is no node."""
    found = client.exists(path)
    return client.get(path)[0] if found is not None else None


def exists(client: KazooClient, path: str) -> bool:
    return client.exists(path) is not None


def test_a_node_is_made_with_its_data_under_container_parents_and_deleted_on_close(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    path = f"{zk_path}/group/node"
    node = front.actor(front.make("PersistentNode", front.client(), path, EPHEMERAL, b"one"))
    with pytest.raises(RuntimeError, match="Not started"):
        node.do("wait_for_initial_create", 0)
    assert node.do("actual_path") is None
    node.do("start")
    assert node.do("wait_for_initial_create", SOON) is True
    assert node.do("actual_path") == path
    assert node.do("get_data") == b"one"
    assert observer.get(path)[0] == b"one"
    assert observer.exists(path).ephemeralOwner != 0
    with pytest.raises(RuntimeError, match="Already started"):
        node.do("start")
    node.do("close")
    assert observer.exists(path) is None
    assert node.do("actual_path") is None
    node.do("close")  # a second close does nothing, as Curator's
    with pytest.raises(RuntimeError, match="closed"):
        node.do("set_data", b"two")
    with pytest.raises(RuntimeError, match="Not started"):
        node.do("wait_for_initial_create", 0)


@pytest.mark.parametrize("mode", [EPHEMERAL, PERSISTENT], ids=["ephemeral", "persistent"])
@pytest.mark.parametrize("protected", [False, True], ids=["plain", "protected"])
def test_a_node_deleted_by_anyone_comes_back_under_its_name_with_the_latest_data(
    front: Front, zk_path: str, mode: CreateMode, protected: bool
) -> None:
    observer = front.client()
    path = f"{zk_path}/node"
    node = front.actor(
        front.make("PersistentNode", front.client(), path, mode, b"first", protected)
    )
    node.do("start")
    assert node.do("wait_for_initial_create", SOON) is True
    made = node.do("actual_path")
    name = made.rsplit("/", 1)[1]
    match = PROTECTED.fullmatch(name)
    assert (match is not None and match["name"] == "node") if protected else made == path
    node.do("set_data", b"second")
    eventually(lambda: data_of(observer, made) == b"second", what="the data written")
    for _ in range(3):
        observer.delete(made)
        eventually(lambda: observer.exists(made) is not None, what="the node made again")
        assert observer.get(made)[0] == b"second"
    assert nodes(observer, [zk_path]) == [made]
    node.do("close")
    assert nodes(observer, [zk_path]) == []


@pytest.mark.parametrize("protected", [False, True], ids=["plain", "protected"])
def test_a_sequential_node_comes_back_at_its_own_sequence_never_as_a_second_one(
    front: Front, zk_path: str, protected: bool
) -> None:
    """CURATOR-483: a protected sequential node was made again as a new one; Curator makes it
    again at its sequence number, in the mode without a sequence."""
    observer = front.client()
    client = front.client()
    observer.create(f"{zk_path}/seq-", sequence=True, makepath=True)  # the counter moves on
    node = front.actor(
        front.make(
            "PersistentNode", client, f"{zk_path}/seq-", EPHEMERAL_SEQUENTIAL, b"x", protected
        )
    )
    node.do("start")
    assert node.do("wait_for_initial_create", SOON) is True
    made = node.do("actual_path")
    assert made.endswith("seq-0000000001")
    observer.delete(made)
    eventually(lambda: observer.exists(made) is not None, what="made again")
    expire_kazoo_session(client)
    eventually(
        lambda: (
            (stat := observer.exists(made)) is not None
            and stat.ephemeralOwner == client.client_id[0]
        ),
        what="made again in the new session",
    )
    assert sorted(nodes(observer, [zk_path])) == sorted([f"{zk_path}/seq-0000000000", made])
    node.do("close")
    assert nodes(observer, [zk_path]) == [f"{zk_path}/seq-0000000000"]


def test_an_expiry_brings_an_ephemeral_node_back_with_the_data_set_meanwhile(
    front: Front, zk_path: str
) -> None:
    """CURATOR-154: data given while the session is gone is the data the node comes back with."""
    observer = front.client()
    client = front.client()
    path = f"{zk_path}/node"
    node = front.actor(front.make("PersistentNode", client, path, EPHEMERAL, b"old", True))
    node.do("start")
    assert node.do("wait_for_initial_create", SOON) is True
    made = node.do("actual_path")
    old_session = observer.exists(made).ephemeralOwner
    expire_kazoo_session(client)
    node.do("set_data", b"new")
    eventually(
        lambda: (stat := observer.exists(made)) is not None and stat.ephemeralOwner != old_session,
        what="made again in the new session",
    )
    eventually(lambda: data_of(observer, made) == b"new", what="with the new data")
    assert nodes(observer, [zk_path]) == [made]  # CURATOR-190: one node, its name unchanged
    node.do("close")


def test_a_node_found_there_is_adopted_given_our_data_and_deleted_on_close(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    path = f"{zk_path}/node"
    observer.create(path, b"theirs", makepath=True)
    node = front.actor(front.make("PersistentNode", front.client(), path, PERSISTENT, b"ours"))
    node.do("start")
    assert node.do("wait_for_initial_create", SOON) is True
    assert observer.get(path)[0] == b"ours"
    node.do("close")
    assert observer.exists(path) is None


@pytest.mark.parametrize("mode", [EPHEMERAL, PERSISTENT, EPHEMERAL_SEQUENTIAL])
def test_a_quick_start_then_close_leaves_nothing(
    front: Front, zk_path: str, mode: CreateMode
) -> None:
    """CURATOR-297: a create answered after close made a node that stayed."""
    observer = front.client()
    client = front.client()
    for attempt in range(3):
        node = front.actor(
            front.make("PersistentNode", client, f"{zk_path}/n{attempt}", mode, b"", True)
        )
        node.do("start")
        node.do("close")
    time.sleep(0.2)  # a create still on its way would have landed by now
    eventually(lambda: nodes(observer, [zk_path]) == [], what="nothing left")


def test_data_given_before_the_first_create_is_the_nodes(front: Front, zk_path: str) -> None:
    observer = front.client()
    path = f"{zk_path}/node"
    node = front.actor(front.make("PersistentNode", front.client(), path, PERSISTENT, b"given"))
    node.do("set_data", b"later")
    node.do("start")
    node.do("set_data", b"latest")
    assert node.do("wait_for_initial_create", SOON) is True
    eventually(lambda: data_of(observer, path) == b"latest", what="the latest data")
    assert node.do("get_data") == b"latest"
    node.do("close")


def test_nodes_of_one_path_are_two_nodes_and_each_keeps_its_own(front: Front, zk_path: str) -> None:
    observer = front.client()
    client = front.client()
    made = []
    for data in (b"a", b"b"):
        node = front.actor(
            front.make("PersistentNode", client, f"{zk_path}/m-", EPHEMERAL_SEQUENTIAL, data)
        )
        node.do("start")
        assert node.do("wait_for_initial_create", SOON) is True
        made.append(node)
    paths = [node.do("actual_path") for node in made]
    assert len(set(paths)) == 2
    for node, path in zip(made, paths, strict=True):
        observer.delete(path)
        eventually(functools.partial(exists, observer, path), what="made again")
        assert observer.get(path)[0] == node.do("get_data")
    for node in made:
        node.do("close")
    assert nodes(observer, [zk_path]) == []
