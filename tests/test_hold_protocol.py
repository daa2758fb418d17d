"""The hold check's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

A :class:`~pycurator._recipes.hold_monitor.HoldMonitor` follows a held node from acquire to release;
here the server's side (:mod:`tests.scripted`) plays its answers, watch events and connection
states, and each test checks every request the monitor sends, in order. The same protocol runs on a
real server in test_lost_lock.py, test_faults.py and the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from pycurator._client.transport import KazooTransport, transport_of
from pycurator._protocol.checks import ConnectionPolicy
from pycurator._protocol.errors import LockLostError
from pycurator._protocol.requests import NodeExists
from pycurator._protocol.transport import CLIENT_STOPPED, SESSION_EXPIRED
from pycurator._recipes.hold import Hold
from pycurator._recipes.hold_monitor import NODE_DELETED, WATCH_DELAY, HoldMonitor, HoldState
from pycurator._recipes.lock_nodes import LockNode
from pycurator._recipes.reports import Reporter

from .scripted import WATCHED, Entry, Reply, ScriptedServer, stat

NODE = "/locks/m/_c_11111111-1111-4111-8111-111111111111-lock-0000000003"
SESSION = 0x51
OURS = stat(30, SESSION)
#: The one request the monitor sends: ``exists`` of its node, setting its watch.
EXISTS = NodeExists(NODE, watch=WATCHED)
SUSPENDED = "connection suspended"
REGAINED = "reconnected in the same session"
NOT_OURS = "lock node not ours after reconnect"

Change = tuple[HoldState, str]


class HoldServer(ScriptedServer):
    """A scripted server with what a monitor's callbacks use besides a transport: the batched
    delayed calls (held until :meth:`lasted`) and the queue of requests sent after news (run at
    once). The monitor never waits on a signal, so the connection's changes and the client's
    stop are played by the test itself (:meth:`change`, :meth:`stop`), as kazoo plays them:
    every watch is dropped when the connection is lost."""

    def __init__(self, script: Iterable[Entry], **options: Any) -> None:
        super().__init__(script, **options)
        self.delayed: list[tuple[float, Callable[[Any], None], Any]] = []

    def call_batched(self, delay: float, function: Callable[[Any], None], argument: Any) -> None:
        self.delayed.append((delay, function, argument))

    def post_request(self, function: Callable[[], None]) -> None:
        function()

    def lasted(self) -> None:
        """The delay of every delayed call passes: they run, in order."""
        due, self.delayed = self.delayed, []
        for _, function, argument in due:
            function(argument)

    def change(self, state: str, session: int | None = None) -> None:
        """The connection goes to ``state`` (``session``: the session id from now on)."""
        if state != KazooState.CONNECTED:
            self.watches.clear()
        super().change(state, session)

    def stop(self) -> None:
        """The client is stopped: its session ends (told as LOST), its watches go."""
        self.stopped = True
        self.change(KazooState.LOST)


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started: only its handler's lock is used."""
    return transport_of(KazooClient(hosts="127.0.0.1:1"))


class Holder:
    """A monitor followed on a scripted server, and what its holder heard."""

    def __init__(
        self,
        client: KazooTransport,
        script: Iterable[Entry] = (),
        policy: ConnectionPolicy = "standard",
        *,
        once: bool = False,
        **options: Any,
    ) -> None:
        self.server = HoldServer(script, **{"session": SESSION, **options})
        self.changes: list[Change] = []
        report = Reporter("mutex", "/locks/m").acquired(time.monotonic(), NODE)
        self.monitor = self.server.run(
            HoldMonitor.follow_steps(
                client,
                NODE,
                policy,
                lambda *change: self.changes.append(change),
                SESSION,
                report,
                once=once,
            )
        )

    def confirm(self) -> bool:
        return self.server.run(self.monitor.confirm_steps())

    def exists(self) -> NodeExists:
        """The exists the monitor sends, exactly."""
        return NodeExists(NODE, watch=self.monitor._on_node_event)


