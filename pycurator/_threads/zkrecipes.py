"""The threaded forms of ZooKeeper's own recipes, public as :mod:`pycurator.zkrecipes`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, NoReturn

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.faces import ElectionFace
from .._cores.zkrecipes import election_core
from .._recipes.zkrecipes import leader_steps, write_lock_engine
from .latch import LatchShell
from .lock import ReentrantLock
from .runner import run


class WriteLock(ReentrantLock):
    """A lock shared with ZooKeeper's ``WriteLock`` on the same directory.

    Nodes are ``DIR/x-<sessionId>-<seq>``, ephemeral sequential, holding ``0x12 0x34``; a
    missing directory is made PERSISTENT. Every child of the directory takes part, in
    ``ZNodeName`` order (sequence, then prefix; children without a number last), so Java and
    Python agree on who holds. The first node holds; each waiter watches only the node just
    before its own. Unlike Java's (an object that one ``unlock()`` releases), this lock is
    re-entrant per thread, as :class:`~pycurator.InterProcessMutex`; a timed-out or
    interrupted waiter leaves no node and no watch, and never takes the lock later.
    """

    def __init__(self, client: KazooClient, dir: str, *, acl: Sequence[Any] | None = None) -> None:
        super().__init__(write_lock_engine(transport_of(client), dir, acl), recipe="write")

    def make_revocable(self, listener: Callable[[Any], None]) -> NoReturn:
        """Not offered: revocation would empty our node, whose data Java writes as 0x12 0x34."""
        raise TypeError("ZooKeeper's WriteLock has no revocation")


class LeaderElection(ElectionFace):
    """A participant in an election shared with ZooKeeper's ``LeaderElectionSupport``.

    Once started, it offers ``ROOT/n_<seq>`` (ephemeral sequential, ``host_name`` as UTF-8)
    and leads while its offer is the first by number; each offer watches only the one before
    its own. A missing root is made PERSISTENT (Java requires it); a child that is not
    ``n_<int>`` takes no part (Java's ``start()`` fails on it). Leadership follows the offer:
    when it ends (the connection suspended, the session expired, the offer deleted),
    :attr:`lost_event` is set and :meth:`on_lost` callbacks run, and a new offer is made, in
    the new session after an expiry. Costs no thread: the election runs on kazoo's callbacks.
    """

    def __init__(self, client: KazooClient, root: str, host_name: str) -> None:
        self._shell = LatchShell(election_core(transport_of(client), root, host_name))
        self._core = self._shell.core
        #: Set when leadership ends, cleared when it begins (a handler event).
        self.lost_event = self._shell.lost_event

    def start(self) -> None:
        """Make an offer and take part, in the background. RuntimeError when started before."""
        self._shell.start(self)

    def close(self) -> None:
        """Leave the election (Java's ``stop()``): leadership ends and our offer is deleted
        (waiting at most :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then
        in the background). RuntimeError when not started or already closed."""
        self._shell.close(None)

    def __enter__(self) -> LeaderElection:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._core.started:
            self.close()

    def has_leadership(self) -> bool:
        """True while started and leading (as last heard; no request)."""
        return self._core.has_leadership()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for leadership: True once leading,
        False on timeout or when closed meanwhile. Raises RuntimeError when not started or
        closed, and the errors of :meth:`pycurator.LeaderLatch.wait`."""
        return self._shell.wait(timeout)

    def leader(self) -> str | None:
        """The leader's host name (the first offer's data, as Java's ``getLeaderHostName``),
        or None when there is no offer; read from the server, riding through a reconnect."""
        return run(self._core.transport, leader_steps(self._core.engine))

    def on_lost(self, callback: Callable[[LeaderElection, str], Any]) -> None:
        """Run ``callback(election, reason)`` on a worker of the client's handler each time
        leadership ends (also on close)."""
        self._core.add_lost_callback(callback)

    def check(self) -> None:
        """Raise :class:`~pycurator.LockLostError` unless we lead and our offer is known to be
        ours now."""
        run(self._core.transport, self._core.check_steps())

    def __repr__(self) -> str:
        return f"LeaderElection({self.root!r}, host_name={self.host_name!r})"


__all__ = ["LeaderElection", "WriteLock"]
