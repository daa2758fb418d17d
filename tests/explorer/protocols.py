"""The protocols under exploration, each driven as its front ends drive it: acquire within a
timeout, follow the hold with a :class:`~pycurator._recipes.hold_monitor.HoldMonitor`, hold until
told lost or for a while, release. Each protocol is a function that puts its participants in a
:class:`~.world.World`; :data:`PROTOCOLS` names them all."""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError

from pycurator._client.callback_runner import Cancelled
from pycurator._protocol import wire
from pycurator._protocol.checks import ConnectionPolicy
from pycurator._protocol.deadline import FIRST_TRY_WAIT
from pycurator._protocol.drivers import LATCH_DRIVER, MUTEX_DRIVER, ReadSideDriver, write_driver
from pycurator._protocol.steps import NewSignal, Steps, WaitSignal
from pycurator._protocol.transport import Signal
from pycurator._protocol.waits import DELETE_WAIT, delete_node_steps
from pycurator._protocol.zkrecipes import ELECTION_DRIVER, ELECTION_NAMING
from pycurator._recipes import menagerie
from pycurator._recipes.election import STEP_WAIT, Election
from pycurator._recipes.hold_monitor import HoldMonitor, HoldState
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.reports import HoldReport, Reporter
from pycurator._recipes.semaphore import SemaphoreSteps
from pycurator._recipes.zklocker import zklocker_engine
from pycurator._recipes.zkrecipes import write_lock_engine

from .model import Client
from .world import Hold, World

#: How an acquire may end besides holding or timing out: the client stopped, or the connection
#: lost for longer than its retries.
ENDINGS = (ConnectionClosedError, ConnectionLoss, SessionExpiredError, Cancelled)

Acquire = Callable[[], Steps[LockNode | None]]
Release = Callable[[str], Steps[None]]


def holder(
    world: World,
    client: Client,
    name: str,
    key: str,
    kind: str,
    acquire: Acquire,
    release: Release,
    timeout: float | None,
    bound: float,
    hold_for: float,
    revoked: Flag | None = None,
) -> Steps[None]:
    """Acquire within ``timeout`` (ended by ``bound`` seconds after), hold until told lost (or
    ``revoked`` is set) or for ``hold_for`` seconds, asking the hold check now and then whether
    the hold is still ours (``is_held()``), and release."""
    ended = world.waited(name, world.now, world.now + bound)
    try:
        node = yield from acquire()
    except ENDINGS:
        node = None
    except NoNodeError as exc:
        # the lock's parent container reaped between its making and the node's create, or a
        # revocable node deleted before its revocation watch was set: the acquire fails, as
        # Curator's does (reported apart, see World.notes)
        world.note(f"{name}: acquire raised {exc!r}")
        node = None
    finally:
        ended.append(world.now)
    if node is None:
        return
    current = world.scheduler.current
    assert current is not None
    if node.session_id != client.session and client.session_tick < current.observed:
        # the session had ended before the acquire last heard from its client (not a stop or
        # an expiry after that, which no acquire can tell)
        world.fail(f"{name}: acquired {node.path} of session {node.session_id:#x}, which ended")
    hold = Hold(key, kind, client, node.path, world.now, policy=_policy(world))
    world.holds.append(hold)
    try:
        lost = yield NewSignal()

        def on_change(state: HoldState, reason: str) -> None:
            world.told(hold, state, reason)
            if state is not HoldState.HELD:
                lost.set()

        report = Reporter(kind, key).acquired(world.now, node.path)
        if revoked is not None:
            revoked.wake = lost
        monitor = yield from HoldMonitor.follow_steps(
            client.transport, node.path, hold.policy, on_change, node.session_id, report
        )
        hold.monitor = monitor
        until = world.now + hold_for
        while not lost.is_set() and world.now < until:
            if not (yield WaitSignal(lost, min(until - world.now, 0.5))):
                yield from monitor.confirm_steps()
    except Cancelled:
        pass
    finally:
        hold.released_at = world.now
        if hold.monitor is not None:
            hold.monitor.close()
    with contextlib.suppress(Cancelled):
        yield from release(node.path)


