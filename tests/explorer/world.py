"""One schedule's world: the hub, the server, the clients, what each user is told, and the
invariants on it, checked after every turn (:meth:`World.check_now`) and once all have ended
(:meth:`World.check_end`).

What a user is told is read where the user reads it: a lock's or a lease's ``lost_event``, a
latch's ``has_leadership()``, a selector's ``Leadership.lost_event`` (and, for the asyncio
selector, ``lead``'s cancellation), the answers of ``is_held()``, the ``on_lost`` callbacks and
the listeners' calls, and the lock listeners' events (:func:`pycurator.add_lock_listener`). A
*claim* is one such belief: the user holds (or leads) from its acquire (or start) to its
release (or close), and believes what it is told meanwhile. The truth is the server's: which
nodes stand, in which live session, first or not; and the client's: connected since when, or
suspended since when (as kazoo told its listeners), stopped, stalled.

The invariants (each named in :data:`INVARIANTS`, and in the report of a schedule that breaks
it):

- ``exclusion``: no more believers of a key whose nodes stand than it admits (one, two leases,
  readers without a writer);
- ``told-in-time``: a believer whose node is gone is told by the bound the docs state: at once
  once its client heard the suspension (``standard`` policy), a session timeout after it
  (``session`` policy, as Curator injects the expiry), :data:`TOLD_WITHIN` after the news could
  reach a connected client, at once when its client is stopped;
- ``told-suspended``: a ``standard``-policy believer is told at once when its client hears the
  connection suspended;
- ``no-false-alarm``: nobody is told a node is lost while it stands in its live session and its
  client is connected (beyond :data:`TOLD_WITHIN` after the connection came back); a latch whose
  node stands first in such a session leads;
- ``leader-first``: a leader's node is the first of its election;
- ``interrupted``: a selector's ``lead`` is told (its lost event, or its task cancelled) as
  soon as its leadership ends, and at once when the owner interrupts it;
- ``callbacks``: each loss a user is told of is followed by its ``on_lost`` callbacks (and a
  latch's ``not_leader()``) within :data:`CALLBACK_WITHIN`; a lock listener hears no ``REGAINED``
  after a final ``LOST``, nor a loss while the node stands in its live, connected session;
- ``bounded``: every call returns within the bound the docs state (``acquire(timeout=t)``,
  ``release()``, ``is_held()``, ``close()``);
- ``clean-end``: every participant ends, without an error it was not told to expect; no node is
  left in a live session, no earlier session lives on; nothing is logged at ERROR;
- ``one-node`` and ``kept``, on kept nodes (``PersistentNode``): see :mod:`tests.explorer.kept`;
- ``counted`` and ``barrier``: a counter ends at its start plus the increments told they
  succeeded, and nobody passes a double barrier before enough are in (the tallies of
  :mod:`tests.explorer.tallied`);
- ``cache-converges`` and ``told-once``: what a cache tells (:mod:`tests.explorer.caches`);
- ``registered``: once the schedule is quiet, exactly one node per instance a discovery keeps
  registered, holding its latest data, and none once unregistered or closed
  (:mod:`tests.explorer.registrations`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import pycurator
from pycurator import LockEvent, LockEventKind
from pycurator._protocol import clock

from . import kept as kept_nodes
from .aioloop import SimLoop
from .connection import Link, sim_client
from .server import Server
from .sim import Hub, Unit

#: Seconds within which a connected client must have been told what it could hear: a watch
#: event (a watch is set 50 ms into a hold), an answer, the check after a reconnect.
TOLD_WITHIN = 1.0
#: Simulated seconds allowed between a client hearing its connection suspended and a
#: ``standard``-policy believer being told: none ("at once"; time passes in the explorer only
#: when nothing is left to run).
SUSPENDED_WITHIN = 0.0
#: Seconds after a session timeout spent suspended within which a ``session``-policy believer is
#: told (the runtime's timer fires at the timeout, its news is told in the same moment).
SESSION_SLACK = 0.001
#: Seconds within which a loss told by an event is followed by the callbacks.
CALLBACK_WITHIN = 1.0
#: The session timeout of the explorer's clients.
SESSION_TIMEOUT = 3.0

#: The invariants, by the name a violation's report starts with (see the module doc).
INVARIANTS = (
    "exclusion",
    "told-in-time",
    "told-suspended",
    "no-false-alarm",
    "leader-first",
    "interrupted",
    "callbacks",
    "bounded",
    "clean-end",
    "cache-converges",
    "told-once",
    *kept_nodes.INVARIANTS,
    "counted",
    "barrier",
    "registered",
)

_SEQUENCE = re.compile(r"(\d{10})$")


def sequence(name: str) -> int:
    """A node's sequence number (its last ten digits), as every system here orders them."""
    match = _SEQUENCE.search(name)
    return int(match.group(1)) if match else -1