def test_a_hold_is_confirmed_with_one_request_then_known_by_its_watch(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    server, monitor = holder.server, holder.monitor
    assert server.sent == []  # following costs no request
    assert server.listeners == [monitor._on_connection]
    assert [delay for delay, _, _ in server.delayed] == [WATCH_DELAY]
    assert holder.confirm()
    assert server.sent == [holder.exists()]
    assert [(kind, type(request).__name__) for kind, request in server.log] == [
        ("send", "NodeExists"),
        ("await", "NodeExists"),
    ]
    assert server.watches[NODE] == [monitor._on_node_event]
    server.lasted()  # the delayed watch finds the node watched already
    assert holder.confirm()
    assert monitor.held
    assert server.sent == [holder.exists()]
    monitor.close()
    server.finish()
    assert holder.changes == []


def test_a_lasting_hold_is_watched_without_being_asked(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    holder.server.lasted()
    assert holder.server.sent == [holder.exists()]
    assert holder.confirm()
    assert holder.server.sent == [holder.exists()]  # known by its watch
    holder.monitor.close()
    holder.server.finish()


def test_a_hold_released_before_it_lasted_sends_nothing(client: KazooTransport) -> None:
    holder = Holder(client)
    holder.monitor.close()
    holder.server.lasted()
    holder.server.finish()
    assert holder.server.sent == []
    assert holder.monitor.state is HoldState.RELEASED


def test_a_deleted_node_is_lost_for_good(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.server.fire(NODE)
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    assert holder.server.listeners == []  # a loss is final: nothing more to hear
    assert not holder.confirm()
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED)
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    assert holder.monitor.reason == NODE_DELETED
    holder.monitor.close()
    holder.server.finish()
    assert holder.server.sent == [holder.exists()]


def test_a_node_found_gone_by_the_confirm_is_lost(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, None)])
    assert not holder.confirm()
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    holder.monitor.close()
    holder.server.finish()


def test_a_change_of_the_node_watches_it_again_while_held(client: KazooTransport) -> None:
    # a revocation request writes the node: its watch fires, and is set again
    holder = Holder(client, [Reply(EXISTS, OURS), Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.server.fire(NODE, EventType.CHANGED)
    assert holder.server.sent == [holder.exists(), holder.exists()]
    assert holder.server.watches[NODE] == [holder.monitor._on_node_event]
    holder.monitor.close()
    holder.server.finish()
    assert holder.changes == []


def test_a_node_deleted_between_its_change_and_the_watch_set_again_is_lost(
    client: KazooTransport,
) -> None:
    # the revocation's write fires the watch; the node is gone by the time it is set again
    holder = Holder(client, [Reply(EXISTS, OURS), Reply(EXISTS, None)])
    assert holder.confirm()
    holder.server.fire(NODE, EventType.CHANGED)
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    holder.monitor.close()
    holder.server.finish()


def test_a_standard_hold_is_lost_while_suspended_and_ours_again_once_checked(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS), Reply(EXISTS, OURS)])
    server = holder.server
    assert holder.confirm()
    server.change(KazooState.SUSPENDED)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]
    assert not holder.confirm()  # no request while not known to be ours
    assert server.sent == [holder.exists()]
    server.change(KazooState.CONNECTED)  # checked: it exists, and this session made it
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED), (HoldState.HELD, REGAINED)]
    assert server.sent == [holder.exists(), holder.exists()]
    assert server.watches[NODE] == [holder.monitor._on_node_event]
    assert holder.confirm()  # watched again by the check
    assert server.sent == [holder.exists(), holder.exists()]
    holder.monitor.close()
    server.finish()


