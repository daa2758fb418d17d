"""The turns of the clients of one process on one counter (:mod:`pycurator._recipes.combining`),
on a scripted server: one writes at a time, in the order they asked, and one whose turn does not
come in time writes all the same (its holder stuck), never waiting for ever."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from pycurator._client.transport import transport_of
from pycurator._protocol.steps import NewSignal, WaitSignal
from pycurator._recipes.combining import Turns

from .scripted import Flag, ScriptedServer, Timeout


def turns() -> Turns:
    return Turns(transport_of(KazooClient(hosts="127.0.0.1:1")).lock_object())


def test_the_turn_is_given_on_to_the_next_who_asked() -> None:
    shared = turns()
    server = ScriptedServer([])
    assert server.run(shared.take_steps(5.0)) is True
    waiting = shared.take_steps(5.0)
    assert isinstance(next(waiting), NewSignal)
    flag = Flag()
    assert waiting.send(flag) == WaitSignal(flag, 5.0)
    shared.give()  # to the one waiting
    assert flag.is_set()
    with pytest.raises(StopIteration) as taken:
        waiting.send(True)
    assert taken.value.value is True
    shared.give()
    assert server.run(shared.take_steps(5.0)) is True  # left free: taken at once


def test_a_turn_that_does_not_come_in_time_is_given_up() -> None:
    shared = turns()
    server = ScriptedServer([Timeout()])
    assert server.run(shared.take_steps(5.0)) is True
    assert server.run(shared.take_steps(0.5)) is False  # its holder stuck: write all the same
    server.finish()
    shared.give()
    assert server.run(shared.take_steps(0.5)) is True  # nobody left waiting: free again
