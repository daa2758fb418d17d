"""A participant of a schedule: what it is (:class:`Contender`, as a replay line writes it),
and how it runs its *program*, written once for both front ends as a generator of :class:`Call`,
:class:`Wait` and :class:`Sleep`: the threaded driver makes each call in a unit of its own (it
blocks the unit), the asyncio driver awaits what a call returns in a task on the world's loop
(:meth:`Participant.start`). What a program is told becomes the world's
:class:`~tests.explorer.world.Claim` (:meth:`Participant.claim`), which the invariants read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Generator
from types import ModuleType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionExpiredError

import pycurator
import pycurator.aio

from .connection import Link
from .sim import Unit
from .world import Claim, World

#: What a user may be told besides holding or timing out: the client stopped, the connection
#: lost for longer than a call could wait, its task cancelled.
ENDINGS: tuple[type[BaseException], ...] = (
    ConnectionClosedError,
    ConnectionLoss,
    SessionExpiredError,
    asyncio.CancelledError,
)

#: The bounds docs/reliability.md states ("How long a call can block"), in seconds.
FIRST_TRY_WAIT = 2.0
DELETE_WAIT = 2.0
CONFIRM_WAIT = 2.0
#: A latch's close waits for its node's delete, then goes on in the background.
CLOSE_WAIT = DELETE_WAIT + 1.0
#: What a semaphore's acquire may take beyond its first try: its internal lock's own first try
#: and three deletes (the lock's node, the lease's on a timeout, the lock's again).
SEMAPHORE_EXTRA = FIRST_TRY_WAIT + 3 * DELETE_WAIT


@dataclasses.dataclass(frozen=True)
class Contender:
    """One participant of a schedule: its client (by index), front end (``t``: threads,
    ``a``: asyncio), connection policy, acquire timeout (None: as long as it takes; for an
    election, how long it takes part), how long it holds, whether it takes its lock twice
    (re-entrant), and whether it shares the recipe object of the contender before it on the
    same client and front end (two threads, or two tasks, on one semaphore; a lock object is
    not shared, see :func:`_program`)."""

    client: int
    front: str = "t"
    policy: str = "standard"
    timeout: float | None = None
    hold: float = 0.2
    reentrant: bool = False
    shared: bool = False

    def __str__(self) -> str:
        timeout = "-" if self.timeout is None else f"{self.timeout:g}"
        flags = ("r" if self.reentrant else "") + ("+" if self.shared else "")
        policy = "std" if self.policy == "standard" else "ses"
        text = f"{self.client}{self.front}:{policy}:{timeout}:{self.hold:g}"
        return f"{text}:{flags}" if flags else text

    @classmethod
    def parse(cls, text: str) -> Contender:
        head, policy, timeout, hold, *flags = text.split(":")
        return cls(
            client=int(head[:-1]),
            front=head[-1],
            policy="standard" if policy == "std" else "session",
            timeout=None if timeout == "-" else float(timeout),
            hold=float(hold),
            reentrant="r" in "".join(flags),
            shared="+" in "".join(flags),
        )


# -- programs, and their drivers -----------------------------------------------------------------


@dataclasses.dataclass
class Call:
    """Call ``function(*args)`` (awaiting what it returns, on the asyncio front end)."""

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclasses.dataclass
class Wait:
    """Wait for ``event`` (a handler's, or an asyncio one), at most ``timeout`` seconds:
    whether it is set."""

    event: Any
    timeout: float


@dataclasses.dataclass
class Sleep:
    seconds: float


Step = Call | Wait | Sleep
Program = Generator[Step, Any, None]


class Participant:
    """One contender running its program on the world (a unit of its own for threads, a task
    on the world's loop for asyncio). ``cancel()`` is what its owner does to give up (the
    ``cancel`` fault)."""

    def __init__(self, world: World, name: str, contender: Contender) -> None:
        self.world = world
        self.name = name
        self.contender = contender
        self.link: Link = world.links[contender.client]
        self.done = False
        self.error: BaseException | None = None
        self.cancelled = False
        self.claims: list[Claim] = []
        self.task: asyncio.Task[None] | None = None
        self.unit: Unit | None = None
        self.interrupt: Callable[[], None] | None = None  # a selector's interrupt_leadership
        self.kind = "excl"  # of its holds: excl, read, write, lead

    @property
    def client(self) -> KazooClient:
        return self.link.client

    @property
    def module(self) -> ModuleType:
        """``pycurator`` or ``pycurator.aio``."""
        return pycurator.aio if self.contender.front == "a" else pycurator

    @property
    def now(self) -> float:
        return self.world.now

    def claim(
        self, key: str, kind: str, believes: Callable[[], bool], node: Callable[[], str | None]
    ) -> Claim:
        claim = self.world.claim(
            key, kind, self.name, self.link, self.contender.policy, believes, node
        )
        self.claims.append(claim)
        return claim

    def left(self, until: float) -> bool:
        """Whether time is left before ``until`` (not a float's rounding of it: a program that
        waits for what is left must wait for something)."""
        return until - self.world.now > 1e-6

    def timed(self, what: str, bound: float, step: Step) -> Generator[Step, Any, Any]:
        """``step``, which must return within ``bound`` seconds (``bounded``)."""
        wait = self.world.waited(self.name, what, bound)
        try:
            return (yield step)
        finally:
            wait.ended = self.world.now

    def on_loop(self, function: Callable[[], Any]) -> None:
        """Call ``function()`` where this participant's recipes may be called from: its loop
        (asyncio), or a unit of its own (threads)."""
        if self.contender.front == "a":
            self.world.loop.call_soon_threadsafe(function)
        else:
            self.world.hub.spawn(function, f"{self.name}:owner", self.contender.client)

    def cancel(self) -> None:
        """The owner gives up: a task is cancelled; a thread stops at its next look; a selector's
        leadership is interrupted."""
        self.cancelled = True
        if self.interrupt is not None:
            self.on_loop(self.interrupt)
        task = self.task
        if task is not None:
            self.world.loop.call_soon_threadsafe(task.cancel)

    def start(self, program: Program) -> None:
        if self.contender.front == "a":
            loop = self.world.loop

            def begin() -> None:
                self.task = loop.create_task(self._drive_async(program))

            loop.call_soon_threadsafe(begin)
        else:
            self.unit = self.world.hub.spawn(
                lambda: self._drive_thread(program), self.name, self.contender.client
            )

    def _drive_thread(self, program: Program) -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            while True:
                try:
                    step = program.throw(error) if error is not None else program.send(value)
                except StopIteration:
                    return
                value, error = None, None
                try:
                    if isinstance(step, Call):
                        value = step.function(*step.args)
                    elif isinstance(step, Wait):
                        value = bool(step.event.wait(step.timeout))
                    else:
                        self.world.hub.block(self.now + step.seconds)
                except Exception as exc:
                    error = exc
        except Exception as exc:
            self.error = exc
        finally:
            self.done = True

    async def _drive_async(self, program: Program) -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            while True:
                try:
                    step = program.throw(error) if error is not None else program.send(value)
                except StopIteration:
                    return
                value, error = None, None
                try:
                    if isinstance(step, Call):
                        value = step.function(*step.args)
                        if inspect.isawaitable(value):
                            value = await value
                    elif isinstance(step, Wait):
                        value = await _wait_event(step.event, step.timeout)
                    else:
                        await asyncio.sleep(step.seconds)
                except (Exception, asyncio.CancelledError) as exc:
                    error = exc
        except (Exception, asyncio.CancelledError) as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.error = exc
        finally:
            self.done = True


async def _wait_event(event: asyncio.Event, timeout: float) -> bool:
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except asyncio.TimeoutError:
        return False
    return True
