"""Following a held node, written once for every recipe: the lock, the lease, the mutexes.

:class:`Hold` is one hold: its node (the fencing token), the :class:`HoldMonitor` that
follows it, ``is_held`` and ``check`` as steps, and a guarded transaction. :class:`LossNotice`
is how a recipe tells its user: an event set while a hold is not ours, and ``on_lost``
callbacks.
:class:`ReentrantHolds` keeps a re-entrant lock's holds per unit (thread, greenlet, or asyncio
task). The threaded and the asyncio recipes share all three.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .._protocol.checks import ConnectionPolicy
from .._protocol.errors import LockLostError, LockNotOwnedError
from .._protocol.steps import Steps
from .._protocol.transport import Transport
from .hold_monitor import HoldMonitor, HoldState
from .lock_nodes import LockNode
from .reports import HoldReport

if TYPE_CHECKING:
    from kazoo.client import TransactionRequest

#: A node an acquire holds, and the report of its hold.
Acquired = tuple[LockNode, HoldReport]


class LossNotice:
    """A recipe's notice of lost holds: ``lost_event`` (any object with ``set()`` and
    ``clear()``, by default a handler event) and callbacks ``callback(subject, reason)``, each
    run through ``spawn`` (by default in order on the handler's worker pool, see
    :class:`~pycurator._client.runtime.HandlerServices`).

    The default event and queue are made on first use, not with the notice: a process holding
    ten thousand locks nobody waits on or listens to would otherwise keep an event (a condition
    and its waiters' deque) and a queue (another deque) per lock, two thirds of a hold's memory.
    """

    __slots__ = ("_callbacks", "_event", "_lost", "_spawn", "_transport")

    def __init__(
        self,
        transport: Transport,
        event: Any = None,
        spawn: Callable[..., Any] | None = None,
    ) -> None:
        self._transport = transport
        self._event = event
        self._lost = False
        self._spawn = spawn
        self._callbacks: list[Callable[[Any, str], None]] = []

    @property
    def lost_event(self) -> Any:
        """The event set while a hold is not ours (made, in the current state, when first
        asked for)."""
        event = self._event
        if event is None:
            with self._transport.process_lock():  # against a change of state: both rare and short
                event = self._event
                if event is None:
                    event = self._transport.event_object()
                    if self._lost:
                        event.set()
                    self._event = event
        return event

    def mark(self, lost: bool) -> None:
        """Set (``lost``) or clear the event, without telling the callbacks."""
        with self._transport.process_lock():
            self._lost = lost
            event = self._event
            if event is not None:
                if lost:
                    event.set()
                else:
                    event.clear()

    def add(self, callback: Callable[[Any, str], None]) -> None:
        """Run ``callback(subject, reason)`` each time a hold stops being held."""
        with self._transport.process_lock():
            if self._spawn is None:
                self._spawn = self._transport.serial_queue().post
            self._callbacks.append(callback)

    def changed(self, subject: object, state: HoldState, reason: str) -> None:
        """A hold moved to ``state`` (from a :class:`HoldMonitor`)."""
        lost = state is not HoldState.HELD
        self.mark(lost)
        if lost and self._spawn is not None:
            for callback in list(self._callbacks):
                self._spawn(callback, subject, reason)


class Hold:
    """One held node, followed from acquire until :meth:`close` (see
    :mod:`pycurator._recipes.hold_monitor`).

    ``on_change(state, reason)`` hears each move between held and not held; ``report`` tells
    the hold's story (:mod:`pycurator._recipes.reports`).
    """

    __slots__ = ("monitor", "node", "transport")

    def __init__(
        self,
        transport: Transport,
        node: LockNode,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        report: HoldReport,
    ) -> None:
        self.transport = transport
        self.node = node
        self.monitor = HoldMonitor(transport, node.path, policy, on_change, node.session_id, report)

    @classmethod
    def follow_steps(
        cls,
        transport: Transport,
        node: LockNode,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        report: HoldReport,
    ) -> Steps[Hold]:
        """The hold, made by steps (the constructor runs the same on ``transport``; see
        :meth:`HoldMonitor.follow_steps`)."""
        hold = cls.__new__(cls)
        hold.transport = transport
        hold.node = node
        hold.monitor = yield from HoldMonitor.follow_steps(
            transport, node.path, policy, on_change, node.session_id, report
        )
        return hold

    @property
    def path(self) -> str:
        return self.node.path

    @property
    def fencing_token(self) -> int:
        """The node's creation zxid: it grows with every new node under the same parent."""
        return self.node.czxid

    @property
    def reason(self) -> str:
        """Why the hold is not held, when it is not."""
        return self.monitor.reason

    def is_held_steps(self) -> Steps[bool]:
        """Whether the node is known to be ours now (one request, once, to set its watch)."""
        return self.monitor.confirm_steps()

    def check_steps(self) -> Steps[None]:
        """Raise :class:`LockLostError` unless :meth:`is_held_steps`."""
        if not (yield from self.monitor.confirm_steps()):
            raise LockLostError(self.node.path, self.monitor.reason)

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that the node exists: ZooKeeper applies all of
        it or nothing, so a holder whose node is gone cannot commit."""
        return cast("TransactionRequest", self.transport.guarded_transaction(self.node.path))

    def close(self) -> None:
        """Stop following the node (on release): no request; its watch is spent when the node
        is deleted."""
        self.monitor.close()


@dataclass(slots=True)
class _Entry:
    hold: Hold
    count: int = 1


class ReentrantHolds:
    """A re-entrant lock's holds, one per unit (whatever ``unit()`` returns: a thread, a
    greenlet, an asyncio task); re-entry only counts. Each method acts for ``unit`` when given,
    else for the calling unit.

    With ``finished`` (whether a unit has ended), a hold whose unit has ended may be released
    by any unit: it is then nobody's, and must not stay held for want of an owner.
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        unit: Callable[[], Hashable],
        unit_name: str = "thread",
        finished: Callable[[Hashable], bool] | None = None,
    ) -> None:
        self._path = path
        self.unit = unit
        self._unit_name = unit_name
        self._finished = finished
        self._entries: dict[Hashable, _Entry] = {}
        self._guard = transport.lock_object()

    def enter(self, unit: Hashable | None = None) -> bool:
        """Count one more hold if the unit holds already; whether it did."""
        with self._guard:
            entry = self._entries.get(self.unit() if unit is None else unit)
            if entry is None:
                return False
            entry.count += 1
            return True

    def add(self, hold: Hold, unit: Hashable | None = None) -> None:
        """The unit now holds ``hold``."""
        with self._guard:
            self._entries[self.unit() if unit is None else unit] = _Entry(hold)

    def leave(self, unit: Hashable | None = None) -> Hold | None:
        """Count one hold of the unit off; its node once the last is gone, else None.

        Raises :class:`LockNotOwnedError` when the unit does not hold the lock (and no hold
        of a finished unit is left to release).
        """
        unit = self.unit() if unit is None else unit
        with self._guard:
            if unit not in self._entries and self._finished is not None:
                unit = next((u for u in self._entries if self._finished(u)), unit)
            entry = self._entries.get(unit)
            if entry is None:
                raise LockNotOwnedError(self._path)
            entry.count -= 1
            if entry.count > 0:
                return None
            del self._entries[unit]
        entry.hold.close()
        return entry.hold

    def current(self, unit: Hashable | None = None) -> Hold | None:
        """The unit's hold, or None."""
        with self._guard:
            entry = self._entries.get(self.unit() if unit is None else unit)
            return entry.hold if entry is not None else None

    def required(self, unit: Hashable | None = None) -> Hold:
        """The unit's hold; :class:`LockLostError` if it holds none."""
        hold = self.current(unit)
        if hold is None:
            raise LockLostError(self._path, f"not acquired by this {self._unit_name}")
        return hold

    def any(self) -> bool:
        """Whether any unit holds."""
        with self._guard:
            return bool(self._entries)

    def owned(self, unit: Hashable | None = None) -> bool:
        """Whether the unit holds."""
        with self._guard:
            return (self.unit() if unit is None else unit) in self._entries


__all__ = ["Acquired", "Hold", "LossNotice", "ReentrantHolds"]
