"""Schedules: one protocol's contenders on a :class:`~tests.explorer.world.World`, faults applied
at chosen boundaries, the invariants checked; the systematic pass (single faults at the
boundaries of each layout's fault-free schedule) and random schedules (each from a seed,
replayable).

Every turn of the hub is a boundary (:mod:`tests.explorer.sim`): a participant's thread or task
resumed, an answer arriving at the server or read by the client, a watch event, a timer, a
callback run by a worker. A fault applies to the client whose turn it is (a drawn one when the
turn is no client's).

A schedule is named by a line that replays it (:func:`replay`):
``<protocol> seed=<n> contenders=<contender>/<contender>... faults=<boundary>:<fault>,...``
(see :class:`~tests.explorer.protocols.Contender` for a contender's form).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Iterator

from .participants import Contender
from .protocols import PROTOCOLS, populate
from .sim import Stalled
from .world import SESSION_TIMEOUT, World, running

#: The faults, each applied at one boundary to the client whose turn it is: the connection
#: dropped and back in the same session; cut past the session timeout (the server expires the
#: session, the client comes back to a new one); the next answer lost (the connection drops
#: once the request is applied); the answers late; the client stopped by its owner; the owner
#: giving up (a task cancelled, a thread's hold ended, a selector's term interrupted); one of
#: the client's nodes deleted by another client.
FAULTS = ("drop", "expire", "lose", "late", "stop", "cancel", "delete")
#: Simulated seconds a schedule may last before its participants must have ended.
HORIZON = 300.0
#: Simulated seconds after the end (faults healed) for what goes on in the background.
SETTLE = 30.0


@dataclasses.dataclass(frozen=True)
class Fault:
    boundary: int
    kind: str

    def __str__(self) -> str:
        return f"{self.boundary}:{self.kind}"


@dataclasses.dataclass(frozen=True)
class Schedule:
    """One schedule: ``protocol``'s ``contenders`` on a world seeded ``seed``, ``faults``."""

    protocol: str
    seed: int
    contenders: tuple[Contender, ...]
    faults: tuple[Fault, ...] = ()

    def __str__(self) -> str:
        contenders = "/".join(map(str, self.contenders))
        faults = ",".join(map(str, self.faults)) or "-"
        return f"{self.protocol} seed={self.seed} contenders={contenders} faults={faults}"


@dataclasses.dataclass
class Outcome:
    schedule: Schedule
    violations: list[str]
    boundaries: int  # before the faults healed (where faults may land)
    applied: list[str]
    notes: list[str] = dataclasses.field(default_factory=list)


def parse(line: str) -> Schedule:
    """The schedule a line of :class:`Schedule`'s ``str`` names."""
    protocol, *fields = line.split()
    values = dict(field.split("=", 1) for field in fields)
    faults = tuple(
        Fault(int(b), k)
        for b, k in (item.split(":", 1) for item in values["faults"].split(",") if item != "-")
    )
    contenders = tuple(Contender.parse(text) for text in values["contenders"].split("/"))
    return Schedule(protocol, int(values["seed"]), contenders, faults)


def _apply(world: World, kind: str, client: int | None, applied: list[str]) -> None:
    rng, hub = world.rng, world.hub
    index = client if client is not None else rng.randrange(len(world.links))
    link = world.links[index]
    applied.append(f"t={world.now:.3f} {kind} {link.name}")
    if kind == "drop":
        link.drop(rng.choice([0.05, 0.3, 1.5]))
    elif kind == "expire":
        link.cut(SESSION_TIMEOUT + rng.choice([0.01, 0.5]))
    elif kind == "lose":
        link.lose_next = True
    elif kind == "late":
        link.stall(rng.choice([2.5, 4.0]))
    elif kind == "stop":
        if link.stopped_at is None:
            hub.spawn(link.client.stop, f"{link.name}:stop", index)
    elif kind == "cancel":
        mine = [p for p in world.participants if p.link is link and not p.done]
        if mine:
            participant = rng.choice(mine)
            applied[-1] += f" {participant.name}"
            participant.cancel()
    elif kind == "delete":
        nodes = sorted(world.server.ephemerals_of(link.sid))
        if nodes:
            node = rng.choice(nodes)
            applied[-1] += f" {node}"
            world.server.delete_by_another(node)
    else:
        raise ValueError(f"no such fault: {kind}")


