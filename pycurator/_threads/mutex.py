"""``InterProcessMutex``: Curator's re-entrant, fair mutex."""

from __future__ import annotations

from .._cores.constructors import MutexConstructor
from .lock import ReentrantLock


class InterProcessMutex(MutexConstructor, ReentrantLock):
    """A re-entrant mutex shared with Java Curator's ``InterProcessMutex`` on the same path.

    Fair: waiters are served in the order their nodes were created, whatever their language.
    Nodes are ``PATH/_c_<uuid>-lock-<seq>``, ephemeral sequential, holding ``node_data`` (by
    default the host address, as Curator writes it); missing parents are made as containers.
    """


__all__ = ["InterProcessMutex"]
