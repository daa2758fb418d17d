"""The asyncio leader selector: the threaded :class:`pycurator.LeaderSelector`'s election, with
``lead`` a coroutine run on the event loop.

While a selector leads, one worker of the client's handler follows its term (as the threaded
selector's does) and the ``lead`` coroutine runs as a task on the loop. When the term ends
(leadership lost, :meth:`LeaderSelector.interrupt_leadership`, or the selector closed), the
task is cancelled: unlike a thread, a coroutine can be interrupted, at its next ``await``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from .._errors import LockLostError
from .._leader import Participant
from .._monitor import ConnectionPolicy
from .._selector import LeaderSelector as _Selector
from .._selector import Leadership as _Leadership
from ._runner import run_async

log = logging.getLogger("pycurator")

#: How often the term's worker looks for the end of the term or of ``lead``.
_POLL = 0.05


class Leadership:
    """One term of leadership, as ``lead`` receives it: :attr:`lost_event` (an
    :class:`asyncio.Event`) is set when the term ends, and ``lead`` is cancelled then."""

    def __init__(self, term: _Leadership) -> None:
        self._term = term
        self.lost_event = asyncio.Event()

    @property
    def path(self) -> str:
        return self._term.path

    @property
    def node_path(self) -> str:
        return self._term.node_path

    @property
    def fencing_token(self) -> int:
        """Our node's creation zxid: it grows with every new leader of this path."""
        return self._term.fencing_token

    async def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now."""
        if self._term.lost_event.is_set():
            return False
        return await run_async(self._term._monitor.client, self._term._monitor.confirm_steps())

    async def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`."""
        if not await self.is_held():
            raise LockLostError(self.path, self._term.reason or self._term._monitor.reason)

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists (``aio.commit`` it)."""
        return self._term.guarded_transaction()

    def __repr__(self) -> str:
        return f"aio.Leadership({self.node_path!r}, token={self.fencing_token})"


class LeaderSelector:
    """The asyncio form of :class:`pycurator.LeaderSelector`: the same nodes and queue as
    Curator's ``LeaderSelector``; ``await lead(leadership)`` runs while leading, and returning
    gives leadership up (with ``auto_requeue`` the selector queues again)."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        lead: Callable[[Leadership], Awaitable[None]],
        id: str = "",
        *,
        auto_requeue: bool = False,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        if not callable(lead):
            raise TypeError(f"lead must be callable, not {type(lead).__name__}")
        self._lead = lead
        self._loop: asyncio.AbstractEventLoop | None = None
        self._selector = _Selector(
            client,
            path,
            self._follow_term,
            id,
            auto_requeue=auto_requeue,
            acl=acl,
            connection_policy=connection_policy,
        )

    @property
    def path(self) -> str:
        return self._selector.path

    @property
    def id(self) -> str:
        return self._selector.id

    @property
    def our_path(self) -> str | None:
        return self._selector.our_path

    @property
    def auto_requeue(self) -> bool:
        return self._selector.auto_requeue

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        return self._selector.has_leadership()

    async def start(self) -> None:
        """Queue for leadership, ``lead`` to run on the running loop; RuntimeError when
        started before."""
        self._loop = asyncio.get_running_loop()
        self._selector.start()

    def requeue(self) -> bool:
        """Queue again: True if queued, False when already queued or leading."""
        return self._selector.requeue()

    def interrupt_leadership(self) -> None:
        """End the current term: ``lead`` is cancelled."""
        self._selector.interrupt_leadership()

    async def close(self) -> None:
        """Leave the election: a waiting node is deleted, a leader's ``lead`` is cancelled and
        its node deleted once it has ended."""
        await asyncio.get_running_loop().run_in_executor(None, self._selector.close)

    async def participants(self) -> list[Participant]:
        return await asyncio.get_running_loop().run_in_executor(None, self._selector.participants)

    async def leader(self) -> Participant:
        return await asyncio.get_running_loop().run_in_executor(None, self._selector.leader)

    def _follow_term(self, term: _Leadership) -> None:
        """The threaded selector's ``lead``, on its worker: run the coroutine on the loop until
        it returns or the term ends (then cancel it and wait for it to end)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        ended = threading.Event()
        leadership = Leadership(term)

        async def run_lead() -> None:
            try:
                lead = asyncio.ensure_future(self._lead(leadership))
                lost = asyncio.ensure_future(leadership.lost_event.wait())
                await asyncio.wait({lead, lost}, return_when=asyncio.FIRST_COMPLETED)
                lost.cancel()
                if not lead.done():
                    lead.cancel()  # the term ended: interrupt lead at its next await
                await asyncio.wait({lead})
                if not lead.cancelled() and lead.exception() is not None:
                    log.error(
                        "lead() of the leader selector on %s failed",
                        self.path,
                        exc_info=lead.exception(),
                    )
            finally:
                ended.set()

        asyncio.run_coroutine_threadsafe(run_lead(), loop)
        told = False
        while not ended.wait(_POLL):
            if loop.is_closed():
                return
            if term.lost_event.is_set() and not told:
                told = True
                loop.call_soon_threadsafe(leadership.lost_event.set)


__all__ = ["LeaderSelector", "Leadership"]
