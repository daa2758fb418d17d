"""Schedules: one protocol's participants on a :class:`~.world.World`, faults applied at chosen
step boundaries, the invariants checked; the systematic pass (each single fault at every boundary
in turn) and random schedules (each from a seed, replayable).

A schedule is named by a line that replays it (:func:`replay`):
``<protocol> seed=<n> clients=<client of each participant> faults=<boundary>:<fault>,...``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Iterator

from pycurator._protocol import wire
from pycurator._protocol.steps import Step
from pycurator._recipes import election

from .model import Client
from .protocols import PROTOCOLS, WORLDS, followed_by_model
from .scheduler import Participant, simulated_time
from .world import World

#: The faults, each applied at one step boundary, to the client (or the participant) whose step
#: it is: the connection dropped and back in the same session; dropped past the session's expiry
#: (a new session on reconnect); the next answer lost (ConnectionLoss, the request applied); the
#: answers late (after the deadlines waiting on them; they land later); the client stopped; the
#: owner cancelling (Cancelled thrown into its steps); one of the client's nodes deleted by
#: another client.
FAULTS = ("drop", "expire", "lose", "late", "stop", "cancel", "delete")
#: Simulated seconds after a connection is cut that the server expires its session (the
#: client stays cut off until then).
EXPIRES_AFTER = 1.0
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
    """One schedule: ``layout`` gives each participant's client (by index)."""

    protocol: str
    seed: int
    layout: tuple[int, ...]
    faults: tuple[Fault, ...] = ()

    def __str__(self) -> str:
        layout = ",".join(map(str, self.layout))
        faults = ",".join(map(str, self.faults)) or "-"
        return f"{self.protocol} seed={self.seed} clients={layout} faults={faults}"


@dataclasses.dataclass
class Outcome:
    schedule: Schedule
    violations: list[str]
    boundaries: int
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
    layout = tuple(int(i) for i in values["clients"].split(","))
    return Schedule(protocol, int(values["seed"]), layout, faults)


@contextlib.contextmanager
def exploring() -> Iterator[None]:
    """The protocols on simulated time (see :func:`.scheduler.simulated_time`), an election's
    leader followed on the model (:func:`.protocols.followed_by_model`)."""
    saved = vars(election)["HoldMonitor"]
    setattr(election, "HoldMonitor", followed_by_model)  # noqa: B010
    try:
        with simulated_time(lambda: WORLDS[-1].scheduler if WORLDS else None):
            yield
    finally:
        setattr(election, "HoldMonitor", saved)  # noqa: B010


def _apply(world: World, kind: str, participant: Participant, applied: list[str]) -> None:
    client = participant.transport
    assert isinstance(client, Client)
    scheduler, rng = world.scheduler, world.rng
    applied.append(f"t={world.now:.3f} {kind} {participant.name}")
    if kind == "drop":
        client.drop()
        scheduler.call_later(rng.choice([0.05, 0.3, 1.5]), client.connect)
    elif kind == "expire":
        session = client.session
        client.drop()
        back = rng.choice([0.01, 0.5])
        client.cut_until = world.now + EXPIRES_AFTER + back
        if session is not None:
            scheduler.call_later(
                EXPIRES_AFTER, lambda: world.server.end_session(session, "expired")
            )
        scheduler.call_later(EXPIRES_AFTER + back, client.connect)
    elif kind == "lose":
        client.lose_next = True
    elif kind == "late":
        client.stall(rng.choice([2.5, 4.0]))
    elif kind == "stop":
        client.stop()
    elif kind == "cancel":
        if participant in world.owners:  # steps in the background have no owner to cancel
            scheduler.cancel(participant)
    elif kind == "delete":
        nodes = sorted(world.server.ephemerals_of(client.session or 0))
        if nodes:
            node = rng.choice(nodes)
            applied[-1] += f" {node}"
            world.server.delete_by_another(node)
    else:
        raise ValueError(f"no such fault: {kind}")


