"""``DistributedBarrier`` and ``DistributedDoubleBarrier``: Curator's barriers, for threads, on
Curator's nodes (:mod:`pycurator._recipes.barriers`): a barrier is one node that waiters wait to
see gone; a double barrier's members are ephemeral ``PATH/<UUID>`` nodes, and ``PATH/ready`` is
made once ``member_qty`` are in. Java's and Python's members enter and leave together.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.barriers import BarrierFace, DoubleBarrierCore, DoubleBarrierFace
from .._recipes.barriers import BarrierSteps
from .runner import run


class DistributedBarrier(BarrierFace):
    """A barrier shared with Curator's ``DistributedBarrier``: while the node at ``path``
    exists, waiters wait; anyone may set or remove it."""

    def __init__(self, client: KazooClient, path: str) -> None:
        self._steps = BarrierSteps(transport_of(client), path)

    def set_barrier(self) -> None:
        """Make the barrier node (Curator's default data, container parents); set already:
        nothing."""
        run(self._steps.transport, self._steps.set_steps())

    def remove_barrier(self) -> None:
        """Delete the barrier node; gone already: nothing."""
        run(self._steps.transport, self._steps.remove_steps())

    def wait_on_barrier(self, timeout: float | None = None) -> bool:
        """Wait until the barrier node is gone: True then, False after ``timeout`` seconds
        (None: for ever), whatever the connection does."""
        return run(self._steps.transport, self._steps.wait_steps(timeout))

    def __repr__(self) -> str:
        return f"DistributedBarrier({self.path!r})"


class DistributedDoubleBarrier(DoubleBarrierFace):
    """A member of a double barrier shared with Curator's ``DistributedDoubleBarrier``: members
    wait in :meth:`enter` until ``member_qty`` have entered (a threshold, not a limit), and in
    :meth:`leave` until every member has left. Nobody passes before ``member_qty`` have
    entered, whatever wakes it (unlike Curator before GH-1290's fix). A member enters, then
    leaves, one call at a time."""

    def __init__(self, client: KazooClient, path: str, member_qty: int) -> None:
        self._core = DoubleBarrierCore(transport_of(client), path, member_qty)

    def enter(self, timeout: float | None = None) -> bool:
        """Enter and wait for ``member_qty`` members: True then; False after ``timeout``
        seconds (None: for ever), whatever the connection does, our node deleted again (Curator
        keeps it). RuntimeError when entered already."""
        return run(self._core.steps.transport, self._core.enter_steps(timeout))

    def leave(self, timeout: float | None = None) -> bool:
        """Leave and wait for every member to leave: True then; False after ``timeout`` seconds,
        our node deleted all the same. RuntimeError unless entered."""
        return run(self._core.steps.transport, self._core.leave_steps(timeout))

    def __repr__(self) -> str:
        return f"DistributedDoubleBarrier({self.path!r}, {self.member_qty})"


__all__ = ["DistributedBarrier", "DistributedDoubleBarrier"]
