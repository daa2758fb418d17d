"""A TCP fault proxy between ZooKeeper clients and a server: latency, dropped connections,
lost replies and blackholes, on demand."""

from __future__ import annotations

import collections
import contextlib
import select
import socket
import threading
import time
from types import TracebackType

#: The name of every thread a :class:`FaultProxy` runs (so that a test counting the threads of
#: the code under test can leave them out).
THREAD_NAME = "pycurator-fault-proxy"


class _Link:
    """One client connection and its server connection, pumped by one thread each way."""

    def __init__(self, proxy: FaultProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.drop_replies = False
        self.closed = threading.Event()
        self.pumps = [
            threading.Thread(
                target=self._pump, args=(source, target, upstream), daemon=True, name=THREAD_NAME
            )
            for source, target, upstream in ((client, server, True), (server, client, False))
        ]

    def start(self) -> None:
        for pump in self.pumps:
            pump.start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        """Forward ``source`` to ``target``, each chunk once it is ``latency`` old: a delay line
        in one thread, so chunks in flight do not wait out one another's delay (pipelined
        requests stay pipelined) and no chunk crosses to another thread on its way."""
        pending: collections.deque[tuple[float, bytes]] = collections.deque()
        try:
            while not self.closed.is_set():
                wait = None if not pending else pending[0][0] - time.monotonic()
                if wait is None or wait > 0:
                    readable, _, _ = select.select([source], [], [], wait)
                    if readable:
                        data = source.recv(65536)
                        if not data:
                            break
                        self.proxy._flowing.wait()  # a blackhole holds the data back
                        if upstream or not self.drop_replies:
                            pending.append((time.monotonic() + self.proxy.latency, data))
                while pending and pending[0][0] <= time.monotonic():
                    target.sendall(pending.popleft()[1])
        except (OSError, ValueError):  # a socket closed under us
            pass
        finally:
            self.close()

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.proxy._forget(self)


#: Proxies not closed yet, for :func:`close_all_proxies`.
_OPEN: set[FaultProxy] = set()


def close_all_proxies() -> None:
    """Close every :class:`FaultProxy` of this process that is still open."""
    for proxy in list(_OPEN):
        proxy.close()


class FaultProxy:
    """Listens on 127.0.0.1 and forwards every connection to ``target`` (``host:port``).

    - ``latency``: seconds added to every chunk, each way (a delay line: chunks in flight are
      not queued behind one another's delay, as on a long link).
    - :meth:`drop_connections`: close every open connection at once (clients see a connection
      loss and reconnect through the proxy; their sessions live on).
    - :meth:`drop_replies`: on the connections open now, forward requests but throw the server's
      replies away, as when a reply is lost; new connections are not affected.
    - :meth:`blackhole`: accept and read, but forward nothing until :meth:`heal` (or ``seconds``);
      a connection accepted meanwhile reaches the server only then (so a client cannot meet a
      server that is still starting).
    """

    def __init__(self, target: str, *, latency: float = 0.0) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host or "127.0.0.1", int(port))
        self.latency = latency
        self._flowing = threading.Event()
        self._flowing.set()
        self._links: set[_Link] = set()
        self._guard = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, daemon=True, name=THREAD_NAME)
        self._acceptor.start()
        _OPEN.add(self)

    @property
    def hosts(self) -> str:
        """The connect string clients use to go through the proxy."""
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(
                target=self._connect, args=(client,), daemon=True, name=THREAD_NAME
            ).start()

    def _connect(self, client: socket.socket) -> None:
        self._flowing.wait()  # in a blackhole, a new connection waits here, accepted
        if self._stopped.is_set():
            client.close()
            return
        try:
            server = socket.create_connection(self.target, timeout=10)
            server.settimeout(None)
        except OSError:
            client.close()
            return
        for sock in (client, server):  # forward small requests at once, as clients do
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = _Link(self, client, server)
        with self._guard:
            stopped = self._stopped.is_set()  # then close() has dropped the links it knew
            if not stopped:
                self._links.add(link)
                link.start()
        if stopped:
            link.close()

    def _forget(self, link: _Link) -> None:
        with self._guard:
            self._links.discard(link)

    def _open_links(self) -> list[_Link]:
        with self._guard:
            return list(self._links)

    @property
    def connections(self) -> int:
        """How many client connections are open through the proxy now."""
        return len(self._open_links())

    def drop_connections(self) -> None:
        """Close every open connection."""
        for link in self._open_links():
            link.close()

    def drop_replies(self) -> None:
        """Throw away the server's replies on the connections open now."""
        for link in self._open_links():
            link.drop_replies = True

    def blackhole(self, seconds: float | None = None) -> None:
        """Forward nothing (in either direction) until :meth:`heal`, or for ``seconds``."""
        self._flowing.clear()
        if seconds is not None:
            timer = threading.Timer(seconds, self.heal)
            timer.daemon = True
            timer.start()

    def heal(self) -> None:
        """End a blackhole: what was held back flows again."""
        self._flowing.set()

    def close(self, timeout: float = 5.0) -> None:
        """Stop listening, close every connection and wait (up to ``timeout`` seconds) for the
        proxy's threads to end. Idempotent."""
        with self._guard:
            self._stopped.set()
        self.heal()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        links = self._open_links()
        for link in links:
            link.close()
        end = time.monotonic() + timeout
        for thread in [self._acceptor, *(pump for link in links for pump in link.pumps)]:
            if thread is not threading.current_thread():
                thread.join(max(0.0, end - time.monotonic()))
        _OPEN.discard(self)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FaultProxy({self.hosts} -> {self.target[0]}:{self.target[1]})"