class Flag:
    """A revocation asked for: ``wake`` (the holder's signal) is set when it comes."""

    def __init__(self) -> None:
        self.asked = False
        self.wake: Signal | None = None

    def set(self) -> None:
        self.asked = True
        if self.wake is not None:
            self.wake.set()


def _policy(world: World) -> ConnectionPolicy:
    """A hold's connection policy: mostly ``standard``, now and then ``session``."""
    return "session" if world.rng.random() < 0.25 else "standard"


def _timeout(world: World) -> float | None:
    """An acquire's timeout: none (wait as long as it takes) now and then."""
    return world.rng.choice([0.0, 0.3, 1.0, 3.0, 8.0, None])


def _bound(timeout: float | None, extra: float) -> float:
    """Seconds an acquire of ``timeout`` may take: its first try at least, and ``extra``."""
    return math.inf if timeout is None else max(timeout, FIRST_TRY_WAIT) + extra


def _hold_for(world: World) -> float:
    return world.rng.choice([0.01, 0.2, 1.0, 3.0])


def _locks(
    world: World,
    participants: list[Client],
    key: str,
    engines: Callable[[Client, bool], tuple[str, LockEngine]],
) -> None:
    """Participants of a lock whose engines ``engines(client, write)`` makes (``write``: drawn
    at random, for a read/write lock; the kind of hold, and its engine)."""
    for i, client in enumerate(participants):
        kind, engine = engines(client, world.rng.random() < 0.5)
        timeout = _timeout(world)

        def acquire(engine: LockEngine = engine, timeout: float | None = timeout) -> Steps[Any]:
            return engine.acquire_steps(timeout)

        bound = _bound(timeout, DELETE_WAIT)
        world.spawn(
            f"{kind}{i}@{client.name}",
            client,
            holder(
                world,
                client,
                f"{kind}{i}",
                key,
                kind,
                acquire,
                engine.delete_steps,
                timeout,
                bound,
                _hold_for(world),
            ),
        )


def mutex(world: World, participants: list[Client]) -> None:
    """Curator's ``InterProcessMutex``: the lock engine with the standard driver."""
    _locks(
        world,
        participants,
        "/locks/mutex",
        lambda c, _: ("excl", LockEngine(c.transport, "/locks/mutex", MUTEX_DRIVER, data=b"x")),
    )


def revocable_mutex(world: World, participants: list[Client]) -> None:
    """Curator's mutex made revocable: another client writes the revocation message to the
    holder's node now and then, and the holder releases when told."""
    key = "/locks/revocable"
    for i, client in enumerate(participants):
        revoked = Flag()
        engine = LockEngine(client.transport, key, MUTEX_DRIVER, data=b"x").revocable(revoked.set)
        timeout = _timeout(world)

        def acquire(engine: LockEngine = engine, timeout: float | None = timeout) -> Steps[Any]:
            return engine.acquire_steps(timeout)

        bound = _bound(timeout, DELETE_WAIT)
        steps = holder(
            world,
            client,
            f"revocable{i}",
            key,
            "excl",
            acquire,
            engine.delete_steps,
            timeout,
            bound,
            _hold_for(world),
            revoked,
        )
        world.spawn(f"revocable{i}@{client.name}", client, steps)

    def revoke() -> None:  # as Revoker.attempt_revoke, from another client
        holders = [h for h in world.holds if h.key == key and h.released_at is None]
        if holders:
            world.server.set_data(world.rng.choice(holders).node, wire.REVOKE_MESSAGE)
        world.scheduler.call_later(world.rng.choice([0.1, 0.7]), revoke)

    world.scheduler.call_later(0.05, revoke)


def read_write(world: World, participants: list[Client]) -> None:
    """Curator's ``InterProcessReadWriteLock``: writers exclude all, readers only writers."""

    def engines(client: Client, write: bool) -> tuple[str, LockEngine]:
        driver = write_driver() if write else ReadSideDriver()
        return ("write" if write else "read"), LockEngine(client.transport, "/locks/rw", driver)

    _locks(world, participants, "/locks/rw", engines)


