"""How pycurator's connection loop (:class:`~pycurator._client.kazoo_internals.loop.
LeanConnection`) reads a watch notification: once, for kazoo's watchers of its path and for
the follower of every event (the watches that stay), where kazoo's reader and a wrapper around
it would read it twice."""

from __future__ import annotations

from typing import Any

from kazoo.protocol.connection import CHANGED_EVENT, CHILD_EVENT, CREATED_EVENT, DELETED_EVENT
from kazoo.protocol.serialization import Watch
from kazoo.protocol.states import EVENT_TYPE_MAP, Callback, WatchedEvent

from ..sockets import WATCH_HEAD


def read_watch_event(self: Any, buffer: bytes, offset: int) -> None:
    """``LeanConnection._read_watch_event``: kazoo's ``_read_watch_event`` (the path's
    watchers popped as it pops them, the event handed to the handler's ``dispatch_callback``
    for each, nothing once the client is stopped), its debug record only while debug records
    are on; then ``self.event_follower`` told the server's type and path, read once for both.
    ``self``: the connection (kazoo 2.11's ``ConnectionHandler`` attributes)."""
    client = self.client
    kind, state, size = WATCH_HEAD.unpack_from(buffer, offset)
    start = offset + WATCH_HEAD.size
    path = buffer[start : start + size].decode("utf-8") if size >= 0 else None
    if self._debug:
        self.logger.debug("Received EVENT: %s", Watch(kind, state, path))
    if kind in (CREATED_EVENT, CHANGED_EVENT):
        watchers = client._data_watchers.pop(path, None)
    elif kind == DELETED_EVENT:
        watchers = client._data_watchers.pop(path, None)
        children = client._child_watchers.pop(path, None)
        if children:
            watchers = [*(watchers or ()), *children]
    elif kind == CHILD_EVENT:
        watchers = client._child_watchers.pop(path, None)
    else:
        self.logger.warning("Received unknown event %r", kind)
        watchers = None
    if watchers and not client._stopped.is_set():
        event = WatchedEvent(EVENT_TYPE_MAP[kind], client._state, client.unchroot(path))
        dispatch = client.handler.dispatch_callback
        for watcher in watchers:
            dispatch(Callback("watch", watcher, (event,)))
    follower = self.event_follower
    if follower is not None and path is not None:
        follower(kind, path)


__all__ = ["read_watch_event"]
