"""``InterProcessMultiLock``: several locks taken as one, all or nothing.

Its rules (:mod:`pycurator._cores.multilock`) are written once for both front ends, as asks of
its members; this shell asks by calling, and its members block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kazoo.client import KazooClient

from .._client.transport import is_client
from .._cores.faces import MultiLockFace
from .._cores.multilock import (
    Ask,
    Lock,
    acquire_steps,
    add_on_lost,
    check_steps,
    drive,
    in_this_process,
    is_held_steps,
    member_locks,
    release_steps,
)
from .._protocol.checks import check_timeout
from .lock import LockContext
from .mutex import InterProcessMutex


def _ask(ask: Ask) -> object:
    return getattr(ask.member, ask.op)(*ask.args)


class InterProcessMultiLock(MultiLockFace[Lock], LockContext):
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
            client_or_locks, paths, InterProcessMutex, Lock, "not a lock", is_client
        )

    def acquire(self, timeout: float | None = None) -> bool:
        """Take every lock in order within ``timeout`` seconds (None: wait forever).

        True when all are held; False on timeout, with every lock taken so far released. An
        error from a member is raised after the same release.
        """
        return drive(acquire_steps(self._locks, check_timeout(timeout)), _ask)

    def release(self) -> None:
        """Release every lock in reverse order; :class:`LockReleaseError` with every failure."""
        drive(release_steps(self._locks), _ask)

    def is_acquired_in_this_process(self) -> bool:
        """True only when every member lock is held in this process."""
        return in_this_process(self._locks)

    def is_held(self) -> bool:
        """True when every member is held now (:func:`followed` says how each is asked)."""
        return drive(is_held_steps(self._locks), _ask)

    def check(self) -> None:
        """Raise :class:`LockLostError` unless every member is still held."""
        drive(check_steps(self._locks), _ask)

    def on_lost(self, callback: Callable[[object, str], None]) -> None:
        """Run ``callback(member, reason)`` when any member that reports losses loses its hold."""
        add_on_lost(self._locks, callback)

    def __repr__(self) -> str:
        return f"InterProcessMultiLock({self._locks!r})"
