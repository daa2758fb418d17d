"""The kept node's core, held by both front ends (``pycurator.PersistentNode`` and
``pycurator.aio.PersistentNode``), and by ``PersistentTtlNode``'s: what a node kept from start to
close is, whichever way its owner waits.

:class:`PersistentNodeCore` checks the arguments (every check before anything is sent), keeps
the life cycle (Curator's LATENT, STARTED, CLOSED) and the keeper (:mod:`pycurator._recipes.
persistent_node`), and says what a wait for the first create comes to. A front end runs the
keeper's steps its own way, and waits its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._protocol.checks import ttl_millis
from .._protocol.modes import CreateMode
from .._protocol.paths import validate_path
from .._protocol.transport import Transport, closed_error
from .._protocol.waits import DELETE_WAIT
from .._recipes.lock_nodes import check_size
from .._recipes.persistent_node import Keeper
from .._recipes.ttl_touch import Touch
from .latch import Lifecycle

if TYPE_CHECKING:
    from kazoo.client import KazooClient

#: The longest a kept node's ``close()`` waits for its steps to end (its delete waits at most
#: :data:`~pycurator._protocol.waits.DELETE_WAIT`, then goes on in the background).
CLOSE_WAIT = DELETE_WAIT + 1.0


def check_mode(mode: object) -> CreateMode:
    """``mode`` if it is one of ZooKeeper's seven ``CreateMode`` values; TypeError otherwise."""
    if not isinstance(mode, CreateMode):
        raise TypeError(f"mode must be a CreateMode (CreateMode.EPHEMERAL...), not {mode!r}")
    return mode


