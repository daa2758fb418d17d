"""GroupMember on a real ZooKeeper: members see each other (payloads, changes, departures),
through an expiry; Curator's node layout and default data; bad member ids refused by name with
nothing left behind; both front ends; and 1,000 members in a process cost a constant number of
threads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from pycurator import GroupMember, aio
from pycurator._client.transport import default_node_data
from pycurator.testing import STEADY_RECONNECT, ClientFactory, expire_kazoo_session

from .aio_support import run
from .support import SOON, children, eventually
from .test_scale import THREADS_ALLOWED, N, peak_threads, threads


@pytest.fixture
def members() -> Iterator[list[GroupMember]]:
    made: list[GroupMember] = []
    yield made
    for member in made:
        member.close()


def joined(
    members: list[GroupMember],
    client: KazooClient,
    path: str,
    this_id: str,
    payload: bytes | None = None,
) -> GroupMember:
    member = GroupMember(client, path, this_id, payload)
    members.append(member)
    member.start()
    assert member.wait_for_initial_create(SOON)
    return member


def test_members_see_each_other_their_payloads_changes_and_departures(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str, members: list[GroupMember]
) -> None:
    group = f"{zk_path}/group"
    alice = joined(members, zk_client_factory(), group, "alice", b"a1")
    bob = joined(members, zk_client_factory(), group, "bob")
    eventually(lambda: alice.get_current_members() == {"alice": b"a1", "bob": default_node_data()})
    eventually(lambda: bob.get_current_members() == alice.get_current_members())
    data, stat = zk.get(f"{group}/bob")
    assert data == default_node_data() and stat.ephemeralOwner == bob.client.client_id[0]
    assert zk.get(f"{group}/alice")[0] == b"a1"
    bob.set_this_data(b"b2")
    eventually(lambda: alice.get_current_members().get("bob") == b"b2", what="bob's new data")
    bob.close()
    eventually(lambda: alice.get_current_members() == {"alice": b"a1"}, what="bob gone")
    assert zk.exists(f"{group}/bob") is None
    assert alice.id_from_path(f"{group}/alice") == "alice"
    assert (alice.membership_path, alice.this_id) == (group, "alice")


def test_a_member_not_started_counts_itself_with_its_payload(zk: KazooClient) -> None:
    member = GroupMember(zk, "/g", "me", b"mine")
    assert member.get_current_members() == {"me": b"mine"}
    member.close()


def test_a_member_comes_back_after_its_sessions_expiry_and_others_see_it(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str, members: list[GroupMember]
) -> None:
    watcher = joined(members, zk_client_factory(), zk_path, "watcher", b"w")
    client = zk_client_factory(connection_retry=STEADY_RECONNECT)
    expiring = joined(members, client, zk_path, "expiring", b"e")
    eventually(lambda: set(watcher.get_current_members()) == {"watcher", "expiring"})
    old_session = client.client_id[0]
    expire_kazoo_session(client)
    eventually(
        lambda: (
            (stat := zk.exists(f"{zk_path}/expiring")) is not None
            and stat.ephemeralOwner != old_session
        ),
        what="the member's node made again in its new session",
    )
    eventually(lambda: watcher.get_current_members() == {"watcher": b"w", "expiring": b"e"})
    eventually(lambda: expiring.get_current_members() == watcher.get_current_members())


@pytest.mark.parametrize(
    ("this_id", "error", "words"),
    [
        ("a/b", ValueError, "must not hold '/'"),
        ("", ValueError, "must not be empty"),
        ("..", ValueError, "is not a node name"),
        ("bad\x00", ValueError, "is not a node name"),
        (7, TypeError, "this_id must be a str"),
    ],
)
def test_a_bad_member_id_is_refused_by_name_and_nothing_is_left_behind(
    zk: KazooClient, zk_path: str, this_id: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        GroupMember(zk, f"{zk_path}/group", this_id)  # type: ignore[arg-type]
    assert zk.exists(zk_path) is None


def test_bad_paths_and_payloads_are_refused_by_name(zk: KazooClient) -> None:
    with pytest.raises(ValueError, match="Path must start with / character"):
        GroupMember(zk, "group", "me")
    with pytest.raises(TypeError, match="payload must be bytes"):
        GroupMember(zk, "/group", "me", "text")  # type: ignore[arg-type]


def test_asyncio_members_see_each_other(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    a, b = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        async with aio.GroupMember(a, zk_path, "a", b"1") as first:
            async with aio.GroupMember(b, zk_path, "b", b"2") as second:
                assert await second.wait_for_initial_create(SOON)
                while first.get_current_members() != {"a": b"1", "b": b"2"}:
                    await asyncio.sleep(0.01)
                second.set_this_data(b"3")
                while first.get_current_members().get("b") != b"3":
                    await asyncio.sleep(0.01)
            while first.get_current_members() != {"a": b"1"}:
                await asyncio.sleep(0.01)

    run(main())
    assert children(zk, zk_path) == []


def test_1000_group_members_cost_a_constant_number_of_threads(
    zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str
) -> None:
    """A thousand members in two hundred groups of five, on one client: each a node and a
    cache."""
    client = zk_client_factory()
    before = threads()
    with peak_threads() as peak:
        everyone = [GroupMember(client, f"{zk_path}/g{n % 200}", f"m{n}") for n in range(N)]
        for member in everyone:
            member.start()
        assert all(member.wait_for_initial_create(SOON) for member in everyone)
        eventually(
            lambda: all(len(member.get_current_members()) == 5 for member in everyone),
            timeout=3 * SOON,
            what="every member sees its group of five",
        )
        for member in everyone:
            member.close()
    assert peak[0] - before <= THREADS_ALLOWED, f"{peak[0] - before} threads added"