@dataclasses.dataclass(eq=False)
class Claim:
    """What one user believes it holds (see the module doc). ``believes()`` and ``node()``
    read what the user is told, from the recipe's public surface; ``kind``: ``excl``,
    ``read``, ``write`` or ``lead``."""

    key: str
    kind: str
    who: str
    link: Link
    policy: str
    believes: Callable[[], bool]
    node: Callable[[], str | None]
    since: float
    ended_at: float | None = None
    #: when its owner interrupted it (a selector's term: interrupt_leadership(), close())
    interrupted_at: float | None = None
    #: the callbacks its user registered that must follow each loss (``on_lost``, a latch
    #: listener's ``not_leader``), and when each was called; those in ``silenced`` are not owed
    #: once the user closed (a latch closed ``SILENT`` tells its listeners nothing more)
    expects: tuple[str, ...] = ()
    silenced: tuple[str, ...] = ()
    callbacks: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    believed: bool = True  # as seen at the end of the last turn
    lost_since: float | None = None  # when it last stopped believing, while claimed
    first: tuple[str, float] | None = None  # a leader's node, and since when it is first

    def end(self, now: float) -> None:
        if self.ended_at is None:
            self.ended_at = now


@dataclasses.dataclass
class Wait:
    """A call that must return by ``bound``."""

    who: str
    what: str
    started: float
    bound: float
    ended: float | None = None


