"""``pycurator lock`` and ``pycurator elect``: run a command while holding a lock, a lease or
leadership, and stop it when that is lost."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from .. import menagerie, zkrecipes
from .._protocol.errors import LockLostError
from .._protocol.zklocker import check_key
from .._recipes.inspection import NOT_A_LOCK, LockView
from .._threads.inspection import inspect_lock
from .._threads.lock import ReentrantLock
from .._threads.mutex import InterProcessMutex
from .._threads.rwlock import InterProcessReadWriteLock
from .._threads.semaphore import InterProcessSemaphoreV2
from ..zklocker import ZkLocker
from ._common import (
    EXIT_CANNOT_RUN,
    EXIT_LOCK_LOST,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_REVOKED,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    CliError,
    Interrupter,
    checked_path,
    connected,
    hosts_of,
    signals,
)
from ._guard import dies_with_this_process
from ._inspect import holders_and_waiting
from ._progress import Progress
from ._text import shown

#: What ``lock`` puts in the command's environment.
ENV_PATH = "PYCURATOR_LOCK_PATH"
ENV_NODE = "PYCURATOR_LOCK_NODE"
ENV_TOKEN = "PYCURATOR_LOCK_TOKEN"
ENV_HOSTS = "PYCURATOR_LOCK_HOSTS"

#: What ``elect`` puts in the command's environment.
ELECT_ENV_PATH = "PYCURATOR_ELECT_PATH"
ELECT_ENV_ID = "PYCURATOR_ELECT_ID"
ELECT_ENV_NODE = "PYCURATOR_ELECT_NODE"
ELECT_ENV_TOKEN = "PYCURATOR_ELECT_TOKEN"
ELECT_ENV_HOSTS = "PYCURATOR_ELECT_HOSTS"


@dataclass
class Holding:
    """What ``lock`` or ``elect`` holds, whatever the recipe: node, token, how to follow it, and
    how to release it (None: released by a call already registered for the way out)."""

    node: str
    token: int
    lost_reason: Callable[[], str | None]
    release: Callable[[], None] | None


#: The lock systems ``lock --system`` takes: Curator's, and the other Java systems'.
SYSTEMS = ("curator", "zookeeper", "menagerie", "zklocker")
#: The election systems ``elect --system`` takes: Curator's ``LeaderLatch``, and ZooKeeper's
#: own ``LeaderElectionSupport``.
ELECTION_SYSTEMS = ("curator", "zookeeper")

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


#: Each layout's recipe, and how the command takes it, for the refusal of a crossing.
_RECIPES = {
    "mutex": ("Curator's InterProcessMutex (or LeaderSelector)", "pycurator lock"),
    "read-write": ("Curator's InterProcessReadWriteLock", "pycurator lock --read or --write"),
    "semaphore": ("Curator's InterProcessSemaphoreV2", "pycurator lock --semaphore N"),
    "latch": ("Curator's LeaderLatch", "pycurator elect"),
    "zookeeper-write-lock": ("ZooKeeper's WriteLock", "pycurator lock --system zookeeper"),
    "zookeeper-election": (
        "ZooKeeper's LeaderElectionSupport",
        "pycurator elect --system zookeeper",
    ),
    "menagerie-lock": ("menagerie's ReentrantZkLock", "pycurator lock --system menagerie"),
    "menagerie-read-write": (
        "menagerie's ReentrantZkReadWriteLock",
        "pycurator lock --system menagerie --read or --write",
    ),
    "menagerie-semaphore": (
        "menagerie's ZkSemaphore",
        "pycurator lock --system menagerie --semaphore N",
    ),
    "zklocker": ("ZkLocker", "pycurator lock --system zklocker --key KEY"),
}


def refuse_crossing(client: KazooClient, path: str, layout: str, force: bool) -> LockView:
    """Refuse (exit 1) to queue for ``layout`` on a path whose nodes are another recipe's: the
    two would not exclude each other. ``force`` (``--force``) goes on anyway. Returns the path
    as read."""
    view = inspect_lock(client, path)
    if force or view.layout in (layout, "empty", NOT_A_LOCK) or not view.participants:
        return view
    theirs, command = _RECIPES[view.layout]
    ours = _RECIPES[layout][0]
    raise CliError(
        f"refused: {path} is {theirs}'s ({holders_and_waiting(view)}), and {ours} there would "
        f"not exclude its holders: use '{command}' to share their lock, or give --force to take "
        f"{ours} anyway",
        EXIT_REFUSED,
    )


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


def _resolve_command(command: Sequence[str], usage: str) -> list[str]:
    """The command with its executable found, as a shell finds it: a name containing ``/`` is
    a path (127 if missing, 126 if a directory or not executable), else it is looked up in
    ``$PATH`` (127 if not found). ``usage`` is shown when there is no command."""
    if not command:
        raise CliError(f"no command given: {usage}", EXIT_USAGE)
    name = command[0]
    if "/" in name:
        if not os.path.exists(name):
            raise CliError(f"command not found: {name}", EXIT_NOT_FOUND)
        if os.path.isdir(name):
            raise CliError(f"cannot run {name}: it is a directory", EXIT_CANNOT_RUN)
        if not os.access(name, os.X_OK):
            raise CliError(f"cannot run {name}: not executable", EXIT_CANNOT_RUN)
        return list(command)
    executable = shutil.which(name)
    if executable is None:
        raise CliError(f"command not found: {name}", EXIT_NOT_FOUND)
    return [executable, *command[1:]]


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _stop_child(child: subprocess.Popen[bytes], name: str, grace: float, err: TextIO) -> None:
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(grace)
    except subprocess.TimeoutExpired:
        err.write(f"pycurator: {shown(name)} still running after {grace:g}s: SIGKILL\n")
        child.kill()
        child.wait()


def cmd_lock(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while holding the lock; see ``pycurator lock --help``."""
    args.path = checked_path(args.path)
    check_system(args)
    if args.semaphore is not None and args.revocable:
        raise CliError("--revocable works with locks, not with --semaphore", EXIT_USAGE)
    command = _resolve_command(args.command, "pycurator lock PATH -- CMD [ARGS...]")
    revoked = threading.Event()
    layout = lock_layout(args)
    permits = args.semaphore if layout == "menagerie-semaphore" else None

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> Holding | None:
        view = refuse_crossing(client, args.path, layout, args.force)
        note = blocked_note(client, args.path, layout, permits, view)
        if note:
            err.write(f"pycurator: warning: {shown(args.path)}: {shown(note)}\n")
            err.flush()
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
    return _run_while_held(
        command, args, err, "lock", waited, acquire, env, revoked, stuck, layout, permits
    )


