"""How each request of :mod:`pycurator._protocol.requests` is sent on a kazoo client
(:data:`SENDERS`, which :class:`~pycurator._client.transport.KazooTransport` looks a request up
in): as kazoo's ``*_async`` calls send it, or through kazoo's connection with a record of
pycurator's (:mod:`pycurator._client.records`) for what kazoo cannot send itself. A request
the transport does not send yet has its function added here."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import KazooException
from kazoo.protocol.serialization import (
    CheckVersion as CheckRecord,
)
from kazoo.protocol.serialization import (
    Create,
    Create2,
    Delete,
    Exists,
    GetChildren,
)
from kazoo.protocol.serialization import (
    GetData as ReadData,
)
from kazoo.protocol.serialization import (
    SetData as WriteData,
)
from kazoo.protocol.serialization import (
    Transaction as Multi,
)
from kazoo.protocol.states import WatchedEvent

from .._protocol.checks import ttl_millis
from .._protocol.requests import (
    AddWatch,
    CheckVersion,
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    NodeExists,
    Operation,
    RemoveWatches,
    SetData,
    Transaction,
    WatcherType,
)
from . import kazoo_internals
from .persistent_watches import (
    held_on,
    keeps_one_shot,
    released_one_shot,
    send_add_watch,
    send_remove,
    watches_of,
)
from .queueing import CAN_REMOVE_WATCHES, acl_of, explained, is_plain, prefixed, sent
from .records import (
    CreateContainer,
    CreateTTL,
    KeptChildren,
    KeptData,
    KeptExists,
    ReducedChildren,
)
from .records import RemoveWatches as RemoveRecord
from .runtime import runtime_of

#: What a server needs for TTL nodes.
TTL_NEEDS = "ZooKeeper 3.5.3 or later, started with zookeeper.extendedTypesEnabled=true"


def ttl_ms(request: CreateNode) -> int | None:
    """The time to live ``request`` sends, in whole milliseconds (None for a mode without one);
    ``TypeError`` or ``ValueError``, naming it, for a TTL mode without a ttl or with one out of
    ZooKeeper's range, and for another mode with one."""
    mode, ttl = request.mode, request.ttl
    if not mode.is_ttl:
        if ttl is not None:
            raise ValueError(f"a ttl is for the TTL modes, not CreateMode.{mode.name}: {ttl!r}")
        return None
    return ttl_millis(ttl, f"the ttl of CreateMode.{mode.name}")


# -- the sending of each request, by its type ---------------------------------------------------


#: The last mode a plain ``create`` makes (ephemeral sequential); a container and the TTL modes
#: are sent otherwise.
_LAST_PLAIN_MODE = int(CreateMode.EPHEMERAL_SEQUENTIAL)


def _send_create(client: KazooClient, request: CreateNode) -> Any:
    """``create`` without kazoo's completion step: the answer, ``(server path, stat)``, is set
    on the async result by the connection thread itself, where kazoo's would go through its
    completion worker first (a thread hand-off per create). The server's path, chroot included
    (``client.unchroot`` gives the client's)."""
    mode = request.mode
    if mode > _LAST_PLAIN_MODE:
        millis = ttl_ms(request)
        if millis is not None:
            record: Any = CreateTTL(
                prefixed(client, request.path),
                request.data,
                acl_of(client, request.acl),
                mode,
                millis,
            )
            return explained(client, sent(client, record), "TTL nodes", request.path, TTL_NEEDS)
        record = CreateContainer(
            prefixed(client, request.path), request.data or b"", acl_of(client, request.acl)
        )
    else:
        if request.ttl is not None:
            ttl_ms(request)  # raises, naming it
        record = Create2(
            prefixed(client, request.path), request.data, acl_of(client, request.acl), mode
        )
    return sent(client, record)


def _send_parent(client: KazooClient, request: CreateParent) -> Any:
    acl = acl_of(client, request.acl)
    if request.mode is CreateMode.CONTAINER:
        return sent(client, CreateContainer(request.server_path, b"", acl))
    if request.mode is not CreateMode.PERSISTENT:
        raise ValueError(f"a parent is a CONTAINER or PERSISTENT node, not {request.mode.name}")
    return sent(client, Create2(request.server_path, b"", acl, CreateMode.PERSISTENT))


# the request of a plain path (the protocol's own, validated) is made here, without kazoo's
# normalization of the chroot and the path on every request; any other path goes through
# kazoo's call, which normalizes it


def _send_list(client: KazooClient, request: ListChildren) -> Any:
    if request.reduce is not None:
        assert request.watch is None, "a reduced listing sets no watch"
        return sent(client, ReducedChildren(prefixed(client, request.path), request.reduce))
    if is_plain(request.path):
        return _watched(client, request.path, request.watch, GetChildren, KeptChildren, True)
    return client.get_children_async(request.path, watch=request.watch)


def _send_get(client: KazooClient, request: GetData) -> Any:
    if is_plain(request.path):
        return _watched(client, request.path, request.watch, ReadData, KeptData, False)
    return client.get_async(request.path, watch=request.watch)


def _watched(
    client: KazooClient,
    path: str,
    watch: Any,
    record: Callable[[str, Any], Any],
    kept: Callable[[str, Any], Any],
    children: bool,
) -> Any:
    """A read of ``path`` that may set a one-shot watch: the watch kept by the client alone
    where a watch that stays covers it (see :mod:`pycurator._client.persistent_watches`)."""
    server_path = prefixed(client, path)
    answered = None if watch is None else keeps_one_shot(client, server_path, children)
    if answered is None:
        return sent(client, record(server_path, watch))
    answer = sent(client, kept(server_path, watch))
    answer.rawlink(answered)
    return answer


