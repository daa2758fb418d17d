"""The test kit's partitions: a 3-member ensemble whose links between members are cut and healed
(pycurator.testing's ZooKeeperEnsemble with partitions=True, the zk_ensemble fixture)."""

from __future__ import annotations

import pytest

from pycurator.testing import ZooKeeperEnsemble

from .support import SOON, eventually


def serving(ensemble: ZooKeeperEnsemble) -> dict[int, str | None]:
    return {member: ensemble.mode(member) for member in ensemble.members}


def test_every_connection_between_members_crosses_their_link(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    # the election's connection back to a member with a smaller id goes to the address that
    # member announced, which the kit rewrites: it crosses the link too
    links = [(1, 2), (1, 3), (2, 3)]
    eventually(
        lambda: all(zk_ensemble.connections(a, b) >= 1 for a, b in links),
        what="a connection across every link",
    )


def test_an_isolated_leader_stops_serving_and_the_majority_elects_another_until_healed(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    leader = zk_ensemble.leader()
    assert leader is not None
    others = [member for member in zk_ensemble.members if member != leader]
    zk_ensemble.isolate(leader)
    assert zk_ensemble.cut_links() == {frozenset((leader, other)) for other in others}
    eventually(
        lambda: (
            serving(zk_ensemble)[leader] is None
            and sorted(str(serving(zk_ensemble)[m]) for m in others) == ["follower", "leader"]
        ),
        what="the majority serves under a new leader, the isolated one does not",
    )
    zk_ensemble.heal()
    assert zk_ensemble.cut_links() == set()
    zk_ensemble.wait_serving(list(zk_ensemble.members), SOON)
    assert sorted(str(mode) for mode in serving(zk_ensemble).values()) == [
        "follower",
        "follower",
        "leader",
    ]


def test_one_cut_link_takes_only_the_follower_that_loses_its_leader(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    leader = zk_ensemble.leader()
    assert leader is not None
    follower, other = [member for member in zk_ensemble.members if member != leader]
    zk_ensemble.cut(leader, follower)
    assert zk_ensemble.cut_links() == {frozenset((leader, follower))}
    eventually(lambda: zk_ensemble.mode(follower) is None, what="the cut-off follower stops")
    assert zk_ensemble.mode(leader) == "leader" and zk_ensemble.mode(other) == "follower"
    zk_ensemble.heal(leader, follower)
    zk_ensemble.wait_serving([follower], SOON)


def test_a_split_of_followers_and_every_link_cut_leave_no_quorum(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    leader = zk_ensemble.leader()
    assert leader is not None
    first, second = [member for member in zk_ensemble.members if member != leader]
    zk_ensemble.partition([first], [second])  # three groups: the leader alone too
    assert zk_ensemble.cut_links() == {frozenset(link) for link in [(1, 2), (1, 3), (2, 3)]}
    eventually(lambda: set(serving(zk_ensemble).values()) == {None}, what="nobody serves")
    zk_ensemble.heal()
    zk_ensemble.wait_serving(list(zk_ensemble.members), SOON)
    zk_ensemble.cut_all()
    eventually(lambda: set(serving(zk_ensemble).values()) == {None}, what="nobody serves")


def test_partitions_are_asked_of_a_partitionable_ensemble_by_member() -> None:
    plain = ZooKeeperEnsemble(3)
    try:
        with pytest.raises(RuntimeError, match="partitions=True"):
            plain.isolate(1)
    finally:
        plain.close()
    ensemble = ZooKeeperEnsemble(3, partitions=True)
    try:
        with pytest.raises(ValueError, match=r"not members of the ensemble: \[4\]"):
            ensemble.isolate(4)
        with pytest.raises(ValueError, match="in two groups"):
            ensemble.partition([1, 2], [2, 3])
        with pytest.raises(ValueError, match="itself"):
            ensemble.cut(2, 2)
        with pytest.raises(ValueError, match="two members, or none"):
            ensemble.heal(1)
        assert ensemble.cut_links() == set()
    finally:
        ensemble.close()
    with pytest.raises(ValueError, match="sync_limit"):
        ZooKeeperEnsemble(3, sync_limit=0)
