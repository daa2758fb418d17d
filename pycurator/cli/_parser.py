"""The ``pycurator`` command's arguments: every command, its options and its help."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from .. import __version__
from ._common import (
    COUNT,
    EXIT_LOCK_LOST,
    EXIT_NO_JAVA,
    EXIT_REFUSED,
    EXIT_REVOKED,
    EXIT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    HOSTS_ENV,
    POSITIVE_SECONDS,
    SECONDS,
    number,
    say,
)
from ._counters import java_long
from ._elect import (
    ELECT_ENV_HOSTS,
    ELECT_ENV_ID,
    ELECT_ENV_NODE,
    ELECT_ENV_PATH,
    ELECT_ENV_TOKEN,
    ELECTION_SYSTEMS,
)
from ._lock import ENV_HOSTS, ENV_NODE, ENV_PATH, ENV_TOKEN, SYSTEMS
from ._options import base_option, force_option, global_options, quiet_option
from ._register import (
    SERVICE_ENV_ADDRESS,
    SERVICE_ENV_HOSTS,
    SERVICE_ENV_ID,
    SERVICE_ENV_NAME,
    SERVICE_ENV_NODE,
    SERVICE_ENV_PORT,
)
from ._server import DEFAULT_PORT
from ._text import shown

#: How the commands that run a command are called: their usage, and what a command line that
#: forgot the ``--`` before the command is pointed to.
RUN_USAGE = {
    "lock": "pycurator lock [OPTIONS] PATH -- CMD [ARGS...]",
    "elect": "pycurator elect [OPTIONS] PATH --id ID -- CMD [ARGS...]",
    "register": "pycurator register [OPTIONS] NAME --port N -- CMD [ARGS...]",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {shown(message, backslash=False)}\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        """As argparse's (help, version, usage), but help whose reader has gone ends the
        command as any closed output does (argparse would go on, and exit 0); an error message
        unread still leaves its status."""
        if not message:
            return
        stream = sys.stderr if file is None else file
        if stream is sys.stderr:
            say(stream, message)
            return
        stream.write(message)
        stream.flush()


def _discovery_commands(commands: Any) -> None:
    """``register`` and ``services``: curator-x-discovery's instances."""
    port = number(int, 0, inclusive=True, maximum=65535)
    register = commands.add_parser(
        "register",
        usage=RUN_USAGE["register"],
        help="run a command while an instance of a service is registered for it",
        description=(
            "Register an instance of service NAME (curator-x-discovery's node BASE/NAME/ID, "
            "found by Java's ServiceDiscovery, Spring Cloud and Dubbo), run CMD, and unregister "
            "it once CMD ends; if this process dies, the instance goes with its session. An "
            "expired session is registered again. CMD sees "
            f"${SERVICE_ENV_NAME}, ${SERVICE_ENV_ID}, ${SERVICE_ENV_ADDRESS}, "
            f"${SERVICE_ENV_PORT}, ${SERVICE_ENV_NODE} and ${SERVICE_ENV_HOSTS}. Exit status: "
            f"CMD's; {EXIT_UNAVAILABLE} if ZooKeeper cannot be reached or the instance not "
            f"registered; {EXIT_USAGE} for a bad option."
        ),
    )
    register.add_argument("name", metavar="NAME", help="the service, e.g. billing")
    register.add_argument("--port", type=port, required=True, metavar="N", help="its port")
    register.add_argument("--ssl-port", type=port, metavar="N", help="its TLS port")
    register.add_argument(
        "--address", metavar="A", help="its address (default: the one Curator's builder picks)"
    )
    register.add_argument("--id", metavar="ID", help="its id (default: a random UUID)")
    register.add_argument(
        "--payload",
        metavar="JSON",
        help='its payload, a JSON value (an object with "@class" is that Java class\'s)',
    )
    register.add_argument(
        "--uri-spec", metavar="TEMPLATE", help="its URI template, e.g. {scheme}://{address}:{port}"
    )
    base_option(register)
    register.add_argument(
        "--poll-interval", type=POSITIVE_SECONDS, default=0.1, help=argparse.SUPPRESS
    )
    register.add_argument("--grace", type=SECONDS, default=10.0, help=argparse.SUPPRESS)
    global_options(register, top=False)

    services = commands.add_parser(
        "services",
        help="list the services of a discovery, or the instances of one",
        description=(
            "List the services under the base path with their number of instances, or the "
            "instances of NAME (Java's and Python's alike); a node that is no instance is "
            "shown as unreadable."
        ),
    )
    services.add_argument("name", nargs="?", metavar="NAME", help="the service")
    services.add_argument("--json", action="store_true", help="print JSON instead of a table")
    services.add_argument(
        "--watch",
        action="store_true",
        help=(
            "print NAME's instances again each time they change, until interrupted (with "
            "--json: one document a line per change)"
        ),
    )
    services.add_argument("--interval", type=POSITIVE_SECONDS, default=1.0, help=argparse.SUPPRESS)
    base_option(services)
    global_options(services, top=False)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pycurator`` command."""
    parser = _Parser(
        prog="pycurator",
        description=(
            "Curator's ZooKeeper locks, elections and service discovery from the command line, "
            "shared with Java Curator."
        ),
    )
    parser.add_argument("--version", action="version", version=f"pycurator {__version__}")
    global_options(parser, top=True)
    commands = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")

    lock = commands.add_parser(
        "lock",
        usage=RUN_USAGE["lock"],
        help="run a command while holding a lock",
        description=(
            "Run CMD while holding the lock on PATH (Java Curator's InterProcessMutex on the "
            f"same PATH is excluded). CMD sees ${ENV_PATH}, ${ENV_NODE}, ${ENV_TOKEN} (fencing "
            f"token) and ${ENV_HOSTS}. Exit status: CMD's; {EXIT_TIMEOUT} on timeout; "
            f"{EXIT_LOCK_LOST} if the lock was lost while CMD ran (CMD gets SIGTERM, then "
            f"SIGKILL after --grace); {EXIT_REVOKED} if revoked (with --revocable); "
            f"{EXIT_UNAVAILABLE} if ZooKeeper cannot be reached; {EXIT_REFUSED} if PATH holds "
            "another recipe's or system's nodes (see --force)."
        ),
    )
    lock.add_argument("path", metavar="PATH", help="the lock path, e.g. /locks/billing")
    kind = lock.add_mutually_exclusive_group()
    kind.add_argument("--read", action="store_true", help="take the read side of a RW lock")
    kind.add_argument("--write", action="store_true", help="take the write side of a RW lock")
    kind.add_argument(
        "--semaphore",
        type=number(int, 1, inclusive=True),
        metavar="N",
        help="take one lease of a semaphore of N leases",
    )
    lock.add_argument(
        "--timeout",
        type=SECONDS,
        metavar="S",
        help=(
            "give up after S seconds, the first connection included; 0: one try, once "
            "connected within --connect-timeout (default: wait)"
        ),
    )
    lock.add_argument(
        "--grace",
        type=SECONDS,
        default=10.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when the lock is lost (default: 10)",
    )
    lock.add_argument("--data", metavar="TEXT", help="node data (default: this host's address)")
    lock.add_argument(
        "--system",
        choices=SYSTEMS,
        default="curator",
        help=(
            "whose lock to take on PATH: Curator's (default), ZooKeeper's own WriteLock "
            "(zookeeper), menagerie's ReentrantZkLock, read/write lock (--read, --write) or "
            "ZkSemaphore (--semaphore), or ZkLocker's (zklocker, PATH its parent, --key)"
        ),
    )
    lock.add_argument("--key", metavar="KEY", help="ZkLocker's key (with --system zklocker)")
    force_option(lock, "lock")
    lock.add_argument(
        "--revocable",
        action="store_true",
        help="stop CMD and release when another client revokes the lock",
    )
    quiet_option(lock)
    lock.add_argument("--poll-interval", type=POSITIVE_SECONDS, default=0.1, help=argparse.SUPPRESS)
    global_options(lock, top=False)

    elect = commands.add_parser(
        "elect",
        usage=RUN_USAGE["elect"],
        help="run a command while this process leads an election",
        description=(
            "Join the leader election on PATH (Curator's LeaderLatch, shared with Java's on the "
            "same PATH; or ZooKeeper's LeaderElectionSupport with --system zookeeper) and run "
            "CMD once this process leads. CMD sees "
            f"${ELECT_ENV_PATH}, ${ELECT_ENV_ID}, ${ELECT_ENV_NODE}, ${ELECT_ENV_TOKEN} "
            f"(fencing token) and ${ELECT_ENV_HOSTS}. Exit status: CMD's; {EXIT_TIMEOUT} on "
            f"timeout; {EXIT_LOCK_LOST} if leadership was lost while CMD ran (CMD gets SIGTERM, "
            f"then SIGKILL after --grace); {EXIT_UNAVAILABLE} if ZooKeeper cannot be reached; "
            f"{EXIT_REFUSED} if PATH holds another recipe's nodes (see --force)."
        ),
    )
    elect.add_argument("path", metavar="PATH", help="the election path, e.g. /election/billing")
    elect.add_argument(
        "--id", required=True, metavar="ID", help="this participant's id, written to its node"
    )
    elect.add_argument(
        "--system",
        choices=ELECTION_SYSTEMS,
        default="curator",
        help=(
            "whose election to join on PATH: Curator's LeaderLatch (default) or ZooKeeper's own "
            "LeaderElectionSupport (zookeeper; ID is the host name its offer holds)"
        ),
    )
    force_option(elect, "join")
    elect.add_argument(
        "--timeout",
        type=POSITIVE_SECONDS,
        metavar="S",
        help="give up after S seconds, the first connection included (default: wait)",
    )
    elect.add_argument(
        "--grace",
        type=SECONDS,
        default=10.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when leadership is lost (default: 10)",
    )
    quiet_option(elect)
    elect.add_argument(
        "--poll-interval", type=POSITIVE_SECONDS, default=0.1, help=argparse.SUPPRESS
    )
    global_options(elect, top=False)

    inspect = commands.add_parser(
        "inspect",
        help="show the holders and waiters of a lock path, or an election's participants",
        description=(
            "Show the holders and waiters of the Curator lock, read/write lock or semaphore at "
            "PATH, or the participants of a leader latch or selector (the leader first), "
            "Java's and Python's alike; also the locks and elections of ZooKeeper's own "
            "recipes (WriteLock, LeaderElectionSupport), menagerie and ZkLocker; a counter's "
            "value as each Curator recipe reads it, and a double barrier's members."
        ),
    )
    inspect.add_argument("path", metavar="PATH")
    inspect.add_argument(
        "--permits",
        type=int,
        metavar="N",
        help="a menagerie semaphore's permits (ZooKeeper does not keep them): the first N hold",
    )
    inspect.add_argument("--json", action="store_true", help="print JSON instead of a table")
    inspect.add_argument(
        "--tree",
        action="store_true",
        help="list every lock at or below PATH with its holder and queue length",
    )
    inspect.add_argument(
        "--watch",
        action="store_true",
        help=(
            "follow the lock live: holders, waiters and hand-offs as they happen, until "
            "interrupted (with --json: one document per change)"
        ),
    )
    inspect.add_argument("--interval", type=POSITIVE_SECONDS, default=1.0, help=argparse.SUPPRESS)
    global_options(inspect, top=False)

    count = commands.add_parser(
        "count",
        help="read a SharedCount or an atomic number, or add to it",
        description=(
            "Print the counter at PATH as Java reads it: a Java int (SharedCount, "
            "DistributedAtomicInteger: 4 bytes) or long (DistributedAtomicLong: 8 bytes), by its "
            "size unless --int or --long says. With --add N, add N atomically (a versioned "
            "write, as the atomic recipes make it: never applied twice) and print the new value; "
            "a missing node is made, its type given by --int or --long. Exit status "
            f"{EXIT_TIMEOUT} if others changed it at every try within --timeout; 1 if the answer "
            "to the write was lost and whether it took cannot be known (it was not retried)."
        ),
    )
    count.add_argument("path", metavar="PATH", help="the counter's node, e.g. /counters/hits")
    count.add_argument(
        "--add",
        type=java_long,
        metavar="N",
        help="add N (negative to subtract), wrapping as Java's arithmetic",
    )
    width = count.add_mutually_exclusive_group()
    width.add_argument("--int", action="store_true", help="a Java int (4 bytes)")
    width.add_argument("--long", action="store_true", help="a Java long (8 bytes)")
    count.add_argument(
        "--timeout",
        type=POSITIVE_SECONDS,
        default=10.0,
        metavar="S",
        help="with --add: give up trying after S seconds (default: 10)",
    )
    count.add_argument("--json", action="store_true", help="print JSON: path, type and value")
    global_options(count, top=False)

    watch = commands.add_parser(
        "watch",
        help="print a subtree's changes as they happen, until interrupted",
        description=(
            "Follow PATH and every node below it (a CuratorCache, as Java Curator's) and print "
            "each node created, changed or deleted as it happens, as 'etcdctl watch --prefix' "
            "does; a suspended connection is told at once, and the changes made while it was "
            "away are told once it is back. Ends on Ctrl-C, SIGTERM or SIGHUP (exit status 0)."
        ),
    )
    watch.add_argument("path", metavar="PATH", help="the subtree's root, e.g. /services")
    watch.add_argument(
        "--json", action="store_true", help="print one JSON document per event instead of lines"
    )
    watch.add_argument(
        "--initial", action="store_true", help="print the nodes already there first, as created"
    )
    watch.add_argument("--interval", type=POSITIVE_SECONDS, default=1.0, help=argparse.SUPPRESS)
    global_options(watch, top=False)

    revoke = commands.add_parser(
        "revoke",
        help="ask the holder of a lock node to release it",
        description="Write Curator's __REVOKE__ message to NODE_PATH (see inspect for nodes).",
    )
    revoke.add_argument("node", metavar="NODE_PATH")
    global_options(revoke, top=False)

    _discovery_commands(commands)

    server = commands.add_parser(
        "server",
        help="run a ZooKeeper to try things on, until Ctrl-C",
        description=(
            "Start ZooKeeper from its installed jars (Debian's zookeeper package, or "
            "$PYCURATOR_ZK_CLASSPATH) on 127.0.0.1, print its connect string on stdout once it "
            "serves, and run until Ctrl-C, SIGTERM or SIGHUP; then stop it and delete its data. "
            "One node, no fsync: for trying things, not for production. Exit status 0 once "
            f"stopped, {EXIT_UNAVAILABLE} if it cannot start (the port in use, no java, no jars)."
        ),
    )
    server.add_argument(
        "--port",
        type=number(int, 0, inclusive=True, maximum=65535),
        default=DEFAULT_PORT,
        metavar="N",
        help=(
            f"the client port (default: {DEFAULT_PORT}, where the other commands look without "
            "--hosts; 0: any free port)"
        ),
    )

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
    demo.add_argument("--python-threads", type=COUNT, default=3, metavar="N")
    demo.add_argument("--java-threads", type=COUNT, default=3, metavar="N")
    demo.add_argument("--rounds", type=COUNT, default=4, metavar="N", help="holds per thread")
    demo.add_argument(
        "--hold-ms",
        type=number(float, 0, inclusive=True),
        default=10.0,
        metavar="MS",
        help="time inside the lock",
    )
    demo.add_argument(
        "--unlocked",
        action="store_true",
        help="skip the lock, to show the lost updates it prevents (exits 1)",
    )
    global_options(demo, top=False)
    return parser
