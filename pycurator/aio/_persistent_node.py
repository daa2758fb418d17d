"""The asyncio ``PersistentNode`` and ``PersistentTtlNode``: the kept node's core
(:mod:`pycurator._cores.persistent_node`), whose keeper runs as a task on the event loop, with no
thread and no executor."""

from __future__ import annotations

import asyncio

from kazoo.client import KazooClient

from .._cores.constructors import PersistentNodeConstructor, PersistentTtlNodeConstructor
from .._cores.faces import PersistentNodeFace, PersistentTtlNodeFace
from .._cores.persistent_node import CLOSE_WAIT, PersistentNodeCore
from .._protocol.checks import check_timeout
from .._protocol.transport import Transport
from ._runner import LoopEvent, log_failure, run_async, transport_of, wait_until


class KeptNodeShell:
    """What the asyncio kept nodes share: their keeper as a task on the loop that started them,
    their waits on an :class:`asyncio.Event`."""

    def __init__(self, core: PersistentNodeCore) -> None:
        self.core = core
        self._task: asyncio.Task[None] | None = None
        self._changed: asyncio.Event | None = None

    def start(self) -> None:
        """Start keeping the node on the running loop; RuntimeError when started before."""
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        keeper = self.core.begin(LoopEvent(loop, changed).set)
        self._changed = changed
        self._task = loop.create_task(run_async(self.core.transport, keeper.steps()))
        self._task.add_done_callback(log_failure)
        self._task.add_done_callback(lambda _: changed.set())

    async def close(self) -> None:
        """Stop keeping the node and wait (at most :data:`CLOSE_WAIT`) for its delete."""
        if not self.core.finish():
            return
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_WAIT)
        if self._changed is not None:
            self._changed.set()

    async def wait_for_initial_create(self, timeout: float | None) -> bool:
        """Wait for the node's first create (see :meth:`PersistentNode.wait_for_initial_create`)."""
        timeout = check_timeout(timeout)
        core = self.core
        core.check_waitable()
        changed = self._changed
        assert changed is not None  # made by start()
        task = self._task
        return await wait_until(
            changed, lambda: core.created(task is not None and task.done()), timeout
        )


class PersistentNode(PersistentNodeConstructor, PersistentNodeFace):
    """The asyncio form of :class:`pycurator.PersistentNode`: the same node, made, watched, made
    again and deleted as Curator's ``PersistentNode``; ``await node.wait_for_initial_create()``.

    Its steps run as a task on the loop that started it. If the loop ends with the node still
    started, the task is cancelled and the node deleted, as by :meth:`close`.
    """

    _shell_class = KeptNodeShell
    _shell: KeptNodeShell
    _core: PersistentNodeCore

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    async def start(self) -> None:
        """Start keeping the node (in the background, on the running loop).

        Raises RuntimeError when started before (Curator: "Already started").
        """
        self._shell.start()

    async def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the node's first create: True
        once made, False on timeout or when closed meanwhile; the errors of the threaded
        ``wait_for_initial_create``."""
        return await self._shell.wait_for_initial_create(timeout)

    def set_data(self, data: bytes) -> None:
        """Keep the node with ``data``: written in the background (again after every
        recreate). Before the first create, the data the node is made with. Raises
        RuntimeError once closed."""
        self._core.set_data(data)

    async def close(self) -> None:
        """Stop keeping the node and delete it (waiting at most
        :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then in the
        background); returns once done. Closing a node not started, or closed, does nothing."""
        await self._shell.close()

    async def __aenter__(self) -> PersistentNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return self._core.describe("aio.PersistentNode")


class PersistentTtlNode(PersistentTtlNodeConstructor, PersistentTtlNodeFace):
    """The asyncio form of :class:`pycurator.PersistentTtlNode`: the same node and ``touch``
    child, as Curator's ``PersistentTtlNode`` keeps them, touched by a task on the loop that
    started it."""

    _shell_class = KeptNodeShell
    _shell: KeptNodeShell
    _core: PersistentNodeCore

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    async def start(self) -> None:
        """Start keeping the node and touching its child, on the running loop.

        Raises RuntimeError when started before.
        """
        self._shell.start()

    async def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for the node's first create: True once
        made, False on timeout or when closed meanwhile; the errors of the threaded one."""
        return await self._shell.wait_for_initial_create(timeout)

    def set_data(self, data: bytes) -> None:
        """Keep the node with ``data`` (written in the background); RuntimeError once closed."""
        self._core.set_data(data)

    async def close(self) -> None:
        """Stop keeping and touching the node, which is left to its TTL. Closing a node not
        started, or closed, does nothing."""
        await self._shell.close()

    async def __aenter__(self) -> PersistentTtlNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return self._core.describe("aio.PersistentTtlNode")


__all__ = ["KeptNodeShell", "PersistentNode", "PersistentTtlNode"]