#: Longest a timeout's message waits to say what blocks the queue (with the server gone, it
#: says nothing of it).
STUCK_WAIT = 2.0


def _within(seconds: float, call: Callable[[], str], default: str) -> str:
    """``call()``, if it returns within ``seconds`` without a ZooKeeper error, else
    ``default``; it runs on a daemon thread, left to end on its own."""
    answer: list[str] = []

    def run() -> None:
        with contextlib.suppress(KazooException):
            answer.append(call())

    worker = threading.Thread(target=run, name="pycurator-diagnosis", daemon=True)
    worker.start()
    worker.join(seconds)
    return answer[0] if answer else default


def _run_while_held(
    command: list[str],
    args: argparse.Namespace,
    err: TextIO,
    what: str,
    waited: str,
    acquire: Callable[[KazooClient, list[Callable[[], None]]], Holding | None],
    env: Callable[[Holding], dict[str, str]],
    revoked: threading.Event | None = None,
    stuck: Callable[[KazooClient], str] | None = None,
    layout: str | None = None,
    permits: int | None = None,
) -> int:
    """Connect, ``acquire`` (None: ``--timeout`` ran out), run ``command`` while held, and
    release on the way out: the common part of ``lock`` and ``elect``. ``what`` is held (for
    messages: "lock lost"), ``waited`` is what a timeout message says was waited for, and
    ``stuck`` says why the wait did not end, if it can tell (``""`` if not).

    ``--timeout`` bounds the whole wait: for the first connection, then for ``acquire``, which
    reads what is left of it from ``args.timeout``; ``--timeout 0`` (one try) still gives the
    connection ``--connect-timeout``. ``acquire`` may register calls for the way out in the list
    it is given (they run even when it times out or is interrupted). While it waits, a terminal
    shows a progress line on ``err`` (not with ``--quiet``), reading the queue as ``layout``.
    """

    interrupt = Interrupter()
    started, timeout = time.monotonic(), args.timeout
    before_stop: list[Callable[[], None]] = []
    progress = Progress(err, args.path, not args.quiet and err.isatty(), layout, permits)
    progress.connecting(hosts_of(args))
    try:
        # the lock's timeout bounds the connection too, but one try (0) needs a connection
        with connected(args, args.timeout or None, before_stop) as client:
            if args.timeout is not None:
                args.timeout = max(0.0, args.timeout - (time.monotonic() - started))
            progress.follow(client)
            try:
                with interrupt.ending(client.stop):  # a signal stops the client: the wait ends
                    holding = acquire(client, before_stop)
            except Exception:
                if interrupt.signum is None:
                    raise
            finally:
                progress.stop()
            if interrupt.signum is not None:  # also when it came as the wait ended anyway
                return 128 + interrupt.signum
            if holding is None:
                reason = "" if stuck is None else _within(STUCK_WAIT, lambda: stuck(client), "")
                raise CliError(
                    f"timed out after {timeout:g}s waiting for {waited}"
                    + (f": {reason}" if reason else ""),
                    EXIT_TIMEOUT,
                )
            if holding.release is not None:
                before_stop.append(holding.release)
            return _run_holding(command, holding, args, err, env(holding), what, revoked)
    finally:
        progress.stop()


