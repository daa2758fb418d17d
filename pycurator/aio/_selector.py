"""The asyncio leader selector: each term's election steps (:mod:`pycurator._election`) run as
a task on the event loop, and ``lead`` as another; no thread, no executor, no polling.

When a term ends (leadership lost, :meth:`LeaderSelector.interrupt_leadership`, or the selector
closed), the ``lead`` task is cancelled: unlike a thread, a coroutine can be interrupted, at its
next ``await``. The node is deleted once ``lead`` has ended, as Curator releases its mutex once
``takeLeadership`` returns.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kazoo.client import KazooClient

from .._checks import ConnectionPolicy, check_timeout
from .._election import Lifecycle
from .._engine import HeldNode
from .._monitor import HoldMonitor
from .._participants import Participant, leader_of, participants_steps
from .._runtime import CLIENT_STOPPED
from .._selector import LeadershipBase, SelectorBase, TermBase
from ._runner import log_failure, run_async

log = logging.getLogger("pycurator")


class Leadership(LeadershipBase):
    """One term of leadership, as ``lead`` receives it: :attr:`lost_event` (an
    :class:`asyncio.Event`) is set when the term ends, and ``lead`` is cancelled then."""

    def __init__(self, path: str, node: HeldNode, monitor: HoldMonitor) -> None:
        super().__init__(path, node, monitor)
        self.lost_event = asyncio.Event()

    async def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now."""
        if self.lost_event.is_set():
            return False
        return await run_async(self._monitor.client, self._monitor.confirm_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        if not await self.is_held():
            raise self._lost()

    def _end(self, reason: str) -> None:
        if not self.lost_event.is_set():
            self.reason = reason
            self.lost_event.set()


class _Term(TermBase):
    """One turn in the queue: its election's task, and while it leads, ``lead``'s task."""

    def __init__(self) -> None:
        super().__init__()
        self.task: asyncio.Task[str] | None = None
        self.leadership: Leadership | None = None
        self.lead_task: asyncio.Task[None] | None = None

    @property
    def leading(self) -> bool:
        return self.lead_task is not None and not self.lead_task.done()

    def deposed(self, reason: str) -> None:
        self.ending = True
        if self.leadership is not None:
            self.leadership._end(reason)
        if self.lead_task is not None:
            self.lead_task.cancel()

    def end(self, reason: str) -> None:
        """End the term: a leader's ``lead`` is cancelled (the node goes once it has ended), a
        queued term leaves the queue now."""
        self.ending = True
        if self.leading:
            self.deposed(reason)
            return
        if self.election is not None:
            self.election.stop(reason)
        if self.task is not None:
            self.task.cancel()


class LeaderSelector(SelectorBase):
    """The asyncio form of :class:`pycurator.LeaderSelector`: the same nodes and queue as
    Curator's ``LeaderSelector``; ``await lead(leadership)`` runs as a task while leading, and
    returning gives leadership up (with ``auto_requeue`` the selector queues again).

    ``lead`` is a coroutine function (or any callable returning an awaitable); a failure of
    ``lead``, an exception or a result that cannot be awaited, is logged and ends the term. An
    error no retry fixes (``NoAuthError``...) ends the term too, logged once; the selector then
    queues again only when :meth:`requeue` is called, whatever ``auto_requeue`` says.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        lead: Callable[[Leadership], Awaitable[None]],
        id: str = "",  # Curator's name for it
        *,
        auto_requeue: bool = False,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        super().__init__(client, path, lead, id, auto_requeue, acl, connection_policy)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._term: _Term | None = None

    @property
    def our_path(self) -> str | None:
        """Our node's full path in the current term, or None."""
        term = self._term
        node = term.election.node if term is not None and term.election is not None else None
        return node.path if node is not None else None

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        term = self._term
        return (
            term is not None
            and term.leading
            and term.leadership is not None
            and not term.leadership.lost_event.is_set()
        )

    async def start(self) -> None:
        """Queue for leadership, ``lead`` to run on the running loop; RuntimeError when
        started before."""
        self._start()
        self._loop = asyncio.get_running_loop()
        self._queue()

    def requeue(self) -> bool:
        """Queue again: True if queued (or, while the last term's node is being deleted, to be
        queued once it is), False when already queued or leading.

        Raises RuntimeError when not started or closed."""
        self._check_started("close() has already been called, or not started")
        return self._queue(asked=True)

    def interrupt_leadership(self) -> None:
        """End the current term: ``lead`` is cancelled, and the node goes once it has ended."""
        term = self._term
        if term is not None and term.leading:
            term.deposed("leadership interrupted")

    async def close(self, timeout: float | None = None) -> bool:
        """Leave the election, and wait until the node is gone: a queued node is deleted now; a
        leader's ``lead`` is cancelled and its node deleted once it has ended. So
        ``await close()`` then ``client.stop()`` never lets the next leader start while ``lead``
        still runs.

        Waits up to ``timeout`` seconds (None: as long as ``lead`` takes to end) and returns
        True once done (the delete handed to the background when the server cannot be
        reached), False when the timeout passed first. Awaited from inside ``lead``, it ends
        the term and returns False at once (``lead`` is cancelled at its next ``await``).

        Raises RuntimeError when not started or already closed, and TypeError or ValueError
        for a timeout that is not a number >= 0 (a huge or infinite one means no limit).
        """
        timeout = check_timeout(timeout)
        self._close()
        term = self._term
        if term is None:
            return True
        term.end("selector closed")
        if term.lead_task is not None and term.lead_task is asyncio.current_task():
            return False
        tasks = {task for task in (term.lead_task, term.task) if task is not None}
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (read as the threaded
        selector reads them, riding through a reconnect)."""
        return await run_async(self.client, participants_steps(self._engine))

    async def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(await self.participants())

    # -- terms --------------------------------------------------------------------------------

    def _queue(self, asked: bool = False) -> bool:
        """Start a term unless one is under way; ``asked`` by :meth:`requeue`, one that is
        ending queues again once it has ended."""
        loop = self._loop
        if self._term is not None:
            return asked and self._term.requeue_when_over(self.auto_requeue)
        if self._state is not Lifecycle.STARTED or loop is None:
            return False
        term = self._term = _Term()
        term.election = self._election(
            lambda node, monitor: self._elected(term, node, monitor), term.deposed
        )
        term.task = loop.create_task(run_async(self.client, term.election.steps()))
        term.task.add_done_callback(log_failure)
        term.task.add_done_callback(lambda task: self._over(term, task))
        return True

    def _elected(self, term: _Term, node: HeldNode, monitor: HoldMonitor) -> None:
        """Our node leads (called by the term's steps, on the loop): run ``lead``."""
        if self._term is not term or self._state is not Lifecycle.STARTED or self._loop is None:
            return  # closed meanwhile: the steps end and delete the node
        term.leadership = Leadership(self.path, node, monitor)
        term.lead_task = self._loop.create_task(self._run_lead(term, term.leadership))

    async def _run_lead(self, term: _Term, leadership: Leadership) -> None:
        try:
            outcome = self._lead(leadership)
            if not inspect.isawaitable(outcome):
                raise TypeError(
                    "lead must return an awaitable (be an async def function), not"
                    f" {type(outcome).__name__}"
                )
            await outcome
        except asyncio.CancelledError:
            if not leadership.lost_event.is_set():
                raise  # not the term's end (the loop shutting down, say): let it through
        except Exception:
            log.exception("lead() of the leader selector on %s failed", self.path)
        finally:
            leadership._end("leadership given up")
            term.ending = True
            if term.election is not None:
                term.election.stop("leadership given up")  # the steps end: the node goes

    def _over(self, term: _Term, task: asyncio.Task[str]) -> None:
        """A term's steps have ended (its node deleted): queue again if asked to."""
        if self._term is term:
            self._term = None
        ended_by = None if task.cancelled() or task.exception() else task.result()
        if term.queues_again(self.auto_requeue) and ended_by not in (None, CLIENT_STOPPED):
            self._queue()


__all__ = ["LeaderSelector", "Leadership"]
