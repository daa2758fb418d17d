"""A real ZooKeeper ensemble of local Java processes (QuorumPeerMain), from Debian's jars, whose
links between members can be cut and healed."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from ._fourletter import four_letter_word
from ._local import QUORUM_MAIN, config_lines, end, java_command, launch, server_classpath
from ._partition import Link, PeerLinks, between
from ._server import ZooKeeperServerError, free_ports

#: The most members an ensemble may have: its members' ids are 1 to ``size``, and with TTL
#: nodes on (:data:`~pycurator.testing._local.TTL_NODES`) ZooKeeper refuses a server id above 254.
MAX_MEMBERS = 254
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

    With ``partitions=True`` every member reaches every other through proxies of the test kit
    (:mod:`pycurator.testing._partition`), so the links between members can be cut and healed
    as Jepsen partitions ZooKeeper: :meth:`isolate` one member, :meth:`partition` the members
    into groups (a 1|2 split), :meth:`cut` one link, :meth:`cut_all`, and :meth:`heal`. A cut
    link drops what its open connections carry, both ways, telling nobody, and refuses new
    connections; clients' connections to the members are never cut. A leader cut off from a
    majority stops serving after ``sync_limit`` ticks (ZooKeeper's ``syncLimit``), as do the
    followers that lose it, before the majority elects another.
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
        partitions: bool = False,
        sync_limit: int = 5,
    ) -> None:
        if not 1 <= size <= MAX_MEMBERS:
            raise ValueError(
                f"an ensemble has 1 to {MAX_MEMBERS} members (TTL nodes need server ids of at "
                f"most {MAX_MEMBERS}), not {size}"
            )
        if sync_limit < 1:
            raise ValueError(f"sync_limit is a number of ticks, at least 1, not {sync_limit}")
        self.size = size
        self.sync_limit = sync_limit
        self.tick_time_ms = tick_time_ms
        self.container_check_interval_ms = container_check_interval_ms
        self.classpath = server_classpath(classpath)
        self.java = java
        self.start_timeout = start_timeout
        self._dir = Path(tempfile.mkdtemp(prefix="pycurator-ensemble-"))
        ports = iter(free_ports(3 * size))  # a member given one port twice will not start
        self.client_ports = {member: next(ports) for member in self.members}
        self._quorum_ports = {member: (next(ports), next(ports)) for member in self.members}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}
        self._links = PeerLinks(self._quorum_ports) if partitions else None
        _OPEN.add(self)

    @property
    def members(self) -> range:
        return range(1, self.size + 1)

    @property
    def hosts(self) -> str:
        """The connect string naming every member."""
        return ",".join(f"127.0.0.1:{port}" for port in self.client_ports.values())

    def hosts_of(self, *members: int) -> str:
        """The connect string naming only ``members`` (a client on one side of a partition)."""
        unknown = [member for member in members if member not in self.members]
        if unknown or not members:
            raise ValueError(f"name members of the ensemble {list(self.members)}, not {unknown}")
        return ",".join(f"127.0.0.1:{self.client_ports[member]}" for member in members)

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
        lines += [
            "initLimit=10",
            f"syncLimit={self.sync_limit}",
            "standaloneEnabled=false",
            "reconfigEnabled=false",
        ]
        for peer, (quorum, election) in self._quorum_ports.items():
            if self._links is not None and peer != member:
                quorum, election = self._links.ports_for(member, peer)
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
            raise ZooKeeperServerError(
                f"ensemble members {sorted(waiting)} do not serve"
                + "".join(self._told(member) for member in sorted(waiting))
            )

    def _told(self, member: int) -> str:
        """What a member that does not serve said last: whether it runs, and its log's end."""
        process = self._processes.get(member)
        state = "not started" if process is None else f"exit code {process.poll()}"
        if process is not None and process.poll() is None:
            state = "running"
        log = self._dir / f"server{member}.log"
        tail = log.read_text(errors="replace").splitlines()[-12:] if log.exists() else []
        return f"\n-- member {member} ({state}), the end of its log:\n" + "\n".join(tail)

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

    # -- partitions ------------------------------------------------------------------------

    def _peer_links(self) -> PeerLinks:
        if self._links is None:
            raise RuntimeError("this ensemble cannot be partitioned: make it with partitions=True")
        return self._links

    def cut(self, a: int, b: int) -> None:
        """Cut the link between members ``a`` and ``b``, both ways."""
        self._peer_links().cut(a, b)

    def partition(self, *groups: Iterable[int]) -> None:
        """Cut every link between members of different groups; the members no group names form
        one more group (``partition([1])`` isolates member 1, ``partition([1], [2])`` leaves
        3 alone too). Links within a group are left as they are."""
        links = self._peer_links()
        named = [list(group) for group in groups]
        flat = [member for group in named for member in group]
        links.check(*flat)
        if len(flat) != len(set(flat)):
            raise ValueError(f"a member is in two groups: {named}")
        rest = [member for member in self.members if member not in flat]
        for link in between([*named, rest] if rest else named):
            links.cut(*sorted(link))

    def isolate(self, member: int) -> None:
        """Cut ``member`` off from every other member."""
        self.partition([member])

    def cut_all(self) -> None:
        """Cut every link: no member reaches another."""
        self.partition(*([member] for member in self.members))

    def heal(self, a: int | None = None, b: int | None = None) -> None:
        """Heal the link between ``a`` and ``b``, or, with neither, every link."""
        links = self._peer_links()
        if (a is None) != (b is None):
            raise ValueError("heal() takes two members, or none to heal every link")
        if a is not None and b is not None:
            links.heal(a, b)
            return
        for link in links.cut_links():
            links.heal(*sorted(link))

    def connections(self, a: int, b: int) -> int:
        """How many connections between members ``a`` and ``b`` cross their link now (a
        follower's to its leader, and the election's)."""
        return self._peer_links().connections(a, b)

    def cut_links(self) -> set[Link]:
        """The links cut now, each as the set of its two members."""
        return self._peer_links().cut_links()

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
        if self._links is not None:
            self._links.close()
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
