"""pycurator's exceptions.

::

    PyCuratorError
     ├── LockNotOwnedError (also RuntimeError)   release() of a lock this thread does not hold
     ├── LockTimeout (also TimeoutError)         a context manager's timeout ran out
     └── LockLostError                           a held lock is no longer ours

kazoo's own errors (``ConnectionLoss``, ``NoAuthError``, ...) pass through unchanged where they
already say what happened. Bad arguments raise ``ValueError`` or ``TypeError``.
"""

from __future__ import annotations


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
