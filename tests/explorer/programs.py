"""What users of each family of recipes do, as programs both front ends run
(:mod:`tests.explorer.participants`): a lock's (acquire, hold while told held, release), a
lease's, a latch's (start, lead while told so, close) and a selector's (``lead`` each term while
told it leads). A recipe whose user does the same reuses its family's program
(:mod:`tests.explorer.protocols`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import NoNodeError

from .participants import (
    CLOSE_WAIT,
    CONFIRM_WAIT,
    DELETE_WAIT,
    ENDINGS,
    FIRST_TRY_WAIT,
    Call,
    Participant,
    Program,
    Sleep,
    Wait,
)
from .world import Claim, World


def acquire_bound(timeout: float | None, extra: float = DELETE_WAIT) -> float:
    """The longest ``acquire(timeout)`` may take: its first try at least, and ``extra``."""
    return float("inf") if timeout is None else max(timeout, FIRST_TRY_WAIT) + extra


def _ended(p: Participant, exc: BaseException) -> None:
    """An acquire ended without a hold for a reason a user is told of (see :data:`ENDINGS`);
    NoNodeError is noted: an acquire fails with it as Curator's does (its lock's parent
    container reaped as its node was made)."""
    if isinstance(exc, NoNodeError):
        p.world.note(f"{p.name}: acquire raised {exc!r}")


#: Seconds a holder told its hold is not ours (suspended, as the ``standard`` policy tells a
#: dropped connection) waits for it to be ours again before it gives up.
PATIENCE = 2.0


def _hold(p: Participant, claim: Claim, lost_event: Any, is_held: Callable[[], Any]) -> Program:
    """Hold while told so, for the contender's hold time, asking ``is_held()`` now and then; a
    hold told lost waits a while for it to be ours again (a suspension that ends), as a
    Curator user waits for RECONNECTED."""
    until = p.now + p.contender.hold
    while p.left(until) and not p.cancelled and not claim.interrupted_at:
        if (yield Wait(lost_event, min(until - p.now, 0.5))):
            back = p.now + min(PATIENCE, until - p.now)
            while lost_event.is_set() and p.left(back) and not p.cancelled:
                yield Sleep(min(0.1, back - p.now))
            if lost_event.is_set():
                return
            continue
        try:
            held = yield from p.timed("is_held()", CONFIRM_WAIT, Call(is_held))
        except ENDINGS:
            return
        p.world.answered(claim, "is_held()", held)


def _calling_back(claims: list[Claim], world: World) -> Callable[..., None]:
    """A loss callback that marks every claim of a recipe object (told after a release, it
    still follows the loss before it)."""

    def called(*_: object) -> None:
        for claim in claims:
            world.called_back(claim)

    return called


# -- the families of programs --------------------------------------------------------------------


def lock_program(
    p: Participant,
    lock: Any,
    key: str,
    kind: str,
    reentrant: bool,
    node_of: Callable[[], str],
    extra: float = DELETE_WAIT,
) -> Program:
    """A lock's user: ``acquire(timeout)``, re-entry if asked, hold while told held, release."""
    c = p.contender
    try:
        ok = yield from p.timed(
            "acquire", acquire_bound(c.timeout, extra), Call(lock.acquire, (c.timeout,))
        )
    except (*ENDINGS, NoNodeError) as exc:
        _ended(p, exc)
        return
    if not ok:
        return
    node = node_of()
    claim = p.claim(key, kind, lambda: not lock.lost_event.is_set(), lambda: node)
    claim.expects = ("on_lost",)
    holds = 1
    try:
        if reentrant:
            if (yield Call(lock.acquire, (0,))):
                holds += 1
            else:
                p.world.fail(f"clean-end: {p.name}: a re-entrant acquire of {node} said False")
        yield from _hold(p, claim, lock.lost_event, lock.is_held)
    except ENDINGS:
        pass
    finally:
        claim.end(p.now)
    for _ in range(holds):
        with contextlib.suppress(*ENDINGS):
            yield from p.timed("release", DELETE_WAIT, Call(lock.release))


def lease_program(p: Participant, semaphore: Any, key: str, extra: float) -> Program:
    """A semaphore's user: ``acquire(timeout)`` a lease, hold it while told held, close it."""
    c = p.contender
    try:
        lease = yield from p.timed(
            "acquire",
            acquire_bound(c.timeout, extra),
            Call(semaphore.acquire, (c.timeout,)),
        )
    except (*ENDINGS, NoNodeError) as exc:
        _ended(p, exc)
        return
    if lease is None:
        return
    node = lease.path
    claim = p.claim(key, "excl", lambda: not lease.lost_event.is_set(), lambda: node)
    claim.expects = ("on_lost",)
    lease.on_lost(_calling_back([claim], p.world))
    try:
        yield from _hold(p, claim, lease.lost_event, lease.is_held)
    except ENDINGS:
        pass
    finally:
        claim.end(p.now)
    with contextlib.suppress(*ENDINGS):
        yield from p.timed("release", DELETE_WAIT, Call(lease.close))


