"""The ``pycurator`` command: ``lock``, ``elect``, ``inspect``, ``revoke`` and ``demo``.

Errors are one line on stderr and a non-zero exit status (see the ``EXIT_*`` constants).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from . import _wire
from ._errors import LockLostError, NotALockNodeError
from ._inspect import NOT_A_LOCK, LockView, inspect_lock
from ._inspect import Participant as LockParticipant
from ._paths import validate_path
from ._revocation import attempt_revoke, is_lock_node_name

#: A ZooKeeper error, or a feature this version does not have.
EXIT_ERROR = 1
#: Bad arguments: a malformed path, a bad option.
EXIT_USAGE = 2
#: ``revoke``: the node is not a lock node (nothing was written); ``inspect`` never uses it.
EXIT_REFUSED = EXIT_ERROR
#: The ensemble could not be reached within ``--connect-timeout``, or the session ended.
EXIT_UNAVAILABLE = 69
#: ``lock``: the lock was not acquired within ``--timeout``; ``elect``: leadership was not won.
EXIT_TIMEOUT = 75
#: ``lock``: the lock was lost while the command ran (``elect``: leadership); the command was
#: terminated.
EXIT_LOCK_LOST = 76
#: ``lock --revocable``: another client revoked the lock; the command was terminated.
EXIT_REVOKED = 77
#: ``demo``: Java threads were asked for but JPype is missing or the JVM did not start.
EXIT_NO_JAVA = 78
#: ``lock``, ``elect``: the command was found but could not be run.
EXIT_CANNOT_RUN = 126
#: ``lock``, ``elect``: the command was not found.
EXIT_NOT_FOUND = 127

HOSTS_ENV = "PYCURATOR_ZK_HOSTS"
DEFAULT_HOSTS = "127.0.0.1:2181"

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


class CliError(Exception):
    """A failure to report as one line, with the exit status to leave with."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status


