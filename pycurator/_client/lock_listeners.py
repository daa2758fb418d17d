"""The process's lock listeners (:func:`add_lock_listener`): written under the runtime's process
lock (:func:`~pycurator._client.runtime.process_lock`, renewed in a forked child), read by every
report (:mod:`pycurator._recipes.reports`) with no lock."""

from __future__ import annotations

from .._protocol.events import LOCK_LISTENERS, LockListener
from .runtime import process_lock


def add_lock_listener(listener: LockListener) -> None:
    """Tell ``listener(event)`` of every :class:`~pycurator.LockEvent` of every recipe in this
    process, threaded and asyncio (see :class:`~pycurator.LockListener` for the contract).
    Adding it twice calls it twice."""
    if not callable(listener):
        raise TypeError(f"a lock listener is called with each event, not {listener!r}")
    with process_lock():
        LOCK_LISTENERS.listeners = (*LOCK_LISTENERS.listeners, listener)


def remove_lock_listener(listener: LockListener) -> None:
    """Stop telling ``listener`` (once, if it was added more than once); nothing if unknown."""
    with process_lock():
        found = list(LOCK_LISTENERS.listeners)
        if listener in found:
            found.remove(listener)
            LOCK_LISTENERS.listeners = tuple(found)


__all__ = ["add_lock_listener", "remove_lock_listener"]
