"""pycurator's exceptions.

::

    PyCuratorError
     ├── ConnectTimeout (also TimeoutError)      connect() could not connect in time
     ├── LockNotOwnedError (also RuntimeError)   release() of a lock this thread does not hold
     ├── LockTimeout (also TimeoutError)         a context manager's timeout ran out
     ├── LockLostError                           a held lock is no longer ours
     ├── NotALockNodeError (also ValueError)     attempt_revoke() of a node no lock made
     ├── CorruptedDataError (also ValueError)    a counter's node holds bytes Java cannot read
     ├── UnknownOutcomeError                     a write's answer was lost: whether it took
     │                                           effect cannot be known
     ├── IllegalTrySetVersionError (also ValueError)
     │                                           a versioned set at version -1 (CURATOR-688)
     ├── CompressedDataError (also ValueError)   a cached node's data that does not unzip
     ├── ServerFeatureError (also kazoo's UnimplementedError)
     │                                           the server lacks what a request needs
     ├── ServiceNotRegisteredError (also LookupError)
     │                                           update_service() of an instance not registered
     └── LockReleaseError (an ExceptionGroup on Python 3.11+)
                                                 release() of several locks: every failure

kazoo's own errors (``ConnectionLoss``, ``NoAuthError``, ...) pass through unchanged where they
already say what happened; :data:`UNFIXABLE` names those no retry fixes. Bad arguments raise
``ValueError`` or ``TypeError``. Every one of these pickles (a multiprocessing pool or a task
queue sends exceptions between processes).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import kazoo.exceptions as kazoo_errors

#: The server's errors that sending the same request again cannot fix: it refuses the request
#: itself (rights, authentication, the ACL or arguments given, a parent that is ephemeral, a
#: request it does not implement, a session that may not own ephemeral nodes). A recipe working
#: in the background (a latch, a selector's term) ends its attempt on one and reports it once;
#: it retries any other error. A lock's ``acquire`` raises each of them to its caller at once.
UNFIXABLE: tuple[type[Exception], ...] = (
    kazoo_errors.AuthFailedError,
    kazoo_errors.BadArgumentsError,
    kazoo_errors.EphemeralOnLocalSessionError,
    kazoo_errors.InvalidACLError,
    kazoo_errors.NoAuthError,
    kazoo_errors.NoChildrenForEphemeralsError,
    kazoo_errors.SessionClosedRequireSaslError,
    kazoo_errors.UnimplementedError,
)


class PyCuratorError(Exception):
    """Base class of every error pycurator raises itself."""


class _Picklable(PyCuratorError):
    """An error built from named arguments, that pickles by calling its class with them again
    (``BaseException`` would pass the formatted message as the only argument)."""

    _fields: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), tuple(getattr(self, name) for name in self._fields), self.__dict__


class ConnectTimeout(_Picklable, TimeoutError):
    """Raised by :func:`pycurator.connect` when no session was made (or its namespace was not
    made) within the connect timeout; the client was stopped and closed. ``causes`` maps each
    server (``host:port``) that failed to the last failure seen (``Connection refused``, a TLS
    error, a name that does not resolve...), and the message ends with them."""

    _fields = ("hosts", "timeout", "causes")

    def __init__(self, hosts: str, timeout: float, causes: Mapping[str, str] | None = None) -> None:
        self.hosts = hosts
        self.timeout = timeout
        self.causes = dict(causes or {})
        message = f"cannot connect to ZooKeeper at {hosts} within {timeout:g}s"
        if self.causes:
            message += ": " + "; ".join(f"{at}: {cause}" for at, cause in self.causes.items())
        super().__init__(message)


class LockNotOwnedError(_Picklable, RuntimeError):
    """Raised by ``release()`` when the calling thread does not hold the lock."""

    _fields = ("path", "_message")

    def __init__(self, path: str, message: str | None = None) -> None:
        super().__init__(message or f"You do not own the lock: {path}")
        self.path = path
        self._message = message


class LockTimeout(_Picklable, TimeoutError):
    """Raised by a context manager whose timeout ran out before the lock was acquired."""

    _fields = ("path", "timeout")

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(f"Timed out after {timeout:g}s waiting for the lock: {path}")
        self.path = path
        self.timeout = timeout


class LockLostError(_Picklable):
    """Raised by ``check()`` when the lock is not (or no longer) held."""

    _fields = ("path", "reason")

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Lock lost: {path}: {reason}")
        self.path = path
        self.reason = reason


class NotALockNodeError(_Picklable, ValueError):
    """Raised by ``attempt_revoke()`` for a node that is not a Curator lock, read/write lock or
    lease node (not ephemeral, or not named like one); nothing was written."""

    _fields = ("path", "reason")

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Not a lock node: {path}: {reason}")
        self.path = path
        self.reason = reason


class CompressedDataError(_Picklable, ValueError):
    """Told to a cache's error handler for a node whose data does not unzip where the cache
    reads gzip (``COMPRESSED_DATA``): the node is not held (or keeps what was held)."""

    _fields = ("path", "reason")

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"Compressed data that does not unzip: {path}: {reason}")
        self.path = path
        self.reason = reason


if sys.version_info >= (3, 11):

    class LockReleaseError(PyCuratorError, ExceptionGroup[Exception]):  # noqa: F821
        """Raised by a multi-lock's ``release()`` with every member's failure, after all members
        were released or tried. On Python 3.11+ it is an ``ExceptionGroup`` (``except*`` works).
        """

else:

    class LockReleaseError(_Picklable):
        """Raised by a multi-lock's ``release()`` with every member's failure, after all members
        were released or tried; ``exceptions`` holds them (an ``ExceptionGroup`` on 3.11+)."""

        _fields = ("message", "exceptions")

        def __init__(self, message: str, exceptions: Sequence[Exception]) -> None:
            super().__init__(message)
            self.message = message
            self.exceptions = tuple(exceptions)


class ServerFeatureError(_Picklable, kazoo_errors.UnimplementedError):  # type: ignore[misc]
    """The answer to a request the ZooKeeper server does not offer: ``feature`` (persistent
    watches, TTL nodes) is missing there, and ``needs`` says what has it. Also kazoo's
    ``UnimplementedError``, the server's own answer, so that it counts among
    :data:`UNFIXABLE`."""

    _fields = ("feature", "path", "needs")

    def __init__(self, feature: str, path: str, needs: str) -> None:
        super().__init__(f"the ZooKeeper server has no {feature} ({needs}): {path}")
        self.feature = feature
        self.path = path
        self.needs = needs


class ServiceNotRegisteredError(_Picklable, LookupError):
    """Raised by a discovery's ``update_service`` for an instance it has not registered (or
    has unregistered), as Curator's "Service not registered"."""

    _fields = ("name", "id")

    def __init__(self, name: str, id: str) -> None:
        super().__init__(f"Service not registered: {name}/{id} (register_service() it first)")
        self.name = name
        self.id = id


