"""What a local ZooKeeper server and a local ensemble share: their configuration, the java
command line, and starting and ending a server process."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

#: Debian's server jar (its manifest names its dependencies) and a quiet logging binding.
DEFAULT_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar"
CLASSPATH_ENV = "PYCURATOR_ZK_CLASSPATH"
#: The JVM's options: small and quick to start, and no performance data file
#: (``/tmp/hsperfdata_USER/PID``, for ``jps`` and ``jstat``), which a server ended by SIGKILL
#: would leave behind.
JAVA_OPTIONS = (
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-XX:-UsePerfData",
)
STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
#: ZooKeeper's switch for its "extended" node types, TTL nodes (``createTTL``), off by default.
#: With it on, a server's id must be at most 254 (ZooKeeper's ``EphemeralType``: an ephemeral
#: owner whose high byte is 0xff names a TTL): a standalone server's is 1, an ensemble's members
#: are numbered from 1.
TTL_NODES = "-Dzookeeper.extendedTypesEnabled=true"


def server_classpath(classpath: str | None = None) -> str:
    """``classpath``, else ``PYCURATOR_ZK_CLASSPATH``, else Debian's jars."""
    return classpath or os.environ.get(CLASSPATH_ENV) or DEFAULT_CLASSPATH


def config_lines(*, tick_time_ms: int, data_dir: Path, host: str, client_port: int) -> list[str]:
    """The settings every local server has: sessions of 2 to 120 ticks, every four-letter word,
    no admin server, no fsync, no connection limit."""
    return [
        f"tickTime={tick_time_ms}",
        f"dataDir={data_dir}",
        f"clientPort={client_port}",
        f"clientPortAddress={host}",
        f"minSessionTimeout={2 * tick_time_ms}",
        f"maxSessionTimeout={120 * tick_time_ms}",
        "4lw.commands.whitelist=*",
        "admin.enableServer=false",
        "forceSync=no",
        "maxClientCnxns=0",
    ]


def java_command(
    *,
    java: str,
    classpath: str,
    container_check_interval_ms: int | None,
    main_class: str,
    config: Path,
) -> list[str]:
    """The java command line that runs ``main_class`` on ``config``, with TTL nodes enabled
    (:data:`TTL_NODES`)."""
    properties = ["-Dzookeeper.jmx.log4j.disable=true", TTL_NODES]
    if container_check_interval_ms is not None:
        properties.append(f"-Dznode.container.checkIntervalMs={container_check_interval_ms}")
    return [java, *JAVA_OPTIONS, *properties, "-cp", classpath, main_class, str(config)]


def launch(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start a server process in a session of its own, its output appended to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def end(process: subprocess.Popen[bytes] | None, sig: signal.Signals, timeout: float) -> None:
    """Send ``sig`` to a running server process and wait for it; SIGKILL it after ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)
