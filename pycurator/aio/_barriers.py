"""The asyncio barriers: Curator's ``DistributedBarrier`` and ``DistributedDoubleBarrier`` on
the same steps as the threaded ones (:mod:`pycurator._recipes.barriers`), awaited; a cancelled
wait leaves no member node and no watch behind."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._cores.barriers import BarrierFace, DoubleBarrierCore, DoubleBarrierFace
from .._recipes.barriers import BarrierSteps
from ._runner import run_async, transport_of


class DistributedBarrier(BarrierFace):
    """The asyncio form of :class:`pycurator.DistributedBarrier`."""

    def __init__(self, client: KazooClient, path: str) -> None:
        self._steps = BarrierSteps(transport_of(client), path)

    async def set_barrier(self) -> None:
        """Make the barrier node; set already: nothing."""
        await run_async(self._steps.transport, self._steps.set_steps())

    async def remove_barrier(self) -> None:
        """Delete the barrier node; gone already: nothing."""
        await run_async(self._steps.transport, self._steps.remove_steps())

    async def wait_on_barrier(self, timeout: float | None = None) -> bool:
        """Wait until the barrier node is gone: True then, False after ``timeout`` seconds."""
        return await run_async(self._steps.transport, self._steps.wait_steps(timeout))

    def __repr__(self) -> str:
        return f"aio.DistributedBarrier({self.path!r})"


class DistributedDoubleBarrier(DoubleBarrierFace):
    """The asyncio form of :class:`pycurator.DistributedDoubleBarrier`."""

    def __init__(self, client: KazooClient, path: str, member_qty: int) -> None:
        self._core = DoubleBarrierCore(transport_of(client), path, member_qty)

    async def enter(self, timeout: float | None = None) -> bool:
        """Enter and wait for ``member_qty`` members: True then, False after ``timeout``."""
        return await run_async(self._core.steps.transport, self._core.enter_steps(timeout))

    async def leave(self, timeout: float | None = None) -> bool:
        """Leave and wait for every member to leave: True then, False after ``timeout``."""
        return await run_async(self._core.steps.transport, self._core.leave_steps(timeout))

    def __repr__(self) -> str:
        return f"aio.DistributedDoubleBarrier({self.path!r}, {self.member_qty})"
