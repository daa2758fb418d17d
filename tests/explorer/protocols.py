"""The protocols under exploration, each as its users run it: the public recipes of
``pycurator`` (threads) and ``pycurator.aio`` (asyncio tasks), on kazoo clients of the world,
acquiring within a timeout, holding while told they hold, asking ``is_held()``, releasing;
joining an election, leading while told they lead, closing. Each contender is a participant
(:mod:`tests.explorer.participants`) running its family's program
(:mod:`tests.explorer.programs`) on the recipe object its :class:`Protocol` makes.

Adding a recipe (see ``docs/reliability.md``, "The fault explorer"): write what its
user does as a program (or reuse a family's: :func:`lock_program`, :func:`lease_program`,
:func:`latch_program`, :func:`selector_program`), make its claims say what the user believes and
which node it stands on, register a :class:`Protocol` in :data:`PROTOCOLS`, and, for a promise
no invariant reads yet, add one to :mod:`tests.explorer.world` with a planted defect that breaks
it (:mod:`tests.explorer.planted`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kazoo.retry import KazooRetry

from pycurator import CreateMode, menagerie, zklocker, zkrecipes
from pycurator.aio import menagerie as aio_menagerie
from pycurator.aio import zklocker as aio_zklocker
from pycurator.aio import zkrecipes as aio_zkrecipes

from . import caches
from .participants import DELETE_WAIT, SEMAPHORE_EXTRA, Contender, Participant, Program
from .programs import (
    cache_program,
    latch_program,
    lease_program,
    lock_program,
    node_program,
    selector_program,
)
from .registrations import SERVICE, registration_program
from .registrations import make as make_discovery
from .tallied import barrier_program, counter_program
from .world import World

#: What makes a contender's recipe object: ``make(participant)``.
Make = Callable[[Participant], Any]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """One recipe under exploration: its ``family`` of program (``lock``, ``lease``,
    ``latch``, ``selector``, ``node``, ``counter``, ``barrier``), the ``key`` its claims contend
    for (or its tally counts) and how many may hold it,
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
        "cache",
        "cache",
        caches.ROOT,
        lambda p: p.module.CuratorCache(p.client, caches.ROOT),
        policies=False,
    ),
    Protocol(
        "kept-node",
        "node",
        "/nodes/kept",
        lambda p: p.module.PersistentNode(
            p.client, "/nodes/kept/node", CreateMode.EPHEMERAL, p.name.encode(), True
        ),
        policies=False,
    ),
    Protocol(
        "kept-sequential-node",
        "node",
        "/nodes/sequential",
        lambda p: p.module.PersistentNode(
            p.client, "/nodes/sequential/n-", CreateMode.EPHEMERAL_SEQUENTIAL, b"", True
        ),
        policies=False,
    ),
    Protocol(
        "atomic-long",
        "counter",
        "/counters/long",
        # a policy per client: clients of one process that share one take turns, so these
        # contend on the server as clients of processes of their own would
        lambda p: p.module.DistributedAtomicLong(
            p.client,
            "/counters/long",
            KazooRetry(max_tries=3 + p.contender.client, delay=0.01, backoff=1),
        ),
        policies=False,
    ),
    Protocol(
        "double-barrier",
        "barrier",
        "/barriers/double",
        lambda p: p.module.DistributedDoubleBarrier(
            p.client, "/barriers/double", len(p.world.participants)
        ),
        policies=False,
    ),
    Protocol(
        "registration",
        "registration",
        f"/services/{SERVICE}",
        make_discovery,
        policies=False,
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
    if protocol.family == "cache":
        caches.write_now_and_then(world)


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
    if protocol.family == "cache":
        yield from cache_program(p, recipe, caches.follow(p.world, p.name, p.link, recipe))
    elif protocol.family == "registration":
        yield from registration_program(p, recipe)
    elif protocol.family == "latch":
        yield from latch_program(p, recipe, protocol.key, listens=protocol.policies)
    elif protocol.family == "node":
        yield from node_program(p, recipe, protocol.key)
    elif protocol.family == "counter":
        yield from counter_program(p, recipe, protocol.key)
    elif protocol.family == "barrier":
        yield from barrier_program(p, recipe, protocol.key)
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
