"""The lock engine's nodes: create our node (protected, its listing pipelined behind it), find one
whose answer was lost, delete what a create that gave up may have made, list the lock path, and
delete our node; as steps (:mod:`pycurator._protocol.steps`). The waiting is
:mod:`pycurator._recipes.lock_wait`'s; :class:`~pycurator._recipes.lock_engine.LockEngine` composes
the two.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
)

from .._protocol import wire
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.drivers import CURATOR_NAMING, Decision, Driver, Naming
from .._protocol.parents import parents_steps
from .._protocol.requests import CreateMode, CreateNode, ListChildren, NodeExists
from .._protocol.steps import (
    Await,
    AwaitAll,
    Claims,
    GetTransport,
    OweDelete,
    Send,
    SessionId,
    Steps,
)
from .._protocol.transport import Signal, Transport
from .._protocol.waits import (
    DELETE_WAIT,
    RETRYABLE,
    connected_steps,
    delete_node_steps,
    read_sent_steps,
    resent_steps,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

#: The largest request ZooKeeper's servers accept by default (``jute.maxbuffer``, 1 MB - 1):
#: a larger one makes the server drop the connection.
MAX_NODE_DATA = 0xFFFFF
#: What a create or a write sends besides the node's data and path (headers, ACLs, a protected
#: or sequential name's part), kept free below :data:`MAX_NODE_DATA`.
REQUEST_ROOM = 1024


def check_size(data: bytes, path: str, name: str) -> None:
    """ValueError naming ``name`` when ``data``, written to a node at (or a name's part under)
    ``path``, would make a request larger than the server takes: sent, it would make the
    server drop the connection, at every try."""
    most = MAX_NODE_DATA - REQUEST_ROOM - len(path.encode())
    if len(data) > most:
        raise ValueError(
            f"{name} is {len(data)} bytes; ZooKeeper takes at most {most} at {path} (its"
            f" jute.maxbuffer default, {MAX_NODE_DATA}, less the request's path and headers)"
        )


#: How many times a protected create is retried on connection loss before giving up.
CREATE_RETRIES = 10


@dataclass(frozen=True, slots=True)
class LockNode:
    """Our lock node: its path, its creation zxid (the fencing token), and its session."""

    path: str
    czxid: int
    session_id: int


class LockNodes:
    """Our nodes under one lock path, for one driver: created, found again, listed, deleted,
    through ``transport`` (the client's, its only way to the server).

    ``data`` is written to our node (Curator's default, the host address, when None; no data
    at all, as Java's ``null``, with ``null_data``); with ``on_revoke`` it is made empty, for
    Curator's revocation message. ``naming``: how the node is named and its parents made
    (Curator's by default; see :class:`~pycurator._protocol.drivers.Naming`).
    """

    def __init__(
        self,
        transport: Transport,
        base_path: str,
        driver: Driver,
        *,
        data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        on_revoke: Callable[[], None] | None = None,
        naming: Naming = CURATOR_NAMING,
        null_data: bool = False,
    ) -> None:
        self.transport = transport
        self.base_path = base_path
        self.driver = driver
        self.naming = naming
        self.null_data = null_data
        self.data = transport.node_data() if data is None else bytes(data)
        check_size(self.data, base_path, "node data")
        self.acl = list(acl) if acl is not None else None
        self.on_revoke = on_revoke

    @property
    def client(self) -> KazooClient:
        """The kazoo client of the transport (for a recipe's ``client`` property)."""
        return cast("KazooClient", self.transport.client)

    @overload
    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: Literal[False] = False
    ) -> Steps[tuple[LockNode, list[str] | None]]: ...

    @overload
    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: Literal[True]
    ) -> Steps[tuple[LockNode, Decision | None]]: ...

    def create_node_steps(
        self, deadline: Deadline, driver: Driver | None = None, *, decide: bool = False
    ) -> Steps[tuple[LockNode, list[str] | Decision | None]]:
        """Create our protected node; also the children listed right after it, when they came
        in the same round trip (the listing is pipelined behind the create). With ``decide``,
        the driver's decision over that listing instead (:func:`decision_on_arrival`), so that
        a waiter never holds a listing, not even one waiting to be read.

        Raises :class:`DeadlineExpired` when the deadline passes first; a create still on its
        way then is undone when it lands. One whose wait is interrupted or cancelled is waited
        for (:data:`DELETE_WAIT` at most) and undone before the error goes on. Whatever error
        ends this call, no node of ours is left: one made before the error is deleted first.
        """
        driver = driver or self.driver
        deadline = deadline.for_requests()
        naming = self.naming
        protected_id = wire.new_protected_id() if naming.protected else ""
        sequence = driver.node_sequence()
        mode = CreateMode.EPHEMERAL_SEQUENTIAL if sequence is None else CreateMode.EPHEMERAL
        data = b"" if self.on_revoke is not None else None if self.null_data else self.data
        transport: Transport = yield GetTransport()
        claims: dict[str, object] | None = (yield Claims()) if naming.claims else None
        session_id: int | None = None
        prefix = naming.prefix(driver.token, session_id, protected_id)
        failures = 0
        while True:
            try:
                if failures:
                    found = yield from self._find_lost(prefix, deadline, claims)
                    if found is not None:
                        return found, None
                if naming.session:  # the name carries the session: the one the create is in
                    current = yield SessionId()
                    while current is None:  # between an expiry and the next session
                        yield from connected_steps(deadline)
                        current = yield SessionId()
                    if current != session_id:
                        session_id = current
                        prefix = naming.prefix(driver.token, session_id, protected_id)
                node_path = wire.join_path(self.base_path, prefix + (sequence or ""))
                create = yield Send(CreateNode(node_path, data, self.acl, mode))
                if decide:
                    reduce = decision_on_arrival(create, driver)
                    listing = yield Send(ListChildren(self.base_path, reduce=reduce))
                else:
                    listing = yield Send(ListChildren(self.base_path))
                try:
                    created, stat = yield Await(create, deadline)
                except NoNodeError:
                    yield from parents_steps(node_path, self.acl, deadline, naming.parent_mode)
                    continue
                except RETRYABLE:
                    raise  # the node may be made: the next try looks for it by its prefix
                except DeadlineExpired:  # never waited past: undone when it lands
                    create.rawlink(
                        functools.partial(self._undo_late_create, transport, prefix, claims)
                    )
                    raise
                except BaseException:  # interrupted or cancelled (a selector's close)
                    yield from self._undo_steps(create, transport, prefix, claims)
                    raise
                node = LockNode(self._child_path(created), stat.czxid, stat.ephemeralOwner)
                if naming.session and node.session_id != session_id:
                    # the session named ended before the create went out: the name is wrong
                    yield OweDelete(node.path)
                    continue
                if claims is not None and claims.setdefault(node.path, deadline) is not deadline:
                    # a recovery of another acquire of this client took it for its own lost
                    # create: that one's node, if made, is ours to find
                    failures += 1
                    continue
                try:
                    listed: list[str] | Decision | None = yield Await(listing, deadline)
                except (*RETRYABLE, DeadlineExpired):
                    listed = None  # the lock loop lists again, or gives up, and deletes
                except BaseException:
                    yield from self.delete_steps(node.path)
                    raise
                return node, listed
            except RETRYABLE:
                failures += 1
                try:
                    if failures > CREATE_RETRIES:
                        raise
                    yield from connected_steps(deadline)
                except BaseException:
                    transport.start(self._orphans_steps(prefix, claims))
                    raise
            except BaseException:
                if failures:  # a create whose answer was lost may have made a node after all
                    transport.start(self._orphans_steps(prefix, claims))
                raise

    def _child_path(self, server_path: str) -> str:
        """The client's path of our node, from the one the server answers a create with (a
        child of the lock path, whatever the chroot)."""
        return wire.join_path(self.base_path, wire.node_name(server_path))

    def _undo_steps(
        self, create: Any, transport: Transport, prefix: str, claims: dict[str, object] | None
    ) -> Steps[None]:
        """Undo a create whose wait was interrupted or cancelled: its answer is waited for
        (:data:`DELETE_WAIT` at most) and what it made deleted before the steps end, so that
        whoever stopped them (a selector's close) finds no node of ours made after it; undone
        when it lands if it does not come in time, or if this wait is interrupted too."""
        undo = functools.partial(self._undo_late_create, transport, prefix, claims)
        if not create.ready():
            try:
                yield Await(create, Deadline(DELETE_WAIT))
            except Exception:
                pass  # answered with an error, or not in time: seen below
            except BaseException:
                create.rawlink(undo)
                raise
        if not create.ready():
            create.rawlink(undo)
            return
        made = self._made_by(transport, prefix, claims, create)
        if made is not None:
            yield from self.delete_steps(made)

    def _undo_late_create(
        self, transport: Transport, prefix: str, claims: dict[str, object] | None, result: Any
    ) -> None:
        """A create we stopped waiting for has been answered: undo what it made."""
        made = self._made_by(transport, prefix, claims, result)
        if made is not None:
            transport.owe_delete(made)

    def _made_by(
        self, transport: Transport, prefix: str, claims: dict[str, object] | None, result: Any
    ) -> str | None:
        """The path of the node an answered create made, or None: nothing was made, it went
        with its session, or its answer was lost (then a search for it by ``prefix`` starts)."""
        try:
            created, _ = result.get_nowait()
        except (ConnectionLoss, OperationTimeoutError):
            transport.start(self._orphans_steps(prefix, claims))
            return None
        except Exception:
            return None
        return self._child_path(created)

    def _find_lost(
        self, prefix: str, deadline: Deadline, claims: dict[str, object] | None
    ) -> Steps[LockNode | None]:
        """Our node from an earlier create whose reply was lost, if the server made it.

        Under a protected name, a node with our prefix that belongs to an earlier session is
        deleted (CURATOR-498). Otherwise (``claims``) the node is one of our session's with
        ``prefix`` that no other acquire of the client has claimed, and it becomes ours; a
        node of another session is never touched.
        """
        try:
            children = yield Await((yield Send(ListChildren(self.base_path))), deadline)
        except NoNodeError:
            return None
        session_id = yield SessionId()
        for child in self.driver.sort(children) if claims is not None else children:
            path = wire.join_path(self.base_path, child)
            if not self.naming.made(child, prefix) or (claims is not None and path in claims):
                continue
            stat = yield Await((yield Send(NodeExists(path))), deadline)
            if stat is not None and stat.ephemeralOwner == session_id:
                if claims is None or claims.setdefault(path, deadline) is deadline:
                    return LockNode(path, stat.czxid, stat.ephemeralOwner)
            elif stat is not None and claims is None:
                yield OweDelete(path)
        return None

    def _orphans_steps(self, prefix: str, claims: dict[str, object] | None) -> Steps[None]:
        """After a create that gave up: delete a node it may have made after all (in the
        background, once the client is connected): any with our protected prefix, or, under
        another naming (``claims``), any of our session with ``prefix`` that no acquire of the
        client claims."""
        with contextlib.suppress(ConnectionClosedError):
            children = yield from self.children_steps(Deadline(None))
            session_id = yield SessionId()
            for child in children:
                path = wire.join_path(self.base_path, child)
                if not self.naming.made(child, prefix):
                    continue
                if claims is not None:
                    if path in claims:
                        continue
                    # asked again after a connection loss: a node skipped would be left behind
                    stat = yield from resent_steps(NodeExists(path), Deadline(None))
                    if stat is None or stat.ephemeralOwner != session_id or path in claims:
                        continue
                yield OweDelete(path)

    def children_steps(self, deadline: Deadline, answer: Any = None) -> Steps[list[str]]:
        """The lock path's children, listed within ``deadline``; none if the path is gone (it
        went away with our node: our session expired). ``answer``: a listing already asked
        for."""
        try:
            children: list[str] = yield from resent_steps(
                ListChildren(self.base_path), deadline, answer
            )
        except NoNodeError:
            return []
        return children

    def children_cut_steps(self, cut: Signal, deadline: Deadline) -> Steps[list[str] | None]:
        """:meth:`children_steps`, waited for with ``cut``: None once ``cut`` is set first (the
        answer, when it comes, is not read); the connection's loss raised, not ridden through."""
        answer = yield Send(ListChildren(self.base_path))
        (answered,) = yield AwaitAll((answer,), cut, deadline.remaining())
        if answered is None:
            if cut.is_set():
                return None
            raise DeadlineExpired()
        children, error = answered
        if isinstance(error, NoNodeError):
            return []
        if error is not None:
            raise error
        return list(children)

    def delete_steps(self, node: str) -> Steps[None]:
        """:meth:`release`, as steps: also how an acquire that gave up deletes its node. Under
        a naming whose nodes are claimed, the claim goes with the node."""
        if not self.naming.claims:
            yield from delete_node_steps(node)
            return
        claims = yield Claims()
        try:
            yield from delete_node_steps(node)
        finally:
            claims.pop(node, None)

    def sorted_children_steps(self, deadline: Deadline | None = None) -> Steps[list[str]]:
        """All children of the lock path in queue order; empty if the path does not exist. A
        read that rides through a reconnect (see
        :func:`~pycurator._protocol.waits.read_sent_steps`), within ``deadline`` (by default the
        client's session timeout from now)."""
        if deadline is None:
            deadline = Deadline(self.transport.session_timeout())
        try:
            children: list[str] = yield from read_sent_steps(ListChildren(self.base_path), deadline)
        except NoNodeError:
            return []
        return self.driver.sort(children)


def decision_on_arrival(create: Any, driver: Driver) -> Callable[[list[str]], Decision | None]:
    """The reduction of the listing pipelined behind our ``create`` (an async result): the
    driver's decision over it, made by the connection thread as it reads the listing, when the
    create's answer (read just before, the server answering in order) is already in. None when
    there is nothing to decide on: the create failed, our node is not in the listing (our
    session ended meanwhile), or the names do not sort; the lock loop then lists again and
    decides there, as it would have."""

    def reduce(children: list[str]) -> Decision | None:
        # read without the result's lock: the acquiring thread may be taking it as it wakes
        if not create.ready() or not create.successful():
            return None
        created, _ = create.value
        try:
            return driver.decide(driver.sort(children), wire.node_name(created))
        except Exception:
            return None

    return reduce


__all__ = [
    "CREATE_RETRIES",
    "MAX_NODE_DATA",
    "REQUEST_ROOM",
    "LockNode",
    "LockNodes",
    "check_size",
    "decision_on_arrival",
]
