"""The command dies with its guard: on Linux, the kernel kills the command ``lock`` or ``elect``
runs when the ``pycurator`` process that holds the lock dies, however it dies (SIGKILL, the OOM
killer, a crash), so that the command never runs without the lock.

The signal is SIGKILL, at once. SIGTERM would let the command clean up, but with its guard gone
nothing would send the SIGKILL that ``--grace`` promises, and the lock lasts only as long as the
dead process's session, which the server may expire well within ``--grace`` (it was last renewed
up to a third of ``--session-timeout`` before the death): a command still cleaning up could then
overlap the next holder, the very thing the lock is there to prevent. The orderly stops (lock
lost, revoked, SIGTERM to ``pycurator``) still give SIGTERM and ``--grace``.

Elsewhere (macOS, the BSDs) there is no such signal and the command outlives a killed guard.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

#: ``<linux/prctl.h>``: the signal the kernel sends this process when its parent thread dies.
PR_SET_PDEATHSIG = 1


def dies_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that has the kernel SIGKILL the child when
    the thread calling ``Popen`` ends (the main thread: the process), or None where the system
    has no parent-death signal (anything but Linux).

    The hook runs between fork and exec, in a copy of a threaded process, so it does no more than
    two system calls through a function resolved here, before the fork. If this process died
    before the hook asked for the signal, the child was already adopted by another process: it
    kills itself rather than run the command unguarded. A set-user-ID or set-group-ID command
    (or one with file capabilities) loses the signal at exec: the kernel clears it.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def in_child() -> None:
        if prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:
            os.kill(os.getpid(), kill)

    return in_child