class _Interrupted(BaseException):
    """SIGTERM or SIGHUP while waiting: a BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way out of the wait (in kazoo or here) can swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# -- connecting ------------------------------------------------------------------------------


def _hosts(args: argparse.Namespace) -> str:
    hosts: str = args.hosts or os.environ.get(HOSTS_ENV, "").strip() or DEFAULT_HOSTS
    return hosts


#: Longest the exit path waits to release and to close the session: with the server gone, the
#: process exits anyway and the server removes our nodes when the session expires.
TEARDOWN_WAIT = 5.0


@contextlib.contextmanager
def _connected(
    args: argparse.Namespace,
    connect_within: float | None = None,
    before_stop: list[Callable[[], None]] | None = None,
) -> Iterator[KazooClient]:
    """A started client; ``connect_within`` shortens ``--connect-timeout``. On the way out the
    ``before_stop`` calls run, then the client stops, all within :data:`TEARDOWN_WAIT`."""
    hosts = _hosts(args)
    try:
        client = KazooClient(hosts=hosts, timeout=args.session_timeout)
    except ValueError as exc:
        raise CliError(f"bad --hosts {hosts!r}: {exc}", EXIT_USAGE) from exc
    within = args.connect_timeout
    if connect_within is not None:
        within = min(within, connect_within)
    try:
        client.start(timeout=within)
    except KazooTimeoutError as exc:
        _teardown(client, [])
        raise CliError(
            f"cannot connect to ZooKeeper at {hosts} within {within:g}s", EXIT_UNAVAILABLE
        ) from exc
    calls: list[Callable[[], None]] = [] if before_stop is None else before_stop
    try:
        yield client
    finally:
        _teardown(client, calls)


def _teardown(client: KazooClient, calls: list[Callable[[], None]]) -> None:
    """Run ``calls``, stop and close ``client``, on a daemon thread waited on for at most
    :data:`TEARDOWN_WAIT`: the exit path never waits on a server that is gone."""

    def run() -> None:
        for call in calls:
            with contextlib.suppress(Exception):
                call()
        with contextlib.suppress(Exception):
            client.stop()
        with contextlib.suppress(Exception):
            client.close()

    worker = threading.Thread(target=run, name="pycurator-teardown", daemon=True)
    worker.start()
    worker.join(TEARDOWN_WAIT)
    if worker.is_alive():
        logging.getLogger(__name__).info(
            "the session did not close within %gs; exiting anyway", TEARDOWN_WAIT
        )


def _path(value: str, what: str = "path") -> str:
    try:
        return validate_path(value)
    except ValueError as exc:
        raise CliError(f"bad {what}: {exc}", EXIT_USAGE) from exc


# -- lock ------------------------------------------------------------------------------------


@dataclass
class _Holding:
    """What ``lock`` or ``elect`` holds, whatever the recipe: node, token, how to follow it, and
    how to release it (None: released by a call already registered for the way out)."""

    node: str
    token: int
    lost_reason: Callable[[], str | None]
    release: Callable[[], None] | None


def _recipe(name: str, what: str) -> Any:
    import pycurator

    recipe = getattr(pycurator, name, None)
    if recipe is None:
        raise CliError(f"{what} needs pycurator.{name}, which this version does not have")
    return recipe


def _lock_object(client: KazooClient, args: argparse.Namespace) -> Any:
    data = args.data.encode() if args.data is not None else None
    if args.read or args.write:
        rw_class = _recipe("InterProcessReadWriteLock", "--read/--write")
        rw = rw_class(client, args.path, lock_data=data)
        side = rw.read_lock if args.read else rw.write_lock
        return side() if callable(side) else side
    from ._mutex import InterProcessMutex

    return InterProcessMutex(client, args.path, node_data=data)


def _acquire_lock(
    client: KazooClient, args: argparse.Namespace, revoked: threading.Event
) -> _Holding | None:
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

    return _Holding(lock.lock_path, lock.fencing_token, lost_reason, lock.release)


def _acquire_lease(client: KazooClient, args: argparse.Namespace) -> _Holding | None:
    semaphore_class = _recipe("InterProcessSemaphoreV2", "--semaphore")
    data = args.data.encode() if args.data is not None else None
    semaphore = semaphore_class(client, args.path, args.semaphore, node_data=data)
    lease = semaphore.acquire(args.timeout)
    if lease is None:
        return None

    def lost_reason() -> str | None:
        return None if lease.is_held() else "the lease node is no longer ours"

    return _Holding(lease.node_name, lease.fencing_token, lost_reason, lease.close)


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


@contextlib.contextmanager
def _signals(handler: Callable[[int, FrameType | None], Any]) -> Iterator[None]:
    names = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, handler) for s in names}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _stop_child(child: subprocess.Popen[bytes], name: str, grace: float, err: TextIO) -> None:
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(grace)
    except subprocess.TimeoutExpired:
        err.write(f"pycurator: {name} still running after {grace:g}s: SIGKILL\n")
        child.kill()
        child.wait()


def cmd_lock(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while holding the lock; see ``pycurator lock --help``."""
    args.path = _path(args.path)
    if args.semaphore is not None and args.revocable:
        raise CliError("--revocable works with locks, not with --semaphore", EXIT_USAGE)
    command = _resolve_command(args.command, "pycurator lock PATH -- CMD [ARGS...]")
    revoked = threading.Event()

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> _Holding | None:
        if args.semaphore is not None:
            return _acquire_lease(client, args)
        return _acquire_lock(client, args, revoked)

    def env(holding: _Holding) -> dict[str, str]:
        return {
            ENV_PATH: args.path,
            ENV_NODE: holding.node,
            ENV_TOKEN: str(holding.token),
            ENV_HOSTS: _hosts(args),
        }

    waited = f"the lock {args.path}"
    return _run_while_held(command, args, err, "lock", waited, acquire, env, revoked)