def test_a_hold_that_cannot_come_back_stays_lost_after_the_reconnect_and_asks_nothing(
    client: KazooTransport,
) -> None:
    # a term of leadership: the suspension ended it, and the next term begins anew (the
    # election lists again), so the node is not checked and the hold is not HELD again, even
    # when the steps that depose it look only once the connection is back
    holder = Holder(client, [Reply(EXISTS, OURS)], once=True)
    server, monitor = holder.server, holder.monitor
    assert holder.confirm()
    server.change(KazooState.SUSPENDED)
    server.change(KazooState.CONNECTED)
    server.change(KazooState.SUSPENDED)
    server.change(KazooState.CONNECTED)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]  # told once, never regained
    assert (monitor.state, monitor.held, monitor.reason) == (
        HoldState.SUSPENDED,
        False,
        SUSPENDED,
    )
    assert server.sent == [holder.exists()]  # no check after either reconnect
    assert not holder.confirm()
    assert server.listeners == [monitor._on_connection]  # until its owner closes it
    server.change(KazooState.LOST)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]
    assert monitor.reason == f"{SUSPENDED}, then {SESSION_EXPIRED}"
    monitor.close()
    assert server.listeners == []
    server.finish()


def test_a_hold_that_cannot_come_back_still_gets_its_watch_after_a_reconnect(
    client: KazooTransport,
) -> None:
    # under the session policy a suspension loses nothing: a hold still held is watched again
    holder = Holder(client, [Reply(EXISTS, OURS)], "session", once=True)
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED)
    assert holder.server.sent == [holder.exists()]
    assert holder.server.watches[NODE] == [holder.monitor._on_node_event]
    assert holder.monitor.held and holder.changes == []
    holder.monitor.close()
    holder.server.finish()


@pytest.mark.parametrize(
    ("found", "session"),
    [(None, SESSION), (stat(30, 0x77), SESSION), (OURS, 0x52)],
    ids=["gone", "another session's", "a new session"],
)
def test_a_suspended_hold_not_proved_ours_after_the_reconnect_is_lost(
    client: KazooTransport, found: Any, session: int
) -> None:
    holder = Holder(client, [Reply(EXISTS, found)])
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED, session)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]  # the loss is told once
    assert holder.monitor.state is HoldState.LOST
    assert holder.monitor.reason == f"{SUSPENDED}, then {NOT_OURS}"  # check() tells both
    assert holder.server.listeners == []
    holder.monitor.close()
    holder.server.finish()


def test_a_check_answered_after_the_session_ended_does_not_bring_the_hold_back(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS, late=True)])
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED)  # the check is sent; its answer is slow
    holder.server.change(KazooState.LOST)
    holder.server.land()
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]
    assert (holder.monitor.state, holder.monitor.reason) == (
        HoldState.LOST,
        f"{SUSPENDED}, then {SESSION_EXPIRED}",
    )
    holder.monitor.close()
    holder.server.finish()


def test_a_session_hold_is_kept_while_suspended_and_watched_again_after(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS), Reply(EXISTS, OURS)], policy="session")
    server = holder.server
    assert holder.confirm()
    server.change(KazooState.SUSPENDED)  # kazoo drops the watch with the connection
    assert holder.monitor.held and holder.confirm()
    assert server.sent == [holder.exists()]  # no request while disconnected
    server.change(KazooState.CONNECTED)
    assert server.sent == [holder.exists(), holder.exists()]
    assert holder.changes == []
    server.fire(NODE)  # seen through the watch set again
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    holder.monitor.close()
    server.finish()


def test_an_expired_session_loses_the_hold_once(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.LOST)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]
    assert (holder.monitor.state, holder.monitor.reason) == (
        HoldState.LOST,
        f"{SUSPENDED}, then {SESSION_EXPIRED}",
    )
    assert holder.server.listeners == []
    holder.server.change(KazooState.CONNECTED, 0x52)
    assert not holder.confirm()
    holder.monitor.close()
    holder.server.finish()
    assert holder.server.sent == [holder.exists()]


def test_a_session_hold_is_lost_when_the_session_expires(client: KazooTransport) -> None:
    holder = Holder(client, policy="session")
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.LOST)
    assert holder.changes == [(HoldState.LOST, SESSION_EXPIRED)]
    holder.monitor.close()
    holder.server.lasted()  # nothing is watched for a hold that ended
    holder.server.finish()
    assert holder.server.sent == []


