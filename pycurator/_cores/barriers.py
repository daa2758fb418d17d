"""The cores of Curator's barriers, held by both front ends: a double barrier member's state
(entered or not), over the barriers' protocol (:mod:`pycurator._recipes.barriers`); and their
faces."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._recipes.barriers import BarrierSteps, DoubleBarrierSteps

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class DoubleBarrierCore:
    """One member of a double barrier, whatever waits on it: it enters, then leaves, in turn
    (RuntimeError for an ``enter`` while entered or a ``leave`` while not), one call at a
    time."""

    def __init__(self, transport: Transport, path: str, member_qty: int) -> None:
        self.steps = DoubleBarrierSteps(transport, path, member_qty)
        self.entered = False
        self._busy = False

    def enter_steps(self, timeout: float | None) -> Steps[bool]:
        if self.entered:
            raise RuntimeError(f"entered already (leave first): {self.steps.our_path}")
        return self._entering(timeout)

    def _entering(self, timeout: float | None) -> Steps[bool]:
        self._claim()
        try:
            self.entered = yield from self.steps.enter_steps(timeout)
        finally:
            self._busy = False
        return self.entered

    def leave_steps(self, timeout: float | None) -> Steps[bool]:
        if not self.entered:
            raise RuntimeError(f"not entered: {self.steps.our_path}")
        return self._leaving(timeout)

    def _leaving(self, timeout: float | None) -> Steps[bool]:
        self._claim()
        try:
            left: bool = yield from self.steps.leave_steps(timeout)
        finally:
            self.entered = self._busy = False  # our node is gone, whatever happened
        return left

    def _claim(self) -> None:
        if self._busy:
            raise RuntimeError(f"an enter or a leave is under way: {self.steps.our_path}")
        self._busy = True


class BarrierFace:
    """A barrier over its steps."""

    _steps: BarrierSteps

    @property
    def path(self) -> str:
        """The barrier node's path."""
        return self._steps.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return cast("KazooClient", self._steps.transport.client)


class DoubleBarrierFace:
    """A double barrier member over a :class:`DoubleBarrierCore`."""

    _core: DoubleBarrierCore

    @property
    def path(self) -> str:
        """The barrier's path (its members' parent)."""
        return self._core.steps.path

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        return cast("KazooClient", self._core.steps.transport.client)

    @property
    def member_qty(self) -> int:
        """How many members must enter before any passes (a threshold: more may enter)."""
        return self._core.steps.member_qty

    @property
    def our_path(self) -> str:
        """This member's node, ``path/<UUID>`` (drawn once, as Curator draws it)."""
        return self._core.steps.our_path

    @property
    def entered(self) -> bool:
        """Whether this member has entered and not left yet."""
        return self._core.entered


__all__ = ["BarrierFace", "DoubleBarrierCore", "DoubleBarrierFace"]
