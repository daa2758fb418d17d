"""The asyncio leader latch: the latch's core (:mod:`pycurator._cores.latch`), whose election steps
run as a task on the event loop, with no thread and no executor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from .._cores.constructors import LatchConstructor
from .._cores.faces import LatchFace
from .._cores.latch import CLOSE_WAIT, CloseMode, LatchCore
from .._protocol.checks import check_timeout
from .._protocol.deadline import Deadline
from .._protocol.transport import Transport
from .._recipes.participants import Participant, leader_of
from ._runner import (
    LoopEvent,
    log_failure,
    loop_spawner,
    run_async,
    transport_of,
    wait_event,
)


class LatchShell:
    """What the asyncio latch shells (``LeaderLatch``, ZooKeeper's ``LeaderElection``) share:
    how they run a :class:`~pycurator._cores.latch.LatchCore`: its election as a task on the loop
    that started it, its news on that loop, and its waits on :class:`asyncio.Event`."""

    def __init__(self, core: LatchCore) -> None:
        self.core = core
        self._task: asyncio.Task[str] | None = None
        self._changed: asyncio.Event | None = None
        #: Set when leadership ends, cleared when it begins.
        self.lost_event = asyncio.Event()

    def start(self, owner: object) -> None:
        """Begin the election for ``owner`` on the running loop; RuntimeError when started
        before."""
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        election = self.core.begin(
            owner, loop_spawner(), LoopEvent(loop, changed).set, self.lost_event
        )
        self._changed = changed
        self._task = loop.create_task(run_async(self.core.transport, election.steps()))
        self._task.add_done_callback(log_failure)
        self._task.add_done_callback(lambda _: changed.set())

    async def close(self, close_mode: CloseMode | None) -> None:
        """End the election and wait (at most :data:`CLOSE_WAIT`) for its node's delete."""
        self.core.finish(close_mode)
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_WAIT)
        self.core.closed()

    async def wait(self, timeout: float | None) -> bool:
        """Wait for leadership (see :meth:`LeaderLatch.wait`)."""
        timeout = check_timeout(timeout)
        core = self.core
        core.check_waitable()
        changed = self._changed
        assert changed is not None  # made by start()
        deadline = Deadline(timeout)
        while True:
            changed.clear()
            outcome = core.outcome(self._task is not None and self._task.done())
            if outcome is not None:
                return outcome
            remaining = deadline.remaining()
            if remaining == 0:
                return False
            await wait_event(changed, remaining)


class LeaderLatch(LatchConstructor, LatchFace):
    """The asyncio form of :class:`pycurator.LeaderLatch`: the same nodes and election as
    Curator's ``LeaderLatch``; ``await latch.wait()`` for leadership.

    The election runs as a task on the loop that started the latch; listeners and
    :meth:`on_lost` callbacks run on that loop, in order (an awaitable they return runs as a
    task). :attr:`lost_event` is an :class:`asyncio.Event`. If the loop ends with the latch
    still started, its task is cancelled and the node deleted, as by :meth:`close`. An error
    no retry fixes ends the latch's part as in the threaded latch: :meth:`wait` raises it.
    """

    _shell_class = LatchShell
    _shell: LatchShell
    _core: LatchCore

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    async def start(self) -> None:
        """Join the election (in the background, on the running loop).

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        self._shell.start(self)

    async def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: leadership ends, watches are dropped and our node is deleted
        (waiting at most :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then
        in the background); returns once done. ``close_mode`` as the threaded latch's.

        Raises RuntimeError when not started or already closed.
        """
        await self._shell.close(close_mode)

    async def __aenter__(self) -> LeaderLatch:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._core.started:
            await self.close()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None, or a huge one: forever) for leadership: True
        once leading, False on timeout or when the latch is closed meanwhile; the errors of
        the threaded ``wait`` (the server's error no retry fixes, such as ``NoAuthError``,
        once it has ended the latch's part; ``ConnectionClosedError`` once the client is
        stopped)."""
        return await self._shell.wait(timeout)

    def add_listener(self, listener: Any) -> None:
        """Call ``listener.is_leader()`` and ``listener.not_leader()`` on each change of
        leadership, in order, on the loop (an awaitable they return runs as a task)."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: Any) -> None:
        """Stop telling ``listener`` of changes."""
        self._core.remove_listener(listener)

    def on_lost(self, callback: Callable[[LeaderLatch, str], Any]) -> None:
        """Run ``callback(latch, reason)`` on the loop each time leadership ends (also on
        close, whatever the close mode), after the listeners."""
        self._core.add_lost_callback(callback)

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless we lead and our node is known to be ours now
        (its deletion is checked with the server when not yet watched)."""
        await run_async(self._core.transport, self._core.check_steps())

    async def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (read as the threaded latch
        reads them, riding through a reconnect)."""
        return await run_async(self._core.transport, self._core.participants_steps())

    async def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(await self.participants())

    def __repr__(self) -> str:
        return self._core.describe("aio.LeaderLatch")


__all__ = ["LatchShell", "LeaderLatch"]
