"""A real ZooKeeper ensemble of local Java processes (QuorumPeerMain), from Debian's jars."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from ._fourletter import four_letter_word
from ._local import QUORUM_MAIN, config_lines, end, java_command, launch, server_classpath
from ._server import ZooKeeperServerError, free_port

#: Ensembles not closed yet, for :func:`close_all_ensembles`.
_OPEN: set[ZooKeeperEnsemble] = set()


def close_all_ensembles() -> None:
    """Close every :class:`ZooKeeperEnsemble` of this process that is still open."""
    for ensemble in list(_OPEN):
        ensemble.close()


class ZooKeeperEnsemble:
    """``size`` ZooKeeper servers on 127.0.0.1 forming one quorum; always cleaned up.

    Members are numbered from 1. :meth:`leader` asks each member's ``srvr`` which one leads.
    As with :class:`ZooKeeperServer`: :meth:`stop` (SIGTERM) and :meth:`kill` (SIGKILL) end one
    member, or all, and keep the data for :meth:`start`; :meth:`close` (and leaving a ``with``
    block) ends every member and removes every file, for good.
    """

    def __init__(
        self,
        size: int = 3,
        *,
        tick_time_ms: int = 500,
        container_check_interval_ms: int | None = 100,
        classpath: str | None = None,
        java: str = "java",
        start_timeout: float = 90.0,
    ) -> None:
        if size < 1:
            raise ValueError(f"an ensemble needs at least one member, not {size}")
        self.size = size
        self.tick_time_ms = tick_time_ms
        self.container_check_interval_ms = container_check_interval_ms
        self.classpath = server_classpath(classpath)
        self.java = java
        self.start_timeout = start_timeout
        self._dir = Path(tempfile.mkdtemp(prefix="pycurator-ensemble-"))
        self.client_ports = {member: free_port() for member in self.members}
        self._quorum_ports = {member: (free_port(), free_port()) for member in self.members}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        _OPEN.add(self)

    @property
    def members(self) -> range:
        return range(1, self.size + 1)

    @property
    def hosts(self) -> str:
        """The connect string naming every member."""
        return ",".join(f"127.0.0.1:{port}" for port in self.client_ports.values())

    def _config(self, member: int) -> Path:
        data = self._dir / f"data{member}"
        data.mkdir(parents=True, exist_ok=True)
        (data / "myid").write_text(f"{member}\n")
        lines = config_lines(
            tick_time_ms=self.tick_time_ms,
            data_dir=data,
            host="127.0.0.1",
            client_port=self.client_ports[member],
        )
        lines += ["initLimit=10", "syncLimit=5", "standaloneEnabled=false", "reconfigEnabled=false"]
        for peer, (quorum, election) in self._quorum_ports.items():
            lines.append(f"server.{peer}=127.0.0.1:{quorum}:{election}")
        config = self._dir / f"zoo{member}.cfg"
        config.write_text("\n".join(lines) + "\n")
        return config

    def start(self, member: int | None = None) -> ZooKeeperEnsemble:
        """Start one member, or all; with all, wait until every member serves."""
        for peer in [member] if member is not None else list(self.members):
            if peer in self._processes and self._processes[peer].poll() is None:
                continue
            command = java_command(
                java=self.java,
                classpath=self.classpath,
                container_check_interval_ms=self.container_check_interval_ms,
                main_class=QUORUM_MAIN,
                config=self._config(peer),
            )
            self._processes[peer] = launch(command, self._dir / f"server{peer}.log")
        if member is None:
            self.wait_serving(list(self.members))
        return self

    def wait_serving(self, members: list[int], timeout: float | None = None) -> None:
        """Wait until each of ``members`` serves clients (it is leader or follower)."""
        end = time.monotonic() + (timeout or self.start_timeout)
        waiting = set(members)
        while waiting and time.monotonic() < end:
            waiting = {m for m in waiting if self.mode(m) not in ("leader", "follower")}
            if waiting:
                time.sleep(0.2)
        if waiting:
            raise ZooKeeperServerError(f"ensemble members {sorted(waiting)} do not serve")

    def mode(self, member: int) -> str | None:
        """``leader``, ``follower``, or None when the member does not answer or serve."""
        try:
            answer = four_letter_word("127.0.0.1", self.client_ports[member], "srvr", 1.0)
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def leader(self) -> int | None:
        """The member that leads now, or None."""
        for member in self.members:
            if self.mode(member) == "leader":
                return member
        return None

    def _signal(self, member: int | None, sig: signal.Signals) -> None:
        for peer in list(self._processes) if member is None else [member]:
            end(self._processes.pop(peer, None), sig, 15)

    def stop(self, member: int | None = None) -> None:
        """Stop one member, or all (SIGTERM); the data stays for :meth:`start`."""
        self._signal(member, signal.SIGTERM)

    def kill(self, member: int | None = None) -> None:
        """Kill one member, or all (SIGKILL); the data stays for :meth:`start`."""
        self._signal(member, signal.SIGKILL)

    def close(self) -> None:
        """End every member and remove every file; safe to call again."""
        self._signal(None, signal.SIGKILL)
        shutil.rmtree(self._dir, ignore_errors=True)
        _OPEN.discard(self)

    def __enter__(self) -> ZooKeeperEnsemble:
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
