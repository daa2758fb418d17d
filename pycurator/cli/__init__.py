"""The ``pycurator`` command: ``lock``, ``elect``, ``inspect``, ``count``, ``watch``,
``revoke``, ``register``, ``services``, ``server`` and ``demo``.

Errors are one line on stderr and a non-zero exit status (see the ``EXIT_*`` constants); a
standard output whose reader has gone ends the command quietly. The arguments are parsed in
``_parser``; the subcommands live in ``_lock`` and ``_elect`` (over ``_run``, what the two
share), ``_register`` (which runs a command as they do) and ``_services``, ``_inspect``
(inspect, revoke; ``_watch`` follows a lock live), ``_counters`` (count, and how inspect shows
counters and barriers), ``_subtree`` (watch), ``_server`` (server) and here (demo). What they
print of the tree goes through ``_text``.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)

from ._common import (
    DEFAULT_HOSTS,
    EXIT_CANNOT_RUN,
    EXIT_ERROR,
    EXIT_LOCK_LOST,
    EXIT_NO_JAVA,
    EXIT_NOT_FOUND,
    EXIT_OUTPUT_CLOSED,
    EXIT_REFUSED,
    EXIT_REVOKED,
    EXIT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    HOSTS_ENV,
    CliError,
    given_hosts,
    say,
    silence,
)
from ._counters import cmd_count
from ._elect import (
    ELECT_ENV_HOSTS,
    ELECT_ENV_ID,
    ELECT_ENV_NODE,
    ELECT_ENV_PATH,
    ELECT_ENV_TOKEN,
    cmd_elect,
)
from ._inspect import cmd_inspect, cmd_revoke
from ._lock import ENV_HOSTS, ENV_NODE, ENV_PATH, ENV_TOKEN, cmd_lock
from ._parser import RUN_USAGE, build_parser
from ._register import cmd_register
from ._server import cmd_server
from ._services import cmd_services
from ._subtree import cmd_watch
from ._text import shown
from ._views import view_as_json, view_as_table

__all__ = [
    "DEFAULT_HOSTS",
    "ELECT_ENV_HOSTS",
    "ELECT_ENV_ID",
    "ELECT_ENV_NODE",
    "ELECT_ENV_PATH",
    "ELECT_ENV_TOKEN",
    "ENV_HOSTS",
    "ENV_NODE",
    "ENV_PATH",
    "ENV_TOKEN",
    "EXIT_CANNOT_RUN",
    "EXIT_ERROR",
    "EXIT_LOCK_LOST",
    "EXIT_NOT_FOUND",
    "EXIT_NO_JAVA",
    "EXIT_OUTPUT_CLOSED",
    "EXIT_REFUSED",
    "EXIT_REVOKED",
    "EXIT_TIMEOUT",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "HOSTS_ENV",
    "CliError",
    "build_parser",
    "cmd_count",
    "cmd_demo",
    "cmd_elect",
    "cmd_inspect",
    "cmd_lock",
    "cmd_register",
    "cmd_revoke",
    "cmd_server",
    "cmd_services",
    "cmd_watch",
    "main",
    "view_as_json",
    "view_as_table",
]


# -- demo ------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Run the cross-language demo; 1 if mutual exclusion failed."""
    from ..demo import DemoError, DemoOptions, JavaUnavailableError, run_demo

    if args.python_threads + args.java_threads == 0:
        raise CliError("the demo needs at least one thread", EXIT_USAGE)
    options = DemoOptions(
        hosts=given_hosts(args),
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pycurator`` console script and of ``python -m pycurator``.

    A reader of the standard output that has gone (``pycurator inspect --watch PATH | head
    -1``) ends the command quietly, with :data:`EXIT_OUTPUT_CLOSED`, as ``cat`` or ``git``
    end; what it held is released and its session closed on the way out, as for any end."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # a reader that has gone shows here, not in the exit's flush
    except BrokenPipeError:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BrokenPipeError:
                silence(stream)
        return EXIT_OUTPUT_CLOSED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        message = f"unrecognized arguments: {' '.join(unknown)}"
        if args.command_name in RUN_USAGE and not command:
            message += f"; put -- before the command to run: {_separated(args, argv, unknown)}"
        error = shown(message, backslash=False)
        parser.exit(EXIT_USAGE, f"pycurator {args.command_name}: error: {error}\n")
    if command and args.command_name not in RUN_USAGE:
        parser.error(f"{args.command_name} takes no command after --")
    args.command = command
    _log_to_stderr(args.verbose)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "lock": lambda a: cmd_lock(a, sys.stderr),
        "elect": lambda a: cmd_elect(a, sys.stderr),
        "inspect": lambda a: cmd_inspect(a, sys.stdout),
        "count": lambda a: cmd_count(a, sys.stdout),
        "watch": lambda a: cmd_watch(a, sys.stdout),
        "revoke": lambda a: cmd_revoke(a, sys.stdout),
        "register": lambda a: cmd_register(a, sys.stderr),
        "services": lambda a: cmd_services(a, sys.stdout),
        "demo": lambda a: cmd_demo(a, sys.stdout),
        "server": lambda a: cmd_server(a, sys.stdout, sys.stderr),
    }
    try:
        given_hosts(args)  # a bad $PYCURATOR_ZK_HOSTS is refused before anything else
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


class _LogFormat(logging.Formatter):
    """``pycurator: MESSAGE`` for pycurator's own records (their logger's name is the prefix
    already), ``pycurator: LOGGER: MESSAGE`` for the others (kazoo's), escaped as the rest of
    the command's output."""

    def format(self, record: logging.LogRecord) -> str:
        text = shown(record.getMessage())
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if record.name == "pycurator" or record.name.startswith("pycurator."):
            return f"pycurator: {text}"
        return f"pycurator: {record.name}: {text}"


def _log_to_stderr(verbose: bool) -> None:
    """Log records on stderr: with ``-v`` what kazoo does (INFO) and every wait and hold of the
    recipes (DEBUG: waiting, acquired, released, however short); without, only errors: ``lock``
    and ``elect`` report a loss themselves, once, naming the node."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormat())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    if verbose:
        logging.getLogger("pycurator").setLevel(logging.DEBUG)
    else:
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        logging.getLogger("pycurator").setLevel(logging.ERROR)


def _separated(args: argparse.Namespace, argv: list[str], unknown: list[str]) -> str:
    """The command line with ``--`` before the ``unknown`` arguments if they end it (they are
    then the command to run), else the usage."""
    if argv[len(argv) - len(unknown) :] == unknown:
        return shlex.join(["pycurator", *argv[: len(argv) - len(unknown)], "--", *unknown])
    return RUN_USAGE[args.command_name]


def _fail(message: str, status: int) -> int:
    say(sys.stderr, f"pycurator: error: {shown(message, backslash=False)}\n")
    return status
