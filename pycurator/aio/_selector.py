"""The asyncio leader selector: each term's election steps (:mod:`pycurator._recipes.election`) run
as a task on the event loop, and ``lead`` as another; no thread, no executor, no polling.

When a term ends (leadership lost, :meth:`LeaderSelector.interrupt_leadership`, or the selector
closed), the ``lead`` task is cancelled: unlike a thread, a coroutine can be interrupted, at its
next ``await``. The node is deleted once ``lead`` has ended, as Curator releases its mutex once
``takeLeadership`` returns.

The selector's rules are kept by the :class:`~pycurator._cores.selector.SelectorCore` it holds,
as the threaded selector (:mod:`pycurator._threads.selector`) holds one; this module keeps only
how a term's steps and ``lead`` run on the loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from .._cores.faces import LeadershipFace, SelectorFace
from .._cores.selector import LeadershipCore, SelectorCore, Term, ending_of
from .._protocol.checks import ConnectionPolicy, check_timeout
from .._recipes.hold_monitor import HoldMonitor
from .._recipes.lock_nodes import LockNode
from .._recipes.participants import Participant, leader_of
from ._runner import log_failure, run_async, transport_of

log = logging.getLogger("pycurator")


class Leadership(LeadershipFace):
    """One term of leadership, as ``lead`` receives it: :attr:`lost_event` (an
    :class:`asyncio.Event`) is set when the term ends, and ``lead`` is cancelled then."""

    def __init__(self, path: str, node: LockNode, monitor: HoldMonitor) -> None:
        self.lost_event = asyncio.Event()
        self._core = LeadershipCore(path, node, monitor, self.lost_event)

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists, so a leader whose node
        has gone (with its session) cannot commit."""
        return self._core.guarded_transaction()

    async def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now."""
        if self._core.ended:
            return False
        return await run_async(self._core.monitor.transport, self._core.confirm_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        if not await self.is_held():
            raise self._core.lost_error()

    def __repr__(self) -> str:
        return self._core.repr_as("aio.Leadership")


class _Handle:
    """A term's asyncio side: the task that runs its steps, and while it leads, ``lead``'s."""

    def __init__(self, task: asyncio.Task[str]) -> None:
        self.task = task
        self.lead_task: asyncio.Task[None] | None = None

    def cancel_steps(self) -> None:
        self.task.cancel()

    def interrupt_lead(self) -> None:
        if self.lead_task is not None:
            self.lead_task.cancel()


class LeaderSelector(SelectorFace[_Handle]):
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
        self._core: SelectorCore[_Handle] = SelectorCore(
            transport_of(client), path, lead, id, auto_requeue, acl, connection_policy
        )
        self._loop: asyncio.AbstractEventLoop | None = None

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        return self._core.has_leadership()

    async def start(self) -> None:
        """Queue for leadership, ``lead`` to run on the running loop; RuntimeError when
        started before."""
        self._core.start()
        self._loop = asyncio.get_running_loop()
        self._queue()

    def requeue(self) -> bool:
        """Queue again: True if queued (or, while the last term's node is being deleted, to be
        queued once it is), False when already queued or leading.

        Raises RuntimeError when not started or closed."""
        self._core.check_started("close() has already been called, or not started")
        return self._queue(asked=True)

    def interrupt_leadership(self) -> None:
        """End the current term: ``lead`` is cancelled, and the node goes once it has ended."""
        self._core.interrupt()

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
        term = self._core.close()
        run = term.run if term is not None else None
        if run is None:
            return True
        if run.lead_task is not None and run.lead_task is asyncio.current_task():
            return False
        tasks: set[asyncio.Task[Any]] = {run.task}
        if run.lead_task is not None:
            tasks.add(run.lead_task)
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (read as the threaded
        selector reads them, riding through a reconnect)."""
        return await run_async(self._core.transport, self._core.participants_steps())

    async def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(await self.participants())

    def __repr__(self) -> str:
        return self._core.repr_as("aio.LeaderSelector")

    # -- terms: the steps and ``lead`` as tasks on the loop ---------------------------------

    def _queue(self, asked: bool = False) -> bool:
        """Start a term unless one is under way (see SelectorCore.queue)."""
        if self._loop is None:
            return False
        return self._core.queue(self._begin, self._elected, asked)

    def _begin(self, term: Term[_Handle]) -> _Handle:
        assert self._loop is not None
        task = self._loop.create_task(run_async(self._core.transport, term.election.steps()))
        task.add_done_callback(log_failure)
        task.add_done_callback(functools.partial(self._over, term))
        return _Handle(task)

    def _elected(self, term: Term[_Handle], node: LockNode, monitor: HoldMonitor) -> None:
        """Our node leads (called by the term's steps, on the loop): run ``lead``."""
        leadership = Leadership(self.path, node, monitor)
        if self._loop is None or term.run is None or not self._core.elected(term, leadership._core):
            return  # closed meanwhile: the steps end and delete the node
        term.run.lead_task = self._loop.create_task(self._run_lead(term, leadership))

    async def _run_lead(self, term: Term[_Handle], leadership: Leadership) -> None:
        try:
            outcome = self._core.lead(leadership)
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
            self._core.lead_ended(term)  # the steps end: the node goes

    def _over(self, term: Term[_Handle], task: asyncio.Task[str]) -> None:
        """A term's steps have ended (its node deleted): queue again if the rule says so."""
        if task.cancelled():
            ending = ending_of(None, asyncio.CancelledError())
        else:
            error = task.exception()
            ending = ending_of(None if error is not None else task.result(), error)
        if self._core.over(term, ending):
            self._queue()


__all__ = ["LeaderSelector", "Leadership"]