def test_a_session_hold_is_lost_once_when_its_session_timeout_passes_while_suspended(
    client: KazooTransport,
) -> None:
    # the runtime's count from the suspension runs out: LOST while still disconnected, in the
    # same session; then kazoo ends that session (LOST again) and makes a new one
    holder = Holder(client, [Reply(EXISTS, OURS)], policy="session")
    server = holder.server
    assert holder.confirm()
    server.change(KazooState.SUSPENDED)
    assert holder.changes == []
    server.change(KazooState.LOST)
    assert holder.changes == [(HoldState.LOST, SESSION_EXPIRED)]
    assert server.listeners == []
    server.change(KazooState.LOST, 0)
    server.change(KazooState.CONNECTED, 0x52)
    assert holder.changes == [(HoldState.LOST, SESSION_EXPIRED)]
    assert not holder.confirm()
    holder.monitor.close()
    server.finish()
    assert server.sent == [holder.exists()]


@pytest.mark.parametrize(("stopped", "reason"), [(False, SESSION_EXPIRED), (True, CLIENT_STOPPED)])
def test_a_session_that_ended_before_the_hold_was_followed_is_seen_at_once(
    client: KazooTransport, stopped: bool, reason: str
) -> None:
    server = HoldServer([], session=0x52, connected=not stopped)
    server.stopped = stopped
    changes: list[Change] = []
    report = Reporter("mutex", "/locks/m").acquired(time.monotonic(), NODE)
    monitor = server.run(
        HoldMonitor.follow_steps(
            client, NODE, "session", lambda *change: changes.append(change), SESSION, report
        )
    )
    assert changes == [(HoldState.LOST, reason)]
    assert server.listeners == []
    assert not server.run(monitor.confirm_steps())
    server.lasted()
    monitor.close()
    server.finish()
    assert server.sent == []


def test_a_confirm_while_disconnected_sends_nothing_and_watches_once_connected(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)], policy="session", connected=False)
    assert holder.confirm()  # the session policy keeps it; nothing sent while disconnected
    holder.server.lasted()  # nor is the delayed watch: the reconnect sets it
    assert holder.server.sent == []
    holder.server.change(KazooState.CONNECTED)
    assert holder.server.sent == [holder.exists()]
    assert holder.confirm()
    assert holder.server.sent == [holder.exists()]
    holder.monitor.close()
    holder.server.finish()
    assert holder.changes == []


def test_a_standard_hold_followed_while_disconnected_is_suspended_at_once(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)], connected=False)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED)]
    assert not holder.confirm()
    holder.server.lasted()  # a hold not known to be ours is not watched
    assert holder.server.sent == []
    holder.server.change(KazooState.CONNECTED)
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED), (HoldState.HELD, REGAINED)]
    assert holder.server.sent == [holder.exists()]
    holder.monitor.close()
    holder.server.finish()


def test_a_confirm_that_meets_a_connection_loss_watches_again_once_connected(
    client: KazooTransport,
) -> None:
    holder = Holder(
        client,
        [Reply(EXISTS, error=ConnectionLoss(), disconnects=True), Reply(EXISTS, OURS)],
        policy="session",
    )
    assert holder.confirm()  # the listener tells connection trouble, not the confirm
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED)
    assert holder.server.sent == [holder.exists(), holder.exists()]
    assert holder.confirm()
    assert holder.server.sent == [holder.exists(), holder.exists()]
    holder.monitor.close()
    holder.server.finish()
    assert holder.changes == []


def test_a_confirm_answered_late_says_not_known_and_the_answer_still_counts(
    client: KazooTransport,
) -> None:
    holder = Holder(client, [Reply(EXISTS, None, late=True)])
    assert not holder.confirm()  # not in time: not known to be ours
    assert holder.changes == []
    holder.server.land()  # the answer lands: the node is gone
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    holder.monitor.close()
    holder.server.finish()


