"""A real ZooKeeper server as a local Java process, from Debian's ``zookeeper`` jars."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from ._fourletter import four_letter_word
from ._local import STANDALONE_MAIN, config_lines, end, java_command, launch, server_classpath

#: The lowest port :func:`free_port` hands out.
PORT_FLOOR = 15000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, below the range the system
    takes the local ends of outgoing connections from (Linux's ``ip_local_port_range``): a port
    handed out for a server to bind later is then not taken meanwhile by the local end of some
    connection, which would make that server fail to start (an ensemble member's election
    port, say, while its peers connect to each other). Where that range is unknown, or leaves
    no room below it, any port the system hands out."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different ports as :func:`free_port` hands them out: for servers that bind
    them all later (an ensemble, whose member will not start if two of its ports are one)."""
    low = _outgoing_ports_floor()
    tries = 200 if low - PORT_FLOOR > 1000 else 0
    with contextlib.ExitStack() as held:  # each port stays bound until all are chosen
        ports: list[int] = []
        while len(ports) < count:
            sock = held.enter_context(socket.socket())
            ports.append(_bind_free(sock, low, tries))
        return ports


def _bind_free(sock: socket.socket, low: int, tries: int) -> int:
    """Bind ``sock`` to a port below ``low`` nothing holds, or, after ``tries``, to any."""
    for _ in range(tries):
        port = PORT_FLOOR + secrets.randbelow(low - PORT_FLOOR)  # no shared state with a fork
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return port
    sock.bind(("127.0.0.1", 0))
    chosen: int = sock.getsockname()[1]
    return chosen


def _outgoing_ports_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


#: Servers not closed yet, for :func:`close_all_servers`.
_OPEN: set[ZooKeeperServer] = set()


def close_all_servers() -> None:
    """Close every :class:`ZooKeeperServer` of this process that is not closed yet."""
    for server in list(_OPEN):
        server.close()


class ZooKeeperServerError(RuntimeError):
    """The server did not start; the message ends with the tail of its log."""


class ZooKeeperServer:
    """A standalone ZooKeeper 3.8 on 127.0.0.1, started and always cleaned up.

    ``container_check_interval_ms`` sets how often the server reaps empty container nodes
    (``znode.container.checkIntervalMs``); ``tick_time_ms`` bounds session timeouts to between
    2 and 120 ticks (the default of 500 ms allows sessions of 1 s to 60 s). Data and log live in a
    temporary folder unless ``data_dir`` is given.

    As with :class:`ZooKeeperEnsemble`: :meth:`stop` (SIGTERM) and :meth:`kill` (SIGKILL) end the
    process and keep its data for :meth:`start` or :meth:`restart`; :meth:`close` (and leaving a
    ``with`` block) ends it and removes every file, for good.
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
        self.classpath = server_classpath(classpath)
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
        lines = config_lines(
            tick_time_ms=self.tick_time_ms,
            data_dir=self.data_dir,
            host=self.host,
            client_port=self.port,
        )
        config.write_text("\n".join(lines) + "\n")
        return config

    def command(self) -> list[str]:
        """The java command line that runs the server."""
        return java_command(
            java=self.java,
            classpath=self.classpath,
            container_check_interval_ms=self.container_check_interval_ms,
            main_class=STANDALONE_MAIN,
            config=Path(self._own_dir) / "zoo.cfg",
        )

    def start(self) -> ZooKeeperServer:
        """Start the server and wait until it serves requests; raise ZooKeeperServerError if not."""
        if self.running:
            return self
        self._write_config()
        self._process = launch(self.command(), self.log_path)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
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
        end(process, signal.SIGKILL if kill else signal.SIGTERM, 10)

    def stop(self) -> None:
        """Stop the server (SIGTERM); its data stays for :meth:`start` or :meth:`restart`."""
        self._terminate(kill=False)

    def kill(self) -> None:
        """SIGKILL the server; its data stays for :meth:`start` or :meth:`restart`."""
        self._terminate(kill=True)

    def restart(self) -> ZooKeeperServer:
        """Stop (if running) and start again on the same port with the same data."""
        self._terminate(kill=False)
        return self.start()

    def close(self) -> None:
        """End the server and remove every file this object created; safe to call again."""
        self._terminate(kill=True)
        shutil.rmtree(self._own_dir, ignore_errors=True)
        _OPEN.discard(self)

    def __enter__(self) -> ZooKeeperServer:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.hosts}, running={self.running})"
