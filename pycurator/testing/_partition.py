"""The links between an ensemble's servers, each through a proxy that can be cut and healed: network
partitions as Jepsen makes them, without root, iptables or network namespaces.

Each member's configuration names every peer by the ports of a :class:`PeerProxy` of its own
(one for the peer's quorum port, where a follower connects to its leader, one for its election
port), so every connection from member *a* to member *b* crosses the proxies of the link
*a*-*b*. One rule of ZooKeeper 3.8 (``QuorumCnxManager.handleConnection``) would bypass them:
a server that receives an election connection from a peer with a smaller id closes it and
connects back to the election address the peer announced in its first message, which is the
peer's own address. So the election proxies rewrite that address to the proxy the receiving
side uses for the way back; the connection back then crosses the link too.

Cutting a link works as a firewall that drops packets on the connections already open (nothing
gets through either way, and nobody is told: each side finds out by its own timeouts, as with
Jepsen's iptables ``DROP``) and refuses new ones (the connection is closed at once). Healing it
closes the connections cut (what they lost cannot be delivered any more) and lets new ones
through.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterable

#: The name of every thread a :class:`PeerProxy` runs.
THREAD_NAME = "pycurator-peer-link"
#: What ``QuorumCnxManager.startConnection`` sends first (ZooKeeper 3.5 to 3.9): a protocol
#: version (negative; a non-negative one is an old server's id alone), the server's id, and
#: the length of the election address(es) it announces, before the address itself.
_HEADER = struct.Struct(">qqi")
#: Seconds a proxy keeps trying to reach a peer's port that refuses (ZooKeeper's own
#: ``zookeeper.cnxTimeout`` for an election connection).
REACH_WAIT = 5.0
#: The longest announced address a proxy reads (ZooKeeper allows far more than an address).
_MAX_ADDRESS = 4096


def _receive(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock``; fewer if it closes first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class _Connection:
    """One connection through a proxy: a thread each way. ``cut``: what arrives is dropped."""

    def __init__(self, proxy: PeerProxy, inner: socket.socket, outer: socket.socket) -> None:
        self.proxy = proxy
        self.inner = inner  # from the member
        self.outer = outer  # to the peer
        self.cut = False
        self.closed = threading.Event()

    def start(self) -> None:
        for source, target, upstream in (
            (self.inner, self.outer, True),
            (self.outer, self.inner, False),
        ):
            threading.Thread(
                target=self._pump, args=(source, target, upstream), daemon=True, name=THREAD_NAME
            ).start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        try:
            if upstream and self.proxy.announce is not None:
                self._rewrite_announcement(source, target, self.proxy.announce)
            while not self.closed.is_set():
                data = source.recv(65536)
                if not data:
                    break
                if not self.cut:
                    target.sendall(data)
        except (OSError, ValueError):  # a socket closed under us
            pass
        finally:
            if not self.cut:  # a cut connection stays open, silent, until the heal
                self.close()

    def _rewrite_announcement(
        self, source: socket.socket, target: socket.socket, to: bytes
    ) -> None:
        """Forward the first message of an election connection with ``to`` as the address the
        member announces (see the module doc)."""
        header = _receive(source, _HEADER.size)
        if len(header) < _HEADER.size:
            raise OSError("closed before its first message")
        version, sid, length = _HEADER.unpack(header)
        if version >= 0 or not 0 < length <= _MAX_ADDRESS:
            target.sendall(header)  # no address announced: nothing to rewrite
            return
        if len(_receive(source, length)) < length:
            raise OSError("closed within its first message")
        if not self.cut:
            target.sendall(_HEADER.pack(version, sid, len(to)) + to)

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.inner, self.outer):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.proxy._forget(self)


class PeerProxy:
    """Forwards one member's connections to one port of a peer (``127.0.0.1:target``); can be
    cut and healed. ``announce``: for an election port, the address (``host:port``) to put in
    the first message of each connection in place of the one the member announces."""

    def __init__(self, target: int, *, announce: str | None = None) -> None:
        self.target = target
        self.announce = announce.encode() if announce is not None else None
        self._cut = False
        self._connections: set[_Connection] = set()
        self._guard = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, daemon=True, name=THREAD_NAME)
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                inner, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(
                target=self._connect, args=(inner,), daemon=True, name=THREAD_NAME
            ).start()

    def _connect(self, inner: socket.socket) -> None:
        if self._cut or self._closed:
            inner.close()  # refused
            return
        outer = self._reach_target()
        if outer is None:
            inner.close()
            return
        for sock in (inner, outer):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = _Connection(self, inner, outer)
        with self._guard:
            refused = self._cut or self._closed
            if not refused:
                self._connections.add(connection)
        if refused:
            connection.close()
        else:
            connection.start()

    def _reach_target(self) -> socket.socket | None:
        """A connection to the target, tried again for up to :data:`REACH_WAIT` seconds while it
        refuses: the member already holds its connection as made (the proxy accepted it), so a
        refusal would reach it as a reset of a connection it trusted, where a server that is
        not yet listening (a leader just elected) would have let its connect wait or retry."""
        deadline = time.monotonic() + REACH_WAIT
        while not (self._cut or self._closed):
            try:
                outer = socket.create_connection(("127.0.0.1", self.target), timeout=REACH_WAIT)
            except OSError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.05)
                continue
            outer.settimeout(None)
            return outer
        return None

    def _forget(self, connection: _Connection) -> None:
        with self._guard:
            self._connections.discard(connection)

    @property
    def connections(self) -> int:
        """How many connections cross the proxy now."""
        with self._guard:
            return len(self._connections)

    def cut(self) -> None:
        """Drop everything on the open connections, and refuse new ones."""
        with self._guard:
            self._cut = True
            for connection in self._connections:
                connection.cut = True

    def heal(self) -> None:
        """Close the connections cut, and let new ones through."""
        with self._guard:
            self._cut = False
            cut = [connection for connection in self._connections if connection.cut]
        for connection in cut:
            connection.close()

    def close(self) -> None:
        """Stop listening and close every connection. Idempotent."""
        with self._guard:
            self._closed = True
            connections = list(self._connections)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for connection in connections:
            connection.close()
        self._acceptor.join(5)


Link = frozenset[int]


class PeerLinks:
    """The proxies between an ensemble's ``members``, whose real quorum and election ports are
    ``ports[member]``: for each ordered pair (*a*, *b*), one proxy to *b*'s quorum port and one to
    its election port, which *a*'s configuration names (:meth:`ports_for`)."""

    def __init__(self, ports: dict[int, tuple[int, int]]) -> None:
        self.members = sorted(ports)
        self._quorum: dict[tuple[int, int], PeerProxy] = {}
        self._election: dict[tuple[int, int], PeerProxy] = {}
        self._cut: set[Link] = set()
        pairs = [(a, b) for a in self.members for b in self.members if a != b]
        for a, b in pairs:
            self._quorum[a, b] = PeerProxy(ports[b][0])
            self._election[a, b] = PeerProxy(ports[b][1])
        for a, b in pairs:  # b connects back to a through its own proxy for a
            self._election[a, b].announce = f"127.0.0.1:{self._election[b, a].port}".encode()

    def ports_for(self, member: int, peer: int) -> tuple[int, int]:
        """The quorum and election ports ``member``'s configuration names for ``peer``."""
        return self._quorum[member, peer].port, self._election[member, peer].port

    def _proxies(self, a: int, b: int) -> list[PeerProxy]:
        return [self._quorum[a, b], self._election[a, b], self._quorum[b, a], self._election[b, a]]

    def check(self, *members: int) -> None:
        """Raise ValueError naming any of ``members`` that is not a member."""
        unknown = [m for m in members if m not in self.members]
        if unknown:
            raise ValueError(f"not members of the ensemble: {unknown} (members: {self.members})")

    def cut(self, a: int, b: int) -> None:
        """Cut the link between ``a`` and ``b``, both ways."""
        self.check(a, b)
        if a == b:
            raise ValueError(f"a link joins two members, not {a} and itself")
        self._cut.add(frozenset((a, b)))
        for proxy in self._proxies(a, b):
            proxy.cut()

    def heal(self, a: int, b: int) -> None:
        """Heal the link between ``a`` and ``b``."""
        self.check(a, b)
        self._cut.discard(frozenset((a, b)))
        for proxy in self._proxies(a, b):
            proxy.heal()

    def connections(self, a: int, b: int) -> int:
        """How many connections cross the link between ``a`` and ``b`` now."""
        self.check(a, b)
        return sum(proxy.connections for proxy in self._proxies(a, b))

    def links(self) -> list[Link]:
        """Every link, once each."""
        return [frozenset((a, b)) for a in self.members for b in self.members if a < b]

    def cut_links(self) -> set[Link]:
        """The links cut now."""
        return set(self._cut)

    def close(self) -> None:
        for proxy in [*self._quorum.values(), *self._election.values()]:
            proxy.close()


def between(groups: Iterable[Iterable[int]]) -> set[Link]:
    """The links that join members of different ``groups``."""
    sets = [set(group) for group in groups]
    return {
        frozenset((a, b))
        for index, group in enumerate(sets)
        for other in sets[index + 1 :]
        for a in group
        for b in other
    }


__all__ = ["THREAD_NAME", "Link", "PeerLinks", "PeerProxy", "between"]
