"""``InterProcessMultiLock``: several locks taken as one, all or nothing.

The rules of a multi-lock that do not depend on how it waits (which members it has, how each is
asked whether it is still held, how a release's failures end) are functions here, used by the
threaded multi-lock below and by the asyncio one alike.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from kazoo.client import KazooClient

from ._checks import check_client_type, check_timeout
from ._deadline import Deadline
from ._errors import LockLostError, LockReleaseError
from ._lock import LockContext
from ._mutex import InterProcessMutex
from ._paths import validate_path

log = logging.getLogger("pycurator")


@runtime_checkable
class Lock(Protocol):
    """What a multi-lock needs of a member: every pycurator lock has it."""

    def acquire(self, timeout: float | None = None) -> bool: ...

    def release(self) -> None: ...

    def is_acquired_in_this_process(self) -> bool: ...


@runtime_checkable
class Followed(Protocol):
    """A member that follows its node (see :meth:`ReentrantLock.is_held`), as every pycurator
    lock does; an asyncio member's ``is_held()`` and ``check()`` return awaitables."""

    def is_held(self) -> Any: ...

    def check(self) -> Any: ...


class InProcess(Protocol):
    """What a member of either front end's multi-lock knows of itself: its bookkeeping."""

    def is_acquired_in_this_process(self) -> bool: ...


M = TypeVar("M")


def member_locks(
    client_or_locks: Any,
    paths: Sequence[str] | None,
    make: Callable[[KazooClient, str], M],
    kind: type,
    not_kind: str,
) -> list[M]:
    """The members of a multi-lock, from ``(client, paths)`` (one ``make(client, path)`` each,
    in order) or from a sequence of locks that are instances of ``kind``; every argument is
    checked before any lock is made (``not_kind`` starts the message for a wrong member)."""
    if paths is not None:
        check_client_type(client_or_locks)
        if isinstance(paths, str) or not isinstance(paths, Sequence):
            raise TypeError(f"paths must be a sequence of paths, not {paths!r}")
        for path in paths:
            validate_path(path)
        locks = [make(client_or_locks, path) for path in paths]
    else:
        if isinstance(client_or_locks, KazooClient):
            raise TypeError("InterProcessMultiLock(client, paths) needs the paths")
        if not isinstance(client_or_locks, Sequence):
            raise TypeError(f"locks must be a sequence of locks, not {client_or_locks!r}")
        locks = list(client_or_locks)
        for lock in locks:
            if not isinstance(lock, kind):
                raise TypeError(f"{not_kind}: {lock!r}")
    if not locks:
        raise ValueError("a multi-lock needs at least one lock")
    return locks


def followed(member: object) -> Followed | None:
    """How both front ends' multi-locks ask a member whether it is still held.

    A member that follows its node (it has ``is_held`` and ``check``) is returned: ask it
    those. Any other member (None here) knows only its bookkeeping: it counts as held while
    ``is_acquired_in_this_process()``, and :func:`check_unfollowed` checks it.
    """
    return member if isinstance(member, Followed) else None


def check_unfollowed(member: InProcess) -> None:
    """Raise :class:`LockLostError` unless ``member``, one that does not follow its node (see
    :func:`followed`), is acquired in this process."""
    if not member.is_acquired_in_this_process():
        raise LockLostError(repr(member), "not acquired")


def members_path(locks: Sequence[object]) -> str:
    """A multi-lock's members, for messages: their paths where they have one."""
    return ", ".join(getattr(lock, "path", repr(lock)) for lock in locks)


def release_failed(failures: list[Exception], count: int, *, quietly: bool) -> None:
    """The end of releasing ``count`` members, given the errors of those that failed: nothing
    when none did; a WARNING each when ``quietly`` (an error is already on its way to the
    caller); else :class:`LockReleaseError` with every failure."""
    if not failures:
        return
    if quietly:
        for failure in failures:
            log.warning("multi-lock rollback could not release a lock: %r", failure)
        return
    raise LockReleaseError(f"could not release {len(failures)} of {count} locks", failures)


def add_on_lost(locks: Sequence[object], callback: Callable[[Any, str], Any]) -> None:
    """Register ``callback`` with every member that reports losses (it has ``on_lost``)."""
    for lock in locks:
        register = getattr(lock, "on_lost", None)
        if register is not None:
            register(callback)


class InterProcessMultiLock(LockContext):
    """Several locks taken as one: all of them, or none.

    ``InterProcessMultiLock(client, paths)`` makes one :class:`InterProcessMutex` per path, in
    order, as Curator's ``InterProcessMultiLock(client, paths)`` does, so a Java multi-lock on
    the same paths contends with it. ``InterProcessMultiLock(locks)`` takes any pycurator locks.

    :meth:`acquire` takes the locks in order under ONE deadline for the whole call (Curator gives
    each lock the full timeout); if one times out or raises, those already taken are released in
    reverse order and nothing stays held. :meth:`release` releases every lock in reverse order,
    even when one fails, and raises :class:`LockReleaseError` with every failure. Give every
    process the locks in the same order: two multi-locks taking the same locks in opposite
    orders can each hold one and wait for the other until their timeouts run out.
    """

    def __init__(
        self, client_or_locks: KazooClient | Sequence[Lock], paths: Sequence[str] | None = None
    ) -> None:
        self._locks: list[Lock] = member_locks(
            client_or_locks, paths, InterProcessMutex, Lock, "not a lock"
        )

    @property
    def path(self) -> str:
        """The member locks, for messages: their paths where they have one."""
        return members_path(self._locks)

    @property
    def locks(self) -> list[Lock]:
        """The member locks, in acquisition order."""
        return list(self._locks)

    def acquire(self, timeout: float | None = None) -> bool:
        """Take every lock in order within ``timeout`` seconds (None: wait forever).

        True when all are held; False on timeout, with every lock taken so far released. An
        error from a member is raised after the same release.
        """
        deadline = Deadline(check_timeout(timeout))
        taken: list[Lock] = []
        try:
            for lock in self._locks:
                if not lock.acquire(deadline.remaining()):
                    break
                taken.append(lock)
            else:
                return True
        except BaseException:
            self._release_all(taken, quietly=True)
            raise
        self._release_all(taken, quietly=False)
        return False

    def release(self) -> None:
        """Release every lock in reverse order; :class:`LockReleaseError` with every failure."""
        self._release_all(self._locks, quietly=False)

    def _release_all(self, locks: Sequence[Lock], *, quietly: bool) -> None:
        failures: list[Exception] = []
        for lock in reversed(locks):
            try:
                lock.release()
            except Exception as exc:
                failures.append(exc)
        release_failed(failures, len(locks), quietly=quietly)

    def is_acquired_in_this_process(self) -> bool:
        """True only when every member lock is held in this process."""
        return all(lock.is_acquired_in_this_process() for lock in self._locks)

    def is_held(self) -> bool:
        """True when every member is held now (:func:`followed` says how each is asked)."""
        for lock in self._locks:
            member = followed(lock)
            held = lock.is_acquired_in_this_process() if member is None else member.is_held()
            if not held:
                return False
        return True

    def check(self) -> None:
        """Raise :class:`LockLostError` unless every member is still held."""
        for lock in self._locks:
            member = followed(lock)
            if member is not None:
                member.check()
            else:
                check_unfollowed(lock)

    def on_lost(self, callback: Callable[[object, str], None]) -> None:
        """Run ``callback(member, reason)`` when any member that reports losses loses its hold."""
        add_on_lost(self._locks, callback)

    def __repr__(self) -> str:
        return f"InterProcessMultiLock({self._locks!r})"
