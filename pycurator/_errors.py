"""pycurator's exceptions.

::

    PyCuratorError
     ├── LockNotOwnedError (also RuntimeError)   release() of a lock this thread does not hold
     ├── LockTimeout (also TimeoutError)         a context manager's timeout ran out
     ├── LockLostError                           a held lock is no longer ours
     ├── NotALockNodeError (also ValueError)     attempt_revoke() of a node no lock made
     └── LockReleaseError (an ExceptionGroup on Python 3.11+)
                                                 release() of several locks: every failure

kazoo's own errors (``ConnectionLoss``, ``NoAuthError``, ...) pass through unchanged where they
already say what happened. Bad arguments raise ``ValueError`` or ``TypeError``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


class PyCuratorError(Exception):
    """Base class of every error pycurator raises itself."""


class LockNotOwnedError(PyCuratorError, RuntimeError):
    """Raised by ``release()`` when the calling thread does not hold the lock."""

    def __init__(self, path: str, message: str | None = None) -> None:
        super().__init__(message or f"You do not own the lock: {path}")
        self.path = path


class LockTimeout(PyCuratorError, TimeoutError):
    """Raised by a context manager whose timeout ran out before the lock was acquired."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"Timed out after {timeout:g}s waiting for the lock: {path}")
        self.path = path
        self.timeout = timeout


class LockLostError(PyCuratorError):
    """Raised by ``check()`` when the lock is not (or no longer) held."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Lock lost: {path}: {reason}")
        self.path = path
        self.reason = reason


class NotALockNodeError(PyCuratorError, ValueError):
    """Raised by ``attempt_revoke()`` for a node that is not a Curator lock, read/write lock or
    lease node (not ephemeral, or not named like one); nothing was written."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Not a lock node: {path}: {reason}")
        self.path = path
        self.reason = reason


if sys.version_info >= (3, 11):

    class LockReleaseError(PyCuratorError, ExceptionGroup[Exception]):  # noqa: F821
        """Raised by a multi-lock's ``release()`` with every member's failure, after all members
        were released or tried. On Python 3.11+ it is an ``ExceptionGroup`` (``except*`` works).
        """

else:

    class LockReleaseError(PyCuratorError):
        """Raised by a multi-lock's ``release()`` with every member's failure, after all members
        were released or tried; ``exceptions`` holds them (an ``ExceptionGroup`` on 3.11+)."""

        def __init__(self, message: str, exceptions: Sequence[Exception]) -> None:
            super().__init__(message)
            self.message = message
            self.exceptions = tuple(exceptions)
