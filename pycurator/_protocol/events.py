"""What every lock tells of its waits and holds, as data: :class:`LockEvent`, its
:class:`LockEventKind`, its log message, and the process's lock listeners
(:data:`LOCK_LISTENERS`), which :func:`pycurator.add_lock_listener` writes and every report
reads. Who tells, and when, is :mod:`pycurator._recipes.reports`'s.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Protocol

#: What each recipe calls what it holds, in log messages.
NOUNS = {
    "mutex": "lock",
    "read": "read lock",
    "write": "write lock",
    "semaphore": "lease",
    "semaphore-mutex": "lock",
    "latch": "leadership",
    "selector": "leadership",
}
#: The recipes whose holds are terms of leadership.
LEADERSHIP = frozenset({"latch", "selector"})


class LockEventKind(enum.Enum):
    """What happened: a wait begins (``WAITING``) and ends (``ACQUIRED``, ``TIMED_OUT``,
    ``FAILED``, ``CANCELLED``); a hold may be ``LOST`` and ``REGAINED``, and ends
    (``RELEASED``). For a latch and a selector, a wait is a turn in the election's queue and a
    hold a term of leadership."""

    WAITING = "waiting"
    ACQUIRED = "acquired"
    TIMED_OUT = "timed_out"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RELEASED = "released"
    LOST = "lost"
    REGAINED = "regained"


class LockEvent(NamedTuple):
    """One step in the story of a wait or a hold (a named tuple: immutable, and quick to make).

    - ``kind``: what happened (see :class:`LockEventKind`).
    - ``recipe``: ``mutex``, ``read``, ``write`` (the sides of a read/write lock),
      ``semaphore`` (one lease), ``semaphore-mutex``, ``latch`` or ``selector``. A
      multi-lock's members report for themselves.
    - ``path``: the recipe's path, as given (a semaphore's, not its ``leases`` node's).
    - ``node``: our node's full path, once there is one held (``ACQUIRED`` and after).
    - ``waited``: seconds the wait lasted, on each event that ends one.
    - ``held``: seconds since ``ACQUIRED``, on ``LOST`` and ``RELEASED``.
    - ``reason``: why, on ``LOST``, ``REGAINED``, ``FAILED`` (the error), ``CANCELLED`` and
      a leadership's ``RELEASED`` (``latch closed``, ``leadership given up``...).

    A hold may be lost and then released: under the ``standard`` connection policy a suspended
    connection is a loss (reason ``connection suspended``), and the session's end after it is
    another (``session expired``); a hold that is ours again after a suspension is
    ``REGAINED``.
    """

    kind: LockEventKind
    recipe: str
    path: str
    node: str | None = None
    waited: float | None = None
    held: float | None = None
    reason: str = ""


class LockListener(Protocol):
    """What :func:`pycurator.add_lock_listener` takes: any callable with this signature.

    It is called synchronously, in order, where the event happens: on the thread of the caller
    for a lock's wait and release (the task's loop for an asyncio lock), on one of kazoo's
    threads for a loss and for a threaded latch's or selector's election (on the loop for an
    asyncio one). So it must be quick and never block (kazoo's callbacks wait for it), nor
    call a recipe; an exception it raises is logged (ERROR) and the recipe goes on.
    """

    def __call__(self, event: LockEvent) -> None: ...


def _ms(seconds: float | None) -> str:
    return f"{(seconds or 0.0) * 1000:.1f} ms"


def message(event: LockEvent) -> str:
    """The log message of an event (the node, or the path while there is no node, first)."""
    noun = NOUNS.get(event.recipe, event.recipe)
    leadership = event.recipe in LEADERSHIP
    kind, node, path = event.kind, event.node, event.path
    if kind is LockEventKind.WAITING:
        return f"{noun} {path}: waiting"
    if kind is LockEventKind.ACQUIRED:
        verb = "gained" if leadership else "acquired"
        return f"{noun} {node} {verb} after {_ms(event.waited)} waiting"
    if kind is LockEventKind.TIMED_OUT:
        return f"{noun} {path}: timed out after {_ms(event.waited)} waiting"
    if kind is LockEventKind.FAILED:
        return f"{noun} {path}: wait failed after {_ms(event.waited)}: {event.reason}"
    if kind is LockEventKind.CANCELLED:
        return f"{noun} {path}: wait cancelled after {_ms(event.waited)}: {event.reason}"
    if kind is LockEventKind.LOST:
        return f"{noun} {node} lost: {event.reason} (held {_ms(event.held)})"
    if kind is LockEventKind.REGAINED:
        return f"{noun} {node} is ours again: {event.reason}"
    verb = "ended" if leadership else "released"
    why = f": {event.reason}" if event.reason else ""
    return f"{noun} {node} {verb} after {_ms(event.held)} held{why}"


class LockListeners:
    """The process's lock listeners: replaced whole (under the runtime's process lock, renewed
    in a forked child) when one is added or removed, so that a report reads them with no
    lock."""

    __slots__ = ("listeners",)

    def __init__(self) -> None:
        self.listeners: tuple[LockListener, ...] = ()


#: Every lock listener of the process (:func:`pycurator.add_lock_listener`).
LOCK_LISTENERS = LockListeners()


__all__ = [
    "LEADERSHIP",
    "LOCK_LISTENERS",
    "NOUNS",
    "LockEvent",
    "LockEventKind",
    "LockListener",
    "LockListeners",
    "message",
]
