"""Curator's ``CuratorCache`` as rules over data: the nodes a cache holds (:class:`ChildData`), the
events that tell their changes (:class:`CacheEvent`), and :class:`CacheTree`, which turns each
node read from the server into the events its cache tells; gzip as Curator's ``COMPRESSED_DATA``
reads and writes it.

A cache tells what changed between two reads of a node, never what it was told by a watch: a
watch's event only says which node to read again, and the answer says what it is now. Reads are
applied in the order they were sent, which is the order the server answered them, so a node's
states follow one another as on the server and none is told twice. Curator compares versions
only; :class:`CacheTree` compares the creation zxid too: a node deleted and made again while
the cache was away (at the same version, as a node made anew often is) is told deleted and
created, where Curator tells nothing and keeps the old node's last event.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterator
from typing import Any

from kazoo.protocol.states import ZnodeStat

from .errors import CompressedDataError


class CacheOption(enum.Enum):
    """Curator's ``CuratorCache.Options``."""

    #: only the cache's own node, not the tree below it (a persistent, not recursive, watch)
    SINGLE_NODE_CACHE = "SINGLE_NODE_CACHE"
    #: the nodes' data is gzip, as Curator's ``compressed()`` writes it: told unzipped
    COMPRESSED_DATA = "COMPRESSED_DATA"
    #: ``close()`` keeps what the cache holds (by default it is cleared)
    DO_NOT_CLEAR_ON_CLOSE = "DO_NOT_CLEAR_ON_CLOSE"


class CacheEventType(enum.Enum):
    """Curator's ``CuratorCacheListener.Type``: what happened to a node."""

    NODE_CREATED = "NODE_CREATED"
    NODE_CHANGED = "NODE_CHANGED"
    NODE_DELETED = "NODE_DELETED"


CREATED = CacheEventType.NODE_CREATED
CHANGED = CacheEventType.NODE_CHANGED
DELETED = CacheEventType.NODE_DELETED

#: A ZnodeStat's eleven fields, packed (Java's ``Stat``: longs and ints).
_STAT = struct.Struct(">qqqqiiiqiiq")
#: Offsets of the fields a cache compares, in a packed stat.
_CZXID, _VERSION, _CVERSION, _CHILDREN = 0, 32, 36, 56


class ChildData:
    """One node as a cache holds it: Curator's ``ChildData``, its ``path``, ``stat`` (kazoo's
    ``ZnodeStat``) and ``data`` (None for a node made without data).

    Equal by path, stat and data; ordered by path. A cache holds thousands: the stat is kept
    packed (Java's 68 bytes) and made a ``ZnodeStat`` again when read."""

    __slots__ = ("_stat", "data", "path")

    def __init__(self, path: str, stat: Any, data: bytes | None) -> None:
        self.path = path
        self._stat = _STAT.pack(*stat)
        self.data = data

    @property
    def stat(self) -> ZnodeStat:
        """The node's stat, as last read."""
        return ZnodeStat(*_STAT.unpack(self._stat))

    @property
    def version(self) -> int:
        """The stat's data version."""
        return int.from_bytes(self._stat[_VERSION : _VERSION + 4], "big", signed=True)

    def same_node(self, other: ChildData) -> bool:
        """Whether ``other`` is a read of the same node (made by the same create), not one
        deleted and made again at its path."""
        return self._stat[_CZXID : _CZXID + 8] == other._stat[_CZXID : _CZXID + 8]

    def children_changed(self, other: ChildData) -> bool:
        """Whether the children of the node have changed between this read and ``other``."""
        return self._stat[_CVERSION : _CVERSION + 4] != other._stat[_CVERSION : _CVERSION + 4]

    @property
    def has_children(self) -> bool:
        """Whether the node had children when read."""
        return self._stat[_CHILDREN : _CHILDREN + 4] != b"\0\0\0\0"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChildData):
            return NotImplemented
        return self.path == other.path and self._stat == other._stat and self.data == other.data

    def __hash__(self) -> int:
        return hash((self.path, self._stat, self.data))

    def __lt__(self, other: ChildData) -> bool:
        return self.path < other.path

    def __repr__(self) -> str:
        return f"ChildData(path={self.path!r}, stat={self.stat!r}, data={self.data!r})"


class CacheEvent:
    """What a cache tells of one node: its ``type``, the node as held before (``old_data``:
    None for a creation) and after (``data``: None for a deletion). Unpacks as ``type,
    old_data, data``, the arguments a listener is called with."""

    __slots__ = ("data", "old_data", "type")

    def __init__(
        self, type: CacheEventType, old_data: ChildData | None, data: ChildData | None
    ) -> None:
        self.type = type
        self.old_data = old_data
        self.data = data

    @property
    def path(self) -> str:
        """The node's path."""
        node = self.data if self.data is not None else self.old_data
        assert node is not None
        return node.path

    def __iter__(self) -> Iterator[Any]:
        return iter((self.type, self.old_data, self.data))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CacheEvent):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"CacheEvent({self.type.name}, {self.path!r})"