def _run_holding(
    command: list[str],
    holding: Holding,
    args: argparse.Namespace,
    err: TextIO,
    variables: dict[str, str],
    what: str,
    revoked: threading.Event | None,
) -> int:
    env = dict(os.environ)
    env.update(variables)
    try:
        # the kernel kills the command if this process dies before it could stop it (Linux)
        child = subprocess.Popen(command, env=env, preexec_fn=dies_with_this_process())
    except OSError as exc:
        raise CliError(f"cannot run {command[0]}: {exc.strerror}", EXIT_CANNOT_RUN) from exc
    except subprocess.SubprocessError as exc:
        raise CliError(f"cannot run {command[0]} guarded: {exc}", EXIT_CANNOT_RUN) from exc

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    # the command shares our terminal: a ^C reaches it directly, and we wait for it to end
    with signals(forward), _ignoring_sigint():
        while True:
            try:
                return _exit_status(child.wait(args.poll_interval))
            except subprocess.TimeoutExpired:
                pass
            reason = holding.lost_reason()
            if reason is not None:
                err.write(
                    f"pycurator: {what} lost ({shown(reason)}): {shown(holding.node)}; "
                    f"terminating {shown(command[0])}\n"
                )
                _stop_child(child, command[0], args.grace, err)
                return EXIT_LOCK_LOST
            if revoked is not None and revoked.is_set():
                err.write(f"pycurator: {what} revoked: terminating {shown(command[0])}\n")
                _stop_child(child, command[0], args.grace, err)
                return EXIT_REVOKED


def cmd_elect(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while this process leads a LeaderLatch (or, with ``--system zookeeper``,
    ZooKeeper's ``LeaderElectionSupport``); see ``pycurator elect --help``."""
    from .._recipes.participants import id_bytes
    from .._threads.latch import LeaderLatch

    args.path = checked_path(args.path)
    try:
        id_bytes(args.id)
    except ValueError as exc:
        raise CliError(f"bad --id: {exc}", EXIT_USAGE) from exc
    command = _resolve_command(args.command, "pycurator elect PATH --id ID -- CMD [ARGS...]")
    layout = "zookeeper-election" if args.system == "zookeeper" else "latch"

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> Holding | None:
        refuse_crossing(client, args.path, layout, args.force)
        latch: LeaderLatch | zkrecipes.LeaderElection
        if args.system == "zookeeper":
            latch = zkrecipes.LeaderElection(client, args.path, args.id)
        else:
            latch = LeaderLatch(client, args.path, args.id)
        # the first loss ends the command, even if the latch leads again before we look
        lost: list[str] = []
        latch.on_lost(lambda _latch, reason: lost.append(reason))
        latch.start()
        before_stop.append(latch.close)
        if not latch.wait(args.timeout):
            return None
        node, token = latch.our_path, latch.fencing_token
        assert node is not None

        def lost_reason() -> str | None:
            if lost:
                return lost[0]
            try:
                latch.check()
            except LockLostError as exc:
                return lost[0] if lost else exc.reason
            return None

        return Holding(node, token, lost_reason, None)

    def env(holding: Holding) -> dict[str, str]:
        return {
            ELECT_ENV_PATH: args.path,
            ELECT_ENV_ID: args.id,
            ELECT_ENV_NODE: holding.node,
            ELECT_ENV_TOKEN: str(holding.token),
            ELECT_ENV_HOSTS: hosts_of(args),
        }

    waited = f"leadership of {args.path}"
    return _run_while_held(command, args, err, "leadership", waited, acquire, env, layout=layout)


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
