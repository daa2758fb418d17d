"""A discovery's registrations, written once as steps: Curator's ``registerService``,
``updateService``, ``unregisterService`` and its re-registration after every reconnect, on the
node rules of :mod:`pycurator._protocol.registration`.

Each instance registered is a
:class:`~pycurator._recipes.registration_nodes.Registration`: what its node should hold (the
latest instance, or nothing once unregistered), numbered wish by wish, and what we know we
made. One sync at a time works on a registration's node, whoever finds it idle: the caller
of register, update or unregister, on its own runner, or the registrar's keeper in the
background; and a sync always writes the latest wish. So an unregister never races a
re-register (CURATOR-164), an outdated instance is never written back (CURATOR-146/181), an
unregister asked twice, or met by a connection loss, is done once (CURATOR-617), and a wish
that waited too long for the connection is written once it is back, by the keeper.

After every reconnect the keeper checks each node against what it should hold and makes it
so (:mod:`pycurator._recipes.registration_nodes`): a node of an ended session is made again,
one that is still ours is left alone (Curator deletes and makes it again at every reconnect).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import ConnectionClosedError, KazooException
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.discovery import ServiceInstance
from .._protocol.errors import ServiceNotRegisteredError
from .._protocol.registration import instance_keys, node_path
from .._protocol.steps import IsConnected, NewSignal, SessionId, Steps, WaitSignal
from .._protocol.transport import Signal, Transport, runs_inline
from .._protocol.waits import DELETE_WAIT, RETRYABLE, connected_steps
from .registration_nodes import Keeping, Key, Registration, apply_steps, remove_steps

log = logging.getLogger("pycurator")


class Registrar:
    """A discovery's registrations under ``base_path``, kept in step with the tree through
    ``transport``: each one synced by its caller, or in the background by the keeper (a run of
    steps on kazoo's callbacks, started when there is work and ending when there is none), which
    a reconnect wakes, and so does a node of ours that another deletes or changes (a watch on
    each). ``adopt``: how data another wrote to a node is read as its instance (Curator's
    ``watchInstances``); None leaves it until the next reconnect writes ours back."""

    def __init__(
        self,
        transport: Transport,
        base_path: str,
        adopt: Callable[[bytes], ServiceInstance | None] | None = None,
    ) -> None:
        self.transport = transport
        self.base_path = base_path
        self._adopt = adopt
        self._lock = transport.lock_object()
        self._entries: dict[Key, Registration] = {}
        self._dirty: dict[Key, Registration] = {}  # for the keeper, in order
        self._keeping = False  # the keeper runs
        self._listening = False
        self._closed = False

    # -- what is registered ----------------------------------------------------------------------

    def registered(self) -> list[ServiceInstance]:
        """The instances registered now (their latest wish), in the order first registered."""
        with self._lock:
            return [e.want for e in self._entries.values() if e.want is not None]

    def node_of(self, name: str, instance_id: str) -> str | None:
        """The path of the node made for the instance, as the server named it, or None."""
        with self._lock:
            entry = self._entries.get((name, instance_id))
        record = entry.record if entry is not None else None
        return record.path if record is not None else None

    # -- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Follow the connection: after each reconnect, every node is checked."""
        with self._lock:
            if self._listening:
                return
            self._listening = True
        self.transport.listen(self._on_state)

    def _on_state(self, state: str) -> None:  # kazoo's connection thread: note, never send
        if state != KazooState.CONNECTED:
            return
        with self._lock:
            for key, entry in self._entries.items():
                entry.check = True
                self._dirty[key] = entry
        self.transport.post_request(self.kick)

    @runs_inline
    def _on_node_event(self, event: WatchedEvent) -> None:
        """A node of ours was deleted or changed (by us, or by another): read it again, unless
        it is one being unregistered. It is known by its path (``base/name/id``, or a
        sequential one's ``id`` and ten digits), so an event that comes before its create's
        answer is not missed. Only notes, and queues the keeper's start (runs inline)."""
        if event.type == EventType.NONE or event.path is None:
            return
        keys = instance_keys(self.base_path, event.path)
        looked = False
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is not None and entry.want is not None:
                    entry.look = looked = True
                    self._dirty[key] = entry
        if looked:
            self.transport.post_request(self.kick)

    def _stop_listening(self) -> None:
        """Once closed and every node is gone: nothing more to follow (under the lock)."""
        if self._closed and not self._entries and self._listening:
            self._listening = False
            self.transport.unlisten(self._on_state)

    # -- wishes ----------------------------------------------------------------------------------

    def _wish(self, entry: Registration, want: ServiceInstance | None, data: bytes) -> int:
        """Make ``want`` the latest wish of ``entry`` (under the lock); its number."""
        entry.want, entry.data = want, data
        entry.wanted += 1
        return entry.wanted

    def register_steps(
        self, instance: ServiceInstance, data: bytes, deadline: Deadline
    ) -> Steps[None]:
        """Register ``instance``, its node holding ``data``, or write them again if it is
        registered (its node checked first); the server's error no retry fixes is raised (the
        instance is then not registered, unless it was). DeadlineExpired when the deadline
        passes first: the instance stays registered, and is written once the connection is
        back."""
        key = (instance.name, instance.id)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                path = node_path(self.base_path, *key)
                entry = self._entries[key] = Registration(key, path)
            entry.check = entry.record is not None
            number = self._wish(entry, instance, data)
        yield from self._settled_steps(entry, number, deadline)

    def update_steps(
        self, instance: ServiceInstance, data: bytes, deadline: Deadline
    ) -> Steps[None]:
        """Write ``instance`` (``data``) to its node: as :meth:`register_steps`, but
        :class:`ServiceNotRegisteredError` unless it is registered."""
        with self._lock:
            entry = self._entries.get((instance.name, instance.id))
            if entry is None or entry.want is None:
                raise ServiceNotRegisteredError(instance.name, instance.id)
            # what we wrote last: the node is read first, not trusted to hold it still (another
            # client's write may not be heard of yet), as Curator's update always writes
            record = entry.record
            entry.check = entry.check or (record is not None and record.data == data)
            number = self._wish(entry, instance, data)
        yield from self._settled_steps(entry, number, deadline)

    def unregister_steps(self, name: str, instance_id: str) -> Steps[None]:
        """Unregister the instance and delete its node: waits at most
        :data:`~pycurator._protocol.waits.DELETE_WAIT` for the server while connected, and not
        at all while not; a delete not done by then goes on in the background. Nothing for an
        instance not registered."""
        with self._lock:
            entry = self._entries.get((name, instance_id))
            if entry is None or entry.want is None:
                return
            number = self._wish(entry, None, b"")
            # the usual case, a node we made and nobody else works on: its one delete
            quick = entry.record is not None and not entry.busy and entry.pending is None
            quick = quick and not entry.check and not entry.look
            if quick:
                entry.busy = True
        deadline = Deadline(DELETE_WAIT)
        if quick and (yield from self._deleted_steps(entry, number, deadline)):
            return
        yield from self._removed_steps([(entry, number)], deadline)

    def _deleted_steps(self, entry: Registration, number: int, deadline: Deadline) -> Steps[bool]:
        """Wish ``number`` of ``entry`` (which we hold, with its record), to have no node,
        made true at once by deleting the node we made while connected in its session:
        whether it was. Else (not connected, another session, an error) it is left to the
        general sync (:meth:`_removed_steps`), which looks at the node first."""
        done = False
        try:
            session = yield SessionId()
            record = entry.record
            if record is not None and (yield IsConnected()) and not record.outlived(session):
                yield from remove_steps(entry, session, deadline)
                done = True
        except Exception:
            pass
        finally:
            if not done:
                with self._lock:
                    entry.check = True
            else:
                self._settle(entry, number, None)
            self._release(entry)
        return done

    def close_steps(self) -> Steps[None]:
        """Unregister every instance (as :meth:`unregister_steps`, within one
        :data:`~pycurator._protocol.waits.DELETE_WAIT` in all); no more registrations."""
        with self._lock:
            self._closed = True
            wishes = [(e, self._wish(e, None, b"")) for e in self._entries.values()]
            self._stop_listening()
        yield from self._removed_steps(wishes)

    def _removed_steps(
        self, wishes: list[tuple[Registration, int]], deadline: Deadline | None = None
    ) -> Steps[None]:
        if not wishes:
            return
        if not (yield IsConnected()):
            self._defer(wishes)
            return
        if deadline is None:
            deadline = Deadline(DELETE_WAIT)
        for index, (entry, number) in enumerate(wishes):
            try:
                yield from self._settled_steps(entry, number, deadline)
            except (DeadlineExpired, *RETRYABLE):
                self._defer(wishes[index:])
                return
            except KazooException:
                log.exception("could not unregister %s/%s", *entry.key)
            except BaseException:  # interrupted (a cancelled task): the rest still goes
                self._defer(wishes[index:])
                raise

    def _defer(self, wishes: list[tuple[Registration, int]]) -> None:
        """Leave the deletes of ``wishes`` to the keeper."""
        with self._lock:
            for entry, _ in wishes:
                self._dirty[entry.key] = entry
        log.info("unregister deferred until the connection is back: %s", [e.key for e, _ in wishes])
        self.kick()

    # -- one sync at a time ----------------------------------------------------------------------

    def _settled_steps(self, entry: Registration, number: int, deadline: Deadline) -> Steps[None]:
        """Until wish ``number`` of ``entry`` is settled: synced by us when nobody syncs it,
        else waited for. The error that settled it is raised."""
        signal: Signal | None = None
        while True:
            with self._lock:
                settled = entry.done >= number
                mine = not settled and not entry.busy
                if mine:
                    entry.busy = True
                elif not settled and signal is not None:
                    entry.waiters.append(signal)
            if settled:
                failure = entry.failure
                if failure is not None and failure[0] >= number:
                    raise failure[1]
                return
            if mine:
                try:
                    yield from self._sync_steps(entry, deadline)
                finally:
                    self._release(entry)
            elif signal is None:
                signal = yield NewSignal()
            elif (yield WaitSignal(signal, deadline.remaining())):
                signal.clear()
            else:
                raise DeadlineExpired()

    def _release(self, entry: Registration) -> None:
        with self._lock:
            entry.busy = False
            waiters, entry.waiters = entry.waiters, []
            dirty = entry.dirty and entry.key in self._entries
            if dirty:
                self._dirty[entry.key] = entry
        for waiter in waiters:
            waiter.set()
        if dirty:
            self.kick()

    def _sync_steps(self, entry: Registration, deadline: Deadline) -> Steps[None]:
        """Make the node of ``entry`` (which we hold) hold its latest wish, until no newer one
        comes: a connection loss waited out within ``deadline``, the server's other errors
        settling the wish they met."""
        while True:
            with self._lock:
                if not entry.dirty:
                    return
                number, want, data = entry.wanted, entry.want, entry.data
                check, look = entry.check, entry.look
                # only another's touch to answer: a node another made since is left to it
                take_over = check or not look or entry.done < number
                entry.check = entry.look = False
            keeping = Keeping(self.base_path, self._on_node_event, self._adopt)
            try:
                adopted = yield from apply_steps(
                    keeping, entry, want, data, check, look, deadline, take_over
                )
            except RETRYABLE:
                self._recheck(entry)
                yield from connected_steps(deadline)
                continue
            except KazooException as exc:
                if isinstance(exc, ConnectionClosedError):
                    self._recheck(entry)
                    raise
                self._settle(entry, number, exc.with_traceback(None))
                continue
            except BaseException:  # the deadline, or interrupted: what was sent may land
                self._recheck(entry)
                raise
            if adopted is not None:
                with self._lock:
                    if entry.wanted == number:  # what the node holds is the wish now
                        entry.want, entry.data = adopted
            self._settle(entry, number, None)

    def _recheck(self, entry: Registration) -> None:
        """What we know of the node of ``entry`` may be out of date: look before trusting it."""
        with self._lock:
            entry.check = True

    def _settle(self, entry: Registration, number: int, error: BaseException | None) -> None:
        """Wish ``number`` is written (or failed with ``error``): a registration whose node is
        gone and that wants none is forgotten; one whose wish failed with no newer one wants
        what its node holds (nothing: forgotten)."""
        with self._lock:
            entry.done = max(entry.done, number)
            if error is not None:
                entry.failure = (number, error)
                if entry.wanted == number:
                    record = entry.record
                    entry.want = record.instance if record is not None else None
                    entry.data = record.data if record is not None else b""
            gone = entry.record is None and entry.pending is None
            if gone and entry.want is None and not entry.dirty:
                if self._entries.get(entry.key) is entry:
                    del self._entries[entry.key]
                self._dirty.pop(entry.key, None)
                self._stop_listening()

    # -- the keeper ------------------------------------------------------------------------------

    def kick(self) -> None:
        """Start the keeper unless it runs: it syncs every registration left dirty. While the
        client is not connected it waits for the CONNECTED that will kick it."""
        if not self.transport.connected():
            return
        with self._lock:
            if self._keeping or not self._dirty:
                return
            self._keeping = True
        self.transport.start(self._keeper_steps())

    def _keeper_steps(self) -> Steps[None]:
        while True:
            with self._lock:
                entry = self._next_dirty()
                if entry is None:
                    self._keeping = False
                    return
                entry.busy = True
            try:
                yield from self._sync_steps(entry, Deadline(None))
            except ConnectionClosedError:  # the client is stopped: its next CONNECTED kicks
                with self._lock:
                    self._keeping = False
                return
            except Exception:
                log.exception("could not keep %s/%s registered", *entry.key)
            finally:
                with self._lock:
                    entry.busy = False
                    waiters, entry.waiters = entry.waiters, []
                for waiter in waiters:
                    waiter.set()

    def _next_dirty(self) -> Registration | None:
        """The next registration for the keeper (under the lock): one a caller syncs is left
        to that caller, who hands it back if it gives up."""
        while self._dirty:
            key = next(iter(self._dirty))
            entry = self._dirty.pop(key)
            if not entry.busy and entry.dirty and self._entries.get(key) is entry:
                return entry
        return None


__all__ = ["Registrar"]
