"""The lock core both front ends compose, over the engines of Curator's mutex and read/write lock
(:mod:`pycurator._recipes.lock_engine`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from .._protocol import wire
from .._protocol.checks import ConnectionPolicy, check_policy
from .._protocol.drivers import Driver
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .._recipes.hold import Acquired, Hold, LossNotice, ReentrantHolds
from .._recipes.lock_engine import LockEngine
from .._recipes.reports import Reporter

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class LockCore:
    """One re-entrant lock, whatever waits on it (a blocked thread or an awaiting task).

    It holds the lock's ``engine`` (:meth:`make_revocable` swaps it for a revocable copy), its
    connection ``policy``, its ``holds`` per unit (``unit()`` names the calling one, see
    :class:`~pycurator._recipes.hold.ReentrantHolds`) and its ``report`` (waits and holds reported
    as ``recipe``, see :mod:`pycurator._recipes.reports`). Each front end's lock is a shell over one
    core.
    """

    __slots__ = ("engine", "holds", "policy", "report")

    def __init__(
        self,
        engine: LockEngine,
        recipe: str,
        connection_policy: ConnectionPolicy,
        unit: Callable[[], Hashable],
        unit_name: str = "thread",
        finished: Callable[[Hashable], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.report = Reporter(recipe, engine.base_path)
        self.policy: ConnectionPolicy = check_policy(connection_policy)
        self.holds = ReentrantHolds(engine.transport, engine.base_path, unit, unit_name, finished)

    @property
    def path(self) -> str:
        """The lock path, as given."""
        return self.engine.base_path

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the lock."""
        return self.engine.client

    @property
    def transport(self) -> Transport:
        """The transport of the lock's client: what its steps run on."""
        return self.engine.transport

    def acquire_steps(
        self, timeout: float | None, driver: Driver | None = None
    ) -> Steps[Acquired | None]:
        """The engine's acquire, reported as one wait: the node held and its hold's report, or
        None on timeout (``driver``: this acquire's, if not the engine's)."""
        return self.report.wait_steps(self.engine.acquire_steps(timeout, driver))

    def follow(
        self, held: Acquired, notice: LossNotice, subject: object, unit: Hashable | None = None
    ) -> None:
        """``unit`` (by default the calling one) now holds ``held``'s node: clear ``notice``'s
        event, follow the node, and tell ``notice`` of each change, naming ``subject``."""
        node, report = held
        notice.mark(False)
        hold = Hold(
            self.engine.transport,
            node,
            self.policy,
            lambda state, reason: notice.changed(subject, state, reason),
            report,
        )
        self.holds.add(hold, unit)

    def lock_path(self, unit: Hashable | None = None) -> str | None:
        """The node ``unit`` (by default the calling one) holds, or None."""
        hold = self.holds.current(unit)
        return hold.path if hold is not None else None

    def participant_steps(self, own_kind_only: bool = False) -> Steps[list[str]]:
        """Full paths of the nodes queued on the lock path, holder first (any language); with
        ``own_kind_only``, only the nodes named like the engine's own (one read/write side's).
        A read that rides through a reconnect."""
        engine = self.engine
        children = yield from engine.sorted_children_steps()
        nodes = wire.full_paths(engine.base_path, children)
        if own_kind_only:
            token = engine.driver.token
            nodes = [node for node in nodes if token in wire.node_name(node)]
        return nodes

    def make_revocable(self, on_revoke: Callable[[], None]) -> None:
        """Make the next acquires' nodes revocable: ``on_revoke()`` runs when another client
        writes Curator's revocation message to our node."""
        self.engine = self.engine.revocable(on_revoke)


__all__ = ["LockCore"]
