"""The ``touch`` child of Curator's ``PersistentTtlNode``, as steps: made (or set) under the kept
node right after its first create and every ``ttl / 2`` seconds, so that the pair outlives its
process by about a TTL (ZooKeeper reaps a TTL node once it is childless and unchanged for its
TTL: first the touch, then the parent).

Curator's layout, read from ``R/nodes/PersistentTtlNode.java``: the child ``touch``
(``DEFAULT_CHILD_NODE_NAME``), PERSISTENT_WITH_TTL with the parent's TTL and Curator's default
data (the host's address), touched every ``ttlMs / DEFAULT_TOUCH_SCHEDULE_FACTOR`` (2) with a
``setData``, made when missing (``create().orSetData()``); a parent gone meanwhile is left for
the kept node to make again. Curator touches first ``ttl / 2`` after its start, leaving a
childless parent meanwhile (the 5.8 fix, GH-1258, came from one never touched): this touches at
once.
"""

from __future__ import annotations

import logging

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.modes import CreateMode
from .._protocol.requests import CreateNode, SetData
from .._protocol.steps import Steps
from .._protocol.waits import RETRYABLE, sent_steps

log = logging.getLogger("pycurator")

TOUCH_NAME = wire.TTL_TOUCH_NAME
TOUCH_FACTOR = wire.TTL_TOUCH_FACTOR


class Touch:
    """The touch of a kept TTL node: the child ``touch`` with ``data`` (Curator's default: the
    host's address) and ``ttl`` (seconds), set every ``ttl / 2``."""

    def __init__(self, ttl: float, data: bytes) -> None:
        self.ttl = ttl
        self.data = data
        self.interval = ttl / TOUCH_FACTOR
        self._next = Deadline(0.0)  # the first touch is due at once

    def wait(self) -> float | None:
        """Seconds until the next touch is due (0 once due)."""
        return self._next.remaining()

    def steps(self, parent: str, deadline: Deadline) -> Steps[None]:
        """Touch the child of ``parent``: set it, or make it where it is missing. An error
        other than a lost connection is logged (at debug, as Curator) and the next touch
        comes in turn; a lost connection raises, for the touch to come once connected."""
        path = wire.join_path(parent, TOUCH_NAME)
        self._next = Deadline(self.interval)  # from the touch's start: at a fixed rate, as Java
        try:
            try:
                yield from sent_steps(SetData(path, self.data), deadline)
            except NoNodeError:
                request = CreateNode(
                    path, self.data, None, CreateMode.PERSISTENT_WITH_TTL, self.ttl
                )
                try:
                    yield from sent_steps(request, deadline)
                except NodeExistsError:
                    yield from sent_steps(SetData(path, self.data), deadline)
        except NoNodeError:
            pass  # the parent is gone: the kept node makes it again, and touches then
        except RETRYABLE:
            self._next = Deadline(0.0)  # touched once connected again
            raise
        except KazooException:
            log.debug("could not touch %s", path, exc_info=True)


__all__ = ["TOUCH_FACTOR", "TOUCH_NAME", "Touch"]
