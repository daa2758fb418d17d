"""``pycurator server``: a ZooKeeper to try things on, in one command, that leaves nothing behind.

It runs :class:`pycurator.testing.ZooKeeperServer` (ZooKeeper's own jars, Debian's by default,
or ``$PYCURATOR_ZK_CLASSPATH``) in the foreground, with its data in a temporary folder, until
Ctrl-C, SIGTERM or SIGHUP; then it stops the server and removes the folder. It is a server for
a laptop, not for production: one node, no fsync, every four-letter word enabled.
"""

from __future__ import annotations

import argparse
import signal
import socket
import threading
from typing import TextIO

from ._common import EXIT_ERROR, EXIT_UNAVAILABLE, CliError, signals

#: The port when none is given: the one the other commands use without ``--hosts``.
DEFAULT_PORT = 2181
#: The signals that stop the server: Ctrl-C, ``kill``'s default, a closed terminal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Longest the refusal of a port in use waits for what listens there to answer ``srvr``.
PROBE_WAIT = 2.0


def _port_in_use(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``. The probe binds as ZooKeeper does,
    with ``SO_REUSEADDR``: the connections closed there lately (a stopped server's, its own
    readiness checks'), which linger in TIME-WAIT for a minute, keep neither from binding."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _in_use(port: int) -> str:
    """The refusal of a ``port`` something listens on: a ZooKeeper (it answers ``srvr``, or
    says that word is not allowed), to be used as it is, or another program."""
    from ..testing import four_letter_word

    try:
        answer = four_letter_word("127.0.0.1", port, "srvr", PROBE_WAIT)
    except OSError:
        answer = ""
    hosts = f"127.0.0.1:{port}"
    if answer.startswith("Zookeeper version:") or "not in the whitelist" in answer:
        return (
            f"port {port} is in use on 127.0.0.1: a ZooKeeper serves it already (use it: "
            f"--hosts {hosts}, or export PYCURATOR_ZK_HOSTS={hosts}); give --port 0 to start "
            "another on a free port"
        )
    return (
        f"port {port} is in use on 127.0.0.1 by a program that is no ZooKeeper: give --port 0 "
        "for a free one"
    )


def cmd_server(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ZooKeeper on 127.0.0.1 until interrupted: print its connect string on ``out`` once
    it serves, then wait; 0 once stopped by a signal, 1 if the server died on its own."""
    from ..testing import ZooKeeperServer, ZooKeeperServerError

    if args.port != 0 and _port_in_use(args.port):
        raise CliError(_in_use(args.port), EXIT_UNAVAILABLE)
    stop = threading.Event()
    received: list[int] = []

    def stopping(signum: int, frame: object) -> None:
        received.append(signum)
        stop.set()

    with signals(stopping, STOP_SIGNALS):
        server = ZooKeeperServer(port=args.port or None)
        try:
            err.write(f"pycurator: starting ZooKeeper on {server.hosts} ...\n")
            err.flush()
            try:
                server.start()
            except (ZooKeeperServerError, OSError) as exc:
                raise CliError(_start_failure(exc), EXIT_UNAVAILABLE) from None
            out.write(f"{server.hosts}\n")
            out.flush()
            err.write(
                f"pycurator: ZooKeeper serves {server.hosts} (pid {server.pid}); in another "
                f"terminal: export PYCURATOR_ZK_HOSTS={server.hosts}; Ctrl-C stops it and "
                "deletes its data\n"
            )
            err.flush()
            while not stop.wait(0.5):
                if not server.running:
                    raise CliError("ZooKeeper stopped on its own", EXIT_ERROR)
        finally:
            server.close()  # the process ends, and its folder goes with it
    if received:
        err.write(f"pycurator: stopped ZooKeeper on {server.hosts}\n")
    return 0


def _start_failure(exc: BaseException) -> str:
    """One line for a server that did not start: the error's first line, the last line of the
    server's log, and what to install or set."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = ": ".join([lines[0].rstrip(":"), lines[-1]] if len(lines) > 1 else lines)
    return (
        f"{said or type(exc).__name__} (it needs java and ZooKeeper's jars: on Debian "
        "'apt-get install zookeeper', or set PYCURATOR_ZK_CLASSPATH)"
    )


__all__ = ["DEFAULT_PORT", "cmd_server"]
