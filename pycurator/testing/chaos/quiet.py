"""The chaos run's quiet moments: every contender parked between two cycles, every client
connected, and then every lock node on the server either owned by a holder or waiter the run
knows of or in a session that is ending; a node of a live session that no one owns is a *live
orphan* (:class:`~pycurator.testing.chaos.history.LiveOrphan`).

A moment is *quiet* when, in this order, each within its bound:

1. the faults have stopped: the run heals its proxies and waits for every member to serve
   (the run does this before :meth:`Quiet.check`);
2. every contender thread, and every worker process, is parked at its :class:`Gate`: its last
   acquire has returned and its last hold has been fenced and released, and it starts no other;
3. every client of theirs is connected (a Python contender's kazoo client, a Java one's Curator
   client and its peer of another lock system, each worker's);
4. every lock node is in a session one of those clients is in, or has gone: a node of a session
   the run no longer knows (a killed worker's, a session the server has not yet expired) goes
   with that session's timeout;
5. a node in a session of the run that its contender does not own has gone too, or stays for
   ``grace_s``: a timed-out acquire's node or a released one may still be on its way out
   (guaranteed deletes go on in the background), but with every client connected and nobody
   acquiring, one that stays is left for good.

A parked contender owns no lock node except its place in an election: a latch's node while the
latch is started (it joins anew after each term), a selector's node while it queues or leads
(its ``lead`` is offered a term that waits for the contender). Which node that is, the contender
says: pycurator's ``our_path``; Curator's ``LeaderLatch.getOurPath()``, and for Curator's
``LeaderSelector`` the first node of its client's session in queue order (a second node of the
same session is then an orphan). Every other node of a live session is a live orphan. What
that session is comes from the node's ``ephemeralOwner``, and whose from each client's session
id: kazoo's ``client_id``, Curator's ``ZooKeeper.getSessionId()``, each peer's own session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NamedTuple, Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from .history import LOCK_PATHS, LiveOrphan, QuietCheck, recipe_of


class Gate:
    """Where contenders pass between two cycles (no hold, no acquire in flight). While it is
    closed, each one that comes parks there until it opens again, or until the run stops."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._closed = False
        self._parked: set[str] = set()

    def close(self) -> None:
        with self._changed:
            self._closed = True

    def open(self) -> None:
        with self._changed:
            self._closed = False
            self._changed.notify_all()

    def pass_through(self, who: str, stop: threading.Event) -> None:
        """Return at once while open; while closed, park ``who`` until it opens or ``stop``."""
        with self._changed:
            if not self._closed:
                return
            self._parked.add(who)
            self._changed.notify_all()
            while self._closed and not stop.is_set():
                self._changed.wait(0.5)  # a stop is not told through the gate
            self._parked.discard(who)

    def wait_parked(self, whos: Collection[str], deadline: float) -> list[str]:
        """Wait until each of ``whos`` is parked, or until ``deadline`` (monotonic); those still
        not parked then."""
        with self._changed:
            while True:
                busy = sorted(set(whos) - self._parked)
                left = deadline - time.monotonic()
                if not busy or left <= 0:
                    return busy
                self._changed.wait(left)


class Client(NamedTuple):
    """A client of the run: the contender (or worker) it belongs to, and which of its clients."""

    who: str
    client: str


class Parked(Protocol):
    """What a quiet moment needs of a contender or worker, once parked."""

    who: str

    def connected(self) -> bool:
        """Whether every client of it is connected."""
        ...

    def clients(self) -> dict[int, str]:
        """Each of its clients' session ids, and what that client is."""
        ...

    def owned(self) -> set[str]:
        """The lock nodes it owns while parked (its place in an election)."""
        ...


def classify(
    nodes: Mapping[str, int], clients: Mapping[int, Client], owned: Collection[str]
) -> tuple[list[LiveOrphan], list[LiveOrphan]]:
    """Lock nodes (path -> ephemeral owner session) against the run's clients (session ->
    client) and the nodes its contenders own: the live orphans (nodes of a session of the run
    that no one owns), then the nodes of sessions the run does not know (ending, unless one of
    the run's clients leaked a session), both sorted by node."""
    orphans, strangers = [], []
    for node, session in sorted(nodes.items()):
        if node in owned:
            continue
        client = clients.get(session)
        if client is None:
            strangers.append(LiveOrphan(node, session, recipe_of(node), "", ""))
        else:
            orphans.append(LiveOrphan(node, session, recipe_of(node), *client))
    return orphans, strangers


