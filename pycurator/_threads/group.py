"""``GroupMember``: Curator's group membership, for threads: this member's ephemeral node kept
as a ``PersistentNode`` keeps it, and the group read from a ``CuratorCache`` of its path. What a
member is lives in :mod:`pycurator._cores.group`; this shell runs its node and its cache as the
threaded ``PersistentNode`` and ``CuratorCache`` do (no thread of their own)."""

from __future__ import annotations

from types import TracebackType

from kazoo.client import KazooClient

from .._client.transport import transport_of
from .._cores.constructors import GroupMemberConstructor
from .._cores.group import GroupMemberFace
from .._protocol.transport import Transport
from .cache import CacheShell
from .persistent_node import KeptNodeShell


class GroupMember(GroupMemberConstructor, GroupMemberFace):
    """A member of the group at ``membership_path``, shared with Java Curator's
    ``GroupMember``: this member is the EPHEMERAL node ``membership_path/this_id`` (its id
    unique in the group), holding ``payload``, or by default the host's address as Curator
    writes it; kept while started (made again when deleted, after a reconnect or an expiry,
    with the latest data), deleted on close. The members, Java's and Python's, are read from
    a cache of the group's path.

    Raises TypeError or ValueError, before anything is sent, for a path Curator refuses or a
    member id that is no node name (one with ``/`` names a node below another).
    """

    _node_shell_class = KeptNodeShell
    _cache_shell_class = CacheShell
    _node: KeptNodeShell
    _cache: CacheShell

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    def start(self) -> None:
        """Join the group (this member's node is made in the background) and start reading
        its members. RuntimeError when started before."""
        self._node.start()
        self._cache.start()

    def close(self) -> None:
        """Leave the group: stop reading its members, and delete this member's node (waiting
        at most :data:`~pycurator._protocol.waits.DELETE_WAIT` seconds for the server, then in
        the background). Closing twice does nothing more."""
        self._cache.close()
        self._node.close()

    def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for this member's node to be made:
        True once made, False on timeout or once closed (see
        :meth:`PersistentNode.wait_for_initial_create`)."""
        return self._node.wait_for_initial_create(timeout)

    def __enter__(self) -> GroupMember:
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
        return f"GroupMember({self.membership_path!r}, {self.this_id!r})"


__all__ = ["GroupMember"]
