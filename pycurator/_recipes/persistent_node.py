"""A node kept in ZooKeeper from start to close, Curator's ``PersistentNode``, written once as
steps (:mod:`pycurator._protocol.steps`).

The node is created in the background (its missing parents as containers, as Curator's
``creatingParentContainersIfNeeded``), under a protected name ``_c_<uuid>-<name>`` when asked
(one uuid for the keeper's whole life), then watched with ``exists``. Deleted by anyone, it is
made again; after every reconnect (and so after an expiry) it is made again, or, found there,
adopted and given our data, as Curator does on RECONNECTED. It is always made again under the
path it was first given (a sequential node at the same sequence number, in the mode without a
sequence, as Curator recreates one), with the latest data (:meth:`Keeper.set_data`). ``close``
deletes it (Curator's guaranteed delete), and undoes a create still on its way.

What Curator got wrong and these steps do not:

- CURATOR-154: data set while disconnected, or before a recreate, is the data the node gets.
- CURATOR-190: the protection prefix is never added to a protected name again.
- CURATOR-297: a node made by a create answered after ``close`` is deleted.
- CURATOR-483: a sequential protected node is made again at its own name, never as a new one.
- CURATOR-498: a node under our protected name found after a lost answer, or met as existing,
  is ours only if this session made it (ephemeral modes); an earlier session's is deleted.

A lost connection is ridden through. An error no retry fixes
(:data:`~pycurator._protocol.errors.UNFIXABLE`: ``NoAuthError``, a server without TTL nodes...)
is logged once and kept in :attr:`Keeper.failed` until the next success; the steps try again on
the next news (a state change, a watch, new data), not on a timer, but for a parent that is
ephemeral (``NoChildrenForEphemeralsError``): it goes with its session, which no news tells,
so that one is tried again a second later (Curator tries again at once), as any other error.

The steps run on either runner: kazoo's callbacks for the threaded recipe (so a kept node costs a
watch, never a thread), or a task on the event loop for :mod:`pycurator.aio`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from .._protocol import wire
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.errors import UNFIXABLE
from .._protocol.parents import parents_steps
from .._protocol.requests import (
    CreateMode,
    CreateNode,
    NodeExists,
    SetData,
)
from .._protocol.steps import (
    Await,
    CheckOpen,
    Claims,
    ForgetWatch,
    GetTransport,
    IsConnected,
    Listen,
    NewSignal,
    OnAnswer,
    Outcome,
    OweDelete,
    Send,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.transport import Signal, Transport
from .._protocol.waits import RETRYABLE, delete_node_steps, sent_steps, watch_sent_steps
from .election import ERROR_RETRY_DELAY, RETRY_DELAY, STEP_WAIT
from .found_nodes import adoptable_steps, lost_node_steps, orphans_steps, parent_of
from .ttl_touch import Touch

log = logging.getLogger("pycurator")


class Keeper:
    """One kept node, from its first create to its delete.

    ``path`` is the node's path as given (its last name protected with ``protected``), made in
    ``mode`` (``ttl`` seconds for a TTL mode) with ``data`` and ``acl``. ``on_created()`` hears
    of the first create (or adoption), ``on_news()`` of every change a waiter may care for (an
    error, the end); both are called from the steps and must only wake. With
    ``delete_on_close`` (Curator's ``PersistentNode``; not its ``PersistentTtlNode``), the node
    is deleted once the steps end. With ``touch`` (its ``PersistentTtlNode``), the node's child
    is touched as it says (:mod:`pycurator._recipes.ttl_touch`).
    """

    def __init__(
        self,
        path: str,
        mode: CreateMode,
        data: bytes,
        *,
        protected: bool = False,
        acl: Sequence[Any] | None = None,
        ttl: float | None = None,
        delete_on_close: bool = True,
        on_created: Callable[[], None] | None = None,
        on_news: Callable[[], None] | None = None,
        touch: Touch | None = None,
    ) -> None:
        self.base_path = path
        self.touch = touch
        self.mode = mode
        self.ttl = ttl
        self.acl = list(acl) if acl is not None else None
        self.protected_id = wire.new_protected_id() if protected else None
        self.delete_on_close = delete_on_close
        self._on_created = on_created
        self._on_news = on_news
        #: The data the node gets (the latest given).
        self.data = bytes(data)
        #: The node's path as made (its protected name and sequence number), once made.
        self.actual_path: str | None = None
        #: Whether the node was created (or adopted) once.
        self.created = False
        #: The error that keeps the last step from succeeding, if any.
        self.error: Exception | None = None
        #: The error no retry fixes that the last step met, until the next is tried.
        self.failed: Exception | None = None
        #: The steps have ended.
        self.ended = False
        self._stop = False
        self._wake: Signal | None = None
        self._recreate = False  # make the node again (deleted, or after a reconnect)
        self._write = False  # write the data to the node
        self._written: bytes | None = None  # the data the node was last made or set with
        self._watched: str | None = None  # the path our exists watch is set on
        self._lost_create = False  # a create's answer was lost: it may have made the node
        #: a create on its way: its answer, its path and its data
        self._creating: tuple[Any, str, bytes] | None = None
        self._reported: Exception | None = None  # the error no retry fixes, last logged

    # -- what the owner does (from any thread) -------------------------------------------------

    def set_data(self, data: bytes) -> None:
        """Give the node ``data`` (written in the background, and kept for every recreate)."""
        self.data = bytes(data)
        self._write = True
        self.failed = None  # tried again: a waiter hears how it ends
        self._wake_up()

    def stop(self) -> None:
        """Ask the steps to end; the owner then cancels them (their clean-up deletes the
        node)."""
        self._stop = True

    # -- the steps -----------------------------------------------------------------------------

    def steps(self) -> Steps[None]:
        """Keep the node until stopped (then cancelled) or the client is stopped (its session,
        and an ephemeral node, end with it: nothing is deleted then)."""
        self._wake = wake = yield NewSignal()
        transport: Transport = yield GetTransport()
        yield Listen(self._on_state)
        try:
            client_stopped = yield from self._keep(wake)
        except GeneratorExit:  # dropped unfinished: no more steps can be made here
            transport.start(self._leave(later=True))
            raise
        except BaseException:  # cancelled (close), or a bug: the clean-up runs first
            yield from self._leave()
            self._ended()
            raise
        yield from self._leave(deleting=not client_stopped)
        self._ended()

    def _ended(self) -> None:
        self.ended = True
        if self._on_news is not None:
            self._on_news()
        self._on_created = self._on_news = None  # no cycle with an owner that keeps us

    def _keep(self, wake: Signal) -> Steps[bool]:
        """The steps' loop; True once the client is stopped, False once stopped ourselves."""
        while not self._stop:
            wake.clear()
            try:
                yield CheckOpen()
            except ConnectionClosedError:
                return True
            if not (yield IsConnected()):
                yield WaitSignal(wake, None)  # the next CONNECTED wakes us
                continue
            try:
                yield from self._step(wake, Deadline(STEP_WAIT))
            except ConnectionClosedError:
                return True
            except (*RETRYABLE, DeadlineExpired, NoNodeError):
                # NoNode: a parent container was reaped while we made its child; make it again
                yield WaitSignal(wake, RETRY_DELAY)
                continue
            except UNFIXABLE as exc:
                if type(exc) is not type(self._reported):  # logged once while it repeats
                    log.error("kept node %s: %r; tried again on the next news", self.base_path, exc)
                self.failed = self.error = self._reported = exc
                self._news()
                # an ephemeral parent goes with its session, and no news tells it
                again = ERROR_RETRY_DELAY if isinstance(exc, NoChildrenForEphemeralsError) else None
                yield WaitSignal(wake, again)
                self.failed = None  # tried again: a waiter hears how it ends
                continue
            except Exception as exc:
                level = logging.DEBUG if type(exc) is type(self.error) else logging.ERROR
                log.log(level, "kept node %s failed; trying again", self.base_path, exc_info=True)
                self.error = exc
                self._news()
                yield WaitSignal(wake, ERROR_RETRY_DELAY)
                continue
            if self.error is not None:
                self.error = self.failed = self._reported = None
                self._news()
            yield WaitSignal(wake, None if self.touch is None else self.touch.wait())
        return False

    def _step(self, wake: Signal, deadline: Deadline) -> Steps[None]:
        """Make the node if it is missing, write the data if asked, and watch it."""
        if self.actual_path is None or self._recreate:
            yield from self._create_steps(deadline)
            self._recreate = False  # (not before: a create that fails is tried again)
        path = self.actual_path
        assert path is not None
        if self._write or self._written is not self.data:
            self._write = False
            data = self.data
            try:
                yield from sent_steps(SetData(path, data), deadline)
            except NoNodeError:
                self._recreate = True  # made again, with the latest data
                wake.set()
                return
            except BaseException:
                self._write = True
                raise
            self._written = data
        self._made()
        if self.touch is not None and self.touch.wait() == 0:
            yield from self.touch.steps(path, deadline)
        if self._watched != path:
            self._watched = path  # before the answer: its event may come before we resume
            try:
                stat = yield from watch_sent_steps(NodeExists(path, self._on_watch), deadline)
            except BaseException:
                self._watched = None  # no watch set (one set late is dropped when it lands)
                raise
            if stat is None:
                self._recreate = True
                wake.set()

    def _create_steps(self, deadline: Deadline) -> Steps[None]:
        """Make the node (found again, adopted, or created), ``actual_path`` set."""
        path = self.actual_path
        if path is None and self._lost_create:
            path = yield from self._find_lost(deadline)
            if path is not None:
                self.actual_path = path
                self._lost_create = False
                self._written = None  # written again: the data may have changed meanwhile
                return
        first = path is None
        target = self._first_path() if path is None else path
        mode = self.mode if first else self.mode.unsequenced
        while True:
            creating = self._creating
            if creating is None:  # (else one still on its way: its answer first, never two)
                data = self.data
                ttl = self.ttl if mode.is_ttl else None
                answer = yield Send(CreateNode(target, data, self.acl, mode, ttl))
                self._creating = creating = (answer, target, data)
            answer, target, data = creating
            try:
                created, _ = yield Await(answer, deadline)
            except NoNodeError:
                self._creating = None
                yield from parents_steps(target, self.acl, deadline)
                continue
            except NodeExistsError:
                self._creating = None
                if not (yield from adoptable_steps(target, self._ours_by_name(), deadline)):
                    continue
                self.actual_path = target
                self._written = None  # Curator sets our data on a node it finds there
                return
            except RETRYABLE:
                self._creating = None
                self._lost_create = first
                raise
            except KazooException:
                self._creating = None  # answered: it made nothing
                raise
            except BaseException:
                raise  # still on its way: awaited again, or undone by the clean-up
            self._creating = None
            self._lost_create = False
            self.actual_path = wire.join_path(parent_of(target), wire.node_name(created))
            self._written = data
            if first and self._claimed():
                claims = yield Claims()
                claims[self.actual_path] = self
            return

    def _first_path(self) -> str:
        """The path of the first create: the path given, its name protected when asked."""
        if self.protected_id is None:
            return self.base_path
        name = wire.protected_prefix(self.protected_id) + wire.node_name(self.base_path)
        return wire.join_path(parent_of(self.base_path), name)

    def _ours_by_name(self) -> bool:
        """Whether a node under our name is ours only if this session made it: a protected
        ephemeral name (see :func:`~pycurator._recipes.found_nodes.adoptable_steps`)."""
        return self.protected_id is not None and self.mode.is_ephemeral

    def _claimed(self) -> bool:
        """Whether our node's name does not tell it is ours (an unprotected ephemeral
        sequential name): the client's claims then say which keeper made it."""
        return self.protected_id is None and self.mode is CreateMode.EPHEMERAL_SEQUENTIAL

    def _find_lost(self, deadline: Deadline) -> Steps[str | None]:
        """Our node from a first create whose answer was lost, if the server made it (see
        :func:`~pycurator._recipes.found_nodes.lost_node_steps`)."""
        claims = (yield Claims()) if self._claimed() else None
        if self.protected_id is None and claims is None:
            return None  # its name cannot tell it from another's
        return (
            yield from lost_node_steps(
                self.base_path, self.protected_id, self.mode, claims, self, deadline
            )
        )

    def _made(self) -> None:
        if not self.created:
            self.created = True
            if self._on_created is not None:
                self._on_created()

    # -- the end ---------------------------------------------------------------------------

    def _leave(self, later: bool = False, deleting: bool = True) -> Steps[None]:
        """Stop listening and watching; undo a create on its way and delete the node (with
        ``delete_on_close`` and ``deleting``), in the background with ``later``."""
        yield Unlisten(self._on_state)
        watched, self._watched = self._watched, None
        if watched is not None:
            yield ForgetWatch(watched, self._on_watch)
        creating, self._creating = self._creating, None
        path = self.actual_path
        if deleting:  # (once the client is stopped, the node's path stays told, as Curator's)
            self.actual_path = None
        if self._claimed() and path is not None:
            claims = yield Claims()
            claims.pop(path, None)
        if not (self.delete_on_close and deleting):
            return
        if creating is not None:
            transport: Transport = yield GetTransport()
            # the path alone: the answer keeps this callback, which must not keep the answer
            yield OnAnswer(creating[0], functools.partial(self._undo, transport, creating[1]))
        elif self._lost_create and self.protected_id is not None:
            transport = yield GetTransport()
            transport.start(self._orphans_steps())
        if path is None:
            return
        if later:
            yield OweDelete(path)
        else:
            yield from delete_node_steps(path)

    def _undo(self, transport: Transport, path: str, outcome: Outcome) -> None:
        """A create we stopped waiting for (the node closed meanwhile) has been answered:
        delete what it made, or found there (CURATOR-297)."""
        created, error = outcome
        if error is None:
            transport.owe_delete(wire.join_path(parent_of(path), wire.node_name(created[0])))
        elif isinstance(error, NodeExistsError):
            transport.owe_delete(path)
        elif isinstance(error, (ConnectionLoss, OperationTimeoutError)):
            if self.protected_id is not None:
                transport.start(self._orphans_steps())
            elif not self.mode.is_sequential:
                transport.owe_delete(path)

    def _orphans_steps(self) -> Steps[None]:
        """Delete, in the background, any node under our protected name a lost create made."""
        assert self.protected_id is not None
        yield from orphans_steps(self.base_path, self.protected_id)

    # -- news from kazoo's threads: note it and wake the steps -------------------------------

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self._recreate = True  # as Curator on RECONNECTED (and after an expiry)
            self.failed = None  # tried again: a waiter hears how it ends
        else:
            self._watched = None  # kazoo drops its one-shot watches with the connection
        self._wake_up()

    def _on_watch(self, event: WatchedEvent) -> None:
        if event.path is not None and event.path != self._watched:
            return  # a watch of a path we left
        self._watched = None  # fired (a NONE event: dropped with the connection)
        if event.type == EventType.DELETED:
            self._recreate = True
        self._wake_up()  # set again (once connected)

    def _wake_up(self) -> None:
        wake = self._wake
        if wake is not None:
            wake.set()

    def _news(self) -> None:
        if self._on_news is not None:
            self._on_news()


__all__ = ["Keeper"]
