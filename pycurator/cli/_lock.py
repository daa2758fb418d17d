"""``pycurator lock``: run a command while holding a lock or a lease, of Curator's recipes or of
another Java lock system, and stop it when that is lost."""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from typing import TextIO

from kazoo.client import KazooClient

from .. import menagerie, zkrecipes
from .._protocol.errors import LockLostError
from .._protocol.zklocker import check_key
from .._recipes.inspection import LockView
from .._threads.inspection import inspect_lock
from .._threads.lock import ReentrantLock
from .._threads.mutex import InterProcessMutex
from .._threads.rwlock import InterProcessReadWriteLock
from .._threads.semaphore import InterProcessSemaphoreV2
from ..zklocker import ZkLocker
from ._common import EXIT_USAGE, CliError, checked_path, hosts_of, say
from ._run import (
    Holding,
    answered,
    first_reads_wait,
    refuse_crossing,
    resolve_command,
    run_while_held,
    spent,
    through_outages,
)
from ._text import shown

#: What ``lock`` puts in the command's environment.
ENV_PATH = "PYCURATOR_LOCK_PATH"
ENV_NODE = "PYCURATOR_LOCK_NODE"
ENV_TOKEN = "PYCURATOR_LOCK_TOKEN"
ENV_HOSTS = "PYCURATOR_LOCK_HOSTS"

#: The lock systems ``lock --system`` takes: Curator's, and the other Java systems'.
SYSTEMS = ("curator", "zookeeper", "menagerie", "zklocker")

#: The Java name of each system's recipes, for messages.
_SYSTEM_NAMES = {
    "zookeeper": "ZooKeeper's WriteLock",
    "menagerie": "menagerie",
    "zklocker": "ZkLocker",
}


def check_system(args: argparse.Namespace) -> None:
    """Refuse the options ``--system`` does not go with, each with its own reason, before
    anything is sent; and a ``--key`` ZkLocker would refuse."""
    system = args.system
    if args.key is not None and system != "zklocker":
        raise CliError("--key is ZkLocker's: give it with --system zklocker", EXIT_USAGE)
    if system == "zklocker":
        try:
            check_key(args.key)
        except ValueError as exc:
            raise CliError(f"bad --key: {exc}", EXIT_USAGE) from None
        if args.path == "/":
            raise CliError("--system zklocker needs a parent other than /", EXIT_USAGE)
    if system == "curator":
        return
    name = _SYSTEM_NAMES[system]
    kinds = "read/write lock or semaphore" if system != "menagerie" else ""
    for option, given, reason in (
        ("--data", args.data is not None, f"{name} writes its own node data"),
        ("--revocable", args.revocable, f"{name} has no revocation (it is Curator's)"),
        ("--read", args.read and bool(kinds), f"{name} has no {kinds}"),
        ("--write", args.write and bool(kinds), f"{name} has no {kinds}"),
        ("--semaphore", args.semaphore is not None and bool(kinds), f"{name} has no {kinds}"),
    ):
        if given:
            raise CliError(f"{option} does not go with --system {system}: {reason}", EXIT_USAGE)


def lock_layout(args: argparse.Namespace) -> str:
    """The layout (as ``inspect`` names it) of the lock ``lock`` is asked to take."""
    side = args.read or args.write
    if args.system == "zookeeper":
        return "zookeeper-write-lock"
    if args.system == "zklocker":
        return "zklocker"
    if args.system == "menagerie":
        if args.semaphore is not None:
            return "menagerie-semaphore"
        return "menagerie-read-write" if side else "menagerie-lock"
    if args.semaphore is not None:
        return "semaphore"
    return "read-write" if side else "mutex"


def blocked_note(
    client: KazooClient,
    path: str,
    layout: str,
    permits: int | None,
    read: LockView | None = None,
) -> str:
    """What blocks the queue of ``layout`` on ``path`` (children that are no lock nodes but
    stand in it), or ``""``; ``read``: the path as just read, used if it reads as ``layout``
    and tells no permits."""
    if read is None or read.layout != layout or permits is not None:
        read = inspect_lock(client, path, permits, layout)
    return read.note if read.blockers else ""