def _run_while_held(
    command: list[str],
    args: argparse.Namespace,
    err: TextIO,
    what: str,
    waited: str,
    acquire: Callable[[KazooClient, list[Callable[[], None]]], _Holding | None],
    env: Callable[[_Holding], dict[str, str]],
    revoked: threading.Event | None = None,
) -> int:
    """Connect, ``acquire`` (None: ``--timeout`` ran out), run ``command`` while held, and
    release on the way out: the common part of ``lock`` and ``elect``. ``what`` is held (for
    messages: "lock lost"), ``waited`` is what a timeout message says was waited for.

    ``--timeout`` bounds the whole wait: for the first connection, then for ``acquire``, which
    reads what is left of it from ``args.timeout``. ``acquire`` may register calls for the way
    out in the list it is given (they run even when it times out or is interrupted).
    """

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise _Interrupted(signum)

    started, timeout = time.monotonic(), args.timeout
    before_stop: list[Callable[[], None]] = []
    with _connected(args, args.timeout, before_stop) as client, _signals(interrupt):
        if args.timeout is not None:
            args.timeout = max(0.0, args.timeout - (time.monotonic() - started))
        try:
            holding = acquire(client, before_stop)
        except _Interrupted as exc:
            return 128 + exc.signum
        except KeyboardInterrupt:
            return 128 + signal.SIGINT
        if holding is None:
            raise CliError(
                f"timed out after {timeout:g}s waiting for {waited}",
                EXIT_TIMEOUT,
            )
        if holding.release is not None:
            before_stop.append(holding.release)
        return _run_holding(command, holding, args, err, env(holding), what, revoked)


def _run_holding(
    command: list[str],
    holding: _Holding,
    args: argparse.Namespace,
    err: TextIO,
    variables: dict[str, str],
    what: str,
    revoked: threading.Event | None,
) -> int:
    env = dict(os.environ)
    env.update(variables)
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        raise CliError(f"cannot run {command[0]}: {exc.strerror}", EXIT_CANNOT_RUN) from exc

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    # the command shares our terminal: a ^C reaches it directly, and we wait for it to end
    with _signals(forward), _ignoring_sigint():
        while True:
            try:
                return _exit_status(child.wait(args.poll_interval))
            except subprocess.TimeoutExpired:
                pass
            reason = holding.lost_reason()
            if reason is not None:
                err.write(f"pycurator: {what} lost ({reason}): terminating {command[0]}\n")
                _stop_child(child, command[0], args.grace, err)
                return EXIT_LOCK_LOST
            if revoked is not None and revoked.is_set():
                err.write(f"pycurator: {what} revoked: terminating {command[0]}\n")
                _stop_child(child, command[0], args.grace, err)
                return EXIT_REVOKED


# -- elect -----------------------------------------------------------------------------------


def cmd_elect(args: argparse.Namespace, err: TextIO) -> int:
    """Run a command while this process leads a LeaderLatch; see ``pycurator elect --help``."""
    from ._leader import LeaderLatch, id_bytes

    args.path = _path(args.path)
    try:
        id_bytes(args.id)
    except ValueError as exc:
        raise CliError(f"bad --id: {exc}", EXIT_USAGE) from exc
    command = _resolve_command(args.command, "pycurator elect PATH --id ID -- CMD [ARGS...]")

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> _Holding | None:
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

        return _Holding(node, token, lost_reason, None)

    def env(holding: _Holding) -> dict[str, str]:
        return {
            ELECT_ENV_PATH: args.path,
            ELECT_ENV_ID: args.id,
            ELECT_ENV_NODE: holding.node,
            ELECT_ENV_TOKEN: str(holding.token),
            ELECT_ENV_HOSTS: _hosts(args),
        }

    waited = f"leadership of {args.path}"
    return _run_while_held(command, args, err, "leadership", waited, acquire, env)


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# -- inspect ---------------------------------------------------------------------------------


def _state(view: LockView, participant: LockParticipant) -> str:
    if not participant.holder:
        return "waiting"
    return "leader" if view.layout == "latch" else "holder"


