"""The leader latch behaves the same from threads and from asyncio tasks."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pycurator import CloseMode, LockLostError, Participant

from ..support import SOON, eventually
from .fronts import Front
from .observe import Calls, nodes


def test_the_first_leads_and_closing_hands_leadership_to_the_next(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    told_a, told_b = Calls(), Calls()
    a = front.actor(front.make("LeaderLatch", front.client(), zk_path, "a"), "a")
    b = front.actor(front.make("LeaderLatch", front.client(), zk_path, "b"), "b")
    a.do("add_listener", told_a)
    b.do("add_listener", told_b)
    with pytest.raises(RuntimeError):
        a.do("wait", 0)  # not started
    a.do("start")
    assert a.do("wait", SOON) is True
    assert told_a.wait_for(1) == ["is_leader"]
    assert a.do("has_leadership") is True
    token = a.do("fencing_token")
    b.do("start")
    eventually(lambda: len(nodes(observer, [zk_path])) == 2, what="b queued")
    assert b.do("wait", 0.2) is False
    assert b.do("has_leadership") is False
    assert b.do("participants") == [Participant("a", True), Participant("b", False)]
    waiting = b.start("wait", SOON)
    a.do("close", CloseMode.NOTIFY_LEADER)
    assert told_a.wait_for(2) == ["is_leader", "not_leader"]
    assert waiting.result() is True
    assert told_b.wait_for(1) == ["is_leader"]
    assert b.do("fencing_token") > token
    assert b.do("leader") == Participant("b", True)
    with pytest.raises(RuntimeError):
        a.do("wait", 0)  # closed
    b.do("close")
    assert told_b.wait_for(1) == ["is_leader"]  # a silent close tells no listener
    assert nodes(observer, [zk_path]) == []


def test_a_leaders_node_deleted_ends_leadership_and_the_latch_leads_again(
    front: Front, zk_path: str
) -> None:
    observer = front.client()
    told, lost = Calls(), Calls()
    latch = front.make("LeaderLatch", front.client(), zk_path, "a")
    a = front.actor(latch)
    a.do("add_listener", told)
    a.do("on_lost", lost.on_lost)
    a.do("start")
    assert a.do("wait", SOON) is True
    assert a.do("check") is None
    token = a.do("fencing_token")
    observer.delete(nodes(observer, [zk_path])[0])
    assert lost.wait_for(1) == ["lock node deleted"]
    assert told.wait_for(3) == ["is_leader", "not_leader", "is_leader"]
    assert a.do("wait", SOON) is True
    assert a.do("fencing_token") > token
    a.do("close")
    assert nodes(observer, [zk_path]) == []


def test_a_latch_that_does_not_lead_fails_its_check(front: Front, zk_path: str) -> None:
    a = front.actor(front.make("LeaderLatch", front.client(), zk_path, "a"))
    b = front.actor(front.make("LeaderLatch", front.client(), zk_path, "b"))
    a.do("start")
    assert a.do("wait", SOON) is True
    b.do("start")
    with pytest.raises(LockLostError):
        b.do("check")
    b.do("close")
    a.do("close")


def test_a_latch_refuses_bad_input_and_misuse_alike(front: Front, zk_path: str) -> None:
    client = front.client()
    with pytest.raises(ValueError):
        front.make("LeaderLatch", client, "relative")
    with pytest.raises(TypeError):
        front.make("LeaderLatch", client, zk_path, 7)
    with pytest.raises(TypeError):
        front.make("LeaderLatch", client, zk_path, close_mode="silent")
    a = front.actor(front.make("LeaderLatch", client, zk_path, "a"))
    with pytest.raises(RuntimeError):
        a.do("close")  # not started
    with pytest.raises(TypeError):
        a.do("add_listener", object())
    a.do("start")
    with pytest.raises(RuntimeError):
        a.do("start")
    with pytest.raises(ValueError):
        a.do("wait", -1)
    a.do("close")
    with pytest.raises(RuntimeError):
        a.do("close")


def test_a_wait_ends_false_when_the_latch_is_closed_meanwhile(front: Front, zk_path: str) -> None:
    a = front.actor(front.make("LeaderLatch", front.client(), zk_path, "a"), "a")
    latch = front.make("LeaderLatch", front.client(), zk_path, "b")
    b, closer = front.actor(latch, "b"), front.actor(latch, "closer")
    a.do("start")
    assert a.do("wait", SOON) is True
    b.do("start")
    began = threading.Event()

    def wait(latch: Any, timeout: float) -> Any:
        began.set()
        return latch.wait(timeout)

    waiting = b.start(wait, SOON)
    assert began.wait(SOON)
    closer.do("close")
    assert waiting.result() is False
    a.do("close")