def run(schedule: Schedule, trace: bool = False) -> Outcome:
    """Run ``schedule``; its outcome."""
    clients = max(contender.client for contender in schedule.contenders) + 1
    world = World(schedule.seed, clients)
    faults = {fault.boundary: fault.kind for fault in schedule.faults}
    applied: list[str] = []
    healed = [False]

    def on_boundary(number: int, what: str, client: int | None) -> None:
        if trace:
            print(f"  #{number} t={world.now:.4f} {what}")
        kind = faults.get(number)
        if kind is not None and not healed[0]:
            _apply(world, kind, client, applied)

    world.hub.on_boundary = on_boundary
    boundaries = 0
    with running(world):
        try:
            for link in world.links:
                link.open()
            world.server.start_reaper()
            populate(world, PROTOCOLS[schedule.protocol], list(schedule.contenders))
            try:
                world.hub.run(HORIZON, stop=lambda: all(p.done for p in world.participants))
                boundaries = world.hub.boundaries
                healed[0] = True
                for link in world.links:
                    link.heal()
                world.hub.run(world.now + SETTLE)
                finals = [check() for check in world.when_quiet]
                if world.when_quiet:
                    world.hub.run(world.now + SETTLE)
                for final in finals:
                    if final is not None:
                        final()
            except Stalled as exc:
                world.fail(f"clean-end: stalled: {exc}")
            except AssertionError as exc:  # the model's own checks
                world.fail(f"model: {exc!r}")
            world.check_end()
        finally:
            world.close()
    return Outcome(schedule, world.violations, boundaries, applied, world.notes)


# -- the systematic pass -------------------------------------------------------------------------

#: The layouts of the systematic pass: one contender; two on two clients (threads and asyncio,
#: both policies, a timeout that expires as the second waits); three, two of them threads of
#: one client sharing one lock object, one taking its lock twice and holding past a session
#: timeout (``session`` policy), one whose timeout expires within its first step.
LAYOUTS: dict[str, tuple[Contender, ...]] = {
    "solo": (Contender(0, "t", "standard", None, 1.0),),
    "pair": (
        Contender(0, "t", "standard", 3.0, 1.0),
        Contender(1, "a", "session", 0.3, 0.3),
    ),
    "trio": (
        Contender(0, "t", "session", None, 5.0, reentrant=True),
        Contender(1, "a", "standard", 1.0, 0.2),
        Contender(0, "t", "standard", 0.002, 0.5, shared=True),
    ),
}


def systematic(
    protocols: list[str], seed: int = 1, per_layout: int | None = None
) -> Iterator[Outcome]:
    """Each protocol in each layout: its fault-free schedule, then single faults at its
    boundaries: every boundary with every fault (``per_layout`` None), or about ``per_layout``
    schedules spread evenly over the boundaries, each fault at boundaries of its own (every
    kind of boundary met, each fault landing on different ones)."""
    for protocol in protocols:
        for contenders in LAYOUTS.values():
            base = Schedule(protocol, seed, contenders)
            clean = run(base)
            yield clean
            for fault in fault_plan(clean.boundaries, per_layout):
                yield run(dataclasses.replace(base, faults=(fault,)))