def view_as_json(view: LockView, now_ms: int) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints."""
    return {
        "path": view.path,
        "exists": view.exists,
        "layout": view.layout,
        "note": view.note,
        "ignored": list(view.ignored),
        "participants": [
            {
                "node": _wire.join_path(view.path, p.entry.name),
                "kind": p.kind,
                "state": _state(view, p),
                "position": p.position,
                "session": f"0x{p.entry.session:x}",
                "data": p.entry.data.decode("utf-8", "replace"),
                "age_seconds": round(max(0, now_ms - p.entry.created_ms) / 1000, 3),
            }
            for p in view.participants
        ],
    }


def _data(participant: LockParticipant) -> str:
    return participant.entry.data.decode("utf-8", "replace")


def view_as_table(view: LockView, now_ms: int) -> str:
    """The readable table ``inspect`` prints."""
    if not view.exists:
        return f"{view.path}: no such node (no holders, no waiters)\n"
    ignored = ""
    if view.ignored:
        shown = ", ".join(view.ignored[:5]) + (", ..." if len(view.ignored) > 5 else "")
        ignored = f"{len(view.ignored)} other child(ren), not lock nodes, ignored: {shown}"
    if view.layout == NOT_A_LOCK:
        return f"{view.path}: not a lock ({view.note}); {ignored or 'no children'}\n"
    holders = sum(p.holder for p in view.participants)
    waiting = len({p.position for p in view.participants if not p.holder})
    if view.layout == "latch":
        leader = next((p for p in view.participants if p.holder), None)
        led = "no leader" if leader is None else f"leader {_data(leader)!r}"
        lines = [f"{view.path}: latch, {led}, {waiting} waiting"]
    else:
        lines = [f"{view.path}: {view.layout}, {holders} holder(s), {waiting} waiting"]
    if ignored:
        lines.append(ignored)
    if view.participants:
        rows = [("POS", "STATE", "KIND", "SESSION", "AGE", "DATA", "NODE")]
        for p in view.participants:
            age = max(0, now_ms - p.entry.created_ms) / 1000
            data = _data(p)
            rows.append(
                (
                    str(p.position),
                    _state(view, p),
                    p.kind,
                    f"0x{p.entry.session:x}",
                    f"{age:.1f}s",
                    data if len(data) <= 24 else data[:23] + "…",
                    p.entry.name,
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append("  ".join([*cells, row[-1]]))
    return "\n".join(lines) + "\n"


def cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    """Print the holders and waiters on a lock path, or the participants of an election."""
    path = _path(args.path)
    with _connected(args) as client:
        view = inspect_lock(client, path)
    now_ms = int(time.time() * 1000)
    if args.json:
        out.write(json.dumps(view_as_json(view, now_ms), indent=2) + "\n")
    else:
        out.write(view_as_table(view, now_ms))
    return 0


# -- revoke ----------------------------------------------------------------------------------


def cmd_revoke(args: argparse.Namespace, out: TextIO) -> int:
    """Write Curator's revocation message to a lock node; refuse any other node."""
    node = _path(args.node, "node path")
    if not is_lock_node_name(_wire.node_name(node)):
        raise CliError(
            f"refused: {node} is not a lock node (its name is not a Curator lock or lease "
            f"node's); name one of a lock's nodes (see pycurator inspect LOCK_PATH)",
            EXIT_REFUSED,
        )
    with _connected(args) as client:
        if client.exists(node) is None:
            raise CliError(f"no such node: {node}")
        try:
            attempt_revoke(client, node)
        except NotALockNodeError as exc:
            raise CliError(
                f"refused: {node} is not a lock node: {exc.reason}", EXIT_REFUSED
            ) from exc
    out.write(f"asked the holder of {node} to release (only a revocable holder reacts)\n")
    return 0


# -- demo ------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Run the cross-language demo; 1 if mutual exclusion failed."""
    from .demo import DemoError, DemoOptions, JavaUnavailableError, run_demo

    if args.python_threads + args.java_threads == 0:
        raise CliError("the demo needs at least one thread", EXIT_USAGE)
    options = DemoOptions(
        hosts=args.hosts or os.environ.get(HOSTS_ENV, "").strip() or None,
        python_threads=args.python_threads,
        java_threads=args.java_threads,
        rounds=args.rounds,
        hold_seconds=args.hold_ms / 1000,
        unlocked=args.unlocked,
        connect_timeout=args.connect_timeout,
    )
    try:
        verdict = run_demo(options, out)
    except JavaUnavailableError as exc:
        raise CliError(str(exc), EXIT_NO_JAVA) from exc
    except DemoError as exc:
        raise CliError(str(exc), EXIT_UNAVAILABLE) from exc
    return 0 if verdict.ok else EXIT_ERROR


