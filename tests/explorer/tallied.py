"""What the users of a counter and of a double barrier do, as programs both front ends run
(:mod:`tests.explorer.participants`), and what they are told, tallied against the server's truth
(each tally is a hook of the world: :attr:`~tests.explorer.world.World.tallies`):

- ``counted``: once every participant has ended, a counter's value is its start plus the
  increments its users were told succeeded, those told ``unknown`` (or whose caller gave up
  waiting: a task cancelled) counted 0 or 1, and only those; no two increments told they
  succeeded were told the same value before them;
- ``barrier``: nobody is told it entered a double barrier (``enter()`` True) before ``member_qty``
  members stood in it at once (the server's nodes, read after every turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

from .participants import DELETE_WAIT, ENDINGS, FIRST_TRY_WAIT, Call, Participant, Program, Sleep
from .world import World

#: The longest an increment may wait: the write under way before it and its own, each up to its
#: tries (a read, a write and what settles it, each within a session timeout) and its sleeps.
INCREMENT_WAIT = 120.0
#: Increments each counter's user makes.
INCREMENTS = 3
#: What ends a call without telling whether it took (its caller gave up waiting).
GAVE_UP = (asyncio.CancelledError,)


def barrier_wait(timeout: float | None) -> float:
    """The longest an ``enter`` or a ``leave`` may take: its first try at least, then two
    deletes (ours, and, for an enter, the look at ``ready``; for a leave, ``ready``'s)."""
    return float("inf") if timeout is None else max(timeout, FIRST_TRY_WAIT) + 2 * DELETE_WAIT


@dataclasses.dataclass
class CounterTally:
    """What a counter's users were told: how many increments succeeded, were unknown or were
    given up on, and the values told before each that succeeded."""

    path: str
    start: int
    succeeded: int = 0
    maybe: int = 0
    before: list[int] = dataclasses.field(default_factory=list)

    def check_now(self, world: World) -> None:
        pass

    def check_end(self, world: World) -> None:
        node = world.server.nodes.get(self.path)
        value = int.from_bytes(node.data, "big", signed=True) if node and node.data else 0
        applied = value - self.start
        if not self.succeeded <= applied <= self.succeeded + self.maybe:
            world.fail(
                f"counted: {self.path} went from {self.start} to {value}: {applied} increments"
                f" applied, {self.succeeded} told succeeded and {self.maybe} unknown"
            )
        if len(set(self.before)) != len(self.before):
            world.fail(f"counted: two increments of {self.path} were told the same value before")


@dataclasses.dataclass
class BarrierTally:
    """A double barrier's path and threshold, and when ``member_qty`` members first stood in it
    at once."""

    path: str
    qty: int
    full_at: float | None = None

    def members(self, world: World) -> list[str]:
        node = world.server.nodes.get(self.path)
        return [] if node is None else [name for name in node.children if name != "ready"]

    def check_now(self, world: World) -> None:
        if self.full_at is None and len(self.members(world)) >= self.qty:
            self.full_at = world.now

    def entered(self, world: World, who: str) -> None:
        self.check_now(world)
        if self.full_at is None:
            world.fail(
                f"barrier: {who} was told it entered {self.path} with"
                f" {len(self.members(world))} of {self.qty} members in"
            )

    def check_end(self, world: World) -> None:
        pass


def _tally(world: World, key: str, make: Any) -> Any:
    """The world's tally of ``key``, made by ``make()`` the first time."""
    for tally in world.tallies:
        if getattr(tally, "path", None) == key:
            return tally
    tally = make()
    world.tallies.append(tally)
    return tally


def counter_program(p: Participant, counter: Any, key: str) -> Program:
    """A counter's user: a few increments, one after the other, each told its fate."""
    world = p.world
    node = world.server.nodes.get(key)
    start = int.from_bytes(node.data, "big", signed=True) if node and node.data else 0
    tally: CounterTally = _tally(world, key, lambda: CounterTally(key, start))
    for _ in range(INCREMENTS):
        if p.cancelled:
            return
        try:
            result = yield from p.timed("increment", INCREMENT_WAIT, Call(counter.increment))
        except GAVE_UP:
            tally.maybe += 1
            return
        except ENDINGS:
            return
        if result.succeeded:
            tally.succeeded += 1
            tally.before.append(result.pre_value)
            if result.post_value != result.pre_value + 1:
                world.fail(f"counted: {p.name} was told {result}")
        elif result.unknown:
            tally.maybe += 1


def barrier_program(p: Participant, member: Any, key: str) -> Program:
    """A double barrier member: enter (within the contender's timeout), stay a while, leave."""
    world, c = p.world, p.contender
    tally: BarrierTally = _tally(world, key, lambda: BarrierTally(key, member.member_qty))
    # as long as it takes, for a while: the others may all give up
    timeout = c.timeout if c.timeout is not None else 10.0
    try:
        entered = yield from p.timed("enter", barrier_wait(timeout), Call(member.enter, (timeout,)))
    except ENDINGS:
        return
    if not entered:
        return
    tally.entered(world, p.name)
    with contextlib.suppress(*ENDINGS):
        yield Sleep(c.hold)
    with contextlib.suppress(*ENDINGS):
        yield from p.timed("leave", barrier_wait(timeout), Call(member.leave, (timeout,)))


__all__ = ["BarrierTally", "CounterTally", "barrier_program", "counter_program"]
