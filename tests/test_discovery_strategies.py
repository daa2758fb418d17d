"""Curator's provider picks over plain lists of instances: its strategies, its down-instance
policy on an injected clock, and its filters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pycurator.discovery import (
    DownInstancePolicy,
    DownInstances,
    RandomStrategy,
    RoundRobinStrategy,
    ServiceInstance,
    StickyStrategy,
    available,
    is_enabled,
)


def instances(*ids: str, **fields: Any) -> list[ServiceInstance]:
    return [ServiceInstance("svc", id=i, registration_time_utc=1, **fields) for i in ids]


A, B, C = instances("a", "b", "c")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_round_robin_takes_each_instance_in_turn() -> None:
    strategy = RoundRobinStrategy()
    assert [strategy.get_instance([A, B, C]) for _ in range(7)] == [A, B, C, A, B, C, A]


def test_round_robin_keeps_one_counter_across_lists_and_skips_empty_ones() -> None:
    strategy = RoundRobinStrategy()
    assert strategy.get_instance([A, B]) is A
    assert strategy.get_instance([]) is None
    assert strategy.get_instance([A, B, C]) is B  # the empty list used no turn


def test_random_picks_through_its_generator_from_every_instance() -> None:
    picks = [RandomStrategy(random.Random(7)).get_instance([A, B, C]) for _ in range(3)]
    assert picks == [RandomStrategy(random.Random(7)).get_instance([A, B, C])] * 3
    strategy = RandomStrategy(random.Random(1))
    assert {strategy.get_instance([A, B, C]) for _ in range(200)} == {A, B, C}
    assert strategy.get_instance([]) is None


def test_sticky_keeps_its_instance_while_the_list_holds_it() -> None:
    sticky = StickyStrategy(RoundRobinStrategy())
    assert sticky.instance_number == -1
    assert [sticky.get_instance([A, B, C]) for _ in range(3)] == [A, A, A]
    assert sticky.instance_number == 0
    assert sticky.get_instance([B, C]) is C  # A went: the master picks again (its second turn)
    assert sticky.instance_number == 1
    assert sticky.get_instance([C, A]) is C


def test_sticky_counts_no_pick_from_an_empty_list() -> None:
    sticky = StickyStrategy(RoundRobinStrategy())
    assert sticky.get_instance([]) is None
    assert sticky.instance_number == -1
    assert sticky.get_instance([B]) is B and sticky.instance_number == 0


def test_the_down_policy_defaults_are_curators() -> None:
    assert DownInstancePolicy() == DownInstancePolicy(timeout=30.0, error_threshold=2)
    assert DownInstances().policy == DownInstancePolicy()


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"timeout": -1}, ValueError, "timeout must be a finite number of seconds >= 0"),
        ({"timeout": float("inf")}, ValueError, "finite"),
        ({"timeout": "30"}, TypeError, "timeout must be a number of seconds"),
        ({"error_threshold": 0}, ValueError, "error_threshold must be >= 1"),
        ({"error_threshold": 1.5}, TypeError, "error_threshold must be an int"),
    ],
)
def test_a_bad_down_policy_is_refused_naming_it(
    kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        DownInstancePolicy(**kwargs)


def test_an_instance_is_down_from_its_second_error_until_30s_after_its_first() -> None:
    clock = Clock()
    down: DownInstances = DownInstances(clock=clock)
    down.note_error(A)
    assert down.is_up(A)
    clock.now += 29
    down.note_error(A)  # a later error does not move the window
    assert not down.is_up(A) and not down(A)
    assert down.is_up(B)
    clock.now += 0.999
    assert not down.is_up(A)
    clock.now += 0.001
    assert down.is_up(A)
    down.note_error(A)
    assert down.is_up(A)  # forgotten: counting starts again


def test_instances_are_told_apart_as_they_compare() -> None:
    down: DownInstances = DownInstances(DownInstancePolicy(error_threshold=1), clock=Clock())
    down.note_error(A)
    (copy,) = instances("a")
    assert not down.is_up(copy)
    (updated,) = instances("a", payload={"v": 2})
    assert down.is_up(updated)


def test_a_provider_offers_the_instances_every_filter_keeps_in_order() -> None:
    disabled = ServiceInstance("svc", id="off", enabled=False)
    down: DownInstances = DownInstances(DownInstancePolicy(error_threshold=1), clock=Clock())
    down.note_error(B)
    listed = [A, disabled, B, C]
    assert available(listed) == [A, B, C]
    assert available(listed, down=down) == [A, C]
    assert available(listed, [lambda i: i.id != "c"], down) == [A]
    assert not is_enabled(disabled) and is_enabled(A)
