"""Java peers of Curator's barriers: ``DistributedBarrier`` and ``DistributedDoubleBarrier``,
behind the calls of pycurator's own (``timeout`` in seconds, None to wait for ever).

Their waits run on the calling thread, so members of one barrier can wait in threads of their
own; a wait ends with its timeout, or with the peer's ``close()`` (it then raises
:class:`~pycurator.testing.PeerClosedError`), so a test that fails never hangs on one.
"""

from __future__ import annotations

from typing import Any

from ._curator import jclass
from ._java_calls import JavaRecipePeer, millis, recipe_class


class JavaDistributedBarrier(JavaRecipePeer):
    """Curator's ``DistributedBarrier``: the node ``path`` is the barrier (made with Curator's
    default data, the local address; container parents); waiters wait until it is gone."""

    def __init__(self, curator: Any, path: str) -> None:
        super().__init__(curator)
        self.path = path
        self.java = recipe_class("barriers.DistributedBarrier")(curator, path)

    def set_barrier(self) -> None:
        self._call("set_barrier()", self.java.setBarrier)

    def remove_barrier(self) -> None:
        self._call("remove_barrier()", self.java.removeBarrier)

    def wait_on_barrier(self, timeout: float | None = None) -> bool:
        """True once there is no barrier, False after ``timeout`` seconds."""
        if timeout is None:
            self._call("wait_on_barrier()", self.java.waitOnBarrier)
            return True
        return bool(
            self._call("wait_on_barrier()", lambda: self.java.waitOnBarrier(*millis(timeout)))
        )

    def _close_java(self) -> None:
        """A barrier holds nothing to close (its node is the barrier, not the peer's)."""

    def __repr__(self) -> str:
        return f"JavaDistributedBarrier({self.path!r})"


class JavaDistributedDoubleBarrier(JavaRecipePeer):
    """Curator's ``DistributedDoubleBarrier`` of ``member_qty`` members under ``path``: a member
    is the ephemeral node ``path/<UUID>`` (:attr:`our_path`, fixed when the peer is made), and
    the one that finds ``member_qty`` children creates ``path/ready``.

    Curator keeps a member's node after an ``enter`` that timed out; ``close()`` deletes it if it
    is still there, as the end of the member's process would."""

    def __init__(self, curator: Any, path: str, member_qty: int) -> None:
        super().__init__(curator)
        self.path = path
        self.member_qty = member_qty
        self.java = recipe_class("barriers.DistributedDoubleBarrier")(curator, path, member_qty)
        field = self.java.getClass().getDeclaredField("ourPath")  # Curator keeps it private
        field.setAccessible(True)
        self.our_path = str(field.get(self.java))

    def enter(self, timeout: float | None = None) -> bool:
        """True once ``member_qty`` members entered, False after ``timeout`` seconds."""
        if timeout is None:
            self._call("enter()", self.java.enter)
            return True
        return bool(self._call("enter()", lambda: self.java.enter(*millis(timeout))))

    def leave(self, timeout: float | None = None) -> bool:
        """True once every member left, False after ``timeout`` seconds."""
        if timeout is None:
            self._call("leave()", self.java.leave)
            return True
        return bool(self._call("leave()", lambda: self.java.leave(*millis(timeout))))

    def _close_java(self) -> None:
        if str(self.curator.getState()) != "STARTED":
            return  # a closed client's session took the node with it
        try:
            self.curator.delete().forPath(self.our_path)
        except jclass("org.apache.zookeeper.KeeperException$NoNodeException"):
            pass  # left already, or never entered

    def __repr__(self) -> str:
        return f"JavaDistributedDoubleBarrier({self.path!r}, {self.member_qty})"
