"""The chaos checker: Java Curator and pycurator contenders (threads and processes) on one mutex,
one read/write lock and one semaphore, leaders of one ``LeaderLatch`` and one ``LeaderSelector``
election, and Java and pycurator holders of ZooKeeper's ``WriteLock`` and of menagerie's
``ReentrantZkLock``, while random faults hit a 3-node ensemble; every hold (a leader's term is a
hold) is recorded on one monotonic clock and the merged history is checked.

``python -m pycurator.testing.chaos --seconds 300 --seed 7`` runs it on an embedded ensemble and
prints a summary; ``interop/test_chaos.py`` runs a short one. Its parts: :mod:`.history` (the
records), :mod:`.contenders`, :mod:`.workers` (processes), :mod:`.faults`, :mod:`.quiet` (the
quiet moments' audit of lock nodes), :mod:`.checker` (pure) and :mod:`.run`.

Every hold ends with a *fence*: one transaction that checks the holder's node exists and, for an
exclusive hold, increments the lock's counter and records the new value under the lock's log.
A committed fence proves the node existed when it landed, so no successor had entered: the
interval from entering to sending the fence must not overlap another exclusive hold's. A hold
whose node went away (session expired during a fault or a SIGSTOP) is *stale*: its fence must be
rejected by ZooKeeper, and its interval may overlap its successor's, as with any ZooKeeper lock
(Curator's Tech Note 10). A leader's term is an exclusive hold of its election: nodes only join
behind, so a node first when its term began and still there at its fence was first throughout;
two fenced terms that overlap are two non-stale leaders at once, of which the one whose node came
later led falsely (a Java original's is reported, not failed, as its live orphans). Java's
``System.nanoTime()`` and Python's ``time.monotonic_ns()`` read the same clock on Linux, so one
history merges both languages.

At quiet moments during the run and before its end (faults stopped, every contender parked
between two cycles, every client connected), every lock node must belong to a holder or waiter
the run knows of: a node of a live session that no contender owns is a *live orphan*, left for
as long as that session lives, and fails the run (:mod:`.quiet`).
"""

from __future__ import annotations

from .checker import CounterReport, PauseReport, Report, check
from .contenders import Contender, PythonContender
from .faults import FAULTS, FaultDriver
from .history import (
    EXCLUSIVE,
    KINDS,
    Faults,
    Hold,
    LiveOrphan,
    LogEntry,
    Orphans,
    Pause,
    QuietCheck,
)
from .java_contenders import JavaContender
from .quiet import Gate, Quiet
from .roster import CONTENDERS
from .run import Chaos

__all__ = [
    "CONTENDERS",
    "EXCLUSIVE",
    "FAULTS",
    "KINDS",
    "Chaos",
    "Contender",
    "CounterReport",
    "FaultDriver",
    "Faults",
    "Gate",
    "Hold",
    "JavaContender",
    "LiveOrphan",
    "LogEntry",
    "Orphans",
    "Pause",
    "PauseReport",
    "PythonContender",
    "Quiet",
    "QuietCheck",
    "Report",
    "check",
]