class _ErrorLog(logging.Handler):
    """Takes the library's and kazoo's records while a schedule runs: those at ERROR are
    violations (a callback that failed, steps that failed, an error in kazoo's workers)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.world: World | None = None

    def emit(self, record: logging.LogRecord) -> None:
        world = self.world
        if world is not None and record.levelno >= logging.ERROR:
            error = f" ({record.exc_info[1]!r})" if record.exc_info else ""
            world.fail(f"clean-end: logged at ERROR: {record.getMessage()}{error}")


_LOG = _ErrorLog()
#: The world a schedule runs in now (the lock listener and the log tell it).
CURRENT: list[World] = []


def _lock_event(event: LockEvent) -> None:
    if CURRENT:
        CURRENT[-1].lock_event(event)


class World:
    """See the module doc: ``clients`` kazoo clients on one server, on a hub seeded ``seed``."""

    def __init__(self, seed: int, clients: int) -> None:
        self.rng = random.Random(seed)
        self.hub = Hub(self.rng)
        self.server = Server(self.hub)
        self.links = [sim_client(self.hub, self.server, i, SESSION_TIMEOUT) for i in range(clients)]
        self.claims: list[Claim] = []
        #: the kept nodes (``PersistentNode``) of the participants
        self.kept: list[kept_nodes.Kept] = []
        #: how many may hold each key at once (one, by default)
        self.capacity: dict[str, int] = {}
        self.waits: list[Wait] = []
        self.violations: list[str] = []
        self.notes: list[str] = []
        self.participants: list[Any] = []
        self._seen: set[str] = set()
        #: the callbacks owed for each loss told: (claim, when, kind)
        self._owed: list[tuple[Claim, float, str]] = []
        #: what lock listeners were told, by node: (kind, reason, time)
        self.told: dict[str, list[tuple[LockEventKind, str, float]]] = {}
        self._loop: SimLoop | None = None
        self._loop_unit: Unit | None = None
        #: what recipes without claims tell their users, against the truth: each has
        #: ``check_now(world)`` (after every turn) and ``check_end(world)``
        self.tallies: list[Any] = []
        #: the checks of promises that hold once the schedule is quiet (a cache converged)
        self.finals: list[Callable[[], None]] = []
        #: checks of what a quiet schedule holds (faults healed, background work settled),
        #: each returning the check to run once what it started (closing) has settled too
        self.when_quiet: list[Callable[[], Callable[[], None] | None]] = []
        self.hub.after_turn = self.check_now

    @property
    def now(self) -> float:
        return self.hub.now

    def fail(self, message: str) -> None:
        """An invariant is broken (each message once, at its first moment)."""
        if message not in self._seen:
            self._seen.add(message)
            self.violations.append(f"t={self.now:.3f} {message}")

    def note(self, message: str) -> None:
        self.notes.append(f"t={self.now:.3f} {message}")

    # -- the asyncio front end -------------------------------------------------------------------

    @property
    def loop(self) -> SimLoop:
        """The event loop of the schedule's asyncio participants (made, and run in a unit of
        its own, on first use)."""
        if self._loop is None:
            loop = self._loop = SimLoop(self.hub)

            def serve() -> None:
                loop.run_forever()

            self._loop_unit = self.hub.spawn(serve, "loop", None)
        return self._loop

    # -- what users are told ---------------------------------------------------------------------

    def claim(
        self,
        key: str,
        kind: str,
        who: str,
        link: Link,
        policy: str,
        believes: Callable[[], bool],
        node: Callable[[], str | None],
    ) -> Claim:
        claim = Claim(key, kind, who, link, policy, believes, node, self.now)
        claim.believed = believes()
        self.claims.append(claim)
        return claim

    def called_back(self, claim: Claim, kind: str = "on_lost") -> None:
        """``claim``'s user got a loss callback (``on_lost``, ``not_leader``)."""
        claim.callbacks.setdefault(kind, []).append(self.now)

    def waited(self, who: str, what: str, bound: float) -> Wait:
        wait = Wait(who, what, self.now, self.now + bound)
        self.waits.append(wait)
        return wait

    def answered(self, claim: Claim, what: str, held: bool) -> None:
        """``claim``'s user asked ``what`` (``is_held()``...) and was told ``held``."""
        node = claim.node()
        if node is None:
            return
        if held:
            late = self._late(claim, node)
            if late:
                self.fail(f"told-in-time: {claim.who} was told {what} True: {late}")
        elif self._false_alarm(claim, node):
            self.fail(
                f"no-false-alarm: {claim.who} was told {what} False while {node} stands in its"
                " live, connected session"
            )

    def lock_event(self, event: LockEvent) -> None:
        """A lock listener's event (told where it happens: the world is as it was then)."""
        if event.node is None or event.kind not in (
            LockEventKind.LOST,
            LockEventKind.REGAINED,
            LockEventKind.ACQUIRED,
        ):
            return
        story = self.told.setdefault(event.node, [])
        if event.kind is LockEventKind.REGAINED and any(
            kind is LockEventKind.LOST and reason != "connection suspended"
            for kind, reason, _ in story
        ):
            self.fail(f"callbacks: {event.node} regained after it was lost for good ({story})")
        story.append((event.kind, event.reason, self.now))
        if event.kind is not LockEventKind.LOST:
            return
        link = self._link_of(event.node)
        if link is None:
            return
        if event.reason == "connection suspended":
            if link.client.connected:
                self.fail(f"no-false-alarm: {event.node} lost to a suspension while connected")
        elif self._stands_live(event.node, link) and link.client.connected:
            self.fail(
                f"no-false-alarm: a lock listener was told {event.node} is lost"
                f" ({event.reason}) while it stands in its live, connected session"
            )

    # -- the truth -------------------------------------------------------------------------------

    def _link_of(self, node: str) -> Link | None:
        for claim in self.claims:
            if claim.node() == node:
                return claim.link
        stands = self.server.nodes.get(node)
        for link in self.links:
            if stands is not None and stands.owner in link.sessions:
                return link
        return None

    def _stands_live(self, node: str, link: Link) -> bool:
        """Whether ``node`` stands in ``link``'s current, live session."""
        stands = self.server.nodes.get(node)
        return (
            stands is not None
            and stands.owner == link.sid
            and link.client._session_id == link.sid
            and self.server.alive(link.sid)
        )

    def _first(self, key: str, node: str) -> bool:
        parent = self.server.nodes.get(key)
        if parent is None:
            return False
        name = node.rsplit("/", 1)[1]
        ours = sequence(name)
        return all(sequence(other) >= ours for other in parent.children)

    def _late(self, claim: Claim, node: str) -> str:
        """Why ``claim``'s user should have been told by now that ``node`` is not its own, or
        "" (see ``told-in-time``)."""
        gone = self.server.gone.get(node)
        if gone is None or node in self.server.nodes:
            return ""
        how, _, at = gone
        link = claim.link
        now = self.now
        if link.stopped_at is not None:
            bound = link.stopped_at
        elif link.connected_since is not None:
            bound = max(at, link.connected_since, link.stall_until) + TOLD_WITHIN
        elif claim.policy == "session":
            assert link.suspended_since is not None
            bound = link.suspended_since + link.session_timeout + SESSION_SLACK
        else:
            assert link.suspended_since is not None
            bound = link.suspended_since + SUSPENDED_WITHIN
        if now <= bound + 1e-9:
            return ""
        return f"{node} was {how} at t={at:.3f} (bound t={bound:.3f})"

    def _false_alarm(self, claim: Claim, node: str) -> bool:
        """Whether ``claim``'s user, told its node is not its own, is told wrong: the node
        stands in the client's live session, connected (and answered) long enough to know."""
        link = claim.link
        since = link.connected_since
        now = self.now
        return (
            since is not None
            and now > since + TOLD_WITHIN
            and now > link.stall_until + TOLD_WITHIN
            and self._stands_live(node, link)
        )

    # -- invariants at every moment --------------------------------------------------------------

    def check_now(self) -> None:
        now = self.now
        standing: dict[str, list[tuple[Claim, str]]] = {}
        for claim in self.claims:
            if claim.ended_at is not None:
                continue
            believes = claim.believes()
            node = claim.node()
            if believes != claim.believed:
                claim.believed = believes
                claim.lost_since = None if believes else now
                if not believes:
                    self._owed.extend((claim, now, kind) for kind in claim.expects)
            if believes:
                self._check_believer(claim, node, standing)
            else:
                self._check_told(claim, node)
        for key, holders in standing.items():
            self._check_exclusion(key, holders)
        if self._owed:
            self._check_callbacks()
        if self.kept:
            kept_nodes.check_now(self)
        for tally in self.tallies:
            tally.check_now(self)

    def _check_callbacks(self) -> None:
        """Each loss a claim's user was told of (while it claimed) is followed by each of its
        callbacks within :data:`CALLBACK_WITHIN`, whatever the user did meanwhile."""
        now = self.now
        owed = []
        for claim, lost, kind in self._owed:
            if any(at >= lost for at in claim.callbacks.get(kind, ())):
                continue
            if kind in claim.silenced and claim.ended_at is not None:
                continue
            if now > lost + CALLBACK_WITHIN:
                self.fail(
                    f"callbacks: {claim.who} was told of a loss at t={lost:.3f}, and its"
                    f" {kind} callback did not follow"
                )
                continue
            owed.append((claim, lost, kind))
        self._owed = owed

    def _check_believer(
        self, claim: Claim, node: str | None, standing: dict[str, list[tuple[Claim, str]]]
    ) -> None:
        if node is None:
            self.fail(f"leader-first: {claim.who} believes it holds {claim.key} with no node")
            return
        late = self._late(claim, node)
        if late:
            self.fail(f"told-in-time: {claim.who} still believes it holds {late}")
        link = claim.link
        if (
            claim.policy == "standard"
            and link.suspended_since is not None
            and link.stopped_at is None
            and self.now > link.suspended_since + SUSPENDED_WITHIN + 1e-9
        ):
            self.fail(
                f"told-suspended: {claim.who} still believes it holds {node}, its connection"
                f" suspended at t={link.suspended_since:.3f}"
            )
        if (
            claim.interrupted_at is not None
            and self.now > claim.interrupted_at + SUSPENDED_WITHIN + 1e-9
        ):
            self.fail(f"interrupted: {claim.who} not told of its interruption ({node})")
        if node in self.server.nodes:
            standing.setdefault(claim.key, []).append((claim, node))
            if claim.kind == "lead" and not self._first(claim.key, node):
                self.fail(f"leader-first: {claim.who} leads from {node}, not the first")

    def _check_told(self, claim: Claim, node: str | None) -> None:
        now = self.now
        if node is None or claim.interrupted_at is not None:
            return
        since = claim.since
        if claim.kind == "lead":
            if not self._first(claim.key, node):
                return
            if claim.first is None or claim.first[0] != node:
                claim.first = (node, now)
            since = claim.first[1]
        if self._false_alarm(claim, node) and now > since + TOLD_WITHIN:
            self.fail(
                f"no-false-alarm: {claim.who} is told it does not hold {node}, which stands in"
                " its live, connected session"
            )

    def _check_exclusion(self, key: str, holders: list[tuple[Claim, str]]) -> None:
        capacity = self.capacity.get(key, 1)
        exclusive = [claim for claim, _ in holders if claim.kind != "read"]
        readers = [claim for claim, _ in holders if claim.kind == "read"]
        if len(exclusive) > capacity or (exclusive and readers):
            names = ", ".join(f"{c.who}:{node.rsplit('/', 1)[1]}" for c, node in holders)
            self.fail(f"exclusion: {key}: {len(holders)} believe they hold at once ({names})")

    # -- invariants at the end -------------------------------------------------------------------

    def check_end(self) -> None:
        for tally in self.tallies:
            tally.check_end(self)
        for final in self.finals:
            final()
        for wait in self.waits:
            if wait.ended is None:
                self.fail(
                    f"bounded: {wait.who}'s {wait.what} begun at t={wait.started:.3f} never ended"
                )
            elif wait.ended > wait.bound + 1e-9:
                self.fail(
                    f"bounded: {wait.who}'s {wait.what} begun at t={wait.started:.3f} ended at"
                    f" t={wait.ended:.3f}, after its bound t={wait.bound:.3f}"
                )
        for participant in self.participants:
            if not participant.done:
                self.fail(f"clean-end: {participant.name} never ended")
            elif participant.error is not None:
                self.fail(f"clean-end: {participant.name} failed: {participant.error!r}")
        for unit in self.hub.failed:
            self.fail(f"clean-end: {unit.name} failed: {unit.error!r}")
        kept_nodes.check_end(self)
        for link in self.links:
            if link.stopped_at is not None or not link.client._session_id:
                continue
            left = self.server.ephemerals_of(link.client._session_id)
            if left:
                self.fail(f"clean-end: {link.name}: nodes left in its live session: {sorted(left)}")
            for session in link.sessions:
                if self.server.alive(session) and session != link.client._session_id:
                    self.fail(f"clean-end: {link.name}: an earlier session {session:#x} lives on")

    # -- running ---------------------------------------------------------------------------------

    def close(self) -> None:
        """End what still runs (after the checks)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self.hub.close()
        if self._loop is not None:
            self._loop.close()


@contextlib.contextmanager
def exploring() -> Iterator[None]:
    """While inside, schedules may run: the library's and kazoo's records go to the running
    world (those at ERROR are violations; none reaches the process's handlers), and a lock
    listener tells it every recipe's events."""
    loggers = [logging.getLogger(name) for name in ("pycurator", "kazoo")]
    saved = [(logger.handlers[:], logger.propagate, logger.level) for logger in loggers]
    for logger in loggers:
        logger.handlers[:] = [_LOG]
        logger.propagate = False
        logger.setLevel(logging.ERROR)
    pycurator.add_lock_listener(_lock_event)
    try:
        yield
    finally:
        pycurator.remove_lock_listener(_lock_event)
        for logger, (handlers, propagate, level) in zip(loggers, saved, strict=True):
            logger.handlers[:] = handlers
            logger.propagate = propagate
            logger.setLevel(level)


@contextlib.contextmanager
def running(world: World) -> Iterator[World]:
    """``world`` is the one running: the library's clock is its hub's."""
    CURRENT.append(world)
    _LOG.world = world
    clock.use(lambda: world.hub.now)
    try:
        yield world
    finally:
        clock.use(None)
        CURRENT.pop()
        _LOG.world = CURRENT[-1] if CURRENT else None