def _node_data(args: argparse.Namespace) -> bytes | None:
    """``--data`` as the bytes given on the command line (not necessarily UTF-8)."""
    return os.fsencode(args.data) if args.data is not None else None


def _lock_object(client: KazooClient, args: argparse.Namespace) -> ReentrantLock:
    if args.system == "zookeeper":
        return zkrecipes.WriteLock(client, args.path)
    if args.system == "zklocker":
        return ZkLocker(client, args.path, args.key)
    if args.system == "menagerie":
        if args.read or args.write:
            sides = menagerie.ReentrantZkReadWriteLock(client, args.path)
            return sides.read_lock() if args.read else sides.write_lock()
        return menagerie.ReentrantZkLock(client, args.path)
    data = _node_data(args)
    if args.read or args.write:
        rw = InterProcessReadWriteLock(client, args.path, node_data=data)
        return rw.read_lock() if args.read else rw.write_lock()
    return InterProcessMutex(client, args.path, node_data=data)


def _acquire_lock(
    client: KazooClient, args: argparse.Namespace, revoked: threading.Event
) -> Holding | None:
    lock = _lock_object(client, args)
    if args.revocable:
        lock.make_revocable(lambda _lock: revoked.set())
    if not lock.acquire(args.timeout):
        return None

    def lost_reason() -> str | None:
        try:
            lock.check()
        except LockLostError as exc:
            return exc.reason
        return None

    node = lock.lock_path
    assert node is not None
    # the lock is this thread's: run_while_held releases it here
    return Holding(node, lock.fencing_token, lost_reason, lock.release)


def _acquire_lease(client: KazooClient, args: argparse.Namespace) -> Holding | None:
    data = _node_data(args)
    semaphore: InterProcessSemaphoreV2 | menagerie.ZkSemaphore
    if args.system == "menagerie":
        semaphore = menagerie.ZkSemaphore(client, args.path, args.semaphore)
    else:
        semaphore = InterProcessSemaphoreV2(client, args.path, args.semaphore, node_data=data)
    lease = semaphore.acquire(args.timeout)
    if lease is None:
        return None

    def lost_reason() -> str | None:
        return None if lease.is_held() else "the lease node is no longer ours"

    return Holding(lease.path, lease.fencing_token, lost_reason, lease.close)


def cmd_lock(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while holding the lock; see ``pycurator lock --help``."""
    args.path = checked_path(args.path)
    check_system(args)
    if args.semaphore is not None and args.revocable:
        raise CliError("--revocable works with locks, not with --semaphore", EXIT_USAGE)
    command = resolve_command(args.command, "pycurator lock PATH -- CMD [ARGS...]")
    revoked = threading.Event()
    layout = lock_layout(args)
    permits = args.semaphore if layout == "menagerie-semaphore" else None

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> Holding | None:
        def first() -> str:
            view = refuse_crossing(client, args.path, layout, args.force)
            return blocked_note(client, args.path, layout, permits, view)

        started = time.monotonic()
        # within --timeout (NoAnswer): with the server gone, they would wait for its return
        note = answered(first_reads_wait(args), lambda: through_outages(first))
        if note:
            say(err, f"pycurator: warning: {shown(args.path)}: {shown(note)}\n")
        spent(args, started)
        try:
            if args.semaphore is not None:
                return _acquire_lease(client, args)
            return _acquire_lock(client, args, revoked)
        except (TypeError, ValueError) as exc:  # what the checks above did not foresee
            raise CliError(str(exc), EXIT_USAGE) from exc

    def stuck(client: KazooClient) -> str:
        return blocked_note(client, args.path, layout, permits)

    def env(holding: Holding) -> dict[str, str]:
        return {
            ENV_PATH: args.path,
            ENV_NODE: holding.node,
            ENV_TOKEN: str(holding.token),
            ENV_HOSTS: hosts_of(args),
        }

    waited = f"the lock {args.path}"
    return run_while_held(
        command, args, err, "lock", waited, acquire, env, revoked, stuck, layout, permits
    )