def zk_write_lock(world: World, participants: list[Client]) -> None:
    """ZooKeeper's ``WriteLock`` recipe: names that carry the session, persistent parents."""
    _locks(
        world,
        participants,
        "/zk/lock",
        lambda c, _: ("excl", write_lock_engine(c.transport, "/zk/lock", None)),
    )


def zklocker(world: World, participants: list[Client]) -> None:
    """ZkLocker's lock on a key."""
    _locks(
        world,
        participants,
        "/zklocker",
        lambda c, _: ("excl", zklocker_engine(c.transport, "/zklocker", "k")),
    )


def menagerie_lock(world: World, participants: list[Client]) -> None:
    """menagerie's ``ReentrantZkLock``."""
    _locks(
        world,
        participants,
        "/menagerie/lock",
        lambda c, _: ("excl", menagerie.lock_engine(c.transport, "/menagerie/lock", None)),
    )


def menagerie_read_write(world: World, participants: list[Client]) -> None:
    """menagerie's ``ReentrantZkReadWriteLock``."""

    def engines(client: Client, write: bool) -> tuple[str, LockEngine]:
        writer, reader = menagerie.read_write_engines(client.transport, "/menagerie/rw", None)
        return ("write", writer) if write else ("read", reader)

    _locks(world, participants, "/menagerie/rw", engines)


def menagerie_semaphore(world: World, participants: list[Client]) -> None:
    """menagerie's ``ZkSemaphore`` of two permits."""
    key = "/menagerie/semaphore"
    world.capacity[key] = 2
    for i, client in enumerate(participants):
        steps = menagerie.PermitSteps(client.transport, key, 2, None, "standard")
        timeout = _timeout(world)

        def acquire(
            steps: menagerie.PermitSteps = steps, timeout: float | None = timeout
        ) -> Steps[Any]:
            held = yield from steps.acquire_steps(timeout)
            return None if held is None else held[0]

        bound = _bound(timeout, DELETE_WAIT)
        world.spawn(
            f"permit{i}@{client.name}",
            client,
            holder(
                world,
                client,
                f"permit{i}",
                key,
                "excl",
                acquire,
                steps.engine.delete_steps,
                timeout,
                bound,
                _hold_for(world),
            ),
        )


def _semaphore(world: World, participants: list[Client], key: str, leases: int) -> None:
    world.capacity[key] = leases
    for i, client in enumerate(participants):
        steps = SemaphoreSteps(client.transport, key, leases, None, None, "standard")
        timeout = _timeout(world)

        def acquire(steps: SemaphoreSteps = steps, timeout: float | None = timeout) -> Steps[Any]:
            held = yield from steps.acquire_steps(1, timeout)
            return None if held is None else held[0][0]

        # the internal mutex's acquire starts a first try of its own with what is left
        bound = _bound(timeout, FIRST_TRY_WAIT + 3 * DELETE_WAIT)
        world.spawn(
            f"lease{i}@{client.name}",
            client,
            holder(
                world,
                client,
                f"lease{i}",
                key,
                "excl",
                acquire,
                delete_node_steps,
                timeout,
                bound,
                _hold_for(world),
            ),
        )


def semaphore(world: World, participants: list[Client]) -> None:
    """``InterProcessSemaphoreV2`` with two leases: its internal mutex, and the lease nodes."""
    _semaphore(world, participants, "/semaphores/two", 2)


def semaphore_mutex(world: World, participants: list[Client]) -> None:
    """``InterProcessSemaphoreMutex``: a semaphore of one lease."""
    _semaphore(world, participants, "/semaphores/one", 1)