class CacheTree:
    """The nodes a cache of ``root`` holds, by path, and the events their reads make.

    :meth:`read` and :meth:`gone` apply the server's answer for one node, in the order the
    reads were sent, and give the events it makes (told in that order). The tree holds only
    what was read; it says which nodes to read again (:meth:`rebuild_paths`), whose children
    to list (:meth:`must_list`) and which listed children are new (:meth:`unknown`)."""

    __slots__ = ("nodes", "recursive", "root")

    def __init__(self, root: str, recursive: bool) -> None:
        self.root = root
        self.recursive = recursive
        #: the nodes held, by path
        self.nodes: dict[str, ChildData] = {}

    def read(self, path: str, stat: Any, data: bytes | None) -> list[CacheEvent]:
        """The node at ``path`` was read: held from now on; the events its read makes (none
        when it is the version held already)."""
        node = ChildData(path, stat, data)
        old = self.nodes.get(path)
        self.nodes[path] = node
        if old is None:
            return [CacheEvent(CREATED, None, node)]
        if not old.same_node(node):
            return [CacheEvent(DELETED, old, None), CacheEvent(CREATED, None, node)]
        if old.version != node.version:
            return [CacheEvent(CHANGED, old, node)]
        return []

    def gone(self, path: str) -> list[CacheEvent]:
        """The node at ``path`` was found gone: its deletion, if it was held."""
        old = self.nodes.pop(path, None)
        return [] if old is None else [CacheEvent(DELETED, old, None)]

    def must_list(self, before: ChildData | None, after: ChildData) -> bool:
        """Whether the children of a node read as ``after`` (held as ``before``, or not held)
        must be listed to find those the cache does not hold."""
        if not self.recursive:
            return False
        if before is None or not before.same_node(after):
            return after.has_children
        return before.children_changed(after) and after.has_children

    def unknown(self, parent: str, names: list[str]) -> list[str]:
        """The paths of the children ``names`` of ``parent`` the tree does not hold."""
        nodes = self.nodes
        prefix = "/" if parent == "/" else parent + "/"
        return [path for path in (prefix + name for name in names) if path not in nodes]

    def rebuild_paths(self) -> list[str]:
        """What a rebuild reads again: the root first, then every node held."""
        return [self.root, *(path for path in self.nodes if path != self.root)]

    def covers(self, path: str) -> bool:
        """Whether the cache holds ``path`` when it exists."""
        if path == self.root:
            return True
        if not self.recursive:
            return False
        return path.startswith("/" if self.root == "/" else self.root + "/")

    def __len__(self) -> int:
        return len(self.nodes)


def deletions_first(events: list[CacheEvent]) -> list[CacheEvent]:
    """A rebuild's events in the order they are told: the nodes found gone first, deepest
    first (as a subtree is deleted, leaves first), then the others as read."""
    gone = [event for event in events if event.type is DELETED and event.data is None]
    if not gone:
        return events
    rest = [event for event in events if not (event.type is DELETED and event.data is None)]
    gone.sort(key=lambda event: -event.path.count("/"))
    return gone + rest


# -- gzip, as Curator's GzipCompressionProvider ---------------------------------------------------

#: Curator's gzip header: no flags, MTIME 0, XFL 0, and the OS byte of JDK 16 and later (255;
#: Curator before 5.6, or on an older JDK, writes 0). Readers ignore the OS byte.
GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")
#: What Curator writes for empty data (its ``COMPRESSED_EMPTY_BYTES``).
GZIP_EMPTY = GZIP_HEADER + bytes.fromhex("03000000000000000000")


def compress(data: bytes) -> bytes:
    """``data`` as Curator's ``compressed()`` writes it: gzip with Curator's header, deflated
    at zlib's default level as Java's ``Deflater`` does."""
    if not data:
        return GZIP_EMPTY
    deflater = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_HEADER + body + trailer


def decompress(path: str, data: bytes | None) -> bytes | None:
    """The data of the node at ``path``, read as gzip (None stays None, as in Curator);
    :class:`~pycurator._protocol.errors.CompressedDataError` naming the node when it is not
    gzip, is cut short, or has bytes after its one gzip member (Curator refuses them: "Expected
    just one GZip block, without garbage in the end")."""
    if data is None:
        return None
    if data[:2] != GZIP_HEADER[:2]:
        reason = "empty" if not data else "not gzip (no gzip magic number)"
        raise CompressedDataError(path, reason)
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        unzipped = inflater.decompress(data)
    except zlib.error as exc:
        raise CompressedDataError(path, f"bad gzip: {exc}") from None
    if not inflater.eof:
        raise CompressedDataError(path, "gzip cut short")
    if inflater.unused_data:  # Curator reads one member, and nothing after it
        raise CompressedDataError(path, "more than one gzip member, or bytes after it")
    return unzipped


__all__ = [
    "CHANGED",
    "CREATED",
    "DELETED",
    "GZIP_EMPTY",
    "GZIP_HEADER",
    "CacheEvent",
    "CacheEventType",
    "CacheOption",
    "CacheTree",
    "ChildData",
    "compress",
    "decompress",
    "deletions_first",
]
