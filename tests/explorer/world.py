"""One schedule's world: the scheduler, the server, the clients, what each holder believes, and
the invariants (checked after every turn, and once all have ended)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from pycurator._protocol.checks import ConnectionPolicy
from pycurator._recipes.hold_monitor import HoldMonitor, HoldState

from .model import Client
from .scheduler import Participant, Scheduler
from .server import Server

#: Seconds after which a holder still believes in a node gone while its client was connected.
TOLD_WITHIN = 1.0

_KAZOO: list[KazooClient] = []


def kazoo_client(index: int) -> KazooClient:
    """The ``index``-th never-started kazoo client (the protocols take its handler's lock and
    its session timeout; they are made once, and shared by every schedule)."""
    while len(_KAZOO) <= index:
        _KAZOO.append(KazooClient(hosts="127.0.0.1:1", timeout=4.0))
    return _KAZOO[index]


@dataclasses.dataclass
class Hold:
    """One hold: ``key`` (the lock), ``kind`` (``"excl"``, ``"read"``, ``"write"``, ``"lead"``),
    the node, and what its holder was told."""

    key: str
    kind: str
    client: Client
    node: str
    since: float
    monitor: HoldMonitor | None = None
    released_at: float | None = None
    changes: list[tuple[HoldState, str, float]] = dataclasses.field(default_factory=list)
    ended_by: Callable[[], bool] | None = None  # an election's leadership ends itself
    policy: ConnectionPolicy = "standard"

    def cut_off(self) -> bool:
        """Whether its belief may outlast its node for a reason known and not yet handled: a
        ``session`` policy's holder while disconnected cannot tell that its session expired
        (Curator starts a timer of the session timeout then; issue 39's third item)."""
        return self.policy == "session" and not self.client.is_connected

    def believes(self) -> bool:
        if self.released_at is not None:
            return False
        if self.ended_by is not None and self.ended_by():
            return False
        return self.monitor is None or self.monitor.state is HoldState.HELD


class Violation(AssertionError):
    """An invariant does not hold."""


class World:
    """See the module doc. ``capacity``: how many may hold each key at once (excl and leases)."""

    def __init__(self, seed: int, clients: int) -> None:
        self.rng = random.Random(seed)
        self.scheduler = Scheduler(self.rng)
        self.server = Server(self.scheduler)
        self.clients = [Client(f"c{i}", self.server, kazoo_client(i)) for i in range(clients)]
        self.capacity: dict[str, int] = {}
        self.holds: list[Hold] = []
        self.violations: list[str] = []
        self._seen: set[str] = set()
        #: what is not an invariant broken but worth telling (an acquire failing as Curator's)
        self.notes: list[str] = []
        #: (participant, started, bound): each wait, and when it must have ended
        self.waits: list[tuple[str, float, float, list[float]]] = []
        self.owners: list[Participant] = []
        self.log: list[str] = []
        self.scheduler.after_turn = self.check_now

    def client_of(self, transport: Any) -> Client:
        """The model's client whose protocols take ``transport`` for theirs."""
        for client in self.clients:
            if client.transport is transport:
                return client
        raise LookupError(transport)

    @property
    def now(self) -> float:
        return self.scheduler.now

    def fail(self, message: str) -> None:
        if message not in self._seen:  # each once, at its first moment
            self._seen.add(message)
            self.violations.append(f"t={self.now:.3f} {message}")

    def note(self, message: str) -> None:
        self.notes.append(f"t={self.now:.3f} {message}")

    def spawn(self, name: str, client: Client, steps: Any) -> Participant:
        participant = self.scheduler.spawn(name, client, steps)
        self.owners.append(participant)
        return participant

    # -- invariants at every moment --------------------------------------------------------------

    def check_now(self) -> None:
        by_key: dict[str, list[Hold]] = {}
        for hold in self.holds:
            if hold.believes():
                by_key.setdefault(hold.key, []).append(hold)
                self._told_in_time(hold)
        for key, believers in by_key.items():
            # a holder whose node is gone learns it from a watch, later; how soon is checked
            # apart (_told_in_time), so that a node deleted by another is not a double hold
            holds = [h for h in believers if not h.cut_off() and h.node in self.server.nodes]
            exclusive = [h for h in holds if h.kind != "read"]
            readers = [h for h in holds if h.kind == "read"]
            if len(exclusive) > self.capacity.get(key, 1) or (exclusive and readers):
                names = ", ".join(
                    f"{h.client.name}:{h.kind}:{h.node.rsplit('/', 1)[1]}" for h in holds
                )
                self.fail(f"{key}: {len(holds)} believe they hold at once ({names})")

    def _told_in_time(self, hold: Hold) -> None:
        gone = self.server.gone.get(hold.node)
        if gone is None or hold.node in self.server.nodes:
            return
        client = hold.client
        if not client.is_connected or self.now < client._stall_until + TOLD_WITHIN:
            return
        if self.now - max(gone[2], client.connected_since) > TOLD_WITHIN:
            self.fail(
                f"{client.name} still believes it holds {hold.node}, {gone[0]} at t={gone[2]:.3f}"
            )

    def told(self, hold: Hold, state: HoldState, reason: str) -> None:
        """A hold's holder is told ``state`` (its monitor's ``on_change``)."""
        hold.changes.append((state, reason, self.now))
        losses = [c for c in hold.changes if c[0] is not HoldState.HELD]
        if state is not HoldState.HELD and len(hold.changes) >= 2:  # noqa: SIM102
            if hold.changes[-2][0] is not HoldState.HELD:
                self.fail(f"{hold.node}: told of a loss twice ({hold.changes})")
        if losses and losses[0][0] is HoldState.LOST and state is HoldState.HELD:
            self.fail(f"{hold.node}: told held again after it was lost for good")
        if state is HoldState.LOST:
            node = self.server.nodes.get(hold.node)
            client = hold.client
            if (
                node is not None
                and self.server.alive(node.owner)
                and node.owner == client.session
                and not client.stopped
            ):
                self.fail(
                    f"{client.name} told {hold.node} is lost ({reason}), but it is there, in its"
                    " live session"
                )

    def waited(self, name: str, started: float, bound: float) -> list[float]:
        """A wait of ``name`` began, and must end by ``bound``: append its end to the list."""
        ended: list[float] = []
        self.waits.append((name, started, bound, ended))
        return ended

    # -- invariants at the end -------------------------------------------------------------------

    def check_end(self) -> None:
        for name, started, bound, ended in self.waits:
            if not ended:
                self.fail(f"{name}: the wait begun at t={started:.3f} never ended")
            elif ended[0] > bound + 1e-9:
                self.fail(
                    f"{name}: the wait begun at t={started:.3f} ended at t={ended[0]:.3f},"
                    f" after its bound t={bound:.3f}"
                )
        for participant in self.owners:
            if not participant.done:
                self.fail(f"{participant.name} never ended")
            elif participant.error is not None:
                self.fail(f"{participant.name} failed: {participant.error!r}")
        for client in self.clients:
            if client.stopped or client.session is None:
                continue
            left = self.server.ephemerals_of(client.session)
            if left:
                self.fail(f"{client.name}: nodes left in its live session: {sorted(left)}")
        for client in self.clients:
            for session in client.sessions:
                if self.server.alive(session) and session != client.session:
                    self.fail(f"{client.name}: an earlier session {session:#x} lives on")