# -- parsing ---------------------------------------------------------------------------------


def _number(kind: Callable[[str], float], minimum: float, inclusive: bool) -> Callable[[str], Any]:
    """An argparse type: a finite number of type ``kind``, >= (or >) ``minimum``."""
    bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
    noun = "a whole number" if kind is int else "a finite number"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {noun} {bound}, not {text!r}") from None
        if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"must be {noun} {bound}, not {text!r}")
        return value

    return parse


#: Seconds that may be zero (``--timeout 0``: try once), and seconds that may not.
_SECONDS = _number(float, 0, inclusive=True)
_POSITIVE_SECONDS = _number(float, 0, inclusive=False)
_COUNT = _number(int, 0, inclusive=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hosts",
        help=f"ZooKeeper connect string (default: ${HOSTS_ENV}, else {DEFAULT_HOSTS})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=_POSITIVE_SECONDS,
        default=15.0,
        metavar="S",
        help="seconds to wait for a connection (default: 15)",
    )
    parser.add_argument(
        "--session-timeout",
        type=_POSITIVE_SECONDS,
        default=10.0,
        metavar="S",
        help="ZooKeeper session timeout in seconds (default: 10)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pycurator`` command."""
    parser = _Parser(
        prog="pycurator",
        description="Curator's ZooKeeper locks from the command line, shared with Java Curator.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what kazoo does")
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")

    lock = commands.add_parser(
        "lock",
        usage="pycurator lock [OPTIONS] PATH -- CMD [ARGS...]",
        help="run a command while holding a lock",
        description=(
            "Run CMD while holding the lock on PATH (Java Curator's InterProcessMutex on the "
            f"same PATH is excluded). CMD sees ${ENV_PATH}, ${ENV_NODE}, ${ENV_TOKEN} (fencing "
            f"token) and ${ENV_HOSTS}. Exit status: CMD's; {EXIT_TIMEOUT} on timeout; "
            f"{EXIT_LOCK_LOST} if the lock was lost while CMD ran (CMD gets SIGTERM, then "
            f"SIGKILL after --grace); {EXIT_REVOKED} if revoked (with --revocable); "
            f"{EXIT_UNAVAILABLE} if ZooKeeper cannot be reached."
        ),
    )
    lock.add_argument("path", metavar="PATH", help="the lock path, e.g. /locks/billing")
    kind = lock.add_mutually_exclusive_group()
    kind.add_argument("--read", action="store_true", help="take the read side of a RW lock")
    kind.add_argument("--write", action="store_true", help="take the write side of a RW lock")
    kind.add_argument(
        "--semaphore",
        type=_number(int, 1, inclusive=True),
        metavar="N",
        help="take one lease of a semaphore of N leases",
    )
    lock.add_argument(
        "--timeout",
        type=_SECONDS,
        metavar="S",
        help="give up after S seconds, the first connection included (default: wait)",
    )
    lock.add_argument(
        "--grace",
        type=_SECONDS,
        default=10.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when the lock is lost (default: 10)",
    )
    lock.add_argument("--data", metavar="TEXT", help="node data (default: this host's address)")
    lock.add_argument(
        "--revocable",
        action="store_true",
        help="stop CMD and release when another client revokes the lock",
    )
    lock.add_argument(
        "--poll-interval", type=_POSITIVE_SECONDS, default=0.1, help=argparse.SUPPRESS
    )
    _connection_options(lock)

    elect = commands.add_parser(
        "elect",
        usage="pycurator elect [OPTIONS] PATH --id ID -- CMD [ARGS...]",
        help="run a command while this process leads an election",
        description=(
            "Join the leader election on PATH (Curator's LeaderLatch, shared with Java's on the "
            "same PATH) and run CMD once this process leads. CMD sees "
            f"${ELECT_ENV_PATH}, ${ELECT_ENV_ID}, ${ELECT_ENV_NODE}, ${ELECT_ENV_TOKEN} "
            f"(fencing token) and ${ELECT_ENV_HOSTS}. Exit status: CMD's; {EXIT_TIMEOUT} on "
            f"timeout; {EXIT_LOCK_LOST} if leadership was lost while CMD ran (CMD gets SIGTERM, "
            f"then SIGKILL after --grace); {EXIT_UNAVAILABLE} if ZooKeeper cannot be reached."
        ),
    )
    elect.add_argument("path", metavar="PATH", help="the election path, e.g. /election/billing")
    elect.add_argument(
        "--id", required=True, metavar="ID", help="this participant's id, written to its node"
    )
    elect.add_argument(
        "--timeout",
        type=_POSITIVE_SECONDS,
        metavar="S",
        help="give up after S seconds, the first connection included (default: wait)",
    )
    elect.add_argument(
        "--grace",
        type=_SECONDS,
        default=10.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when leadership is lost (default: 10)",
    )
    elect.add_argument(
        "--poll-interval", type=_POSITIVE_SECONDS, default=0.1, help=argparse.SUPPRESS
    )
    _connection_options(elect)

    inspect = commands.add_parser(
        "inspect",
        help="show the holders and waiters of a lock path, or an election's participants",
        description=(
            "Show the holders and waiters of the Curator lock, read/write lock or semaphore at "
            "PATH, or the participants of a leader latch or selector (the leader first), "
            "Java's and Python's alike."
        ),
    )
    inspect.add_argument("path", metavar="PATH")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _connection_options(inspect)

    revoke = commands.add_parser(
        "revoke",
        help="ask the holder of a lock node to release it",
        description="Write Curator's __REVOKE__ message to NODE_PATH (see inspect for nodes).",
    )
    revoke.add_argument("node", metavar="NODE_PATH")
    _connection_options(revoke)

    demo = commands.add_parser(
        "demo",
        help="Python and Java Curator threads contend for one lock",
        description=(
            "Python threads (pycurator) and Java threads (Curator, through JPype) take one lock "
            "in turn and increment a counter node inside it. Without --hosts (or "
            f"${HOSTS_ENV}) an embedded ZooKeeper is started. Exit status 1 if exclusion failed, "
            f"{EXIT_NO_JAVA} if Java threads were asked for and JPype is missing."
        ),
    )
    demo.add_argument("--python-threads", type=_COUNT, default=3, metavar="N")
    demo.add_argument("--java-threads", type=_COUNT, default=3, metavar="N")
    demo.add_argument("--rounds", type=_COUNT, default=4, metavar="N", help="holds per thread")
    demo.add_argument(
        "--hold-ms",
        type=_number(float, 0, inclusive=True),
        default=10.0,
        metavar="MS",
        help="time inside the lock",
    )
    demo.add_argument(
        "--unlocked",
        action="store_true",
        help="skip the lock, to show the lost updates it prevents (exits 1)",
    )
    _connection_options(demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pycurator`` console script and of ``python -m pycurator``."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)
    if command and args.command_name not in ("lock", "elect"):
        parser.error(f"{args.command_name} takes no command after --")
    args.command = command
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="pycurator: %(name)s: %(message)s",
    )
    if not args.verbose:
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "lock": lambda a: cmd_lock(a, sys.stderr),
        "elect": lambda a: cmd_elect(a, sys.stderr),
        "inspect": lambda a: cmd_inspect(a, sys.stdout),
        "revoke": lambda a: cmd_revoke(a, sys.stdout),
        "demo": lambda a: cmd_demo(a, sys.stdout),
    }
    try:
        return handlers[args.command_name](args)
    except CliError as exc:
        return _fail(str(exc), exc.status)
    except NoAuthError:
        return _fail("not authorized (ZooKeeper ACL refused the request)", EXIT_ERROR)
    except NoNodeError as exc:
        return _fail(f"no such node: {exc}", EXIT_ERROR)
    except (ConnectionLoss, SessionExpiredError, OperationTimeoutError) as exc:
        return _fail(f"lost the connection to ZooKeeper: {type(exc).__name__}", EXIT_UNAVAILABLE)
    except KazooException as exc:
        return _fail(f"ZooKeeper refused: {type(exc).__name__} {exc}", EXIT_ERROR)
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


def _fail(message: str, status: int) -> int:
    sys.stderr.write(f"pycurator: error: {message}\n")
    return status