def _send_delete(client: KazooClient, request: DeleteNode) -> Any:
    if is_plain(request.path):
        return sent(client, Delete(prefixed(client, request.path), request.version))
    return client.delete_async(request.path, request.version)


def _send_exists(client: KazooClient, request: NodeExists) -> Any:
    if is_plain(request.path):
        return _watched(client, request.path, request.watch, Exists, KeptExists, False)
    return client.exists_async(request.path, watch=request.watch)


def _send_set(client: KazooClient, request: SetData) -> Any:
    return client.set_async(request.path, request.data, request.version)


def _operation(client: KazooClient, operation: Operation) -> Any:
    """The kazoo record of a transaction's ``operation`` (as kazoo's ``TransactionRequest``
    makes it)."""
    kind = type(operation)
    path = prefixed(client, operation.path)
    if kind is CreateNode:
        assert isinstance(operation, CreateNode)
        if operation.mode > CreateMode.EPHEMERAL_SEQUENTIAL:
            raise ValueError(f"a transaction creates no {operation.mode.name} node")
        return Create(path, operation.data, acl_of(client, operation.acl), operation.mode)
    if kind is DeleteNode:
        assert isinstance(operation, DeleteNode)
        return Delete(path, operation.version)
    if kind is SetData:
        assert isinstance(operation, SetData)
        return WriteData(path, operation.data, operation.version)
    if kind is CheckVersion:
        assert isinstance(operation, CheckVersion)
        return CheckRecord(path, operation.version)
    raise TypeError(f"not a transaction's operation: {operation!r}")


def _send_transaction(client: KazooClient, request: Transaction) -> Any:
    return sent(client, Multi([_operation(client, part) for part in request.operations]))


def _send_remove_watches(client: KazooClient, request: RemoveWatches) -> Any:
    kind = request.watcher_type
    if kind in (WatcherType.PERSISTENT, WatcherType.PERSISTENT_RECURSIVE):
        return send_remove(client, request)
    if request.watch is not None:
        raise ValueError(
            "a watch is named only to remove a watch that stays (PERSISTENT or "
            f"PERSISTENT_RECURSIVE), not one of {kind.name}: kazoo's watches fire once"
        )
    if not CAN_REMOVE_WATCHES:
        result = client.handler.async_result()
        result.set(
            None
        )  # never sent: the server keeps the watch until it fires or the session ends
        return result
    server_path = prefixed(client, request.path)
    if kind is WatcherType.ANY:
        watches_of(client).forget_path(server_path)
    return sent(client, RemoveRecord(server_path, kind))


#: How each request is sent on a kazoo client, by its type: a new request's sending goes here.
SENDERS: dict[type[Any], Callable[[KazooClient, Any], Any]] = {
    CreateNode: _send_create,
    ListChildren: _send_list,
    GetData: _send_get,
    DeleteNode: _send_delete,
    NodeExists: _send_exists,
    SetData: _send_set,
    CreateParent: _send_parent,
    Transaction: _send_transaction,
    AddWatch: send_add_watch,
    RemoveWatches: _send_remove_watches,
}


def transaction_of(transaction: TransactionRequest) -> Transaction:
    """A kazoo transaction (a ``guarded_transaction()``, say) as the request that commits it,
    which marks it committed as its ``commit()`` would (``ValueError`` if it was)."""
    if transaction.committed:
        raise ValueError("Transaction already committed")
    client = transaction.client
    parts: list[Operation] = []
    for record in transaction.operations:
        path = client.unchroot(record.path)
        if isinstance(record, Create):
            parts.append(CreateNode(path, record.data, record.acl, CreateMode(record.flags)))
        elif isinstance(record, Delete):
            parts.append(DeleteNode(path, record.version))
        elif isinstance(record, WriteData):
            parts.append(SetData(path, record.data, record.version))
        else:
            parts.append(CheckVersion(path, record.version))
    transaction.committed = True
    return Transaction(tuple(parts))


def remove_watches(client: KazooClient, path: str, watcher_type: WatcherType) -> bool:
    """Ask the server to drop this session's watches of ``watcher_type`` on ``path``, without
    waiting for the answer: a missing watch or a lost connection is fine (the watch dies with
    the session). Whether the request was queued: on a kazoo older than 2.11 it is never sent
    (see :data:`CAN_REMOVE_WATCHES`), and the server keeps the watch until it fires or the
    session ends."""
    if not CAN_REMOVE_WATCHES:
        return False
    with contextlib.suppress(KazooException):
        sent(client, RemoveRecord(prefixed(client, path), watcher_type))
        return True
    return False


def forget_watch(
    client: KazooClient,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    *,
    children: bool = False,
) -> None:
    """Drop a data (or child) watch we no longer wait on, in kazoo and (when no other watcher of
    this client shares it) on the server, so a waiter that gives up leaves no watch behind."""
    server_path = prefixed(client, path)
    if kazoo_internals.discard_watcher(client, server_path, watcher, children=children):
        return
    if held_on(client, server_path):
        # a server before 3.9 would drop the watch that stays on the path too; it sends the
        # path's events anyway, so the one-shot watch costs nothing more there
        released_one_shot(client, server_path)
        return
    # a watch request of another of our watchers may be on its way: the one server watch it
    # sets goes too, and the count tells it to set it again (watch_sent_steps)
    runtime_of(client).watch_removals += 1
    remove_watches(client, path, WatcherType.CHILDREN if children else WatcherType.DATA)


__all__ = [
    "CAN_REMOVE_WATCHES",
    "SENDERS",
    "TTL_NEEDS",
    "explained",
    "forget_watch",
    "is_plain",
    "prefixed",
    "remove_watches",
    "sent",
    "transaction_of",
    "ttl_ms",
]
