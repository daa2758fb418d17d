"""The asyncio leader latch: the election's steps (:mod:`pycurator._election`) run as a task
on the event loop, with no thread and no executor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient

from .._checks import ConnectionPolicy, check_timeout
from .._deadline import Deadline
from .._election import Lifecycle
from .._engine import HeldNode
from .._errors import LockLostError
from .._leader import CLOSE_WAIT, LatchBase
from .._monitor import HoldMonitor
from .._participants import CloseMode, Participant, leader_of, participants_steps
from ._runner import LoopEvent, log_failure, loop_spawner, run_async, wait_event


class LeaderLatch(LatchBase):
    """The asyncio form of :class:`pycurator.LeaderLatch`: the same nodes and election as
    Curator's ``LeaderLatch``; ``await latch.wait()`` for leadership.

    The election runs as a task on the loop that started the latch; listeners and
    :meth:`on_lost` callbacks run on that loop, in order (an awaitable they return runs as a
    task). :attr:`lost_event` is an :class:`asyncio.Event`. If the loop ends with the latch
    still started, its task is cancelled and the node deleted, as by :meth:`close`. An error
    no retry fixes ends the latch's part as in the threaded latch: :meth:`wait` raises it.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        id: str = "",  # Curator's name for it
        *,
        close_mode: CloseMode = CloseMode.SILENT,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(client, path, id, close_mode, acl, connection_policy)
        self._task: asyncio.Task[str] | None = None
        self._changed: asyncio.Event | None = None
        self._spawn: Callable[..., None] | None = None
        #: Set when leadership ends, cleared when it begins.
        self.lost_event = asyncio.Event()

    async def start(self) -> None:
        """Join the election (in the background, on the running loop).

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        loop = asyncio.get_running_loop()
        self._spawn = loop_spawner()
        changed = self._changed = asyncio.Event()
        election = self._begin(LoopEvent(loop, changed).set)
        self._task = loop.create_task(run_async(self.client, election.steps()))
        self._task.add_done_callback(log_failure)
        self._task.add_done_callback(lambda _: changed.set())

    async def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: leadership ends, watches are dropped and our node is deleted
        (waiting at most :data:`~pycurator._calls.DELETE_WAIT` seconds for the server, then in
        the background); returns once done. ``close_mode`` as the threaded latch's.

        Raises RuntimeError when not started or already closed.
        """
        self._finish(close_mode)
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_WAIT)
        self._listeners.clear()
        if self._changed is not None:
            self._changed.set()

    async def __aenter__(self) -> LeaderLatch:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._state is Lifecycle.STARTED:
            await self.close()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None, or a huge one: forever) for leadership: True
        once leading, False on timeout or when the latch is closed meanwhile; the errors of
        the threaded ``wait`` (the server's error no retry fixes, such as ``NoAuthError``,
        once it has ended the latch's part; ``ConnectionClosedError`` once the client is
        stopped)."""
        timeout = check_timeout(timeout)
        if self._state is not Lifecycle.STARTED or self._changed is None:
            raise RuntimeError(f"the latch is not started, or closed: {self.path}")
        deadline = Deadline(timeout)
        changed = self._changed
        while True:
            changed.clear()
            if self.has_leadership():
                return True
            if self._state is not Lifecycle.STARTED:
                return False
            self._raise_if_stuck(self._task is not None and self._task.done())
            remaining = deadline.remaining()
            if remaining == 0:
                return False
            await wait_event(changed, remaining)

    def add_listener(self, listener: Any) -> None:
        """Call ``listener.is_leader()`` and ``listener.not_leader()`` on each change of
        leadership, in order, on the loop (an awaitable they return runs as a task)."""
        self._add_listener(listener)

    def on_lost(self, callback: Callable[[LeaderLatch, str], Any]) -> None:
        """Run ``callback(latch, reason)`` on the loop each time leadership ends (also on
        close, whatever the close mode), after the listeners."""
        self._lost_callbacks.append(callback)

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless we lead and our node is known to be ours now
        (its deletion is checked with the server when not yet watched)."""
        monitor = self._leader_monitor()
        if not await run_async(self.client, monitor.confirm_steps()):
            raise LockLostError(self.path, monitor.reason)

    async def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (read as the threaded latch
        reads them, riding through a reconnect)."""
        return await run_async(self.client, participants_steps(self._engine))

    async def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(await self.participants())

    # -- news from the election (its steps run on the loop: never block) ---------------------

    def _post(self, callback: Callable[..., Any], *args: Any) -> None:
        if self._spawn is not None:
            self._spawn(callback, *args)

    def _elected(self, node: HeldNode, monitor: HoldMonitor) -> None:
        self.lost_event.clear()
        for listener in list(self._listeners):
            self._post(listener.is_leader)
        if self._changed is not None:
            self._changed.set()

    def _deposed(self, reason: str) -> None:
        self.lost_event.set()
        for listener in list(self._listeners):
            self._post(listener.not_leader)
        for callback in list(self._lost_callbacks):
            self._post(callback, self, reason)
        if self._changed is not None:
            self._changed.set()

    def _troubled(self, error: Exception | None) -> None:
        if self._changed is not None:
            self._changed.set()


__all__ = ["LeaderLatch"]
