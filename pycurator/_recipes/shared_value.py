"""Curator's ``SharedValue`` as steps: one PERSISTENT node made with the seed if missing
(container parents), read with a watch and read again, in the background, on every change and
every reconnect; set whatever it holds, or at the version last read.

Its value is ordered as Curator 5.7+ orders it, by the node's ``mzxid``: a read that comes back
after a newer one changes nothing. Changes are told once each (quick successive ones may come
as one, as Curator's watch tells them), whoever made them, this client's own writes included;
a reconnect that finds nothing new tells nothing. A node deleted is watched until it is made
again (Curator hears nothing more once its read finds no node).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from .._protocol.checks import check_data
from .._protocol.deadline import Deadline
from .._protocol.errors import IllegalTrySetVersionError, UnknownOutcomeError
from .._protocol.paths import validate_path
from .._protocol.requests import GetData, NodeExists
from .._protocol.steps import ForgetWatch, GetTransport, Listen, Steps, Unlisten
from .._protocol.transport import Transport, runs_inline
from .._protocol.waits import read_sent_steps
from .versioned import (
    conditional_write_steps,
    create_with_parents_steps,
    settled,
    unconditional_write_steps,
)

V = TypeVar("V")

log = logging.getLogger("pycurator")

#: A value's ``zxid`` and ``version`` before any read: Curator's ``NO_ZXID`` and
#: ``UNINITIALIZED_VERSION``.
UNREAD = -1


@dataclass(frozen=True)
class VersionedValue(Generic[V]):
    """Curator's ``VersionedValue``: a value with the node's ``version`` (``Stat.version``,
    which may overflow to -1) and ``zxid`` (``Stat.mzxid``) it was read at, as
    ``get_versioned_value()`` gives it to ``try_set_value``."""

    version: int
    value: V
    zxid: int = UNREAD


class SharedValueSteps:
    """One ``SharedValue`` on ``path``, as steps and callbacks: its current value, kept as
    reads and writes bring it (from any thread), and its news: ``on_change(value)`` for each
    change (called in order, under a lock: it must only post), ``on_state(state)`` for each
    connection state (on kazoo's connection thread: it must only post)."""

    def __init__(self, transport: Transport, path: str, seed_value: bytes) -> None:
        validate_path(path)
        check_data(seed_value, "seed_value")
        if seed_value is None:
            raise TypeError("seed_value must be bytes, not None")
        self.transport = transport
        self.path = path
        self.seed_value = bytes(seed_value)
        self.current: VersionedValue[bytes] = VersionedValue(UNREAD, self.seed_value)
        self.on_change: Callable[[VersionedValue[bytes]], None] = _ignore
        self.on_state: Callable[[str], None] = _ignore
        self.active = False
        self._runner: Transport = transport  # what the background reads run on
        self._told = UNREAD  # the zxid of the last value told
        self._guard = transport.lock_object()

    def _patience(self) -> float:
        return self.transport.session_timeout()

    # -- the life cycle ------------------------------------------------------------------------

    def start_steps(self) -> Steps[None]:
        """Curator's ``start``: listen to the connection, make the node with the seed if it is
        missing, read it with a watch."""
        self.active = True
        self._runner = yield GetTransport()
        yield Listen(self._on_connection)
        try:
            yield from create_with_parents_steps(
                self.path, self.seed_value, None, Deadline(self._patience())
            )
        except NodeExistsError:
            pass
        except BaseException:
            yield from self.close_steps()
            raise
        yield from self._read_steps(tell=False)

    def close_steps(self) -> Steps[None]:
        """Stop hearing of changes: no more reads, no more news."""
        self.active = False
        yield Unlisten(self._on_connection)
        yield ForgetWatch(self.path, self._on_event)

    # -- reading -------------------------------------------------------------------------------

    def _read_steps(self, tell: bool) -> Steps[None]:
        """Read the node with our watch (or, once it is gone, watch for its creation), and take
        what is read; with ``tell``, tell it when it is news."""
        deadline = Deadline(self._patience())
        while self.active:
            try:
                data, stat = yield from read_sent_steps(
                    GetData(self.path, watch=self._on_event), deadline
                )
            except NoNodeError:
                # gone: watch for it to be made again (a node made meanwhile is read at once)
                made = yield from read_sent_steps(NodeExists(self.path, self._on_event), deadline)
                if made is None:
                    return
                continue
            self.take(bytes(data or b""), stat.version, stat.mzxid, tell)
            return

    def take(self, value: bytes, version: int, zxid: int, tell: bool = False) -> None:
        """The node held ``value`` at ``version`` and ``zxid``: the current value unless a newer
        one was had; with ``tell``, told once if no value this new was told before."""
        with self._guard:
            if zxid > self.current.zxid:
                self.current = VersionedValue(version, value, zxid)
            if not tell:
                if self._told == UNREAD:
                    self._told = zxid  # the value started with: not news
                return
            if zxid <= self._told or not self.active:
                return
            self._told = self.current.zxid
            self.on_change(self.current)

    @runs_inline
    def _on_event(self, event: WatchedEvent) -> None:
        if self.active and event.type != EventType.NONE:
            self._read_later()

    def _on_connection(self, state: str) -> None:
        if not self.active:
            return
        self.on_state(state)
        if state == KazooState.CONNECTED:
            self._read_later()

    def _read_later(self) -> None:
        """Read again in the background (off kazoo's connection thread), telling news."""
        self._runner.post_request(self._read_in_background)

    def _read_in_background(self) -> None:
        self._runner.start(self._background_read_steps())

    def _background_read_steps(self) -> Steps[None]:
        try:
            yield from self._read_steps(tell=True)
        except Exception as exc:
            # the client is stopped, or away longer than its session: its next change reads
            log.debug("SharedValue %s not read again: %r", self.path, exc)

    # -- writing -------------------------------------------------------------------------------

    def set_steps(self, value: bytes) -> Steps[None]:
        """Curator's ``setValue``: write ``value`` whatever the node holds."""
        self._check_started()
        check_data(value, "value")
        stat = yield from unconditional_write_steps(
            self.path, bytes(value), None, False, self._patience()
        )
        self.take(bytes(value), stat.version, stat.mzxid)

    def try_set_steps(self, previous: VersionedValue[bytes], value: bytes) -> Steps[bool]:
        """Curator's ``trySetValue(previous, new)``: False at once unless ``previous`` is the
        current value (same zxid and bytes); :class:`IllegalTrySetVersionError` for a version of
        -1; then a write at ``previous.version``: True when it took, False when the node had
        moved on (the node is read again). :class:`UnknownOutcomeError` when its answer was lost
        and what it did cannot be known."""
        self._check_started()
        check_data(value, "value")
        if not isinstance(previous, VersionedValue):
            raise TypeError(f"previous must be a VersionedValue, not {previous!r}")
        current = self.current
        if previous.zxid != current.zxid or previous.value != current.value:
            return False
        if previous.version == -1:
            raise IllegalTrySetVersionError(self.path)
        written = yield from conditional_write_steps(
            self.path, bytes(value), previous.version, None, self._patience()
        )
        if settled(written, lambda: UnknownOutcomeError(self.path, "try_set")):
            stat = written[1]
            self.take(bytes(value), stat.version, stat.mzxid)
            return True
        yield from self._read_steps(tell=False)
        return False

    def _check_started(self) -> None:
        if not self.active:
            raise RuntimeError(f"not started: {self.path}")


def _ignore(*_: Any) -> None:
    """No news wanted yet."""


__all__ = ["UNREAD", "SharedValueSteps", "VersionedValue"]
