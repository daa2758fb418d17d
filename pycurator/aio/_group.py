"""The asyncio ``GroupMember``: the member's core (:mod:`pycurator._cores.group`), whose node and
cache run as tasks on the event loop, as the asyncio ``PersistentNode`` and ``CuratorCache``
run."""

from __future__ import annotations

from kazoo.client import KazooClient

from .._cores.constructors import GroupMemberConstructor
from .._cores.group import GroupMemberFace
from .._protocol.transport import Transport
from ._cache import CacheShell
from ._persistent_node import KeptNodeShell
from ._runner import transport_of


class GroupMember(GroupMemberConstructor, GroupMemberFace):
    """The asyncio form of :class:`pycurator.GroupMember`: the same node and the same cache as
    Curator's ``GroupMember``; ``start()`` and ``close()`` are awaited, the members read at
    once."""

    _node_shell_class = KeptNodeShell
    _cache_shell_class = CacheShell
    _node: KeptNodeShell
    _cache: CacheShell

    def _transport_of(self, client: KazooClient) -> Transport:
        return transport_of(client)

    async def start(self) -> None:
        """Join the group and start reading its members, on the running loop. RuntimeError
        when started before."""
        self._node.start()
        self._cache.start()

    async def close(self) -> None:
        """Leave the group (see the threaded member's ``close()``); returns once done."""
        await self._cache.close()
        await self._node.close()

    async def wait_for_initial_create(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever) for this member's node to be made."""
        return await self._node.wait_for_initial_create(timeout)

    async def __aenter__(self) -> GroupMember:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"aio.GroupMember({self.membership_path!r}, {self.this_id!r})"


__all__ = ["GroupMember"]
