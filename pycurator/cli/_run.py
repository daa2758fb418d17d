"""What ``pycurator lock`` and ``pycurator elect`` share: connect, refuse a path of another
recipe, wait for what they hold, run the command while it is held, stop the command when it is
lost, and release on the way out, on the thread that acquired."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TextIO, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    OperationTimeoutError,
    SessionExpiredError,
)

from .._protocol.deadline import FIRST_TRY_WAIT
from .._recipes.inspection import GROUP, NOT_A_LOCK, LockView
from .._threads.inspection import inspect_lock
from ._common import (
    EXIT_CANNOT_RUN,
    EXIT_LOCK_LOST,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_REVOKED,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    WAIT_SIGNALS,
    CliError,
    Interrupter,
    connected,
    hosts_of,
    noted,
    say,
    signals,
)
from ._guard import dies_with_this_process
from ._progress import Progress
from ._text import shown
from ._views import holders_and_waiting

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass
class Holding:
    """What ``lock`` or ``elect`` holds, whatever the recipe: node, token, how to follow it, and
    how to release it, on the thread that acquired it (None: released by a call already
    registered for the way out)."""

    node: str
    token: int
    lost_reason: Callable[[], str | None]
    release: Callable[[], None] | None


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
    if force or view.layout in (layout, "empty", NOT_A_LOCK, GROUP) or not view.participants:
        return view
    theirs, command = _RECIPES[view.layout]
    ours = _RECIPES[layout][0]
    raise CliError(
        f"refused: {path} is {theirs}'s ({holders_and_waiting(view)}), and {ours} there would "
        f"not exclude its holders: use '{command}' to share their lock, or give --force to take "
        f"{ours} anyway",
        EXIT_REFUSED,
    )


class NoAnswer(Exception):
    """ZooKeeper did not answer within the time there was; raised by ``acquire`` (see
    :func:`run_while_held`), it is a wait that timed out."""


def answered(seconds: float | None, call: Callable[[], T]) -> T:
    """``call()``, which asks ZooKeeper something: with ``seconds``, made on a daemon thread
    and waited for that long at most (:class:`NoAnswer` then; the call goes on alone until
    the client stops), else made on this thread, as long as it takes (also for ``seconds``
    too long to wait for: a huge ``--timeout`` waits without limit). Its errors are raised."""
    if seconds is None or seconds >= threading.TIMEOUT_MAX:
        return call()
    outcome: list[tuple[T | None, BaseException | None]] = []

    def run() -> None:
        try:
            outcome.append((call(), None))
        except BaseException as exc:
            outcome.append((None, exc))

    worker = threading.Thread(target=run, name="pycurator-read", daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise NoAnswer()
    value, error = outcome[0]
    if error is not None:
        raise error
    return value  # type: ignore[return-value]


#: Seconds between two tries of a read that met a connection loss (kazoo holds the next one
#: until the connection is back; this spaces the tries of the moments it does not).
RETRY_PAUSE = 0.1


def through_outages(call: Callable[[], T]) -> T:
    """``call()``, made again after each connection loss until it is answered: as long as it
    takes, unless the client stops (``ConnectionClosedError``)."""
    while True:
        try:
            return call()
        except ConnectionClosedError:
            raise
        except (ConnectionLoss, OperationTimeoutError, SessionExpiredError):
            time.sleep(RETRY_PAUSE)


def first_reads_wait(args: argparse.Namespace) -> float | None:
    """How long the reads before the wait may take: the rest of ``--timeout``, but no less than
    one try's answers (``--timeout 0``), as long as it takes without one."""
    return None if args.timeout is None else max(args.timeout, FIRST_TRY_WAIT)


def spent(args: argparse.Namespace, since: float) -> None:
    """Take the time since ``since`` off what is left of ``--timeout``."""
    if args.timeout is not None:
        args.timeout = max(0.0, args.timeout - (time.monotonic() - since))


def resolve_command(command: Sequence[str], usage: str) -> list[str]:
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
        say(err, f"pycurator: {shown(name)} still running after {grace:g}s: SIGKILL\n")
        child.kill()
        child.wait()


#: Longest a timeout's message waits to say what blocks the queue, or to find that ZooKeeper
#: does not answer.
STUCK_WAIT = 2.0


def _why_not_held(
    client: KazooClient, hosts: str, stuck: Callable[[KazooClient], str] | None, silent: bool
) -> str:
    """Why a wait ran out, if it can tell: ZooKeeper gone (not connected, or no answer: within
    :data:`STUCK_WAIT`, or ``silent`` already), or what ``stuck`` finds blocks the queue;
    ``""`` if nothing."""
    if not client.connected:
        return f"the connection to ZooKeeper at {hosts} is down"
    if silent:
        return f"ZooKeeper at {hosts} does not answer"
    try:
        if stuck is None:
            answered(STUCK_WAIT, lambda: client.exists("/"))
            return ""
        return answered(STUCK_WAIT, lambda: stuck(client))
    except ConnectionClosedError:  # stopped meanwhile
        return ""
    except (NoAnswer, ConnectionLoss, OperationTimeoutError, SessionExpiredError):
        return f"ZooKeeper at {hosts} does not answer"
    except KazooException:  # refused (an ACL): nothing more to say
        return ""


