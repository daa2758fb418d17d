"""``LeaderSelector``: Curator's leader election that runs the user's function while leading.

On the wire a selector is an ``InterProcessMutex`` on the leader path: a protected
ephemeral-sequential ``_c_<uuid>-lock-<seq>`` node holding the id as UTF-8 (Curator's default
node data, the host address, when the id is empty), queued fairly with Java's selectors and
mutexes on that path. Each turn in the queue (a term) is one run of the election's steps
(:mod:`pycurator._recipes.election`), which keep the node until ``lead`` has returned.

Curator's rules for a term, which both the threaded and the asyncio selector follow:

- leadership ends when the node is deleted, the session ends, or (``standard`` connection
  policy) the connection is suspended; ``lead`` is told (its :class:`Leadership` ends) and the
  node is deleted once it returns;
- a selector still queued leaves the queue when the connection enters an error state of its
  policy (``standard``: suspended or lost; ``session``: lost), as Curator's selector interrupts
  a queued attempt; it queues again by itself only with ``auto_requeue``, else
  :meth:`LeaderSelector.requeue` does;
- an error no retry fixes (``NoAuthError``, ``InvalidACLError``...) ends the term: it is logged
  once at ERROR, the node is deleted, and the selector does not queue again by itself, not even
  with ``auto_requeue`` (Curator's selector loses the error and, with ``autoRequeue()``, tries
  again at once, forever); :meth:`LeaderSelector.requeue` tries again;
- any other end of a term, an error included (the term's node could not be deleted, say: it
  is logged), is followed by the next term with ``auto_requeue``, as Curator's selector queues
  again after a failed release; the selector's close and the client's stop are not.

Both front ends hold a :class:`~pycurator._cores.selector.SelectorCore`, which keeps these
rules; each keeps only how its terms' steps and ``lead`` run.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from .._client.callback_runner import CallbackRun
from .._client.concurrency import unit_getter
from .._client.runtime import services_of
from .._client.transport import transport_of
from .._cores.faces import LeadershipFace, SelectorFace
from .._cores.selector import LeadershipCore, SelectorCore, Term, ending_of
from .._protocol.checks import ConnectionPolicy, check_timeout
from .._recipes.hold_monitor import HoldMonitor
from .._recipes.lock_nodes import LockNode
from .._recipes.participants import Participant, leader_of
from .runner import run

log = logging.getLogger("pycurator")


class Leadership(LeadershipFace):
    """One term of leadership, as ``lead`` receives it; it follows the leader's node as a lock
    hold does.

    :attr:`lost_event` is set when the term ends: leadership lost (node deleted, session
    expired, connection suspended under the ``standard`` policy), interrupted, or the selector
    closed. Python cannot interrupt a thread, so ``lead`` should watch it and return::

        def lead(leadership):
            while not leadership.lost_event.is_set():
                do_some_work()
    """

    def __init__(self, path: str, node: LockNode, monitor: HoldMonitor, event: Any) -> None:
        self._core = LeadershipCore(path, node, monitor, event)
        self.lost_event = event

    def guarded_transaction(self) -> TransactionRequest:
        """A kazoo transaction that also checks that our node exists, so a leader whose node
        has gone (with its session) cannot commit."""
        return self._core.guarded_transaction()

    def is_held(self) -> bool:
        """True while the term lasts and our node is known to be ours now (its deletion is
        checked with the server when not yet watched)."""
        return not self._core.ended and run(
            self._core.monitor.transport, self._core.confirm_steps()
        )

    def check(self) -> None:
        """Raise :class:`LockLostError` unless :meth:`is_held`; call it before each side effect."""
        if not self.is_held():
            raise self._core.lost_error()

    def __repr__(self) -> str:
        return self._core.repr_as("Leadership")


class _Handle:
    """A term's threaded side: the task that drives its steps on kazoo's callbacks, and the
    thread (or greenlet) that runs ``lead``, which cannot be interrupted, only told."""

    def __init__(self, task: CallbackRun) -> None:
        self.task = task
        self.lead_unit: object = None

    def cancel_steps(self) -> None:
        self.task.cancel()

    def interrupt_lead(self) -> None:
        pass  # a thread cannot be interrupted: its Leadership's lost_event tells it


class LeaderSelector(SelectorFace[_Handle]):
    """A participant in a leader election shared with Java Curator's ``LeaderSelector`` (and
    ``InterProcessMutex``) on the same path: when it leads, ``lead(leadership)`` runs on a unit
    of the client's handler (one for the term: that is the contract; a unit idle since an
    earlier term of any selector is reused); returning from it gives leadership up. With
    ``auto_requeue`` the selector then queues again, else :meth:`requeue` does. A selector
    that waits in the queue costs no thread.

    ``lead`` is told of the end of its term through :class:`Leadership` (cooperatively: a thread
    cannot be interrupted); the node is deleted once ``lead`` returns, as Curator releases its
    mutex once ``takeLeadership`` returns. An exception from ``lead`` is logged and ends the
    term like a return. ``lead`` must be a plain function: a coroutine function is refused
    (use :class:`pycurator.aio.LeaderSelector`). An error no retry fixes (``NoAuthError``...)
    ends the term, logged once; the selector then queues again only when :meth:`requeue` is
    called, whatever ``auto_requeue`` says.
    """

    def __init__(
        self,
        client: KazooClient,
        path: str,
        lead: Callable[[Leadership], None],
        id: str = "",  # Curator's name for it
        *,
        auto_requeue: bool = False,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        if inspect.iscoroutinefunction(lead) or inspect.iscoroutinefunction(
            getattr(lead, "__call__", None)  # noqa: B004 (an object whose __call__ is async)
        ):
            raise TypeError(
                "lead is a coroutine function, which a thread cannot run: use"
                " pycurator.aio.LeaderSelector"
            )
        self._transport = transport_of(client)
        self._core: SelectorCore[_Handle] = SelectorCore(
            self._transport, path, lead, id, auto_requeue, acl, connection_policy
        )
        self._lock = client.handler.rlock_object()
        self._unit = unit_getter(client.handler)
        self._requeues = services_of(client.handler).serial_queue()

    def start(self) -> None:
        """Queue for leadership. Raises RuntimeError when started before."""
        with self._lock:
            self._core.start()
            self._queue()

    def requeue(self) -> bool:
        """Queue again: True if queued (or, while the last term's node is being deleted, to be
        queued once it is), False when already queued or leading.

        Raises RuntimeError when not started or closed."""
        with self._lock:
            self._core.check_started("close() has already been called, or not started")
            return self._queue(asked=True)

    def has_leadership(self) -> bool:
        """True while ``lead`` runs and its term has not ended."""
        return self._core.has_leadership()

    def interrupt_leadership(self) -> None:
        """End the current term (its :attr:`Leadership.lost_event` is set); ``lead`` should
        return, and the node goes once it does."""
        with self._lock:
            self._core.interrupt()

    def close(self, timeout: float | None = None) -> bool:
        """Leave the election, and wait until the node is gone: a queued node is deleted now;
        a leader's term ends (its :attr:`Leadership.lost_event` is set) and its node is deleted
        once ``lead`` has returned. So ``close()`` then ``client.stop()`` never lets the next
        leader start while ``lead`` still runs.

        Waits up to ``timeout`` seconds (None: as long as ``lead`` takes) and returns True once
        ``lead`` has returned and the node is deleted (or, when the server cannot be reached,
        its delete handed to the background: the node then goes with the session at the
        latest). False when the timeout passed first: ``lead`` still runs, and the node goes
        once it returns. Called from inside ``lead``, it ends the term and returns False at
        once (the node goes once ``lead`` returns).

        Raises RuntimeError when not started or already closed, and TypeError or ValueError
        for a timeout that is not a number >= 0 (a huge or infinite one means no limit).
        """
        timeout = check_timeout(timeout)
        with self._lock:
            term = self._core.close()
            run = term.run if term is not None else None
            from_lead = term is not None and term.leading
        if run is None:
            return True
        if from_lead and run.lead_unit is self._unit():
            return False
        return bool(run.task.done.wait(timeout))

    def participants(self) -> list[Participant]:
        """Every participant in queue order, the leader first (Java's and Python's alike).

        Rides through a reconnect: waits for the connection up to the client's session
        timeout, then raises ``ConnectionLoss``.
        """
        return run(self._core.transport, self._core.participants_steps())

    def leader(self) -> Participant:
        """The current leader, or ``Participant("", False)`` when there is none."""
        return leader_of(self.participants())

    def __repr__(self) -> str:
        return self._core.repr_as("LeaderSelector")

    # -- terms: the steps on kazoo's callbacks, ``lead`` on a unit of the handler ------------

    def _queue(self, asked: bool = False) -> bool:
        """Start a term unless one is under way (under the lock; see SelectorCore.queue)."""
        return self._core.queue(self._begin, self._elected, asked)

    def _begin(self, term: Term[_Handle]) -> _Handle:
        task = self._transport.start(term.election.steps(), functools.partial(self._over, term))
        return _Handle(task)

    def _elected(self, term: Term[_Handle], node: LockNode, monitor: HoldMonitor) -> None:
        """Our node leads (called by the term's steps: must not block): run ``lead``."""
        leadership = Leadership(self.path, node, monitor, self.client.handler.event_object())
        with self._lock:
            if not self._core.elected(term, leadership._core):
                return  # closed meanwhile: the steps end and delete the node
        services_of(self.client.handler).leaders.run(
            functools.partial(self._run_lead, term, leadership)
        )

    def _run_lead(self, term: Term[_Handle], leadership: Leadership) -> None:
        if term.run is not None:
            term.run.lead_unit = self._unit()
        try:
            self._core.lead(leadership)
        except Exception:
            log.exception("lead() of the leader selector on %s failed", self.path)
        finally:
            with self._lock:
                # the steps end here, on this unit: the node's delete is sent at once
                self._core.lead_ended(term, here=True)

    def _over(self, term: Term[_Handle], task: CallbackRun) -> None:
        """A term's steps have ended (its node deleted): queue again if the rule says so, on
        this thread (kazoo's, or the unit that ran ``lead``; a closing selector never queues
        again, so this is not the caller of close()): the next term's first steps only send,
        and a hand-off to a worker cost a fifth of a term's CPU. On a worker when the term
        ended while one was being queued (its first steps failed at once): no recursion."""
        with self._lock:
            again = self._core.over(term, ending_of(task.value, task.error))
            here = not self._core.queuing
        if again and here:
            self._requeue_after()
        elif again:
            self._requeues.post(self._requeue_after)

    def _requeue_after(self) -> None:
        with self._lock:
            self._queue()


__all__ = ["LeaderSelector", "Leadership"]