def lock_nodes(client: KazooClient, paths: Sequence[str] = LOCK_PATHS) -> dict[str, int]:
    """Every node under ``paths`` and its ephemeral owner session (0 for a persistent one)."""
    found = {}
    for path in paths:
        try:
            names = client.get_children(path)
        except NoNodeError:
            continue
        replies = [(f"{path}/{name}", client.exists_async(f"{path}/{name}")) for name in names]
        for node, reply in replies:
            stat = reply.get(timeout=30)
            if stat is not None:
                found[node] = int(stat.ephemeralOwner)
    return found


class Quiet:
    """Reaches a quiet moment and audits the lock nodes there (see the module's docstring).

    ``observer``: a client of the run's own that reads the tree; ``gate``: the contenders'
    gate; ``contenders``: the contender threads, ``running`` or not; ``workers()``: the worker
    processes alive now, each with ``park()``, ``parked(deadline)`` and ``go()``. Bounds:
    ``park_s`` for parking and connecting, ``session_s`` for nodes of sessions the run does not
    know to go, ``grace_s`` for unowned nodes of the run's sessions to go. ``ephemerals()``,
    if given, says which ephemeral nodes the servers have by session (hex id -> paths, as
    :func:`~pycurator.testing.ephemerals_by_session` does): those outside ``paths`` are
    audited too, as a node a recipe made in the wrong place.
    """

    def __init__(
        self,
        observer: KazooClient,
        gate: Gate,
        contenders: Sequence[Contender],
        workers: Callable[[], Sequence[Worker]] = list,
        *,
        park_s: float = 60.0,
        session_s: float = 20.0,
        grace_s: float = 10.0,
        paths: Sequence[str] = LOCK_PATHS,
        ephemerals: Callable[[], Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        self.observer = observer
        self.gate = gate
        self.contenders = contenders
        self.workers = workers
        self.park_s = park_s
        self.session_s = session_s
        self.grace_s = grace_s
        self.paths = paths
        self.ephemerals = ephemerals

    def check(self, when: str) -> QuietCheck:
        """Park everyone, audit, let everyone go on; the audit's record."""
        start = time.monotonic()
        self.gate.close()
        workers = list(self.workers())
        for worker in workers:
            worker.park()
        try:
            participants, problems = self._settle(workers, start + self.park_s)
            if problems:
                return QuietCheck(when, False, time.monotonic() - start, 0, 0, problems=problems)
            return self._audit(when, start, participants)
        finally:
            for worker in workers:
                worker.go()
            self.gate.open()

    def _settle(self, workers: Sequence[Worker], deadline: float) -> tuple[list[Parked], list[str]]:
        """Wait for everyone to park and connect; those who did, and what kept the rest."""
        running = [c for c in self.contenders if c.running]
        busy = self.gate.wait_parked([c.who for c in running], deadline)
        problems = [f"{who}: not parked within {self.park_s:g} s" for who in busy]
        participants: list[Parked] = [c for c in running if c.who not in busy]
        for worker in workers:
            settled = worker.parked(deadline)
            if settled is not None:
                participants.append(settled)
            elif worker.alive():
                problems.append(f"{worker.who}: not parked within {self.park_s:g} s")
        while not all(p.connected() for p in participants) and time.monotonic() < deadline:
            time.sleep(0.05)
        problems += [
            f"{p.who}: not connected within {self.park_s:g} s"
            for p in participants
            if not p.connected()
        ]
        return participants, problems

    def _audit(self, when: str, start: float, participants: Sequence[Parked]) -> QuietCheck:
        strangers_end = time.monotonic() + self.session_s
        grace_end = time.monotonic() + self.grace_s
        while True:
            clients = {
                session: Client(p.who, client)
                for p in participants
                for session, client in p.clients().items()
            }
            owned = set().union(*(p.owned() for p in participants))
            nodes = lock_nodes(self.observer, self.paths)
            if self.ephemerals is not None:  # and any node of a recipe that went astray
                for session, paths in self.ephemerals().items():
                    nodes.update(dict.fromkeys(set(paths) - set(nodes), int(session, 16)))
            orphans, strangers = classify(nodes, clients, owned)
            now = time.monotonic()
            if (not orphans or now > grace_end) and (not strangers or now > strangers_end):
                break
            time.sleep(0.1)
        return QuietCheck(
            when,
            True,
            time.monotonic() - start,
            len(nodes),
            len(owned & set(nodes)),
            live_orphans=orphans + strangers,
        )


class Contender(Parked, Protocol):
    """A contender thread as a quiet moment sees it."""

    running: bool


class Worker(Protocol):
    """A worker process as a quiet moment sees it."""

    who: str

    def alive(self) -> bool: ...

    def park(self) -> None:
        """Ask it to park (it answers once parked and connected)."""
        ...

    def parked(self, deadline: float) -> Parked | None:
        """Its answer, waited for until ``deadline`` (monotonic); None without one."""
        ...

    def go(self) -> None:
        """Let it go on."""
        ...
