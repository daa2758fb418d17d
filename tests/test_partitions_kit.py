"""The test kit's partitions: a 3-member ensemble whose links between members are cut and healed
(pycurator.testing's ZooKeeperEnsemble with partitions=True, the zk_ensemble fixture)."""

from __future__ import annotations

import pytest

from pycurator.testing import ZooKeeperEnsemble
from pycurator.testing._helpers import steady

from .support import SOON, eventually
from .test_connect import open_descriptors


def serving(ensemble: ZooKeeperEnsemble) -> dict[int, str | None]:
    return {member: ensemble.mode(member) for member in ensemble.members}


def _connections_to(ports: set[int]) -> dict[int, int]:
    """The established TCP connections of this machine to one of ``ports``: the socket inode
    of each one's connecting end, by that end's port (``/proc/net/tcp`` and ``tcp6``, where
    the JVM's connections are)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
                if state == "01" and inode and int(remote.rsplit(":", 1)[1], 16) in ports:
                    found[int(local.rsplit(":", 1)[1], 16)] = inode
    return found


def _own_sockets() -> set[int]:
    """The socket inodes this process holds (the links' proxies among them)."""
    return {
        int(target[8:-1]) for target in open_descriptors().values() if target.startswith("socket:[")
    }


def bypasses(ensemble: ZooKeeperEnsemble) -> dict[int, int]:
    """The connections to a member's quorum or election port that no link's proxy made: a
    member that reached another directly (by port, then socket inode). The proxies' sockets
    are read before and after the connections, so one made or closed meanwhile is not taken
    for a bypass."""
    ports = {port for pair in ensemble._quorum_ports.values() for port in pair}
    ours = _own_sockets()
    found = _connections_to(ports)
    ours |= _own_sockets()
    return {port: inode for port, inode in found.items() if inode not in ours}


def test_every_connection_between_members_crosses_their_link(
    zk_ensemble: ZooKeeperEnsemble,
) -> None:
    # a follower's connection to its leader crosses their link
    leader = zk_ensemble.leader()
    assert leader is not None
    eventually(
        lambda: all(
            zk_ensemble.connections(leader, member) >= 1
            for member in zk_ensemble.members
            if member != leader
        ),
        what="a connection across every link of the leader",
    )
    # and no member reaches another but through their link: not the election's connection
    # back to a member with a smaller id either, which goes to the address that member
    # announced (the kit rewrites it). Two followers have but their election's connection,
    # which ZooKeeper makes again, once lost, only when it has a vote to send: whether one is
    # open between them is ZooKeeper's affair, not the kit's.
    assert steady(lambda: bypasses(zk_ensemble), window=2.0) == {}


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