def test_a_stop_loses_the_hold_and_leaves_nothing(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.server.stop()
    assert holder.changes == [(HoldState.LOST, CLIENT_STOPPED)]
    assert holder.server.listeners == []
    assert not holder.server.watches[NODE]  # kazoo drops the watch with the session
    assert not holder.confirm()
    holder.monitor._on_node_event(WatchedEvent(EventType.NONE, KazooState.LOST, None))
    holder.monitor.close()
    holder.server.lasted()
    holder.server.finish()
    assert holder.server.sent == [holder.exists()]


def test_a_confirm_answered_by_a_stopped_client_loses_the_hold(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, error=ConnectionClosedError("closed"))])
    assert not holder.confirm()
    assert holder.changes == [(HoldState.LOST, CLIENT_STOPPED)]
    assert holder.server.listeners == []
    holder.monitor.close()
    holder.server.finish()


def test_a_released_hold_leaves_no_watch_and_no_listener(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.monitor.close()
    assert holder.server.listeners == []
    holder.server.fire(NODE, EventType.CHANGED)  # written as it is released: not watched again
    assert not holder.server.watches[NODE]
    holder.server.change(KazooState.SUSPENDED)
    holder.server.change(KazooState.CONNECTED)
    holder.server.finish()
    assert holder.server.sent == [holder.exists()]
    assert holder.changes == []
    assert holder.monitor.state is HoldState.RELEASED


def test_a_released_hold_is_not_lost_when_its_node_is_deleted(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS)])
    assert holder.confirm()
    holder.monitor.close()
    holder.server.fire(NODE)  # the release's delete spends the watch
    assert not holder.server.watches[NODE]
    assert holder.changes == []
    assert holder.monitor.state is HoldState.RELEASED
    holder.server.finish()


def test_a_followed_node_checks_through_its_monitor(client: KazooTransport) -> None:
    server = HoldServer([Reply(EXISTS, OURS)], session=SESSION)
    report = Reporter("mutex", "/locks/m").acquired(time.monotonic(), NODE)
    changes: list[Change] = []
    hold = server.run(
        Hold.follow_steps(
            client, LockNode(NODE, 30, SESSION), "standard", lambda *c: changes.append(c), report
        )
    )
    assert (hold.path, hold.fencing_token) == (NODE, 30)
    assert server.run(hold.is_held_steps())
    server.run(hold.check_steps())
    server.fire(NODE)
    with pytest.raises(LockLostError, match=NODE_DELETED):
        server.run(hold.check_steps())
    assert hold.reason == NODE_DELETED
    hold.close()
    server.finish()
    assert server.sent == [NodeExists(NODE, watch=hold.monitor._on_node_event)]
    assert changes == [(HoldState.LOST, NODE_DELETED)]


def test_a_drop_as_the_reconnects_check_is_answered_keeps_the_hold(client: KazooTransport) -> None:
    holder = Holder(client, [Reply(EXISTS, OURS, late=True)])
    server = holder.server
    server.change(KazooState.SUSPENDED)
    server.change(KazooState.CONNECTED)
    assert server.sent == [holder.exists()]
    server.drop()  # the connection goes again as the answer is read: the session lives on
    server.land()
    assert holder.changes == [(HoldState.SUSPENDED, SUSPENDED), (HoldState.HELD, REGAINED)]
    holder.monitor.close()
    server.finish()


def test_a_watch_dropped_on_the_server_as_it_is_set_is_set_again(client: KazooTransport) -> None:
    # a waiter of this client gave up its watch on our node as our exists set it: the server
    # keeps one watch per path and session, so ours went too
    holder = Holder(client, [Reply(EXISTS, OURS, drops_a_watch=True), Reply(EXISTS, OURS)])
    assert holder.confirm()
    assert holder.server.sent == [holder.exists(), holder.exists()]
    holder.server.fire(NODE)
    assert holder.changes == [(HoldState.LOST, NODE_DELETED)]
    holder.monitor.close()
    holder.server.finish()
