"""LeaderLatch under each of kazoo's handlers (threading, gevent, eventlet), unpatched."""

from __future__ import annotations

import pytest

from pycurator import LeaderLatch, Participant
from pycurator.testing import expire_kazoo_session

from .support import SOON
from .test_handlers import Env, env

__all__ = ["env"]

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def test_latches_elect_hand_over_and_survive_expiry_under_the_handler(
    env: Env, zk_path: str
) -> None:
    path = f"{zk_path}/election"
    first_client = env.new_client()
    first = LeaderLatch(first_client, path, "first")
    lost = env.event()
    first.on_lost(lambda _latch, _reason: lost.set())
    second = LeaderLatch(env.new_client(), path, "second")
    first.start()
    assert first.wait(SOON)
    second.start()
    env.eventually(lambda: len(first.participants()) == 2, "both queued")
    assert second.leader() == Participant("first", True)
    expire_kazoo_session(first_client)
    assert lost.wait(SOON) and first.lost_event.wait(SOON)
    assert second.wait(SOON)
    env.eventually(
        lambda: first.our_path is not None and len(second.participants()) == 2, "rejoined"
    )
    second.close()
    assert first.wait(SOON)
    first.close()
    assert first.participants() == []