def fault_plan(boundaries: int, per_layout: int | None) -> list[Fault]:
    """The single faults of one layout's systematic pass (see :func:`systematic`)."""
    if per_layout is None or per_layout >= boundaries * len(FAULTS):
        return [Fault(b, kind) for b in range(boundaries) for kind in FAULTS]
    stride = boundaries * len(FAULTS) / per_layout
    plan = []
    for i in range(per_layout):
        slot = int(i * stride)
        plan.append(Fault(slot // len(FAULTS), FAULTS[(slot + i) % len(FAULTS)]))
    return plan


# -- random schedules ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Shape:
    """What random schedules are drawn from: one to ``participants`` contenders on up to
    ``clients`` clients, one to ``faults`` faults within the first ``reach`` boundaries per
    contender."""

    participants: int = 4
    clients: int = 3
    faults: int = 4
    reach: int = 250


def contenders_for(rng: random.Random, shape: Shape = Shape()) -> tuple[Contender, ...]:
    clients = rng.randint(1, max(1, shape.clients))
    count = rng.randint(1, max(1, shape.participants))
    drawn: list[Contender] = []
    for i in range(count):
        client = i % clients if i < clients else rng.randrange(clients)
        front = rng.choice("ta")
        before = any(c.client == client and c.front == front for c in drawn)
        drawn.append(
            Contender(
                client,
                front,
                "session" if rng.random() < 0.25 else "standard",
                rng.choice([0.0, 0.002, 0.3, 1.0, 3.0, 8.0, None]),
                rng.choice([0.01, 0.2, 1.0, 3.0]),
                reentrant=rng.random() < 0.2,
                shared=before and rng.random() < 0.3,
            )
        )
    return tuple(drawn)


def random_schedule(seed: int, protocols: list[str], shape: Shape = Shape()) -> Schedule:
    """The random schedule of ``seed``: a protocol, its contenders, faults at random
    boundaries (see :class:`Shape`)."""
    rng = random.Random(seed)
    protocol = rng.choice(protocols)
    contenders = contenders_for(rng, shape)
    count = rng.randint(1, max(1, shape.faults))
    boundaries = sorted(rng.sample(range(shape.reach * len(contenders)), count))
    faults = tuple(Fault(b, rng.choice(FAULTS)) for b in boundaries)
    return Schedule(protocol, seed, contenders, faults)


def randomly(
    seeds: Iterator[int], protocols: list[str], until: float, shape: Shape = Shape()
) -> Iterator[Outcome]:
    """Random schedules, one per seed, until ``until`` (``time.monotonic``) passes."""
    for seed in seeds:
        if time.monotonic() >= until:
            return
        yield run(random_schedule(seed, protocols, shape))


#: The suite's schedules (``tests/test_explorer.py``, and each planted defect's run): the
#: systematic pass's fault schedules per protocol and layout, and the random schedules' seeds.
SUITE_PER_LAYOUT = 200
SUITE_RANDOM = 2000

#: Schedules that broke an invariant once, found by longer runs than the suite's, and kept in
#: the suite: a leader (a latch, ZooKeeper's election) whose steps rode a request through a
#: suspension while it led was deposed only once the connection was back, or never, its hold
#: ours again before the steps looked (has_leadership() said False meanwhile, but lost_event,
#: not_leader() and on_lost never told it); and the same tried on selectors, a suspension
#: landing as each front end's selector begins to lead (their steps wait while they lead).
REGRESSIONS = (
    "latch seed=5040 contenders=0a:std:-:0.01:r faults=39:lose,82:lose,211:late,216:delete",
    "latch seed=3267 contenders=0a:std:8:1 faults=106:drop,171:drop,185:lose,218:lose",
    "zk-election seed=31138 contenders=0t:ses:3:0.2 faults=29:drop,89:expire,93:lose,157:drop",
    "selector seed=5040 contenders=0a:std:-:1/1t:std:-:0.2 faults=96:lose,105:drop",
    "selector seed=5040 contenders=0t:std:-:1/1t:std:-:0.2 faults=74:lose,83:drop",
)


def suite_outcomes(protocols: list[str]) -> Iterator[Outcome]:
    """The suite's schedules on ``protocols``, run in turn: the :data:`REGRESSIONS` of those
    protocols, the systematic pass, then random schedules of seeds 1 to :data:`SUITE_RANDOM`."""
    for line in REGRESSIONS:
        schedule = parse(line)
        if schedule.protocol in protocols:
            yield run(schedule)
    yield from systematic(protocols, per_layout=SUITE_PER_LAYOUT)
    yield from randomly(iter(range(1, SUITE_RANDOM + 1)), protocols, math.inf)


def replay(line: str, trace: bool = True) -> Outcome:
    """Run the schedule ``line`` names again (printing its turns with ``trace``)."""
    return run(parse(line), trace=trace)
