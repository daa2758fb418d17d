"""The leader selector behaves the same from threads and from asyncio tasks. Its ``lead``
differs by nature (a function that must watch ``lost_event``; a coroutine function, cancelled
at its term's end): :class:`~tests.parity.fronts.Lead` drives both alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pycurator import LockLostError, Participant
from pycurator.testing import expire_kazoo_session

from ..support import SOON, eventually
from .actors import Actor
from .fronts import Front
from .observe import nodes

#: How ``lead`` ends when its term ends under it: a thread is told and returns; a task is
#: cancelled (the documented difference of the two selectors).
ENDED_UNDER_LEAD = {"threads": "lost", "asyncio": "cancelled"}


def knows_its_node(selector: Actor) -> Callable[[], bool]:
    """Whether ``selector`` has its node (seen on the server is not enough: a close while the
    create is on its way leaves the delete to the background, on both front ends)."""
    return lambda: selector.do("our_path") is not None


def test_lead_runs_and_returning_gives_leadership_up_until_requeued(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    lead = front.lead()
    p = front.actor(front.make("LeaderSelector", front.client(), zk_path, lead.function, "a"))
    with pytest.raises(RuntimeError):
        p.do("requeue")  # not started
    p.do("start")
    term = lead.term(1)
    leadership = p.view(term.leadership)
    assert p.do("has_leadership") is True
    assert p.do("requeue") is False  # leading: queued already
    assert p.do("participants") == [Participant("a", True)]
    assert leadership.do("check") is None
    term.give_up()
    assert term.ended.wait(SOON) and term.how == "returned"
    eventually(lambda: nodes(observer, [zk_path]) == [], what="the node gone")
    assert term.leadership.lost_event.is_set()
    assert p.do("has_leadership") is False
    assert leadership.do("is_held") is False
    with pytest.raises(LockLostError):
        leadership.do("check")
    assert len(lead.terms) == 1  # no auto_requeue: not queued again
    assert p.do("requeue") is True
    assert lead.term(2).leadership.fencing_token > term.leadership.fencing_token
    assert p.do("close") is True
    assert nodes(observer, [zk_path]) == []


def test_with_auto_requeue_returning_queues_again(front: Front, zk_path: str) -> None:
    lead = front.lead()
    selector = front.make(
        "LeaderSelector", front.client(), zk_path, lead.function, "a", auto_requeue=True
    )
    p = front.actor(selector)
    p.do("start")
    first = lead.term(1)
    first.give_up()
    second = lead.term(2)
    assert first.how == "returned"
    assert second.leadership.fencing_token > first.leadership.fencing_token
    assert p.do("has_leadership") is True
    assert p.do("close") is True


def test_interrupting_leadership_ends_the_term_and_the_next_leads(
    front: Front, zk_path: str
) -> None:
    lead_a, lead_b = front.lead(), front.lead()
    a = front.actor(
        front.make("LeaderSelector", front.client(), zk_path, lead_a.function, "a"), "a"
    )
    b = front.actor(
        front.make("LeaderSelector", front.client(), zk_path, lead_b.function, "b"), "b"
    )
    a.do("start")
    term = lead_a.term(1)
    b.do("start")
    eventually(lambda: len(a.do("participants")) == 2, what="b queued")
    assert b.do("participants") == [Participant("a", True), Participant("b", False)]
    a.do("interrupt_leadership")
    assert term.ended.wait(SOON)
    assert term.how == ENDED_UNDER_LEAD[front.name]
    assert term.leadership.reason == "leadership interrupted"
    lead_b.term(1)
    assert b.do("leader") == Participant("b", True)
    assert a.do("has_leadership") is False
    assert a.do("close") is True
    assert b.do("close") is True


def test_close_deletes_a_waiters_node_now_and_a_leaders_once_lead_has_ended(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    lead_a, lead_b = front.lead(), front.lead()
    a = front.actor(
        front.make("LeaderSelector", front.client(), zk_path, lead_a.function, "a"), "a"
    )
    b = front.actor(
        front.make("LeaderSelector", front.client(), zk_path, lead_b.function, "b"), "b"
    )
    a.do("start")
    term = lead_a.term(1)
    b.do("start")
    eventually(knows_its_node(b), what="b queued")
    assert b.do("close") is True
    assert len(nodes(observer, [zk_path])) == 1
    assert a.do("close") is True
    assert term.ended.is_set() and term.how == ENDED_UNDER_LEAD[front.name]
    assert term.leadership.reason == "selector closed"
    assert nodes(observer, [zk_path]) == []
    assert lead_b.terms == []
    with pytest.raises(RuntimeError):
        a.do("close")
    with pytest.raises(RuntimeError):
        a.do("requeue")


@pytest.mark.parametrize("auto_requeue", [False, True])
def test_a_lead_that_raises_ends_its_term(front: Front, zk_path: str, auto_requeue: bool) -> None:
    observer = front.client()
    lead = front.lead(raises=1)
    selector = front.make(
        "LeaderSelector", front.client(), zk_path, lead.function, "a", auto_requeue=auto_requeue
    )
    p = front.actor(selector)
    p.do("start")
    first = lead.term(1)
    assert first.ended.wait(SOON) and first.how == "raised"
    eventually(lambda: first.leadership.lost_event.is_set(), what="the term over")
    if not auto_requeue:
        eventually(lambda: nodes(observer, [zk_path]) == [], what="the node gone")
        assert p.do("has_leadership") is False
        assert p.do("requeue") is True
    second = lead.term(2)
    assert second.leadership.fencing_token > first.leadership.fencing_token
    assert p.do("has_leadership") is True
    assert p.do("close") is True


def test_a_leaders_session_expiry_ends_its_term_and_auto_requeue_brings_it_back(
    front: Front, zk_path: str
) -> None:
    client = front.client()
    lead = front.lead()
    p = front.actor(
        front.make("LeaderSelector", client, zk_path, lead.function, "a", auto_requeue=True)
    )
    p.do("start")
    first = lead.term(1)
    expire_kazoo_session(client)
    assert first.ended.wait(SOON) and first.how == ENDED_UNDER_LEAD[front.name]
    assert first.leadership.reason in {"connection suspended", "session expired"}
    second = lead.term(2)
    assert second.leadership.fencing_token > first.leadership.fencing_token
    assert p.do("close") is True


def test_a_selector_refuses_misuse_alike(front: Front, zk_path: str) -> None:
    lead = front.lead()
    p = front.actor(front.make("LeaderSelector", front.client(), zk_path, lead.function))
    with pytest.raises(RuntimeError):
        p.do("close")  # not started
    p.do("start")
    with pytest.raises(RuntimeError):
        p.do("start")
    with pytest.raises(ValueError):
        p.do("close", -1)
    lead.term(1)
    assert p.do("close") is True
    with pytest.raises(RuntimeError):
        p.do("close")


def test_close_returns_once_a_queued_selectors_node_is_gone(front: Front, zk_path: str) -> None:
    observer = front.client()
    lead = front.lead()
    leader = front.actor(
        front.make("LeaderSelector", front.client(), zk_path, lead.function, "leader")
    )
    leader.do("start")
    lead.term(1)
    client = front.client()
    for number in range(3):
        waiter = front.actor(
            front.make("LeaderSelector", client, zk_path, front.lead().function, f"w{number}")
        )
        waiter.do("start")
        eventually(knows_its_node(waiter), what="the waiter's node made")
        assert len(nodes(observer, [zk_path])) == 2
        assert waiter.do("close") is True
        assert len(nodes(observer, [zk_path])) == 1, f"waiter {number}'s node left after close"
    assert leader.do("close") is True
