"""The asyncio forms of :mod:`pycurator.zkrecipes`: ZooKeeper's ``WriteLock`` and
``LeaderElectionSupport``, on the same cores as the threaded forms, awaited instead of
blocked on (locks owned per asyncio task)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kazoo.client import KazooClient

from .._cores.faces import ElectionFace
from .._cores.zkrecipes import election_core
from .._recipes.zkrecipes import leader_steps, write_lock_engine
from ._latch import LatchShell
from ._lock import AsyncReentrantLock
from ._runner import run_async, transport_of


class WriteLock(AsyncReentrantLock):
    """The asyncio form of :class:`pycurator.zkrecipes.WriteLock`: the same nodes and order
    as ZooKeeper's ``WriteLock``; re-entrant per task."""

    def __init__(self, client: KazooClient, dir: str, *, acl: Sequence[Any] | None = None) -> None:
        super().__init__(write_lock_engine(transport_of(client), dir, acl), recipe="write")

    def make_revocable(self, listener: Callable[[Any], Any]) -> NoReturn:
        """Not offered: revocation would empty our node, whose data Java writes as 0x12 0x34."""
        raise TypeError("ZooKeeper's WriteLock has no revocation")


class LeaderElection(ElectionFace):
    """The asyncio form of :class:`pycurator.zkrecipes.LeaderElection`: the same offers as
    ZooKeeper's ``LeaderElectionSupport``; ``await election.wait()`` for leadership.

    The election runs as a task on the loop that started it; :meth:`on_lost` callbacks run on
    that loop, and :attr:`lost_event` is an :class:`asyncio.Event`.
    """

    def __init__(self, client: KazooClient, root: str, host_name: str) -> None:
        self._shell = LatchShell(election_core(transport_of(client), root, host_name))
        self._core = self._shell.core
        #: Set when leadership ends, cleared when it begins.
        self.lost_event = self._shell.lost_event

    async def start(self) -> None:
        """Make an offer and take part (in the background, on the running loop)."""
        self._shell.start(self)

    async def close(self) -> None:
        """Leave the election, as the threaded ``close()``; returns once done."""
        await self._shell.close(None)

    async def __aenter__(self) -> LeaderElection:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._core.started:
            await self.close()

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        return self._core.has_leadership()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for leadership: True once leading,
        False on timeout or when closed meanwhile; the errors of the threaded ``wait``."""
        return await self._shell.wait(timeout)

    async def leader(self) -> str | None:
        """The leader's host name (the first offer's data), or None when there is no offer."""
        return await run_async(self._core.transport, leader_steps(self._core.engine))

    def on_lost(self, callback: Callable[[LeaderElection, str], Any]) -> None:
        """Run ``callback(election, reason)`` on the loop each time leadership ends (also on
        close); an awaitable it returns runs as a task."""
        self._core.add_lost_callback(callback)

    async def check(self) -> None:
        """Raise :class:`~pycurator.LockLostError` unless we lead and our offer is known to be
        ours now."""
        await run_async(self._core.transport, self._core.check_steps())

    def __repr__(self) -> str:
        return f"aio.LeaderElection({self.root!r}, host_name={self.host_name!r})"


__all__ = ["LeaderElection", "WriteLock"]