def run_while_held(
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
    What ``acquire`` holds is released on this thread, the one that acquired it.
    """

    interrupt, guarded = Interrupter(), Guarded(command)
    started, timeout = time.monotonic(), args.timeout
    before_stop: list[Callable[[], None]] = []
    progress = Progress(err, args.path, not args.quiet and err.isatty(), layout, permits)
    progress.connecting(hosts_of(args))
    try:
        # the lock's timeout bounds the connection too, but one try (0) needs a connection
        with (
            connected(args, args.timeout or None, before_stop) as client,
            guarded.taking_signals(),
        ):
            spent(args, started)
            progress.follow(client)
            silent = False  # ZooKeeper did not answer the reads before the wait in time
            try:
                with interrupt.ending(client.stop):  # a signal stops the client: the wait ends
                    holding = acquire(client, before_stop)
            except NoAnswer:
                holding, silent = None, True
            except Exception:
                if interrupt.signum is None:
                    raise
            finally:
                progress.stop()
            if interrupt.signum is not None:  # also when it came as the wait ended anyway
                return 128 + interrupt.signum
            if holding is None:
                reason = _why_not_held(client, hosts_of(args), None if silent else stuck, silent)
                raise CliError(
                    f"timed out after {timeout:g}s waiting for {waited}"
                    + (f": {reason}" if reason else ""),
                    EXIT_TIMEOUT,
                )
            try:
                return guarded.run(holding, args, err, env(holding), what, revoked)
            finally:
                _release(holding)
    finally:
        progress.stop()


def _release(holding: Holding) -> None:
    """Release ``holding`` on this thread, the one that acquired it: a lock is its thread's, and
    released from another it would stay held until the session ends. Signals are noted and
    dropped meanwhile (the command has ended); the release waits for the server at most
    ``DELETE_WAIT`` (2 s), and not at all while disconnected: the delete then goes on in the
    background until the client stops, and the server removes the node with the session."""
    if holding.release is None:
        return
    with signals(noted, WAIT_SIGNALS):
        try:
            holding.release()
        except Exception:
            log.info("could not release %s", holding.node, exc_info=True)


#: The signals passed on to the command while it runs: ``kill``'s default, a closed terminal,
#: and SIGINT sent to this process (by a supervisor, a container runtime, ``timeout -s INT``).
HOLD_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def typed_at_terminal() -> bool:
    """Whether a SIGINT this process received is a Ctrl-C typed at its terminal: this process is
    in the terminal's foreground process group, which the command shares, so the terminal sent
    the command the same signal (passing it on would send it twice)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:  # no controlling terminal: a supervisor, a container, cron
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


class Guarded:
    """The command run while something is held (``lock``, ``elect``, ``register``), and the
    signals meant for it.

    Within :meth:`taking_signals`, opened before the wait, :data:`HOLD_SIGNALS` are this
    object's: noted until the command runs, then passed on to it. A wait's own
    :class:`Interrupter` takes them over while it waits, and hands them back as it ends, so no
    signal finds Python's default (SIGTERM ending this process with the lock held) between the
    end of the wait and the start of the command. A signal noted before :meth:`run` starts the
    command means it never starts; one that comes while it is being started is passed on to it
    once it runs."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self._child: subprocess.Popen[bytes] | None = None  # the command, once it runs
        self._early: list[int] = []  # signals received before it ran

    def taking_signals(self) -> contextlib.AbstractContextManager[None]:
        """A block within which :data:`HOLD_SIGNALS` are noted, or passed on to the command."""
        return signals(self._forward, HOLD_SIGNALS)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        child = self._child
        if child is None:
            self._early.append(signum)  # before it runs: it could not get it itself
            return
        if signum == signal.SIGINT and typed_at_terminal():
            return  # the terminal's Ctrl-C reached the command directly
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    def run(
        self,
        holding: Holding,
        args: argparse.Namespace,
        err: TextIO,
        variables: dict[str, str],
        what: str,
        revoked: threading.Event | None,
    ) -> int:
        """Run the command while ``holding`` is held, with ``variables`` in its environment,
        signals passed on, and its death with this process's; its exit status,
        :data:`EXIT_LOCK_LOST` or :data:`EXIT_REVOKED` once it was stopped, or ``128 + signum``
        without running it if a signal came first. The command has ended when this returns.
        Called within :meth:`taking_signals`."""
        if self._early:  # stopped before the command ran: it never starts
            return 128 + self._early[0]
        env = dict(os.environ)
        env.update(variables)
        try:
            # the kernel kills the command if this process dies before it could stop it (Linux)
            child = subprocess.Popen(self.command, env=env, preexec_fn=dies_with_this_process())
        except OSError as exc:
            raise CliError(
                f"cannot run {self.command[0]}: {exc.strerror}", EXIT_CANNOT_RUN
            ) from exc
        except subprocess.SubprocessError as exc:
            raise CliError(f"cannot run {self.command[0]} guarded: {exc}", EXIT_CANNOT_RUN) from exc
        self._child = child
        for signum in self._early:  # came while it was being started
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)
        try:
            return _until_done(child, self.command[0], holding, args, err, what, revoked)
        finally:
            if child.poll() is None:  # an error above: the command never runs unheld
                child.kill()
                child.wait()


def _until_done(
    child: subprocess.Popen[bytes],
    name: str,
    holding: Holding,
    args: argparse.Namespace,
    err: TextIO,
    what: str,
    revoked: threading.Event | None,
) -> int:
    while True:
        try:
            return _exit_status(child.wait(args.poll_interval))
        except subprocess.TimeoutExpired:
            pass
        reason = holding.lost_reason()
        if reason is not None:
            say(
                err,
                f"pycurator: {what} lost ({shown(reason)}): {shown(holding.node)}; "
                f"terminating {shown(name)}\n",
            )
            _stop_child(child, name, args.grace, err)
            return EXIT_LOCK_LOST
        if revoked is not None and revoked.is_set():
            say(err, f"pycurator: {what} revoked: terminating {shown(name)}\n")
            _stop_child(child, name, args.grace, err)
            return EXIT_REVOKED