class InvalidServiceInstance(_Picklable, ValueError):
    """Raised when a service instance is given a field Curator would not register: a name or
    id that is empty, holds ``/`` or is no ZooKeeper node name, a port outside 0-65535, a time
    outside Java's ``long``."""

    _fields = ("field", "value", "reason")

    def __init__(self, field: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid service instance: {field} {value!r}: {reason}")
        self.field = field
        self.value = value
        self.reason = reason


class InvalidUriSpec(_Picklable, ValueError):
    """Raised for a URI template Curator's ``UriSpec`` rejects (a brace not closed, or not
    opened), with Curator's words."""

    _fields = ("template", "reason")

    def __init__(self, template: str, reason: str) -> None:
        super().__init__(f"Invalid URI spec {template!r}: {reason}")
        self.template = template
        self.reason = reason


class InstanceFormatError(_Picklable, ValueError):
    """Raised when bytes are not a service instance Jackson would read (not JSON, not an
    object, a field Jackson cannot convert, a payload not of the serializer's type); ``path``
    names the node they came from, when known."""

    _fields = ("reason", "path")

    def __init__(self, reason: str, path: str | None = None) -> None:
        where = "" if path is None else f" at {path}"
        super().__init__(f"Not a service instance{where}: {reason}")
        self.reason = reason
        self.path = path


class PayloadTypeError(_Picklable, TypeError):
    """Raised for a payload, or a serializer's payload type, that has no Java class name to
    write for Jackson's ``@class`` (an object that is neither a JSON value nor a class made a
    Java payload with ``java_payload``)."""

    _fields = ("type_name", "reason")

    def __init__(self, type_name: str, reason: str) -> None:
        super().__init__(f"Payload type {type_name} has no Java class name: {reason}")
        self.type_name = type_name
        self.reason = reason


def _java_bytes(data: bytes) -> str:
    """Bytes as Curator's corruption message lists them: ``[0x0, 0x7f]``."""
    return "[" + ", ".join(f"0x{byte:x}" for byte in data) + "]"


class CorruptedDataError(_Picklable, ValueError):
    """Raised when a counter's node holds bytes its Java type cannot be read from (fewer than
    a Java ``int``'s 4 or ``long``'s 8: Curator's ``SharedCount`` throws
    ``BufferUnderflowException``, its atomic values "Corrupted data"); ``path`` names the node
    and ``data`` holds its bytes."""

    _fields = ("path", "data", "reason")

    def __init__(self, path: str, data: bytes, reason: str) -> None:
        super().__init__(f'Corrupted data for node "{path}": {_java_bytes(data)}: {reason}')
        self.path = path
        self.data = data
        self.reason = reason


class UnknownOutcomeError(_Picklable):
    """Raised by a write that returns a bool (``try_set_count``, ``initialize``...) when its
    answer was lost and the node, read again, cannot tell whether it took effect (it holds what
    we wrote, which another client may have written too). The write is never sent again."""

    _fields = ("path", "operation")

    def __init__(self, path: str, operation: str) -> None:
        super().__init__(
            f"Unknown outcome of {operation} at {path}: the answer was lost, and the node cannot"
            " tell whether the write took effect"
        )
        self.path = path
        self.operation = operation


class IllegalTrySetVersionError(_Picklable, ValueError):
    """Raised by ``try_set_value`` / ``try_set_count`` given a value read at version -1 (the
    node's version overflowed), which ZooKeeper takes as "any version": Curator 5.7+'s
    ``IllegalTrySetVersionException`` (CURATOR-688, ZOOKEEPER-4743). Nothing was written."""

    _fields = ("path",)

    def __init__(self, path: str) -> None:
        super().__init__(
            "overflowed Stat.version -1 is not suitable for trySet(a.k.a. compare-and-set"
            f" ZooKeeper::setData): {path}"
        )
        self.path = path
