"""``pycurator elect``: run a command while this process leads an election (Curator's
``LeaderLatch``, or ZooKeeper's ``LeaderElectionSupport``), and stop it when that is lost."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TextIO

from kazoo.client import KazooClient

from .. import zkrecipes
from .._protocol.errors import LockLostError
from ._common import EXIT_USAGE, CliError, checked_path, hosts_of
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

#: What ``elect`` puts in the command's environment.
ELECT_ENV_PATH = "PYCURATOR_ELECT_PATH"
ELECT_ENV_ID = "PYCURATOR_ELECT_ID"
ELECT_ENV_NODE = "PYCURATOR_ELECT_NODE"
ELECT_ENV_TOKEN = "PYCURATOR_ELECT_TOKEN"
ELECT_ENV_HOSTS = "PYCURATOR_ELECT_HOSTS"

#: The election systems ``elect --system`` takes: Curator's ``LeaderLatch``, and ZooKeeper's
#: own ``LeaderElectionSupport``.
ELECTION_SYSTEMS = ("curator", "zookeeper")


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
    command = resolve_command(args.command, "pycurator elect PATH --id ID -- CMD [ARGS...]")
    layout = "zookeeper-election" if args.system == "zookeeper" else "latch"

    def acquire(client: KazooClient, before_stop: list[Callable[[], None]]) -> Holding | None:
        started = time.monotonic()
        # within --timeout (NoAnswer): with the server gone, it would wait for its return
        answered(
            first_reads_wait(args),
            lambda: through_outages(lambda: refuse_crossing(client, args.path, layout, args.force)),
        )
        spent(args, started)
        latch: LeaderLatch | zkrecipes.LeaderElection
        if args.system == "zookeeper":
            latch = zkrecipes.LeaderElection(client, args.path, args.id)
        else:
            latch = LeaderLatch(client, args.path, args.id)
        # the first loss ends the command, even if the latch leads again before we look
        lost: list[str] = []
        latch.on_lost(lambda _latch, reason: lost.append(reason))
        latch.start()
        before_stop.append(latch.close)  # a latch is no thread's: any may close it
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
    return run_while_held(command, args, err, "leadership", waited, acquire, env, layout=layout)
