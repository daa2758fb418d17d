"""A cache's protocol, Curator's ``CuratorCacheImpl`` and its ``PersistentWatcher``, written once
as steps (:mod:`pycurator._protocol.steps`): :class:`Mirror`.

One watch that stays (``addWatch``: recursive, or on the node alone for a single node cache)
says which nodes changed; the cache reads each again, and the tree
(:class:`~pycurator._protocol.cache.CacheTree`) turns each answer into the events it tells.
Reads go out in batches, each sent whole before any answer is read and applied in the order
sent: the order the server answered them, so that each node's states are told in the server's
order and none twice (a watch's events come on one thread, the answers on another: only the
answers decide).

The first load, and a rebuild after every reconnect (a watch that stays hears nothing while the
client is away), read the root and every node held again, and list the children of the nodes
whose children changed; nodes found gone are told deleted, deepest first. Reads lost with the
connection are read again by the next rebuild, and listings lost with it are made again.

Where the server has no watch that stays (ZooKeeper before 3.6), or when asked, the cache
follows the tree with one-shot watches, as Curator's bridge builder falls back to its
``TreeCache``: a data watch on every node and a child watch on every node of a recursive cache
(an exists watch on a root that is missing), set again by each read they start. It tells the
same events.

The steps run on either runner: kazoo's callbacks for the threaded cache (a cache costs a watch,
never a thread), or a task on the event loop for :mod:`pycurator.aio`. They tell the cache what
they read through callbacks called from the steps (keep them short, never block).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    UnimplementedError,
)
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from .._protocol.cache import CacheEvent, CacheTree, ChildData, decompress, deletions_first
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.errors import CompressedDataError
from .._protocol.requests import (
    AddWatch,
    AddWatchMode,
    GetData,
    ListChildren,
    NodeExists,
    RemoveWatches,
)
from .._protocol.steps import (
    Await,
    AwaitAll,
    CheckOpen,
    ForgetWatch,
    GetTransport,
    IsConnected,
    Listen,
    NewSignal,
    Outcome,
    Send,
    SessionId,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.transport import Signal, Transport, ignore, runs_inline, set_here
from .._protocol.waits import RETRYABLE, sent_steps

log = logging.getLogger("pycurator")

#: The longest the watch's ``addWatch`` waits for the server before it is sent again.
STEP_WAIT = 10.0
#: An answer is awaited as long as kazoo takes to give it (a lost connection ends it).
_NO_DEADLINE = Deadline(None)
#: Seconds before a step that failed for want of a connection is tried again.
RETRY_DELAY = 0.1
#: Seconds between tries of a step that failed with another error.
ERROR_RETRY_DELAY = 1.0

#: Follow every cache with one-shot watches, as on a server without watches that stay (Curator's
#: ``curator-cache-bridge-force-tree-cache``): read when a cache starts.
ONE_SHOT_ONLY = False
#: The kinds of a watch's events that say a node may have changed.
_NODE_EVENTS = frozenset({EventType.CREATED, EventType.CHANGED, EventType.DELETED})


class Mirror:
    """The protocol that keeps ``tree`` equal to the server's subtree at its root.

    ``tell(events)`` hears the events of each batch of reads, in order; ``initialized()`` the
    end of the first complete load; ``on_error(error)`` an error that keeps a node from being
    read (``NoAuthError`` on a node, ``CompressedDataError`` for data that does not unzip,
    with ``compressed``) or a step from succeeding (it is tried again). With ``watchers``, the
    tree is followed with one-shot watches from the start; otherwise only on a server without
    watches that stay (:attr:`watchers` turns True)."""

    def __init__(
        self,
        tree: CacheTree,
        *,
        compressed: bool,
        tell: Callable[[list[CacheEvent]], None],
        initialized: Callable[[], None],
        on_error: Callable[[Exception], None],
        watchers: bool = False,
    ) -> None:
        self.tree = tree
        self._compressed = compressed
        self._tell = tell
        self._initialized = initialized
        self._on_error = on_error
        #: whether the tree is followed with one-shot watches (no watch that stays)
        self.watchers = watchers or ONE_SHOT_ONLY
        #: whether the first load has been told (``initialized()`` called)
        self.loaded = False
        #: the error that keeps the last step from succeeding, if any
        self.error: Exception | None = None
        self._events: deque[tuple[str, str]] = deque()  # (kind, path), as the watch heard
        self._wake: Signal | None = None
        self._gathered: Signal | None = None
        self._via: Transport | None = None
        self._watched: int | None = None  # the session whose watch that stays is set
        self._stale = True  # the whole tree must be read again
        self._unread: dict[str, None] = {}  # reads lost with the connection
        self._unlisted: dict[str, None] = {}  # listings lost with the connection
        self._mode = AddWatchMode.PERSISTENT
        if tree.recursive:
            self._mode = AddWatchMode.PERSISTENT_RECURSIVE

    def steps(self) -> Steps[None]:
        """Follow the tree until the client is stopped, or until the runner cancels the steps
        (the cache closes): the watches are removed then, their answers not waited for."""
        self._wake = wake = yield NewSignal()
        self._gathered = yield NewSignal()
        self._via = yield GetTransport()
        yield Listen(self._on_state)
        try:
            yield from self._follow(wake)
        except GeneratorExit:  # dropped unfinished: no more steps can be made here
            self._via.start(self._unwatch_steps())
            raise
        except BaseException:  # cancelled (the cache closes), or a bug
            yield from self._unwatch_steps()
            raise
        finally:
            self._detach()
        yield Unlisten(self._on_state)  # the client is stopped: its watches are gone with it

    def _detach(self) -> None:
        """Once the steps have ended, tell the cache nothing more: its callbacks are dropped,
        so that a cache that keeps its protocol is not in a cycle with it, which only the
        garbage collector would free."""
        self._tell = self._initialized = self._on_error = ignore

    def _follow(self, wake: Signal) -> Steps[None]:
        while True:
            wake.clear()
            try:
                yield CheckOpen()
            except ConnectionClosedError:
                return
            if not (yield IsConnected()):
                yield WaitSignal(wake, None)
                continue
            try:
                session = yield SessionId()
                if self._watched != session:
                    yield from self._watch(session)
                if self._stale:
                    yield from self._rebuild()
                elif self._events:
                    yield from self._catch_up()
                else:
                    yield WaitSignal(wake, None)
                    continue
                self.error = None
            except ConnectionClosedError:
                return
            except (*RETRYABLE, DeadlineExpired):
                self._stale = True
                yield WaitSignal(wake, RETRY_DELAY)
            except Exception as exc:
                level = logging.DEBUG if type(exc) is type(self.error) else logging.ERROR
                log.log(level, "cache of %s failed; trying again", self.tree.root, exc_info=True)
                self.error = exc
                self._stale = True
                self._on_error(exc)
                yield WaitSignal(wake, ERROR_RETRY_DELAY)

    # -- the watch ---------------------------------------------------------------------------

    def _watch(self, session: int | None) -> Steps[None]:
        """Set the watch that stays for this session (it is set again by the client after a
        reconnect within it); with one-shot watches, the rebuild sets them."""
        if not self.watchers:
            request = AddWatch(self.tree.root, self._on_event, self._mode)
            try:
                yield from sent_steps(request, Deadline(STEP_WAIT))
            except UnimplementedError:
                log.info(
                    "the server has no watches that stay: the cache of %s follows one-shot watches",
                    self.tree.root,
                )
                self.watchers = True
        self._watched = session
        self._stale = True

    def _unwatch_steps(self) -> Steps[None]:
        """Remove the watches (the answers are not waited for) and stop listening."""
        yield Unlisten(self._on_state)
        if self._watched is None:
            return
        self._watched = None
        try:
            if not self.watchers:
                watcher_type = self._mode.watcher_type
                yield Send(RemoveWatches(self.tree.root, watcher_type, self._on_event))
                return
            yield ForgetWatch(self.tree.root, self._on_event)
            for path in self.tree.nodes:
                yield ForgetWatch(path, self._on_event)
                if self.tree.recursive:
                    yield ForgetWatch(path, self._on_event, children=True)
        except KazooException:
            pass  # the client is stopped: its watches are gone with it

    # -- reads -------------------------------------------------------------------------------

    def _rebuild(self) -> Steps[None]:
        """Read the whole tree again: the root, every node held and every read lost; list the
        children that changed (every node's, with one-shot watches, to set them again)."""
        self._stale = False
        reads = dict.fromkeys(self.tree.rebuild_paths())
        reads.update(self._unread)
        lists = dict(self._unlisted)
        self._unread, self._unlisted = {}, {}
        yield from self._read(list(reads), list(lists), rebuild=True)
        if not self.loaded:
            self.loaded = True
            self._initialized()

    def _catch_up(self) -> Steps[None]:
        """Read again each node the watch's events name (once each), and list those whose
        children changed (with one-shot watches)."""
        events = self._events
        reads: dict[str, None] = {}
        lists: dict[str, None] = {}
        covers = self.tree.covers
        while events:  # the watch appends meanwhile, from its own thread
            kind, path = events.popleft()
            if not covers(path):
                continue
            if kind in _NODE_EVENTS:
                reads[path] = None
            elif kind == EventType.CHILD and self.watchers and self.tree.recursive:
                lists[path] = None
        yield from self._read(list(reads), list(lists), rebuild=False)

    def _read(self, reads: list[str], lists: list[str], *, rebuild: bool) -> Steps[None]:
        """Read ``reads`` and list ``lists``, then the children found that the tree does not
        hold, level by level, each level's requests sent together; tell the events of each."""
        gathered = self._gathered
        assert gathered is not None
        tree = self.tree
        watchers = self.watchers
        watch = self._on_event if watchers else None
        root_missing = False
        while reads or lists:
            sent: list[Any] = []
            for path in reads:
                sent.append((yield Send(GetData(path, watch))))
            for path in lists:
                sent.append((yield Send(ListChildren(path, watch))))
            if len(sent) == 1:  # the answer resumes the steps on the thread that brings it
                outcomes = [(yield from _outcome_of(sent[0]))]
            else:
                gathered.clear()
                outcomes = yield AwaitAll(sent, gathered, None)
            events: list[CacheEvent] = []
            next_lists: list[str] = []
            lost = False
            for path, outcome in zip(reads, outcomes, strict=False):
                value, error = outcome if outcome is not None else (None, ConnectionLoss())
                if error is None:
                    assert value is not None
                    before = tree.nodes.get(path)
                    after = self._apply(path, value, events)
                    if self._must_list(before, after, rebuild):
                        next_lists.append(path)
                elif isinstance(error, NoNodeError):
                    events += tree.gone(path)
                    if watchers and path == tree.root:
                        root_missing = True
                elif isinstance(error, RETRYABLE):
                    self._unread[path] = None
                    lost = True
                else:
                    self._failed(path, error)
            next_reads: list[str] = []
            for path, outcome in zip(lists, outcomes[len(reads) :], strict=True):
                value, error = outcome if outcome is not None else (None, ConnectionLoss())
                if error is None:
                    assert value is not None
                    next_reads += tree.unknown(path, value)
                elif isinstance(error, RETRYABLE):
                    self._unlisted[path] = None
                    lost = True
                elif not isinstance(error, NoNodeError):  # gone: its deletion is read too
                    self._failed(path, error)
            if events:
                self._tell(deletions_first(events) if rebuild else events)
            if lost:
                self._unlisted.update(dict.fromkeys(next_lists))
                self._unread.update(dict.fromkeys(next_reads))
                self._stale = True
                raise ConnectionLoss("the connection was lost while the cache read the tree")
            reads, lists = next_reads, next_lists
        if root_missing:
            yield from self._watch_root()

    def _apply(self, path: str, answer: tuple[bytes | None, Any], events: list[CacheEvent]) -> Any:
        """A node read: its events added to ``events``; the node as read (data that does not
        unzip is told as an error, and the node left as held: its children are followed all
        the same)."""
        data, stat = answer
        if self._compressed:
            try:
                data = decompress(path, data)
            except CompressedDataError as exc:
                log.error("%s", exc)
                self._on_error(exc)
                return ChildData(path, stat, None)
        events += self.tree.read(path, stat, data)
        return self.tree.nodes[path]

    def _must_list(self, before: ChildData | None, after: ChildData, rebuild: bool) -> bool:
        """Whether the children of a node just read are listed: those it may hold that the
        tree does not; with one-shot watches, every new node's (and on a rebuild every node's),
        to set its child watch."""
        if not self.tree.recursive:
            return False
        if self.watchers and (rebuild or before is None or not before.same_node(after)):
            return True
        return self.tree.must_list(before, after)

    def _watch_root(self) -> Steps[None]:
        """With one-shot watches, a missing root is watched until it is made (read at once if
        it was made meanwhile)."""
        stat = yield from sent_steps(NodeExists(self.tree.root, self._on_event))
        if stat is not None:
            self._events.append((EventType.CREATED, self.tree.root))

    def _failed(self, path: str, error: BaseException) -> None:
        """A read or listing of ``path`` refused for good (``NoAuthError``...): told, skipped."""
        log.error("cache of %s cannot read %s: %r", self.tree.root, path, error)
        if isinstance(error, Exception):
            self._on_error(error)

    # -- news from kazoo's threads: note it and wake the steps -------------------------------

    @runs_inline
    def _on_event(self, event: WatchedEvent) -> None:
        if event.path is None:
            return  # the connection's news, heard as the client's states
        self._events.append((event.type, event.path))
        # the steps read on this thread (kazoo's callback worker, or the fast handler's
        # connection thread, which may send), as an election's watch wakes its steps
        wake = self._wake
        if wake is not None:
            set_here(wake)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._watched = None  # the client's watches end with its session
        elif state == KazooState.CONNECTED:
            self._stale = True  # nothing was told while away
        wake = self._wake
        if wake is not None:
            wake.set()


def _outcome_of(answer: Any) -> Steps[Outcome]:
    """The :data:`~pycurator._protocol.steps.Outcome` of one answer, awaited."""
    try:
        return (yield Await(answer, _NO_DEADLINE)), None
    except KazooException as exc:
        # its traceback would hold this frame, which holds the error: a cycle only the
        # garbage collector frees, made for every node read gone
        return None, exc.with_traceback(None)


__all__ = ["ERROR_RETRY_DELAY", "ONE_SHOT_ONLY", "RETRY_DELAY", "STEP_WAIT", "Mirror"]
