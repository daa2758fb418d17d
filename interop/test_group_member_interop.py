"""pycurator's GroupMember beside Java Curator's, in one group: each sees the other's members,
payloads and changes, both ways, on Curator's layout (``membershipPath/thisId``, EPHEMERAL, the
group a container, the host's address by default), and each side's member comes back after its
session's expiry and is seen again by the other. On Curator 5.4 and 5.9 alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import GroupMember
from pycurator._client.transport import default_node_data
from pycurator.testing import (
    SOON,
    STEADY_RECONNECT,
    ClientFactory,
    JavaGroupMember,
    created_modes,
    eventually,
    expire_kazoo_session,
    expire_session,
    java_local_address,
    session_of,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

pytestmark = pytest.mark.usefixtures("no_orphans")


@pytest.fixture
def members() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for member in made:
        member.close()


@pytest.fixture
def server_log(zk_server: ZooKeeperTarget) -> Path:
    if zk_server.local is None:
        pytest.skip("the create modes are read from the local server's transaction log")
    return zk_server.local.data_dir


def test_java_and_python_members_see_each_other_both_ways(
    curator_factory: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    server_log: Path,
    members: list[Any],
) -> None:
    group = f"{zk_path}/group"
    python = GroupMember(zk_client_factory(), group, "python")  # the host's address
    java = JavaGroupMember(curator_factory(), group, "java", b"\x00j")
    members += [python, java]
    python.start()
    java.start()
    assert default_node_data() == java_local_address()
    everyone = {"java": b"\x00j", "python": default_node_data()}
    eventually(lambda: python.get_current_members() == everyone, what="Python sees both")
    eventually(lambda: java.get_current_members() == everyone, what="Java sees both")
    data, stat = zk.get(f"{group}/python")
    assert data == default_node_data() and stat.ephemeralOwner == python.client.client_id[0]
    modes = {path: creation.mode for path, creation in created_modes(server_log, group).items()}
    assert modes[f"{group}/python"] == "EPHEMERAL" and modes[group] == "CONTAINER"
    python.set_this_data(b"p2")
    eventually(lambda: java.get_current_members()["python"] == b"p2", what="Java sees new data")
    java.set_this_data(b"j2")
    eventually(lambda: python.get_current_members()["java"] == b"j2", what="Python sees it")
    assert python.id_from_path(f"{group}/java") == java.id_from_path(f"{group}/java") == "java"
    java.close()
    eventually(lambda: python.get_current_members() == {"python": b"p2"}, what="Java gone")
    python.close()
    eventually(lambda: zk.exists(f"{group}/python") is None, what="Python's node deleted")


def test_each_sides_member_is_seen_again_by_the_other_after_its_expiry(
    zk_server: ZooKeeperTarget,
    curator_factory: Any,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    members: list[Any],
) -> None:
    group = f"{zk_path}/group"
    client = zk_client_factory(connection_retry=STEADY_RECONNECT)
    curator = curator_factory()
    python = GroupMember(client, group, "python", b"p")
    java = JavaGroupMember(curator, group, "java", b"j")
    members += [python, java]
    python.start()
    java.start()
    everyone = {"java": b"j", "python": b"p"}
    eventually(lambda: python.get_current_members() == java.get_current_members() == everyone)
    before = client.client_id[0]
    expire_kazoo_session(client)
    eventually(
        lambda: (
            (stat := zk.exists(f"{group}/python")) is not None
            and stat.ephemeralOwner not in (0, before)
        ),
        what="Python's member made again in its new session",
    )
    eventually(lambda: java.get_current_members() == everyone, what="Java sees it again")
    java_before = session_of(curator)
    expire_session(zk_server.hosts, *java_before)
    eventually(
        lambda: (
            (stat := zk.exists(f"{group}/java")) is not None
            and stat.ephemeralOwner not in (0, java_before[0])
        ),
        what="Java's member made again in its new session",
    )
    eventually(lambda: python.get_current_members() == everyone, what="Python sees it again")
    assert python.wait_for_initial_create(SOON)
