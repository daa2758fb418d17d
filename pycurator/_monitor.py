"""Watching a held lock node: tell the holder when it is lost, and when it is ours again.

Curator's ``ConnectionStateErrorPolicy`` decides what counts as lost:

- ``standard``: a SUSPENDED connection already counts (we cannot know the node is still ours);
  once RECONNECTED in the same session, the node is checked, and the hold counts again if it
  still exists and belongs to this session.
- ``session``: only the session's end (LOST) or the node's deletion count.

A node deleted by anyone, or the session's expiry, is final.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Literal

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

log = logging.getLogger("pycurator")

ConnectionPolicy = Literal["standard", "session"]
CONNECTION_POLICIES: tuple[ConnectionPolicy, ...] = ("standard", "session")


def check_policy(policy: str) -> ConnectionPolicy:
    """Validate a connection policy name."""
    if policy == "standard":
        return "standard"
    if policy == "session":
        return "session"
    raise ValueError(f"connection_policy must be 'standard' or 'session', not {policy!r}")


class HoldState(enum.Enum):
    """Where a hold stands."""

    HELD = "held"
    SUSPENDED = "suspended"  # standard policy: the connection is down, the node may be ours
    LOST = "lost"  # final: the node is gone or the session ended
    RELEASED = "released"


class HoldMonitor:
    """Follows one held node from acquire to release.

    ``on_change(state, reason)`` runs (on a kazoo worker or event thread; keep it short) each time
    the state moves between HELD and not held. The monitor sets a watch on the node and a
    connection listener; :meth:`close` removes the listener, and the watch is spent when the node
    is deleted.
    """

    def __init__(
        self,
        client: KazooClient,
        node: str,
        policy: ConnectionPolicy,
        on_change: Callable[[HoldState, str], None],
    ) -> None:
        self.client = client
        self.node = node
        self.policy = policy
        self.state = HoldState.HELD
        self.reason = ""
        self._on_change = on_change
        self._lock = client.handler.lock_object()
        self._session_id = client.client_id[0] if client.client_id else None
        client.add_listener(self._on_connection)
        client.exists_async(node, watch=self._on_node_event).rawlink(self._on_first_check)

    def close(self) -> None:
        """Stop following the node (on release)."""
        with self._lock:
            self.state = HoldState.RELEASED
        self.client.remove_listener(self._on_connection)

    @property
    def held(self) -> bool:
        return self.state is HoldState.HELD

    def _move(self, state: HoldState, reason: str) -> None:
        with self._lock:
            if self.state in (HoldState.RELEASED, HoldState.LOST) or self.state is state:
                return
            self.state = state
            self.reason = reason
        if state is HoldState.LOST:
            self.client.remove_listener(self._on_connection)
        try:
            self._on_change(state, reason)
        except Exception:
            log.exception("lock state callback failed for %s", self.node)

    def _on_first_check(self, result: object) -> None:
        try:
            stat = result.get()  # type: ignore[attr-defined]
        except KazooException:
            return  # the connection listener reports connection trouble
        if stat is None:
            self._move(HoldState.LOST, "lock node deleted")

    def _on_node_event(self, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self._move(HoldState.LOST, "lock node deleted")
        elif event.type in (EventType.CHANGED, EventType.CREATED):
            self.client.exists_async(self.node, watch=self._on_node_event)

    def _on_connection(self, state: str) -> bool:
        if state == KazooState.LOST:
            self._move(HoldState.LOST, "session expired")
        elif state == KazooState.SUSPENDED:
            if self.policy == "standard":
                self._move(HoldState.SUSPENDED, "connection suspended")
        elif state == KazooState.CONNECTED and self.state is HoldState.SUSPENDED:
            self.client.handler.spawn(self._verify)
        return False

    def _verify(self) -> None:
        """After a reconnect: ours again only if the node exists and this session made it."""
        try:
            stat = self.client.exists(self.node, watch=self._on_node_event)
        except KazooException:
            return  # disconnected again: the next CONNECTED verifies
        current = self.client.client_id[0] if self.client.client_id else None
        if stat is None or stat.ephemeralOwner != self._session_id or current != self._session_id:
            self._move(HoldState.LOST, "lock node not ours after reconnect")
        else:
            self._move(HoldState.HELD, "reconnected in the same session")
