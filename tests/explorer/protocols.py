"""The protocols under exploration, each as its users run it: the public recipes of
``pycurator`` (threads) and ``pycurator.aio`` (asyncio tasks), on kazoo clients of the world,
acquiring within a timeout, holding while told they hold, asking ``is_held()``, releasing;
joining an election, leading while told they lead, closing.

A participant's *program* is written once for both front ends, as a generator of
:class:`Call`, :class:`Wait` and :class:`Sleep`: the threaded driver makes each call (it blocks
its unit), the asyncio driver awaits what a call returns (:meth:`Participant.start`). What the
program is told becomes the world's :class:`~tests.explorer.world.Claim`, which the invariants
read.

Adding a recipe (see ``docs/reliability.md``, "The fault explorer"): write what its
user does as a program (or reuse a family's: :func:`lock_program`, :func:`lease_program`,
:func:`latch_program`, :func:`selector_program`), make its claims say what the user believes and
which node it stands on, register a :class:`Protocol` in :data:`PROTOCOLS`, and, for a promise
no invariant reads yet, add one to :mod:`tests.explorer.world` with a planted defect that breaks
it (:mod:`tests.explorer.planted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
from collections.abc import Callable, Generator
from types import ModuleType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError

import pycurator
import pycurator.aio
from pycurator import menagerie, zklocker, zkrecipes
from pycurator.aio import menagerie as aio_menagerie
from pycurator.aio import zklocker as aio_zklocker
from pycurator.aio import zkrecipes as aio_zkrecipes

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


# -- the protocols -------------------------------------------------------------------------------

#: What makes a contender's recipe object: ``make(participant)``.
Make = Callable[[Participant], Any]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """One recipe under exploration: its ``family`` of program (``lock``, ``lease``,
    ``latch``, ``selector``), the ``key`` its claims contend for and how many may hold it,
    what makes a contender's recipe object (``make``), what kind of hold each contender's is
    (``kind``: ``excl``, ``read``, ``write``), and whether it takes a connection policy."""

    name: str
    family: str
    key: str
    make: Make
    capacity: int = 1
    kind: Callable[[Participant], str] = lambda p: "excl"
    node: Callable[[Any], str] = lambda lock: str(lock.lock_path)
    policies: bool = True
    revocable: bool = False
    reentrant: bool = True
    #: seconds an acquire may take beyond its first try (docs/reliability.md's bounds)
    extra: float = DELETE_WAIT


def _rw_side(p: Participant) -> str:
    return "write" if p.world.rng.random() < 0.5 else "read"


def _rw(make_lock: Callable[[Participant], Any]) -> Make:
    def make(p: Participant) -> Any:
        lock = make_lock(p)
        return lock.write_lock() if p.kind == "write" else lock.read_lock()

    return make


PROTOCOLS: dict[str, Protocol] = {}


def _register(*protocols: Protocol) -> None:
    for protocol in protocols:
        PROTOCOLS[protocol.name] = protocol


_register(
    Protocol(
        "mutex",
        "lock",
        "/locks/mutex",
        lambda p: p.module.InterProcessMutex(
            p.client, "/locks/mutex", connection_policy=p.contender.policy
        ),
    ),
    Protocol(
        "read-write",
        "lock",
        "/locks/rw",
        _rw(
            lambda p: p.module.InterProcessReadWriteLock(
                p.client, "/locks/rw", connection_policy=p.contender.policy
            )
        ),
        kind=_rw_side,
    ),
    Protocol(
        "revocable-mutex",
        "lock",
        "/locks/revocable",
        lambda p: p.module.InterProcessMutex(
            p.client, "/locks/revocable", connection_policy=p.contender.policy
        ),
        revocable=True,
    ),
    Protocol(
        "semaphore",
        "lease",
        "/semaphores/two",
        lambda p: p.module.InterProcessSemaphoreV2(
            p.client, "/semaphores/two", 2, connection_policy=p.contender.policy
        ),
        capacity=2,
        extra=SEMAPHORE_EXTRA,
    ),
    Protocol(
        "semaphore-mutex",
        "lock",
        "/semaphores/one",
        lambda p: p.module.InterProcessSemaphoreMutex(
            p.client, "/semaphores/one", connection_policy=p.contender.policy
        ),
        node=lambda lock: str(lock.lease.path),
        reentrant=False,
        extra=SEMAPHORE_EXTRA,
    ),
    Protocol(
        "zk-write-lock",
        "lock",
        "/zk/lock",
        lambda p: (aio_zkrecipes if p.contender.front == "a" else zkrecipes).WriteLock(
            p.client, "/zk/lock"
        ),
        policies=False,
    ),
    Protocol(
        "menagerie-lock",
        "lock",
        "/menagerie/lock",
        lambda p: (aio_menagerie if p.contender.front == "a" else menagerie).ReentrantZkLock(
            p.client, "/menagerie/lock", connection_policy=p.contender.policy
        ),
    ),
    Protocol(
        "menagerie-read-write",
        "lock",
        "/menagerie/rw",
        _rw(
            lambda p: (
                aio_menagerie if p.contender.front == "a" else menagerie
            ).ReentrantZkReadWriteLock(
                p.client, "/menagerie/rw", connection_policy=p.contender.policy
            )
        ),
        kind=_rw_side,
    ),
    Protocol(
        "menagerie-semaphore",
        "lease",
        "/menagerie/semaphore",
        lambda p: (aio_menagerie if p.contender.front == "a" else menagerie).ZkSemaphore(
            p.client, "/menagerie/semaphore", 2, connection_policy=p.contender.policy
        ),
        capacity=2,
    ),
    Protocol(
        "zklocker",
        "lock",
        "/zklocker",
        lambda p: (aio_zklocker if p.contender.front == "a" else zklocker).ZkLocker(
            p.client, "/zklocker", "k", connection_policy=p.contender.policy
        ),
    ),
    Protocol(
        "latch",
        "latch",
        "/leader/latch",
        lambda p: p.module.LeaderLatch(
            p.client, "/leader/latch", p.name, connection_policy=p.contender.policy
        ),
    ),
    Protocol(
        "selector",
        "selector",
        "/leader/selector",
        lambda p: None,  # made by its program, around its lead
    ),
    Protocol(
        "zk-election",
        "latch",
        "/zk/election",
        lambda p: (aio_zkrecipes if p.contender.front == "a" else zkrecipes).LeaderElection(
            p.client, "/zk/election", p.name
        ),
        policies=False,
    ),
)


def populate(world: World, protocol: Protocol, contenders: list[Contender]) -> None:
    """Put ``protocol``'s participants in ``world``, one per contender, each running its
    program (recipe objects shared where a contender says so)."""
    world.capacity[protocol.key] = protocol.capacity
    made: dict[tuple[int, str], _Shared] = {}
    for i, contender in enumerate(contenders):
        if not protocol.policies:
            contender = dataclasses.replace(contender, policy="standard")
        p = Participant(
            world, f"{protocol.name}{i}@c{contender.client}{contender.front}", contender
        )
        p.kind = protocol.kind(p)
        world.participants.append(p)
        p.start(_program(p, protocol, made))
    if protocol.revocable:
        _revoke_now_and_then(world, protocol.key)


class _Shared:
    """A recipe object and the participants that share it, made by the first of them to run
    (in its thread, or its task: an asyncio recipe is made on its loop)."""

    def __init__(self) -> None:
        self.recipe: Any = None
        self.sharers: list[Participant] = []


def _program(p: Participant, protocol: Protocol, made: dict[tuple[int, str], _Shared]) -> Program:
    c = p.contender
    if protocol.family == "selector":
        return selector_program(
            p,
            lambda lead: p.module.LeaderSelector(
                p.client, protocol.key, lead, p.name, connection_policy=c.policy
            ),
            protocol.key,
        )
    place = (c.client, c.front)
    # a lock object is not shared: its lost_event is the object's, set by a loss of any of
    # its holds, so one thread's stale hold would tell another's (see docs/reliability.md)
    shared = made.get(place) if c.shared and protocol.family == "lease" else None
    if shared is None:
        shared = made[place] = _Shared()
    shared.sharers.append(p)
    maker = shared.sharers[0]  # the lock object it shares has its maker's side and policy
    p.kind = maker.kind
    p.contender = dataclasses.replace(c, policy=maker.contender.policy)
    return _run(p, protocol, shared)


def _run(p: Participant, protocol: Protocol, shared: _Shared) -> Program:
    recipe = shared.recipe
    if recipe is None:
        recipe = shared.recipe = protocol.make(p)
        _follow(p.world, protocol, recipe, shared.sharers)
    if protocol.family == "latch":
        yield from latch_program(p, recipe, protocol.key, listens=protocol.policies)
    elif protocol.family == "lease":
        yield from lease_program(p, recipe, protocol.key, protocol.extra)
    else:
        reentrant = p.contender.reentrant and protocol.reentrant
        node_of = lambda: protocol.node(recipe)  # noqa: E731
        yield from lock_program(p, recipe, protocol.key, p.kind, reentrant, node_of, protocol.extra)


def _follow(world: World, protocol: Protocol, recipe: Any, sharers: list[Participant]) -> None:
    """What a lock object's users listen to: its ``on_lost`` callbacks (for every claim of
    the participants that share it) and, for a revocable lock, a revocation, which ends their
    holds."""
    if protocol.family != "lock":
        return

    def lost(*_: object) -> None:
        for sharer in sharers:
            for claim in sharer.claims:
                world.called_back(claim)

    recipe.on_lost(lost)
    if protocol.revocable:

        def revoked(_: object) -> None:
            for sharer in sharers:
                sharer.cancelled = True

        recipe.make_revocable(revoked)


def _revoke_now_and_then(world: World, key: str) -> None:
    """Another client asks a holder to release now and then, as ``attempt_revoke`` does: it
    writes Curator's revocation message to the holder's node."""

    def revoke() -> None:
        holders = [c for c in world.claims if c.key == key and c.ended_at is None]
        if holders:
            node = world.rng.choice(holders).node()
            if node is not None:
                world.server.set_data(node, b"__REVOKE__")
        world.hub.call_later(world.rng.choice([0.1, 0.7]), revoke, "revoke")

    world.hub.call_later(0.05, revoke, "revoke")
