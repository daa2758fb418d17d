"""``PersistentNode`` and ``PersistentTtlNode``: Curator's nodes that stay, for threads.

What a kept node is lives in :mod:`pycurator._cores.persistent_node` (its protocol in
:mod:`pycurator._recipes.persistent_node`), which the asyncio node holds too; this shell runs
the keeper on kazoo's callbacks (no thread of its own) and waits on handler events.
"""

from __future__ import annotations

from types import TracebackType

from kazoo.client import KazooClient

from .._client.callback_runner import CallbackRun
from .._client.transport import transport_of
from .._cores.constructors import PersistentNodeConstructor, PersistentTtlNodeConstructor
from .._cores.faces import PersistentNodeFace, PersistentTtlNodeFace
from .._cores.persistent_node import CLOSE_WAIT, PersistentNodeCore
from .._protocol.checks import check_timeout
from .._protocol.transport import Transport
from .runner import Changes, wait_until


class KeptNodeShell:
    """What the threaded kept nodes (``PersistentNode``, ``PersistentTtlNode``) share: their
    keeper on the callback runner (no thread of its own), their waits on handler events."""

    def __init__(self, core: PersistentNodeCore) -> None:
        self._transport = transport_of(core.client)
        self.core = core
        self._changes = Changes(self._transport.services.new_flag)
        self._run: CallbackRun | None = None

    def start(self) -> None:
        """Start keeping the node; RuntimeError when started before."""
        changed = self._changes.changed
        keeper = self.core.begin(changed)
        self._run = self._transport.start(keeper.steps(), lambda _: changed())

    def close(self) -> None:
        """Stop keeping the node and wait (at most :data:`CLOSE_WAIT`) for its delete."""
        if not self.core.finish():
            return
        run = self._run
        if run is not None:
            run.cancel()
            run.done.wait(CLOSE_WAIT)
        self._changes.changed()

    def wait_for_initial_create(self, timeout: float | None) -> bool:
        """Wait for the node's first create (see :meth:`PersistentNode.wait_for_initial_create`)."""
        timeout = check_timeout(timeout)
        core = self.core
        core.check_waitable()
        return wait_until(self._changes, lambda: core.created(self._ended()), timeout)

    def _ended(self) -> bool:
        run = self._run
        return run is not None and run.done.is_set()


class PersistentNode(PersistentNodeConstructor, PersistentNodeFace):
    """A node that stays in ZooKeeper while started, as Curator's ``PersistentNode``, and as
    Java and Python peers see it: made in the background at ``path`` in ``mode`` with
    ``data`` (missing parents made as containers), its name ``_c_<uuid>-<name>`` with
    ``use_protection``; made again when deleted (by anyone), and after a reconnect or an
    expiry, always under the name it was first made with (a sequential node at its sequence
    number) and with the latest data; deleted by :meth:`close`. A TTL mode takes ``ttl``
    (seconds). A node costs a watch, no thread: its steps run on kazoo's callbacks.

    Raises TypeError or ValueError for bad arguments (a path Curator refuses, a mode that is
    not a :class:`CreateMode`, data that is not bytes, a ttl missing or out of range), before
    anything is sent.
    """

    _shell_class = KeptNodeShell
    _shell: KeptNodeShell
    _core: PersistentNodeCore

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def start(self) -> None:
        """Start keeping the node: it is made in the background.

        Raises RuntimeError when started before (Curator: "Already started").
        """
        self._shell.start()

    def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the node's first create: True
        once made (or found there and given our data), False on timeout or when closed
        meanwhile.

        Raises RuntimeError when not started or closed; the server's error no retry fixes
        (``NoAuthError``, :class:`~pycurator.ServerFeatureError` for a TTL mode on a server
        without TTL nodes...) while it keeps the node from being made (the node tries again on
        the next reconnect or data); ``ConnectionClosedError`` once the client is stopped.
        """
        return self._shell.wait_for_initial_create(timeout)

    def set_data(self, data: bytes) -> None:
        """Keep the node with ``data``: written in the background (again after every
        recreate). Before the first create, the data the node is made with. Raises
        RuntimeError once closed."""
        self._core.set_data(data)

    def close(self) -> None:
        """Stop keeping the node and delete it (waiting at most
        :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then in the
        background, as Curator's guaranteed delete); a create still on its way is undone when
        it lands. Closing a node not started, or closed, does nothing."""
        self._shell.close()

    def __enter__(self) -> PersistentNode:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return self._core.describe("PersistentNode")


class PersistentTtlNode(PersistentTtlNodeConstructor, PersistentTtlNodeFace):
    """A node kept alive by touching its child, as Curator's ``PersistentTtlNode``, on Java's
    layout: ``path`` made PERSISTENT_WITH_TTL with ``data`` (as Curator 5.9 makes it; a
    CONTAINER found there, as 5.4 made it, is adopted), and its child ``touch``
    (PERSISTENT_WITH_TTL, the host's address as data) made or set every ``ttl / 2`` seconds
    while started. Once closed (or its process gone), nothing is deleted: ZooKeeper reaps the
    child, then the node, about ``ttl`` seconds after the last touch, unless another
    ``PersistentTtlNode`` of the path (Java's too) keeps touching. It needs a server with TTL
    nodes on (``zookeeper.extendedTypesEnabled=true``): elsewhere
    :meth:`wait_for_initial_create` raises :class:`~pycurator.ServerFeatureError`.

    Raises TypeError or ValueError for bad arguments (a path Curator refuses, a ``ttl`` that is
    not a number of seconds from a millisecond to ZooKeeper's most, data that is not bytes).
    """

    _shell_class = KeptNodeShell
    _shell: KeptNodeShell
    _core: PersistentNodeCore

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def start(self) -> None:
        """Start keeping the node and touching its child, in the background.

        Raises RuntimeError when started before.
        """
        self._shell.start()

    def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the node's first create: True once
        made (or found there and given our data), False on timeout or when closed meanwhile;
        the errors of :meth:`PersistentNode.wait_for_initial_create`."""
        return self._shell.wait_for_initial_create(timeout)

    def set_data(self, data: bytes) -> None:
        """Keep the node with ``data`` (written in the background); RuntimeError once closed."""
        self._core.set_data(data)

    def close(self) -> None:
        """Stop keeping and touching the node, which is left to its TTL (as Curator's
        ``close``). Closing a node not started, or closed, does nothing."""
        self._shell.close()

    def __enter__(self) -> PersistentTtlNode:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return self._core.describe("PersistentTtlNode")


__all__ = ["CLOSE_WAIT", "KeptNodeShell", "PersistentNode", "PersistentTtlNode"]
