"""The asyncio leader latch: the threaded :class:`pycurator.LeaderLatch` (whose election runs
on one worker of the client's handler per latch), awaited from tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient

from .._deadline import Deadline
from .._engine import check_timeout
from .._leader import CloseMode, Participant
from .._leader import LeaderLatch as _Latch
from .._monitor import ConnectionPolicy
from ._runner import LoopSignal, loop_spawner

#: How often a waiting task looks at a latch's error and state besides being woken.
_POLL = 0.5


class _Wake:
    def __init__(self, signal: LoopSignal) -> None:
        self._signal = signal

    def is_leader(self) -> None:
        self._signal.set()

    def not_leader(self) -> None:
        self._signal.set()


class LeaderLatch:
    """The asyncio form of :class:`pycurator.LeaderLatch`: ``await latch.wait()`` for
    leadership; the same nodes and election as Curator's ``LeaderLatch``."""

    def __init__(
        self,
        client: KazooClient,
        path: str,
        id: str = "",
        *,
        close_mode: CloseMode = CloseMode.SILENT,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        self._latch = _Latch(
            client,
            path,
            id,
            close_mode=close_mode,
            acl=acl,
            connection_policy=connection_policy,
        )
        self.lost_event = asyncio.Event()

    @property
    def path(self) -> str:
        return self._latch.path

    @property
    def id(self) -> str:
        return self._latch.id

    @property
    def our_path(self) -> str | None:
        return self._latch.our_path

    @property
    def fencing_token(self) -> int:
        return self._latch.fencing_token

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        return self._latch.has_leadership()

    async def start(self) -> None:
        """Join the election (in the background); RuntimeError when started before."""
        spawn = loop_spawner()
        self._latch.on_lost(lambda _latch, _reason: spawn(self.lost_event.set))
        self._latch.start()

    async def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: our node is deleted and watches dropped."""
        await asyncio.get_running_loop().run_in_executor(None, self._latch.close, close_mode)

    async def __aenter__(self) -> LeaderLatch:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for leadership: True once leading,
        False on timeout or when the latch is closed meanwhile (as the threaded ``wait``)."""
        deadline = Deadline(check_timeout(timeout))
        signal = LoopSignal(asyncio.get_running_loop())
        wake = _Wake(signal)
        self._latch.add_listener(wake)
        first = True
        try:
            while True:
                signal.clear()
                try:
                    leading = self._latch.wait(0)
                except RuntimeError:
                    if first:
                        raise  # not started, or closed
                    return False  # closed while we waited
                first = False
                if leading:
                    self.lost_event.clear()
                    return True
                remaining = deadline.remaining()
                if remaining == 0:
                    return False
                await signal.wait(_POLL if remaining is None else min(_POLL, remaining))
        finally:
            self._latch.remove_listener(wake)

    async def participants(self) -> list[Participant]:
        return await asyncio.get_running_loop().run_in_executor(None, self._latch.participants)

    async def leader(self) -> Participant:
        return await asyncio.get_running_loop().run_in_executor(None, self._latch.leader)

    def __repr__(self) -> str:
        return f"aio.LeaderLatch({self.path!r})"
