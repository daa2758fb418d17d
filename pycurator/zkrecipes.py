"""ZooKeeper's own recipes (``zookeeper-recipes``), shared with Java on the same paths.

- :class:`WriteLock`: ``org.apache.zookeeper.recipes.lock.WriteLock``'s nodes and order, with
  pycurator's lock conventions (``acquire(timeout) -> bool``, ``release()``, ``with``,
  ``is_held()``, ``check()``, the lost notice, the fencing token).
- :class:`LeaderElection`: ``org.apache.zookeeper.recipes.leader.LeaderElectionSupport``'s
  offers, on pycurator's election (the one behind :class:`~pycurator.LeaderLatch`).

The rules are in :mod:`pycurator._protocol.zkrecipes`; :mod:`pycurator.aio.zkrecipes` has the
asyncio forms, over the same cores.
"""

from __future__ import annotations

from ._threads.zkrecipes import LeaderElection, WriteLock

__all__ = ["LeaderElection", "WriteLock"]