def followed_by_model(
    transport: Any,
    node: str,
    policy: ConnectionPolicy,
    on_change: Callable[[HoldState, str], None],
    session_id: int,
    report: HoldReport,
) -> HoldMonitor:
    """Made where the election makes its :class:`HoldMonitor`, with the same arguments: the
    same monitor, on the model's client of ``transport`` (the engine's), its hold recorded
    with the running world."""
    world = WORLDS[-1]
    client = world.client_of(transport)
    hold = Hold(node.rsplit("/", 1)[0], "lead", client, node, world.now, policy=policy)

    def changed(state: HoldState, reason: str) -> None:
        world.told(hold, state, reason)
        on_change(state, reason)

    monitor = HoldMonitor.__new__(HoldMonitor)
    monitor._setup(transport, node, policy, changed, session_id, report)
    hold.monitor = monitor
    world.holds.append(hold)
    monitor._start(client)
    return monitor


#: The worlds running now (the last one is the current one).
WORLDS: list[World] = []


def _election(
    world: World,
    participants: list[Client],
    key: str,
    engine_of: Callable[[Client], LockEngine],
    *,
    selector: bool,
) -> None:
    for i, client in enumerate(participants):
        kind = "term" if selector else "latch"
        name = f"{kind}{i}"
        close_at = world.now + world.rng.choice([0.5, 2.0, 6.0])
        hold_for = _hold_for(world)
        box: list[Election] = []

        def elected(
            node: LockNode,
            monitor: HoldMonitor,
            hold_for: float = hold_for,
            box: list[Election] = box,
        ) -> None:
            if selector:  # the term's work, then its end
                world.scheduler.call_later(hold_for, lambda: box[0].stop("term ended"))

        election = Election(
            engine_of(client),
            _policy(world),
            elected,
            lambda reason: None,
            reporter=Reporter(kind, key),
            one_term=selector,
            queue_ends_on_error=selector,
        )
        box.append(election)
        world.scheduler.call_at(close_at, functools.partial(election.stop, "closed"))
        world.spawn(
            f"{name}@{client.name}",
            client,
            elector(world, name, election, close_at + STEP_WAIT + DELETE_WAIT),
        )


def elector(world: World, name: str, election: Election, bound: float) -> Steps[None]:
    """Take part until stopped (or cancelled, or the client stopped), ended by ``bound``."""
    ended = world.waited(name, world.now, bound)
    try:
        yield from election.steps()
    except Cancelled:
        pass
    finally:
        ended.append(world.now)


def latch(world: World, participants: list[Client]) -> None:
    """Curator's ``LeaderLatch``: leads until closed, queues again after losing."""
    key = "/leader/latch"
    _election(
        world,
        participants,
        key,
        lambda c: LockEngine(c.transport, key, LATCH_DRIVER, data=b"x"),
        selector=False,
    )


def selector(world: World, participants: list[Client]) -> None:
    """Curator's ``LeaderSelector`` terms: one term each, queue left on a connection error."""
    key = "/leader/selector"
    _election(
        world,
        participants,
        key,
        lambda c: LockEngine(c.transport, key, MUTEX_DRIVER, data=b"x"),
        selector=True,
    )


def zk_election(world: World, participants: list[Client]) -> None:
    """ZooKeeper's ``LeaderElectionSupport``: offers named ``n_``, persistent parents."""
    key = "/zk/election"
    _election(
        world,
        participants,
        key,
        lambda c: LockEngine(
            c.transport, key, ELECTION_DRIVER, data=b"host", naming=ELECTION_NAMING
        ),
        selector=False,
    )


Protocol = Callable[[World, list[Client]], None]

#: Every protocol explored, by name.
PROTOCOLS: dict[str, Protocol] = {
    "mutex": mutex,
    "read-write": read_write,
    "revocable-mutex": revocable_mutex,
    "semaphore": semaphore,
    "semaphore-mutex": semaphore_mutex,
    "zk-write-lock": zk_write_lock,
    "menagerie-lock": menagerie_lock,
    "menagerie-read-write": menagerie_read_write,
    "menagerie-semaphore": menagerie_semaphore,
    "zklocker": zklocker,
    "latch": latch,
    "selector": selector,
    "zk-election": zk_election,
}
