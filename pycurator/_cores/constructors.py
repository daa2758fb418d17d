"""The public constructors of Curator's locks, written once for every front end: each recipe's
arguments (their names, order and defaults, which the shape test holds equal across front ends)
checked and made into its engines or its core, which the front end's shell then takes through a
hook of its own, the one part that differs (how it waits on them).

A shell inherits its constructor first, and its front end's waiting after it
(``class InterProcessMutex(MutexConstructor, ReentrantLock)``); its front end gives the hooks:
``_transport_of`` (the client's transport) and the one its constructor hands its parts to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._protocol.checks import ConnectionPolicy
from .._protocol.transport import Transport
from .._recipes.lock_engine import LockEngine, mutex_engine, read_write_engines
from .latch import CloseMode, LatchCore
from .semaphore import SemaphoreMutexCore

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class Constructor:
    """What every constructor here takes from its front end: the client's transport."""

    if TYPE_CHECKING:

        def _transport_of(self, client: KazooClient) -> Transport: ...


class MutexConstructor(Constructor):
    """``InterProcessMutex(client, path, *, node_data, acl, connection_policy)``: the engine of
    a mutex on ``path`` (every argument checked first), which the front end's lock takes."""

    if TYPE_CHECKING:

        def _with_engine(self, engine: LockEngine, connection_policy: ConnectionPolicy) -> None: ...

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        engine = mutex_engine(self._transport_of(client), path, node_data, acl)
        self._with_engine(engine, connection_policy)


class ReadWriteConstructor(Constructor):
    """``InterProcessReadWriteLock(client, path, node_data, *, acl, connection_policy,
    lock_data)``: the write side's and the read side's engines (every argument checked first;
    ``lock_data``, the former name of ``node_data``, warns), which the front end's sides take."""

    if TYPE_CHECKING:

        def _with_sides(
            self, write: LockEngine, read: LockEngine, connection_policy: ConnectionPolicy
        ) -> None: ...

    def __init__(
        self,
        client: KazooClient,
        path: str,
        node_data: bytes | None = None,
        *,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
        lock_data: bytes | None = None,
    ) -> None:
        transport = self._transport_of(client)
        write, read = read_write_engines(transport, path, node_data, acl, lock_data)
        self._with_sides(write, read, connection_policy)


class SemaphoreMutexConstructor(Constructor):
    """``InterProcessSemaphoreMutex(client, path, *, node_data, acl, connection_policy)``: the
    core of a mutex on a one-lease semaphore (every argument checked first), which the front
    end's mutex takes."""

    if TYPE_CHECKING:

        def _with_core(self, core: SemaphoreMutexCore[Any]) -> None: ...

    def __init__(
        self,
        client: KazooClient,
        path: str,
        *,
        node_data: bytes | None = None,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        transport = self._transport_of(client)
        self._with_core(SemaphoreMutexCore(transport, path, node_data, acl, connection_policy))


class LatchShell(Protocol):
    """What a front end's latch shells share (its ``LatchShell``), as a latch is made with it."""

    lost_event: Any

    def __init__(self, core: LatchCore) -> None: ...


class LatchConstructor(Constructor):
    """``LeaderLatch(client, path, id, *, close_mode, acl, connection_policy)``: the latch's
    core (every argument checked first, as Curator checks them), run by the front end's
    ``LatchShell`` (``_shell_class``), whose event is the latch's :attr:`lost_event` (set when
    leadership ends, cleared when it begins)."""

    _shell_class: type[LatchShell]

    def __init__(
        self,
        client: KazooClient,
        path: str,
        id: str = "",  # Curator's name for it
        *,
        close_mode: CloseMode = CloseMode.SILENT,
        acl: Sequence[Any] | None = None,
        connection_policy: ConnectionPolicy = "standard",
    ) -> None:
        transport = self._transport_of(client)
        self._core = LatchCore(transport, path, id, close_mode, acl, connection_policy)
        self._shell = self._shell_class(self._core)
        self.lost_event = self._shell.lost_event


__all__ = [
    "Constructor",
    "LatchConstructor",
    "MutexConstructor",
    "ReadWriteConstructor",
    "SemaphoreMutexConstructor",
]