def latch_program(p: Participant, latch: Any, key: str, listens: bool = True) -> Program:
    """A latch's user: start, wait for leadership, lead while told so, close (after the
    contender's timeout, or a few seconds; at once when its task is cancelled)."""
    claim = p.claim(key, "lead", latch.has_leadership, lambda: latch.our_path)
    claim.expects = ("on_lost", "not_leader") if listens else ("on_lost",)
    claim.silenced = ("not_leader",)
    latch.on_lost(_calling_back([claim], p.world))
    if listens:
        latch.add_listener(_Listener(claim, p.world))
    started = False
    try:
        yield Call(latch.start)
        started = True
        until = p.now + (p.contender.timeout if p.contender.timeout is not None else 4.0)
        while p.left(until) and not p.cancelled:
            try:
                leading = yield from p.timed(
                    "wait", 1.0 + 1e-6, Call(latch.wait, (min(until - p.now, 1.0),))
                )
            except ENDINGS:
                break
            except Exception as exc:  # an error the latch meets meanwhile: it tries again
                p.world.note(f"{p.name}: wait raised {exc!r}")
                yield Sleep(0.1)
                continue
            if leading:
                yield Wait(latch.lost_event, min(until - p.now, p.contender.hold))
    except asyncio.CancelledError:
        pass
    finally:
        claim.end(p.now)  # the user closes: what it is told from now on is not a claim
    if not started:
        return
    with contextlib.suppress(*ENDINGS):
        yield from p.timed("close", CLOSE_WAIT, Call(latch.close))


class _Listener:
    """A latch's listener: ``not_leader()`` is a loss callback."""

    def __init__(self, claim: Claim, world: World) -> None:
        self._claim = claim
        self._world = world

    def is_leader(self) -> None:
        pass

    def not_leader(self) -> None:
        self._world.called_back(self._claim, "not_leader")


def selector_program(
    p: Participant, make: Callable[[Callable[..., Any]], Any], key: str
) -> Program:
    """A selector's user: ``lead`` holds each term while told it leads (a thread watches its
    ``lost_event``; a task runs until cancelled), asking ``is_held()``; the owner closes the
    selector after a while, or interrupts the term (the ``cancel`` fault)."""
    terms: list[Claim] = []
    asyncio_front = p.contender.front == "a"

    def begin(leadership: Any) -> tuple[Claim, list[bool]]:
        told = [False]
        if asyncio_front:
            believes: Callable[[], bool] = lambda: not told[0]  # noqa: E731 (told by cancellation)
        else:
            believes = lambda: not leadership.lost_event.is_set()  # noqa: E731
        claim = p.claim(key, "lead", believes, lambda: leadership.node_path)
        terms.append(claim)
        return claim, told

    def lead(leadership: Any) -> None:
        claim, _ = begin(leadership)
        until = p.now + p.contender.hold
        try:
            while p.left(until):
                if leadership.lost_event.wait(min(until - p.now, 0.5)):
                    return
                p.world.answered(claim, "is_held()", leadership.is_held())
        finally:
            claim.end(p.now)

    async def lead_async(leadership: Any) -> None:
        claim, told = begin(leadership)
        until = p.now + p.contender.hold
        try:
            while p.left(until):
                await asyncio.sleep(min(until - p.now, 0.5))
                p.world.answered(claim, "is_held()", await leadership.is_held())
        except asyncio.CancelledError:
            told[0] = True
            raise
        finally:
            claim.end(p.now)

    selector = make(lead_async if asyncio_front else lead)

    def interrupt() -> None:
        for claim in terms:
            if claim.ended_at is None and claim.interrupted_at is None:
                claim.interrupted_at = p.now
        selector.interrupt_leadership()

    p.interrupt = interrupt
    started = False
    try:
        yield Call(selector.start)
        started = True
        yield Sleep(p.contender.timeout if p.contender.timeout is not None else 4.0)
    except asyncio.CancelledError:
        pass
    for claim in terms:
        if claim.ended_at is None and claim.interrupted_at is None:
            claim.interrupted_at = p.now
    if not started:
        return
    with contextlib.suppress(*ENDINGS):
        yield from p.timed("close", 10.0, Call(selector.close, (10.0,)))
