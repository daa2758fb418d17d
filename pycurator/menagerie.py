"""menagerie's locks and semaphore (``org.menagerie``), shared with Java menagerie on the
same base node: ``ReentrantZkLock``, ``ReentrantZkReadWriteLock`` and ``ZkSemaphore``.

Nodes are named, ordered and judged exactly as menagerie does
(:mod:`pycurator._protocol.menagerie`), so a Java peer and a Python one agree on who holds. What
menagerie gets wrong is not copied: a timed acquire keeps its deadline and leaves no node, a lost
wake-up cannot happen, a waiter of the semaphore learns of every release that can grant it, a holder
hears when its node is lost, a downgrade's read node is deleted on release, and a create whose
answer was lost is found again. The engine is pycurator's (:mod:`pycurator._recipes.lock_engine`);
the asyncio forms are in :mod:`pycurator.aio.menagerie`.
"""

from __future__ import annotations

from ._threads.menagerie import (
    ReadLock,
    ReentrantZkLock,
    ReentrantZkReadWriteLock,
    WriteLock,
    ZkSemaphore,
)

__all__ = ["ReadLock", "ReentrantZkLock", "ReentrantZkReadWriteLock", "WriteLock", "ZkSemaphore"]
