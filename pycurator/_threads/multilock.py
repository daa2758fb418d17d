"""``InterProcessMultiLock``: several locks taken as one, all or nothing.

The rules of a multi-lock that do not depend on how it waits (which members it has, how each is
asked whether it is still held, how a release's failures end) are functions here, used by the
threaded multi-lock below and by the asyncio one alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kazoo.client import KazooClient

from .._cores.multilock import (
    Lock,
    add_on_lost,
    check_unfollowed,
    followed,
    member_locks,
    members_path,
    release_failed,
)
from .._protocol.checks import check_timeout
from .._protocol.deadline import Deadline
from .lock import LockContext
from .mutex import InterProcessMutex


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