def checked_data(data: object, path: str, name: str = "data") -> bytes:
    """``data`` as bytes, at most what a request writing it to ``path`` may carry; TypeError or
    ValueError naming ``name`` otherwise."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes, not {type(data).__name__}")
    value = bytes(data)
    check_size(value, path, name)
    return value


class PersistentNodeCore:
    """One node kept from :meth:`begin` to :meth:`finish`, for a front end to hold and drive.

    The arguments are checked first (TypeError or ValueError naming the argument): ``path``
    as Curator's ``PathUtils``, ``mode`` one of :class:`CreateMode`'s, ``data`` bytes,
    ``ttl`` (seconds) given for a TTL mode only. ``delete_on_close``: Curator's
    ``PersistentNode`` deletes its node on close, its ``PersistentTtlNode`` leaves it to its TTL.
    Everything here returns at once: nothing blocks, nothing awaits.
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        mode: CreateMode,
        data: bytes,
        use_protection: bool,
        *,
        acl: Sequence[Any] | None = None,
        ttl: float | None = None,
        delete_on_close: bool = True,
        touched: bool = False,
    ) -> None:
        validate_path(path)
        self.mode = check_mode(mode)
        if mode.is_ttl:
            ttl_millis(ttl, "ttl")
        elif ttl is not None:
            raise ValueError(f"a ttl is for the TTL modes, not CreateMode.{mode.name}: {ttl!r}")
        if not isinstance(use_protection, bool):
            raise TypeError(f"use_protection must be True or False, not {use_protection!r}")
        self.transport = transport
        self.path = path
        self.use_protection = use_protection
        self.ttl = ttl
        self.acl = list(acl) if acl is not None else None
        self.delete_on_close = delete_on_close
        self.touched = touched
        self._data = checked_data(data, path)
        #: Where the node stands; only :meth:`begin` and :meth:`finish` move it.
        self.state = Lifecycle.LATENT
        #: The keeper, once started.
        self.keeper: Keeper | None = None

    @property
    def client(self) -> KazooClient:
        """The kazoo client."""
        client: KazooClient = self.transport.client
        return client

    @property
    def actual_path(self) -> str | None:
        """The node's path as made (its protected name, its sequence number) while started, or
        None before the first create and once closed."""
        keeper = self.keeper
        if keeper is None or self.state is not Lifecycle.STARTED:
            return None
        return keeper.actual_path

    def get_data(self) -> bytes:
        """The data the node is kept with: the last given."""
        keeper = self.keeper
        return keeper.data if keeper is not None else self._data

    def set_data(self, data: bytes) -> None:
        """Keep the node with ``data`` from now on: written in the background once started (and
        made with it, when not made yet); RuntimeError once closed."""
        value = checked_data(data, self.path)
        if self.state is Lifecycle.CLOSED:
            raise RuntimeError(f"the node is closed: {self.path}")
        self._data = value
        if self.keeper is not None:
            self.keeper.set_data(value)

    def begin(self, changed: Callable[[], None]) -> Keeper:
        """Move to STARTED (RuntimeError if started before, as Curator: "Already started"); the
        keeper, whose steps the front end runs. ``changed()`` wakes whoever waits (from any
        thread)."""
        if self.state is not Lifecycle.LATENT:
            raise RuntimeError(f"Already started: {self.path}")
        self.state = Lifecycle.STARTED
        touch = None
        if self.touched and self.ttl is not None:
            touch = Touch(self.ttl, self.transport.node_data())
        self.keeper = Keeper(
            self.path,
            self.mode,
            self._data,
            protected=self.use_protection,
            acl=self.acl,
            ttl=self.ttl,
            delete_on_close=self.delete_on_close,
            on_created=changed,
            on_news=changed,
            touch=touch,
        )
        return self.keeper

    def finish(self) -> bool:
        """Move a started node to CLOSED and tell its keeper to stop; whether it was started
        (closing a node not started, or closed, does nothing, as Curator's ``close``). The front
        end then cancels the keeper's steps, whose clean-up deletes the node."""
        if self.state is not Lifecycle.STARTED:
            if self.state is Lifecycle.LATENT:
                self.state = Lifecycle.CLOSED
            return False
        self.state = Lifecycle.CLOSED
        if self.keeper is not None:
            self.keeper.stop()
        return True

    def check_waitable(self) -> None:
        """RuntimeError unless started and not closed (Curator: "Not started")."""
        if self.state is not Lifecycle.STARTED:
            raise RuntimeError(f"Not started, or closed: {self.path}")

    def created(self, ended: bool) -> bool | None:
        """For a wait for the first create, after each change: True once made (or found there
        and given our data), False once closed, None to wait on. Raises the error no retry fixes
        that keeps the node from being made (``NoAuthError``, a server without TTL nodes...);
        ConnectionClosedError once the client is stopped (or the steps ``ended`` with it)."""
        keeper = self.keeper
        if keeper is not None and keeper.created:
            return True
        if self.state is not Lifecycle.STARTED:
            return False
        if keeper is not None and keeper.failed is not None:
            raise keeper.failed
        self.transport.check_open()
        if ended:
            raise closed_error()
        return None

    def describe(self, kind: str) -> str:
        """The node's repr, as a ``kind`` (its class's name as users write it)."""
        actual = self.actual_path
        at = f", actual_path={actual!r}" if actual is not None else ""
        return f"{kind}({self.path!r}, {self.mode.name}{at}, state={self.state.value})"


def ttl_node_core(transport: Transport, path: str, ttl: float, data: bytes) -> PersistentNodeCore:
    """The core of Curator's ``PersistentTtlNode`` at ``path``: a kept node made
    PERSISTENT_WITH_TTL (Curator 5.9's parent; 5.4's made a CONTAINER, which it adopts) with
    ``ttl`` (seconds) and ``data``, its ``touch`` child kept, never deleted on close."""
    return PersistentNodeCore(
        transport,
        path,
        CreateMode.PERSISTENT_WITH_TTL,
        data,
        False,
        ttl=ttl,
        delete_on_close=False,
        touched=True,
    )


__all__ = ["CLOSE_WAIT", "PersistentNodeCore", "check_mode", "checked_data", "ttl_node_core"]
