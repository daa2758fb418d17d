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


def _port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def cmd_server(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ZooKeeper on 127.0.0.1 until interrupted: print its connect string on ``out`` once
    it serves, then wait; 0 once stopped by a signal, 1 if the server died on its own."""
    from ..testing import ZooKeeperServer, ZooKeeperServerError

    if args.port != 0 and _port_in_use(args.port):
        raise CliError(
            f"port {args.port} is in use on 127.0.0.1 (a ZooKeeper already running?): "
            "give --port 0 for a free one",
            EXIT_UNAVAILABLE,
        )
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
