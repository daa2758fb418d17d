"""A real ZooKeeper server as a local Java process, from Debian's ``zookeeper`` jars."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from ._fourletter import four_letter_word

#: Debian's server jar (its manifest names its dependencies) and a quiet logging binding.
DEFAULT_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar"
CLASSPATH_ENV = "PYCURATOR_ZK_CLASSPATH"
JAVA_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


#: Servers not stopped yet, for :func:`stop_all_servers`.
_OPEN: set[ZooKeeperServer] = set()


def stop_all_servers() -> None:
    """Stop every :class:`ZooKeeperServer` of this process that is not stopped yet."""
    for server in list(_OPEN):
        server.stop()


class ZooKeeperServerError(RuntimeError):
    """The server did not start; the message ends with the tail of its log."""


class ZooKeeperServer:
    """A standalone ZooKeeper 3.8 on 127.0.0.1, started and always cleaned up.

    ``container_check_interval_ms`` sets how often the server reaps empty container nodes
    (``znode.container.checkIntervalMs``); ``tick_time_ms`` bounds session timeouts to between
    2 and 120 ticks (the default of 500 ms allows sessions of 1 s to 60 s). Data and log live in a
    temporary folder unless ``data_dir`` is given; :meth:`restart` keeps them.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        container_check_interval_ms: int | None = 100,
        tick_time_ms: int = 500,
        classpath: str | None = None,
        java: str = "java",
        start_timeout: float = 60.0,
    ) -> None:
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self._own_dir = tempfile.mkdtemp(prefix="pycurator-zk-")
        self.data_dir = Path(data_dir) if data_dir is not None else Path(self._own_dir) / "data"
        self.log_path = Path(self._own_dir) / "server.log"
        self.container_check_interval_ms = container_check_interval_ms
        self.tick_time_ms = tick_time_ms
        self.classpath = classpath or os.environ.get(CLASSPATH_ENV) or DEFAULT_CLASSPATH
        self.java = java
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        _OPEN.add(self)

    @property
    def hosts(self) -> str:
        """The connect string, ``127.0.0.1:PORT``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = Path(self._own_dir) / "zoo.cfg"
        config.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_time_ms}",
                    f"dataDir={self.data_dir}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    f"minSessionTimeout={2 * self.tick_time_ms}",
                    f"maxSessionTimeout={120 * self.tick_time_ms}",
                    "4lw.commands.whitelist=*",
                    "admin.enableServer=false",
                    "forceSync=no",
                    "maxClientCnxns=0",
                    "",
                ]
            )
        )
        return config

    def command(self) -> list[str]:
        """The java command line that runs the server."""
        properties = ["-Dzookeeper.jmx.log4j.disable=true"]
        if self.container_check_interval_ms is not None:
            properties.append(
                f"-Dznode.container.checkIntervalMs={self.container_check_interval_ms}"
            )
        return [
            self.java,
            *JAVA_OPTIONS,
            *properties,
            "-cp",
            self.classpath,
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(Path(self._own_dir) / "zoo.cfg"),
        ]

    def start(self) -> ZooKeeperServer:
        """Start the server and wait until it serves requests; raise ZooKeeperServerError if not."""
        if self.running:
            return self
        self._write_config()
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        end = time.monotonic() + self.start_timeout
        while time.monotonic() < end:
            if self._process.poll() is not None:
                break
            if self._serving():
                return self
            time.sleep(0.1)
        tail = self._log_tail()
        self._terminate(kill=True)
        raise ZooKeeperServerError(
            f"ZooKeeper did not start on {self.hosts} (classpath {self.classpath}):\n{tail}"
        )

    def _serving(self) -> bool:
        try:
            return four_letter_word(self.host, self.port, "ruok", 1.0) == "imok" and (
                "Mode:" in four_letter_word(self.host, self.port, "srvr", 1.0)
            )
        except OSError:
            return False

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _terminate(self, kill: bool) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def kill(self) -> None:
        """SIGKILL the server; its data stays for :meth:`restart`."""
        self._terminate(kill=True)

    def restart(self) -> ZooKeeperServer:
        """Stop (if running) and start again on the same port with the same data."""
        self._terminate(kill=False)
        return self.start()

    def stop(self) -> None:
        """Stop the server and remove every file this object created."""
        self._terminate(kill=False)
        shutil.rmtree(self._own_dir, ignore_errors=True)
        _OPEN.discard(self)

    def __enter__(self) -> ZooKeeperServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.hosts}, running={self.running})"
