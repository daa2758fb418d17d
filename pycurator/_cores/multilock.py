"""What a multi-lock is, whatever waits on it: its members, checked and followed, and its
all-or-nothing acquire, its rollback, its release, ``is_held`` and ``check`` as steps.

Each of those is a generator that yields an :class:`Ask` (call a member's method) and is sent
the answer, or thrown the member's error; a front end only says how it asks (:func:`drive`
calls, the asyncio shell awaits), so the rules are written once for both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .._protocol.deadline import Deadline
from .._protocol.errors import LockLostError, LockReleaseError
from .._protocol.paths import validate_path

if TYPE_CHECKING:
    from kazoo.client import KazooClient

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
T = TypeVar("T")


@dataclass(frozen=True)
class Ask:
    """Call ``member``'s method ``op`` with ``args``; the answer (awaited, in the asyncio front
    end) is sent back in, a raised error thrown in."""

    member: Any
    op: str
    args: tuple[Any, ...] = ()


#: A multi-lock's work, as asks of its members, ending with a ``T``.
Asks = Generator[Ask, Any, T]


def drive(asks: Asks[T], ask: Callable[[Ask], Any]) -> T:
    """Run ``asks``, answering each with ``ask(it)`` (an error it raises is thrown in): how a
    front end whose members answer at once (they block) runs a multi-lock's work."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = asks.send(answer) if error is None else asks.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            answer, error = ask(step), None
        except BaseException as exc:
            answer, error = None, exc


def acquire_steps(locks: Sequence[object], timeout: float | None) -> Asks[bool]:
    """Take every lock in order, under one deadline for the whole call (Curator gives each
    lock the full timeout): True when all are held. On a timeout (False) or a member's error
    (raised), those taken are released first, in reverse order (:func:`release_steps`; quietly
    when an error is on its way), and nothing stays held."""
    deadline = Deadline(timeout)
    taken: list[object] = []
    try:
        for lock in locks:
            if not (yield Ask(lock, "acquire", (deadline.remaining(),))):
                break
            taken.append(lock)
        else:
            return True
    except BaseException:
        yield from release_steps(taken, quietly=True)
        raise
    yield from release_steps(taken, quietly=False)
    return False


def release_steps(locks: Sequence[object], *, quietly: bool = False) -> Asks[None]:
    """Release every one of ``locks`` in reverse order, even when one fails; then
    :func:`release_failed` tells the failures."""
    failures: list[Exception] = []
    for lock in reversed(locks):
        try:
            yield Ask(lock, "release")
        except Exception as exc:
            failures.append(exc)
    release_failed(failures, len(locks), quietly=quietly)


def is_held_steps(locks: Sequence[InProcess]) -> Asks[bool]:
    """True when every member is held now (:func:`followed` says how each is asked)."""
    for lock in locks:
        if followed(lock) is None:
            held = lock.is_acquired_in_this_process()
        else:
            held = yield Ask(lock, "is_held")
        if not held:
            return False
    return True


def check_steps(locks: Sequence[InProcess]) -> Asks[None]:
    """Raise :class:`LockLostError` unless every member is still held."""
    for lock in locks:
        if followed(lock) is None:
            check_unfollowed(lock)
        else:
            yield Ask(lock, "check")


def in_this_process(locks: Sequence[InProcess]) -> bool:
    """True only when every member lock is held in this process."""
    return all(lock.is_acquired_in_this_process() for lock in locks)


def member_locks(
    client_or_locks: Any,
    paths: Sequence[str] | None,
    make: Callable[[KazooClient, str], M],
    kind: type,
    not_kind: str,
    is_client: Callable[[object], bool],
) -> list[M]:
    """The members of a multi-lock, from ``(client, paths)`` (one ``make(client, path)`` each,
    in order) or from a sequence of locks that are instances of ``kind``; every argument is
    checked before any lock is made (``not_kind`` starts the message for a wrong member;
    ``is_client`` tells a kazoo client)."""
    if paths is not None:
        if not is_client(client_or_locks):
            kind_name = type(client_or_locks).__name__
            raise TypeError(f"client must be a kazoo KazooClient, not {kind_name}")
        if isinstance(paths, str) or not isinstance(paths, Sequence):
            raise TypeError(f"paths must be a sequence of paths, not {paths!r}")
        for path in paths:
            validate_path(path)
        locks = [make(client_or_locks, path) for path in paths]
    else:
        if is_client(client_or_locks):
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


__all__ = [
    "Ask",
    "Asks",
    "Followed",
    "InProcess",
    "Lock",
    "M",
    "acquire_steps",
    "add_on_lost",
    "check_steps",
    "check_unfollowed",
    "drive",
    "followed",
    "in_this_process",
    "is_held_steps",
    "member_locks",
    "members_path",
    "release_failed",
    "release_steps",
]
