"""The lock engine: Curator's ``LockInternals`` for kazoo.

One engine serves every recipe, threaded or asyncio. It creates a protected ephemeral-sequential
node, lists the lock path's children, asks a driver (:mod:`pycurator._protocol.drivers`) whether it
holds the lock or whom to watch, watches that node with ``getData`` and waits, and deletes its node
on timeout, error, interruption or cancellation.

Every wait on the server honours the acquire's deadline, whatever the connection does: a request
still unanswered when the deadline passes is left to land later, and what it would leave behind
(a node, a watch) is undone when it does. Deletes never block for longer than
:data:`DELETE_WAIT`: one the server has not confirmed by then goes on in the background
(Curator's guaranteed delete).

The engine parts where the protocol does: its nodes (create and recover, list, delete:
:mod:`pycurator._recipes.lock_nodes`) and its waiting (wait and watch:
:mod:`pycurator._recipes.lock_wait`). The protocol is written once, as steps
(:mod:`pycurator._protocol.steps`), and does no I/O: they say what to send, listen to and owe,
and a runner does it (on a real client, or on the scripted server of
``tests/test_engine_protocol.py``); callbacks send through the runner's sender.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .._protocol import wire
from .._protocol.checks import check_data
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.drivers import (
    MUTEX_DRIVER,
    Driver,
    NodeVanishedError,
    ReadSideDriver,
    write_driver,
)
from .._protocol.paths import validate_path
from .._protocol.steps import CheckOpen, SessionId, Steps
from .._protocol.transport import Transport
from .lock_nodes import LockNode, LockNodes
from .lock_wait import wait_steps

#: The error an acquire on a client that cannot send requests ends with.
NOT_STARTED = "the kazoo client is not started, or has been stopped"


class LockEngine(LockNodes):
    """Create, list, decide, watch, wait and clean up, for one lock path and one driver.

    Its nodes are :class:`~pycurator._recipes.lock_nodes.LockNodes` (see there for ``data``,
    ``acl``, ``naming`` and ``null_data``). With ``on_revoke``, our node is made empty and
    watched for Curator's revocation message, and ``on_revoke()`` runs (on a kazoo worker) when
    it comes. An engine does not change once built: :meth:`revocable` makes a revocable copy.
    """

    def revocable(self, on_revoke: Callable[[], None]) -> LockEngine:
        """The same engine, but revocable (see the class doc)."""
        return LockEngine(
            self.transport,
            self.base_path,
            self.driver,
            data=self.data,
            acl=self.acl,
            on_revoke=on_revoke,
            naming=self.naming,
            null_data=self.null_data,
        )

    # -- acquiring ---------------------------------------------------------------------------

    def acquire_steps(
        self, timeout: float | None, driver: Driver | None = None
    ) -> Steps[LockNode | None]:
        """Wait for the lock; our node when held, None when the timeout ran out first.

        ``timeout`` counts from the start, the create included; 0 creates, checks once, and
        deletes. The steps end within ``timeout`` plus at most :data:`DELETE_WAIT` (the
        clean-up's delete), whatever the connection does. On timeout, error or interruption our
        node is deleted (or its delete handed to the background) before they end, and an
        error reaches the caller unchanged. ``driver``: this acquire's driver, if not the
        engine's (the read side's, say, which depends on who asks).
        """
        yield CheckOpen(NOT_STARTED)
        driver = driver or self.driver
        deadline = Deadline(timeout)
        while True:
            try:
                node, decision = yield from self.create_node_steps(deadline, driver, decide=True)
            except DeadlineExpired:
                return None
            held = False
            wait = wait_steps(self, node.path, decision, deadline, driver)
            try:
                held = yield from wait
                if held and (yield SessionId()) != node.session_id:
                    held = False  # deleted all the same: never a node left in a live session
                    raise NodeVanishedError(wire.node_name(node.path))
            except NodeVanishedError:
                continue  # our session ended while we waited: queue again with a new node
            except DeadlineExpired:
                pass
            finally:
                if not held:
                    yield from self.delete_steps(node.path)
            return node if held else None


def mutex_engine(
    transport: Transport, path: str, node_data: bytes | None, acl: Sequence[Any] | None
) -> LockEngine:
    """The engine of a mutex on ``path`` (Curator's ``lock-`` nodes, the standard driver),
    after checking every argument: shared by the threaded and the asyncio mutex."""
    validate_path(path)
    check_data(node_data)
    return LockEngine(transport, path, MUTEX_DRIVER, data=node_data, acl=acl)


def read_write_engines(
    transport: Transport,
    path: str,
    node_data: bytes | None,
    acl: Sequence[Any] | None,
    lock_data: bytes | None = None,
) -> tuple[LockEngine, LockEngine]:
    """The write side's and the read side's engines of a read/write lock on ``path``, after
    checking every argument: shared by the threaded and the asyncio read/write lock.

    ``lock_data`` is the former name of ``node_data``: it still works, with a DeprecationWarning
    pointing at the caller of the lock's constructor; giving both raises :class:`TypeError`.
    """
    if lock_data is not None:
        if node_data is not None:
            raise TypeError("give node_data or lock_data (its former name), not both")
        warnings.warn(
            "InterProcessReadWriteLock(lock_data=...) is deprecated: use node_data=",
            DeprecationWarning,
            stacklevel=3,
        )
        node_data = lock_data
    validate_path(path)
    check_data(node_data, "lock_data" if lock_data is not None else "node_data")
    return (
        LockEngine(transport, path, write_driver(), data=node_data, acl=acl),
        LockEngine(transport, path, ReadSideDriver(), data=node_data, acl=acl),
    )


__all__ = ["NOT_STARTED", "LockEngine", "mutex_engine", "read_write_engines"]
