"""``LeaderLatch``: Curator's leader latch, for threads.

A latch is a protected ephemeral-sequential node ``PATH/_c_<uuid>-latch-<seq>`` holding the
participant's id as UTF-8. The first node in queue order leads; every other participant watches
only the node right in front of it. Curator 5.8's rules apply (see
:mod:`pycurator._recipes.election`). What a latch is lives in :mod:`pycurator._cores.latch`, which
the asyncio latch holds too; this shell runs the election on kazoo's callbacks (no thread of its
own) and waits on handler events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from .._client.callback_runner import CallbackRun
from .._client.transport import transport_of
from .._cores.constructors import LatchConstructor
from .._cores.faces import LatchFace
from .._cores.latch import CLOSE_WAIT, CloseMode, LatchCore, LeaderLatchListener
from .._protocol.checks import check_timeout
from .._protocol.deadline import Deadline
from .._protocol.transport import Transport
from .._recipes.participants import Participant, leader_of
from .runner import run


class _Changes:
    """Wakes threads waiting for a latch to change: a waiter takes the event of the next change
    (:meth:`next_event`), made when first asked for, and each change sets it and drops it, so a
    waiter wakes once per change and never spins, and a change nobody waits for makes and sets
    no event (a latch changes four times in a short life)."""

    def __init__(self, new_flag: Callable[[], Any]) -> None:
        self._new_flag = new_flag  # each event is set once
        self._swap = threading.Lock()  # held for the swap only, never across a switch
        self._event: Any = None  # the event of the next change, once a waiter asked for it

    def next_event(self) -> Any:
        """The event the next change sets (set once: see
        :func:`~pycurator._client.concurrency.flag_maker`)."""
        with self._swap:
            event = self._event
            if event is None:
                event = self._event = self._new_flag()
        return event

    def changed(self) -> None:
        with self._swap:
            event, self._event = self._event, None
        if event is not None:
            event.set()


class LatchShell:
    """What the threaded latch shells (``LeaderLatch``, ZooKeeper's ``LeaderElection``) share:
    how they run a :class:`~pycurator._cores.latch.LatchCore`: its election on the callback
    runner (no thread of its own), its news in order on the handler's serial queue, and its
    waits on handler events."""

    def __init__(self, core: LatchCore) -> None:
        self._transport = transport = transport_of(core.client)
        services = transport.services
        self.core = core
        self._notices = services.serial_queue()
        self._changes = _Changes(services.new_flag)
        self._task: CallbackRun | None = None
        #: Set when leadership ends, cleared when it begins (a handler event).
        self.lost_event = core.transport.event_object()

    def start(self, owner: object) -> None:
        """Begin the election for ``owner`` (what listeners are told of); RuntimeError when
        started before."""
        changed = self._changes.changed
        election = self.core.begin(owner, self._notices.post, changed, self.lost_event)
        self._task = self._transport.start(election.steps(), lambda _: changed())

    def close(self, close_mode: CloseMode | None) -> None:
        """End the election and wait (at most :data:`CLOSE_WAIT`) for its node's delete."""
        self.core.finish(close_mode)
        task = self._task
        if task is not None:
            task.cancel()
            task.done.wait(CLOSE_WAIT)
        self.core.closed()

    def wait(self, timeout: float | None) -> bool:
        """Wait for leadership (see :meth:`LeaderLatch.wait`)."""
        timeout = check_timeout(timeout)
        core = self.core
        core.check_waitable()
        deadline = Deadline(timeout)
        while True:
            outcome = core.outcome(self._ended())
            if outcome is not None:
                return outcome
            # the next change's event, then a look again: a change in between is not missed,
            # and a wait that ends with the outcome it waited for makes no event it never uses
            change = self._changes.next_event()
            outcome = core.outcome(self._ended())
            if outcome is not None:
                return outcome
            remaining = deadline.remaining()
            if remaining == 0:
                return False
            change.wait(remaining)

    def _ended(self) -> bool:
        """Whether the election's steps have ended."""
        task = self._task
        return task is not None and task.done.is_set()


class LeaderLatch(LatchConstructor, LatchFace):
    """A participant in a leader election shared with Java Curator's ``LeaderLatch`` on the
    same path: once started, it leads while its node is first in queue order, until closed.

    Leadership follows the node: it ends when the connection is suspended (``standard``
    connection policy) or lost, or when the node is deleted; then :attr:`lost_event` is set,
    ``not_leader()`` and :meth:`on_lost` callbacks run, and the latch queues again by itself.
    An error no retry fixes (``NoAuthError``, ``InvalidACLError``...) ends the latch's part
    instead: it is logged once, the node is deleted, and :meth:`wait` raises it until the
    latch is closed.
    A latch costs no thread: its election runs on kazoo's callbacks, and its listeners run in
    order on a small pool of workers shared by every recipe of the client's handler.
    """

    _shell_class = LatchShell
    _shell: LatchShell

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def start(self) -> None:
        """Join the election: the node is made and watched in the background.

        Raises RuntimeError when started before (Curator: "Cannot be started more than once").
        """
        self._shell.start(self)

    def close(self, close_mode: CloseMode | None = None) -> None:
        """Leave the election: leadership ends, watches are dropped and our node is deleted
        (waiting at most :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then
        in the background). ``close_mode`` overrides the latch's: ``SILENT`` tells no listener,
        ``NOTIFY_LEADER`` calls ``not_leader()`` when we led.

        Raises RuntimeError when not started or already closed.
        """
        self._shell.close(close_mode)

    def __enter__(self) -> LeaderLatch:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._core.started:
            self.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None, or a huge one: forever) for leadership: True
        once leading, False on timeout or when the latch is closed meanwhile.

        Raises RuntimeError when the latch has not been started or is closed; the server's
        error no retry fixes (``NoAuthError``, ``NoChildrenForEphemeralsError``...) once it has
        ended the latch's part in the election (its node deleted: close the latch);
        ``ConnectionClosedError`` once the client is stopped (as a lock's ``acquire`` does);
        and any other error of the server while it keeps the latch from joining the election
        (the latch tries again meanwhile).
        """
        return self._shell.wait(timeout)

    def add_listener(self, listener: LeaderLatchListener) -> None:
        """Call ``listener.is_leader()`` and ``listener.not_leader()`` on each change of
        leadership, in order, on a worker of the client's handler."""
        self._core.add_listener(listener)

    def remove_listener(self, listener: Any) -> None:
        """Stop telling ``listener`` of changes."""
        self._core.remove_listener(listener)

    def on_lost(self, callback: Callable[[LeaderLatch, str], Any]) -> None:
        """Run ``callback(latch, reason)`` on a worker of the client's handler each time
        leadership ends (also on close, whatever the close mode), after the listeners."""
        self._core.add_lost_callback(callback)

    def check(self) -> None:
        """Raise :class:`LockLostError` unless we lead and our node is known to be ours now
        (its deletion is checked with the server when not yet watched)."""
        run(self._core.transport, self._core.check_steps())

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike).

        Rides through a reconnect: waits for the connection up to the client's session
        timeout, then raises ``ConnectionLoss``.
        """
        return run(self._core.transport, self._core.participants_steps())

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none (read as
        :meth:`participants` reads)."""
        return leader_of(self.participants())

    def __repr__(self) -> str:
        return self._core.describe("LeaderLatch")


__all__ = [
    "CLOSE_WAIT",
    "CloseMode",
    "LatchShell",
    "LeaderLatch",
    "LeaderLatchListener",
    "Participant",
]