def run(
    schedule: Schedule, plant: Callable[[World], None] | None = None, trace: bool = False
) -> Outcome:
    """Run ``schedule``; its outcome. ``plant``: changes the world first (a planted defect)."""
    world = World(schedule.seed, max(schedule.layout) + 1)
    if plant is not None:
        plant(world)
    ids = random.Random(schedule.seed ^ 0x5EED)
    faults = {fault.boundary: fault.kind for fault in schedule.faults}
    applied: list[str] = []

    def on_boundary(boundary: int, participant: Participant, step: Step) -> None:
        if trace:
            print(f"  #{boundary} t={world.now:.3f} {participant.name}: {step!r:.160}")
        kind = faults.get(boundary)
        if kind is not None:
            _apply(world, kind, participant, applied)

    world.scheduler.on_boundary = on_boundary
    saved = wire.new_protected_id
    wire.new_protected_id = lambda: str(uuid.UUID(int=ids.getrandbits(128), version=4))
    WORLDS.append(world)
    try:
        for client in world.clients:
            client.connect()
        world.server.start_reaper()
        PROTOCOLS[schedule.protocol](world, [world.clients[i] for i in schedule.layout])
        try:
            world.scheduler.run(HORIZON, stop=lambda: all(p.done for p in world.owners))
            for client in world.clients:  # heal: every fault ends
                client.lose_next = False
                client.cut_until = 0.0
                client._stall_until = 0.0
                client.connect()
            world.scheduler.run(world.now + SETTLE)
        except AssertionError as exc:  # the model's own checks
            world.fail(f"model: {exc!r}")
        world.check_end()
    finally:
        for participant in world.scheduler.participants:
            with contextlib.suppress(BaseException):
                participant.steps.close()  # those that never ended
        WORLDS.pop()
        wire.new_protected_id = saved
    return Outcome(schedule, world.violations, world.scheduler.boundaries, applied, world.notes)


@dataclasses.dataclass(frozen=True)
class Shape:
    """What random schedules are drawn from: at most ``participants`` (two at least) on two
    to ``clients`` clients, one to ``faults`` faults."""

    participants: int = 4
    clients: int = 3
    faults: int = 4


def layout_for(rng: random.Random, shape: Shape = Shape()) -> tuple[int, ...]:
    clients = rng.randint(2, max(2, shape.clients))
    participants = rng.randint(2, max(2, shape.participants))
    return tuple(
        i % clients if i < clients else rng.randrange(clients) for i in range(participants)
    )


#: The layout of the systematic pass: two participants on one client, one on another.
SYSTEMATIC_LAYOUT = (0, 1, 0)


def systematic(
    protocols: list[str], seed: int = 1, plant: Callable[[World], None] | None = None
) -> Iterator[Outcome]:
    """Each protocol, each single fault at every step boundary in turn (the boundaries of its
    fault-free schedule)."""
    for protocol in protocols:
        base = Schedule(protocol, seed, SYSTEMATIC_LAYOUT)
        clean = run(base, plant)
        yield clean
        for boundary in range(clean.boundaries):
            for kind in FAULTS:
                yield run(dataclasses.replace(base, faults=(Fault(boundary, kind),)), plant)


def random_schedule(seed: int, protocols: list[str], shape: Shape = Shape()) -> Schedule:
    """The random schedule of ``seed``: a protocol, its participants on several clients, and
    faults at random boundaries (see :class:`Shape`)."""
    rng = random.Random(seed)
    protocol = rng.choice(protocols)
    layout = layout_for(rng, shape)
    count = rng.randint(1, max(1, shape.faults))
    boundaries = sorted(rng.sample(range(48 * len(layout)), count))
    faults = tuple(Fault(b, rng.choice(FAULTS)) for b in boundaries)
    return Schedule(protocol, seed, layout, faults)


def randomly(
    seeds: Iterator[int],
    protocols: list[str],
    until: float,
    plant: Callable[[World], None] | None = None,
    shape: Shape = Shape(),
) -> Iterator[Outcome]:
    """Random schedules, one per seed, until ``until`` (``time.monotonic``) passes."""
    for seed in seeds:
        if time.monotonic() >= until:
            return
        yield run(random_schedule(seed, protocols, shape), plant)


def replay(line: str, trace: bool = True) -> Outcome:
    """Run the schedule ``line`` names again (printing its steps with ``trace``)."""
    return run(parse(line), trace=trace)
