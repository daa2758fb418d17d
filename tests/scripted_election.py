"""A scene for the leader election's scripted tests (tests/test_election_protocol.py,
test_election_leader_protocol.py): one participant
(:class:`~pycurator._recipes.election.Election`) on a scripted server (:mod:`tests.scripted`), what
its owner hears, the owner's calls while it waits (:class:`Call`), and the leader's node followed
by :class:`ScriptedMonitor` in the hold monitor's stead (the monitor has its own tests); the names,
requests and parts of scripts the scripts are written in; and what the modules' fixtures give.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from pycurator._client.lock_listeners import add_lock_listener, remove_lock_listener
from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol import wire
from pycurator._protocol.checks import ConnectionPolicy
from pycurator._protocol.drivers import LATCH_DRIVER
from pycurator._protocol.events import LockEvent, LockEventKind
from pycurator._protocol.requests import CreateMode, CreateNode, DeleteNode, GetData, ListChildren
from pycurator._protocol.transport import CLIENT_STOPPED, SESSION_EXPIRED
from pycurator._recipes import election
from pycurator._recipes.election import Election
from pycurator._recipes.hold_monitor import HoldState
from pycurator._recipes.lock_engine import LockEngine
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.reports import HoldReport, Reporter

from .scripted import WATCHED, Entry, Owes, Reply, ScriptedServer, State, stat

BASE = "/leader/l"
ID = b"me"
SESSION = 0x51
NEW_SESSION = 0x52
#: The protection ids our creates draw, in order; others' nodes carry other ids.
IDS = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"]
OTHER = "_c_99999999-9999-4999-8999-999999999999-"
AHEAD = "_c_88888888-8888-4888-8888-888888888888-"
#: A plain listing of the election's path (the election never reduces one).
RELIST = ListChildren(BASE)


def prefix(n: int = 0) -> str:
    return wire.protected_prefix(IDS[n])


def name(seq: int, owner: str | None = None) -> str:
    """A latch node's name, ours (the first create's) unless ``owner`` is another prefix."""
    return f"{owner or prefix()}{wire.LATCH_NAME}{seq:010d}"


def path(node: str) -> str:
    return f"{BASE}/{node}"


def create(n: int = 0) -> CreateNode:
    """The ``n``-th create of our node."""
    return CreateNode(path(prefix(n) + wire.LATCH_NAME), ID, None, CreateMode.EPHEMERAL_SEQUENTIAL)


def made(seq: int, n: int = 0, session: int = SESSION) -> tuple[str, Any]:
    """The answer to the ``n``-th create: node ``seq``, made by ``session``."""
    return path(name(seq, prefix(n))), stat(seq * 10, session)


def watch(node: str) -> GetData:
    """The ``getData`` that watches ``node`` (a predecessor)."""
    return GetData(path(node), watch=WATCHED)


def held(seq: int, n: int = 0, session: int = SESSION) -> LockNode:
    """The node the ``n``-th create made, as the election holds it."""
    return LockNode(path(name(seq, prefix(n))), seq * 10, session)


@dataclass(frozen=True)
class Call:
    """While the protocol waits (first thing in that wait): ``function()`` runs, as its owner
    or its runner would call from another thread."""

    function: Callable[[], object]


class Server(ScriptedServer):
    """The scripted server, with :class:`Call` entries too, and the monitors made on it."""

    def __init__(self, script: Iterable[Entry | Call], *, session: int = SESSION) -> None:
        super().__init__(cast(Iterable[Entry], script), session=session)
        self.monitors: list[ScriptedMonitor] = []

    def _waited(self, signal: Any) -> bool:
        while not signal.is_set() and self.script and isinstance(self.script[0], Call):
            call = cast(Call, self.script.pop(0))
            call.function()
        return bool(signal.is_set()) or super()._waited(signal)


class ScriptedMonitor:
    """The leader's monitor (:class:`~pycurator._recipes.hold_monitor.HoldMonitor`'s contract) on
    the scripted server: the hold is lost when the session ends, and when the connection is
    suspended under the ``standard`` policy, for good (it is never HELD again, ``once`` or not:
    :attr:`once` says what the election asked for); :meth:`close` ends it."""

    def __init__(
        self,
        server: Server,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
        session_id: int,
        report: HoldReport,
        *,
        once: bool = False,
    ) -> None:
        self.server = server
        self.once = once
        self.node = node
        self.policy = policy
        self.report = report
        self.state = HoldState.HELD
        self.reason = ""
        self._on_change = on_change
        server.monitors.append(self)
        server.listen(self._on_connection)
        if server.session != session_id:
            self._lose(HoldState.LOST, SESSION_EXPIRED)
        elif not server.is_connected and policy == "standard":
            self._lose(HoldState.SUSPENDED, "connection suspended")

    @property
    def held(self) -> bool:
        return self.state is HoldState.HELD

    def close(self, reason: str = "") -> None:
        self.state = HoldState.RELEASED
        self.server.unlisten(self._on_connection)
        self.report.released(reason)

    def _lose(self, state: HoldState, reason: str) -> None:
        if self.state is HoldState.HELD:
            self.state, self.reason = state, reason
            self.report.lost(reason)
            self._on_change(state, reason)

    def _on_connection(self, state: str) -> None:
        if state == KazooState.LOST:
            self._lose(HoldState.LOST, CLIENT_STOPPED if self.server.stopped else SESSION_EXPIRED)
        elif state == KazooState.SUSPENDED and self.policy == "standard":
            self._lose(HoldState.SUSPENDED, "connection suspended")


class Scene:
    """One participant on a scripted server: a latch's (queues again after a term) or, with
    ``selector``, a selector term's (leads once, leaves the queue on a connection error).
    :attr:`heard` is what its owner hears, in order."""

    def __init__(
        self,
        client: KazooTransport,
        monkeypatch: pytest.MonkeyPatch,
        policy: ConnectionPolicy = "standard",
        *,
        selector: bool = False,
    ) -> None:
        self.heard: list[tuple[str, object]] = []
        self.server: Server | None = None
        engine = LockEngine(client, BASE, LATCH_DRIVER, data=ID)
        self.election = Election(
            engine,
            policy,
            lambda node, monitor: self.heard.append(("elected", node)),
            lambda reason: self.heard.append(("deposed", reason)),
            lambda error: self.heard.append(("trouble", error)),
            reporter=Reporter("selector" if selector else "latch", BASE),
            one_term=selector,
            queue_ends_on_error=selector,
        )
        monkeypatch.setattr(election, "HoldMonitor", self._monitor)

    def _monitor(self, client: KazooTransport, *args: Any, **kwargs: Any) -> ScriptedMonitor:
        """Made where the election makes its HoldMonitor, with the same arguments."""
        assert self.server is not None
        return ScriptedMonitor(self.server, *args, **kwargs)

    def serve(self, *script: Entry | Call) -> Server:
        """The server that plays ``script``."""
        self.server = Server(script)
        return self.server

    def play(self, *script: Entry | Call) -> str:
        """Run the participant's steps on ``script`` to their end, which must be the script's
        (:meth:`~tests.scripted.ScriptedServer.finish`); why they ended."""
        server = self.serve(*script)
        reason = server.run(self.election.steps())
        server.finish()
        return reason

    def stop(self, reason: str = "latch closed") -> Call:
        """The owner stops the participant (a latch's close, a selector's term given up)."""
        return Call(lambda: self.election.stop(reason))

    @property
    def sent(self) -> list[Any]:
        assert self.server is not None
        return self.server.sent


#: A turn in the queue that leads, and its term's end, as reported.
TURN = [LockEventKind.WAITING, LockEventKind.ACQUIRED]
TERM_LOST = [LockEventKind.LOST, LockEventKind.RELEASED]


def rejoined(latch: Scene) -> list[Entry | Call]:
    """The end of a script whose session ended with our node 3 while we led: the reconnect in a
    new session, where node 3, still listed, is not ours (CURATOR-696): it is deleted and
    replaced by node 5, which leads until the owner's stop."""
    return [
        State(KazooState.CONNECTED, session=NEW_SESSION),
        Reply(RELIST, [name(3)]),
        Owes(path(name(3))),
        Reply(create(1), made(5, 1, NEW_SESSION)),
        Reply(RELIST, [name(5, prefix(1))]),
        latch.stop(),
        Reply(DeleteNode(path(name(5, prefix(1))))),
    ]


