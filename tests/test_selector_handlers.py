"""LeaderSelector under each of kazoo's handlers (threading, gevent, eventlet), unpatched."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pycurator import LeaderSelector, Leadership

from .support import SOON
from .test_handlers import Env, env

__all__ = ["env"]

pytestmark = pytest.mark.usefixtures("zk_no_orphans")


def test_selectors_take_turns_under_the_handler(env: Env, zk_path: str) -> None:
    path = f"{zk_path}/leader"
    current: list[str] = []
    overlaps: list[str] = []
    turns = {"a": 0, "b": 0}
    enough = env.event()

    def make_lead(name: str) -> Callable[[Leadership], None]:
        def lead(leadership: Leadership) -> None:
            if current:
                overlaps.append(name)
            current.append(name)
            leadership.lost_event.wait(0.01)  # a switch to the other units
            current.remove(name)
            turns[name] += 1
            if min(turns.values()) >= 3:
                enough.set()

        return lead

    selectors = [
        LeaderSelector(env.new_client(), path, make_lead(name), name, auto_requeue=True)
        for name in turns
    ]
    for selector in selectors:
        selector.start()
    assert enough.wait(SOON)
    for selector in selectors:
        selector.close()
    assert overlaps == []
    env.eventually(lambda: selectors[0].participants() == [], "every node deleted")
