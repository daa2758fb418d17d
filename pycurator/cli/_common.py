"""What every subcommand shares: exit statuses, errors, signals, output whose reader has gone,
connecting, paths and number options."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from kazoo.client import KazooClient

from .._connect import connect
from .._connect_string import ConnectString
from .._protocol.checks import MAX_SESSION_TIMEOUT, UNLIMITED_TIMEOUT
from .._protocol.errors import ConnectTimeout
from .._protocol.paths import validate_path

#: A ZooKeeper error.
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
#: The reader of the standard output went away (``pycurator inspect --watch PATH | head -1``):
#: what a shell reports for ``cat`` or ``git`` ended by SIGPIPE.
EXIT_OUTPUT_CLOSED = 128 + signal.SIGPIPE

#: The ensemble when no ``--hosts`` is given; set but empty (or malformed), a usage error.
HOSTS_ENV = "PYCURATOR_ZK_HOSTS"
#: The ensemble when neither ``--hosts`` nor :data:`HOSTS_ENV` is given (kazoo's default too).
DEFAULT_HOSTS = "127.0.0.1:2181"

#: ``--session-timeout``'s default, where connect() asks for 30 s: ``lock`` and ``elect`` stop
#: their command as soon as the connection is suspended, so a longer session would keep no
#: lock longer; it would only keep a crashed holder's lock from the next waiter longer. This
#: process does nothing but keep the session, so no pause of a busy program delays its pings.
SESSION_TIMEOUT = 10.0

#: Longest the exit path waits to release and to close the session: with the server gone, the
#: process exits anyway and the server removes our nodes when the session expires.
TEARDOWN_WAIT = 5.0


class CliError(Exception):
    """A failure to report as one line, with the exit status to leave with."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status


#: The signals that end a wait: ``kill``'s default, a closed terminal, and Ctrl-C.
WAIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Interrupter:
    """Ends a wait on SIGTERM, SIGHUP or SIGINT without raising anything inside it.

    An exception raised by a signal handler lands wherever the main thread is, kazoo's insides
    included: between taking a lock and the ``with`` that would release it, it leaves that lock
    taken for good, and the next thread to need it (kazoo's callback worker) and everything that
    joins that thread wait forever. So within :meth:`ending` the handler raises nothing: the
    signal's number goes down a pipe (``signal.set_wakeup_fd``) to a thread of its own, which
    remembers it and calls the ``end`` it was given (for a wait on the server, ``client.stop``,
    which ends every recipe's wait with ``ConnectionClosedError``). The waiting code then asks
    :attr:`signum` whether a signal, not a lost connection, ended it.
    """

    def __init__(self) -> None:
        #: The first signal received within :meth:`ending`, or None.
        self.signum: int | None = None

    @contextlib.contextmanager
    def ending(self, end: Callable[[], object]) -> Iterator[None]:
        """Within the block (in the main thread), the first of :data:`WAIT_SIGNALS` sets
        :attr:`signum` and calls ``end`` from another thread; the others are noted and ignored."""
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)

        def wake() -> None:
            try:
                while data := os.read(read_fd, 1):
                    if self.signum is None and data[0] in WAIT_SIGNALS:
                        self.signum = data[0]
                        end()
            finally:
                os.close(read_fd)

        threading.Thread(target=wake, name="pycurator-signals", daemon=True).start()
        try:
            with signals(noted, WAIT_SIGNALS):
                previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
                try:
                    yield
                finally:
                    signal.set_wakeup_fd(previous_fd)
        finally:
            os.close(write_fd)  # the thread reads the end of the pipe, and ends


def noted(signum: int, frame: Any) -> None:
    """The Python side of a signal within :meth:`Interrupter.ending`: nothing (the pipe tells)."""


# -- output whose reader has gone ------------------------------------------------------------


def silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device: its reader has gone, and what it
    still holds or is given (down to the interpreter's flush at exit) goes nowhere, silently."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def say(stream: TextIO, text: str) -> None:
    """Write ``text`` on ``stream`` at once; a stream whose reader has gone (a closed pipe) takes
    it and what follows silently: a message lost is no reason to stop a command that runs."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        silence(stream)


def output_gone(stream: TextIO) -> bool:
    """Whether the reader of ``stream`` has gone: a pipe whose other end is closed (``| head
    -1`` that has its line), or a terminal hung up. A file, or a stream without a descriptor,
    never is. Tells at once, without writing."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, 0)  # errors and hang-ups are told whatever is asked for
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def connect_string(text: str) -> str:
    """An argparse type: a ZooKeeper connect string (``--hosts``), without the spaces around
    its servers; an empty or malformed one is a usage error naming the problem."""
    try:
        return ConnectString.parse(text).text
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def given_hosts(args: argparse.Namespace) -> str | None:
    """``--hosts``, else ``$PYCURATOR_ZK_HOSTS`` if it is set, else None. The variable set to
    an empty or malformed connect string is a usage error: unset, it means the default, but
    set empty it is more likely a script's variable that was never filled in, and a lock taken
    on another ensemble than meant excludes nobody."""
    if args.hosts is not None:
        hosts: str = args.hosts
        return hosts
    value = os.environ.get(HOSTS_ENV)
    if value is None:
        return None
    try:
        return ConnectString.parse(value).text
    except ValueError as exc:
        raise CliError(f"${HOSTS_ENV}: {exc} (unset it for the default)", EXIT_USAGE) from None


def hosts_of(args: argparse.Namespace) -> str:
    """``--hosts``, else ``$PYCURATOR_ZK_HOSTS``, else :data:`DEFAULT_HOSTS`."""
    hosts = given_hosts(args)
    return DEFAULT_HOSTS if hosts is None else hosts


@contextlib.contextmanager
def connected(
    args: argparse.Namespace,
    connect_within: float | None = None,
    before_stop: list[Callable[[], None]] | None = None,
) -> Iterator[KazooClient]:
    """A started client; ``connect_within`` shortens ``--connect-timeout``. On the way out the
    ``before_stop`` calls run, then the client stops, all within :data:`TEARDOWN_WAIT`."""
    hosts = hosts_of(args)
    within = args.connect_timeout
    if connect_within is not None:
        within = min(within, connect_within)
    try:
        client = connect(hosts, session_timeout=args.session_timeout, connect_timeout=within)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc
    except ConnectTimeout as exc:
        raise CliError(str(exc), EXIT_UNAVAILABLE) from exc
    calls: list[Callable[[], None]] = [] if before_stop is None else before_stop
    try:
        yield client
    finally:
        teardown(client, calls)


def teardown(client: KazooClient, calls: list[Callable[[], None]]) -> None:
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


def checked_path(value: str, what: str = "path") -> str:
    """``value`` if it is a valid ZooKeeper path, else a usage error naming ``what``."""
    try:
        return validate_path(value)
    except ValueError as exc:
        raise CliError(f"bad {what}: {exc}", EXIT_USAGE) from exc


def number(
    kind: Callable[[str], float],
    minimum: float,
    inclusive: bool,
    maximum: float = math.inf,
) -> Callable[[str], Any]:
    """An argparse type: a finite number of type ``kind``, >= (or >) ``minimum`` and at most
    ``maximum``."""
    bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
    if maximum < math.inf:
        bound += f" and at most {maximum:.0f}"
    noun = "a whole number" if kind is int else "a finite number"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {noun} {bound}, not {text!r}") from None
        if (
            not math.isfinite(value)
            or value < minimum
            or (value == minimum and not inclusive)
            or value > maximum
        ):
            raise argparse.ArgumentTypeError(f"must be {noun} {bound}, not {text!r}")
        return value

    return parse


#: Seconds that may be zero (``--timeout 0``: try once), and seconds that may not; a huge
#: ``--timeout`` waits without limit, as the library's timeouts do.
SECONDS = number(float, 0, inclusive=True)
POSITIVE_SECONDS = number(float, 0, inclusive=False)
#: A connection's timeouts, which :func:`pycurator.connect` bounds.
CONNECT_SECONDS = number(float, 0, inclusive=False, maximum=UNLIMITED_TIMEOUT)
SESSION_SECONDS = number(float, 0, inclusive=False, maximum=MAX_SESSION_TIMEOUT)
COUNT = number(int, 0, inclusive=True)


@contextlib.contextmanager
def signals(
    handler: Callable[[int, Any], Any],
    names: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """``handler`` for ``names`` (SIGTERM and SIGHUP) inside the block."""
    previous = {s: signal.signal(s, handler) for s in names}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