def scene_maker(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Scene]:
    """What a test's ``scene`` fixture gives: ``scene(policy, selector=False)`` makes a
    :class:`Scene` on the transport of a client that is never started (the script is its
    server), whose creates draw :data:`IDS` in order."""
    ids = iter(IDS)
    monkeypatch.setattr(wire, "new_protected_id", lambda: next(ids))
    client = transport_of(KazooClient(hosts="127.0.0.1:1"))

    def make(policy: ConnectionPolicy = "standard", *, selector: bool = False) -> Scene:
        return Scene(client, monkeypatch, policy, selector=selector)

    return make


@contextlib.contextmanager
def reported() -> Iterator[list[LockEventKind]]:
    """The kinds of the events reported on the election's path while inside, in order."""
    kinds: list[LockEventKind] = []

    def listener(event: LockEvent) -> None:
        if event.path == BASE:
            kinds.append(event.kind)

    add_lock_listener(listener)
    try:
        yield kinds
    finally:
        remove_lock_listener(listener)


__all__ = [
    "AHEAD",
    "BASE",
    "ID",
    "IDS",
    "NEW_SESSION",
    "OTHER",
    "RELIST",
    "SESSION",
    "TERM_LOST",
    "TURN",
    "Call",
    "Scene",
    "ScriptedMonitor",
    "Server",
    "create",
    "held",
    "made",
    "name",
    "path",
    "prefix",
    "rejoined",
    "reported",
    "scene_maker",
    "watch",
]
