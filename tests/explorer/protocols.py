"""The protocols under exploration, each driven as its front ends drive it: acquire within a
timeout, follow the hold with a :class:`~pycurator._engine.hold_check.HoldMonitor`, hold until told
lost or for a while, release. Each protocol is a function that puts its participants in a
:class:`~.world.World`; :data:`PROTOCOLS` names them all."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError

from pycurator._client.runners import Cancelled
from pycurator._cores.semaphore import SemaphoreSteps
from pycurator._engine.hold_check import HoldMonitor, HoldState
from pycurator._engine.locks import HeldNode, LockEngine
from pycurator._engine.observe import Reporter
from pycurator._protocol.deadline import FIRST_TRY_WAIT
from pycurator._protocol.drivers import MUTEX_DRIVER, ReadSideDriver, write_driver
from pycurator._protocol.steps import NewSignal, Steps, WaitSignal
from pycurator._protocol.waits import DELETE_WAIT, delete_node_steps

from .model import Client
from .world import Hold, World

#: How an acquire may end besides holding or timing out: the client stopped, or the connection
#: lost for longer than its retries.
ENDINGS = (ConnectionClosedError, ConnectionLoss, SessionExpiredError, Cancelled)

Acquire = Callable[[], Steps[HeldNode | None]]
Release = Callable[[str], Steps[None]]


def holder(
    world: World,
    client: Client,
    name: str,
    key: str,
    kind: str,
    acquire: Acquire,
    release: Release,
    timeout: float,
    bound: float,
    hold_for: float,
) -> Steps[None]:
    """Acquire within ``timeout`` (ended by ``bound`` seconds after), hold until told lost or
    ``hold_for`` seconds, release."""
    ended = world.waited(name, world.now, world.now + bound)
    try:
        node = yield from acquire()
    except ENDINGS:
        node = None
    except NoNodeError as exc:
        # the lock's parent container reaped between its making and the node's create: the
        # acquire fails, as Curator's does (reported apart, see World.notes)
        world.note(f"{name}: acquire raised {exc!r}")
        node = None
    finally:
        ended.append(world.now)
    if node is None:
        return
    current = world.scheduler.current
    assert current is not None
    if node.session_id != client.session and client.session_tick < current.resumed_with:
        # the session had ended before the acquire's last step was answered (not a stop or
        # an expiry that comes after it, which no acquire can tell)
        world.fail(f"{name}: acquired {node.path} of session {node.session_id:#x}, which ended")
    hold = Hold(key, kind, client, node.path, world.now)
    world.holds.append(hold)
    try:
        lost = yield NewSignal()

        def on_change(state: HoldState, reason: str) -> None:
            world.told(hold, state, reason)
            if state is not HoldState.HELD:
                lost.set()

        report = Reporter(kind, key).acquired(world.now, node.path)
        hold.monitor = yield from HoldMonitor.follow_steps(
            client.kazoo, node.path, "standard", on_change, node.session_id, report
        )
        yield WaitSignal(lost, hold_for)
    except Cancelled:
        pass
    finally:
        hold.released_at = world.now
        if hold.monitor is not None:
            hold.monitor.close()
    with contextlib.suppress(Cancelled):
        yield from release(node.path)


def _timeout(world: World) -> float:
    return world.rng.choice([0.0, 0.3, 1.0, 3.0, 8.0])


def _hold_for(world: World) -> float:
    return world.rng.choice([0.01, 0.2, 1.0, 3.0])


def mutex(world: World, participants: list[Client]) -> None:
    """Curator's ``InterProcessMutex``: the lock engine with the standard driver."""
    key = "/locks/mutex"
    for i, client in enumerate(participants):
        engine = LockEngine(client.kazoo, key, MUTEX_DRIVER, data=b"x")
        timeout = _timeout(world)

        def acquire(engine: LockEngine = engine, timeout: float = timeout) -> Steps[Any]:
            return engine.acquire_steps(timeout)

        bound = max(timeout, FIRST_TRY_WAIT) + DELETE_WAIT
        world.spawn(
            f"mutex{i}@{client.name}",
            client,
            holder(
                world,
                client,
                f"mutex{i}",
                key,
                "excl",
                acquire,
                engine.delete_steps,
                timeout,
                bound,
                _hold_for(world),
            ),
        )


def read_write(world: World, participants: list[Client]) -> None:
    """Curator's ``InterProcessReadWriteLock``: writers exclude all, readers only writers."""
    key = "/locks/rw"
    for i, client in enumerate(participants):
        write = world.rng.random() < 0.5
        engine = LockEngine(
            client.kazoo, key, write_driver() if write else ReadSideDriver(), data=b"x"
        )
        timeout = _timeout(world)

        def acquire(engine: LockEngine = engine, timeout: float = timeout) -> Steps[Any]:
            return engine.acquire_steps(timeout)

        kind = "write" if write else "read"
        bound = max(timeout, FIRST_TRY_WAIT) + DELETE_WAIT
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


def _semaphore(world: World, participants: list[Client], key: str, leases: int) -> None:
    world.capacity[key] = leases
    for i, client in enumerate(participants):
        steps = SemaphoreSteps(client.kazoo, key, leases, None, None, "standard")
        timeout = _timeout(world)

        def acquire(steps: SemaphoreSteps = steps, timeout: float = timeout) -> Steps[Any]:
            held = yield from steps.acquire_steps(1, timeout)
            return None if held is None else held[0][0]

        # the internal mutex's acquire starts a first try of its own with what is left
        bound = max(timeout, FIRST_TRY_WAIT) + FIRST_TRY_WAIT + 3 * DELETE_WAIT
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


Protocol = Callable[[World, list[Client]], None]

#: Every protocol explored, by name.
PROTOCOLS: dict[str, Protocol] = {
    "mutex": mutex,
    "read-write": read_write,
    "semaphore": semaphore,
    "semaphore-mutex": semaphore_mutex,
}
