"""The cache's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one exchange with a cache's protocol
(:class:`~pycurator._recipes.cache.Mirror`): every request it sends, in order, the events its
cache tells and when ``initialized()`` comes. The same protocol runs on a real server in
test_cache.py, and beside Java's ``CuratorCache`` in interop/test_cache_interop.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError, NoNodeError, UnimplementedError
from kazoo.protocol.states import EventType, KazooState, ZnodeStat

from pycurator._protocol.cache import CacheEvent, CacheTree, compress, decompress
from pycurator._protocol.errors import CompressedDataError
from pycurator._protocol.requests import (
    AddWatch,
    AddWatchMode,
    GetData,
    ListChildren,
    NodeExists,
)
from pycurator._recipes.cache import Mirror

from .scripted import WATCHED, Entry, Fire, Reply, ScriptedServer, State, Stop

ROOT = "/cache"
SESSION, NEW_SESSION = 1, 2


def node(czxid: int, version: int = 0, children: int = 0, cversion: int = 0) -> ZnodeStat:
    """A node's stat: made at ``czxid``, at ``version``, with ``children`` (``cversion``)."""
    return ZnodeStat(czxid, czxid + version, 0, 0, version, cversion, 0, 0, 0, children, czxid)


def read(path: str, data: bytes | None, stat: ZnodeStat, *, watched: bool = False) -> Reply:
    return Reply(GetData(path, WATCHED if watched else None), (data, stat))


def gone(path: str, *, watched: bool = False) -> Reply:
    return Reply(GetData(path, WATCHED if watched else None), error=NoNodeError())


def listed(path: str, *names: str, watched: bool = False) -> Reply:
    return Reply(ListChildren(path, WATCHED if watched else None), list(names))


def watch(mode: AddWatchMode = AddWatchMode.PERSISTENT_RECURSIVE, **kwargs: Any) -> Reply:
    return Reply(AddWatch(ROOT, WATCHED, mode), **kwargs)


class Told:
    """What the cache tells: its events as (kind, path, old data, new data), and where
    ``initialized()`` came among them, and the errors."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, bytes | None, bytes | None]] = []
        self.initialized_after: int | None = None
        self.errors: list[Exception] = []

    def tell(self, events: list[CacheEvent]) -> None:
        for event in events:
            old = None if event.old_data is None else event.old_data.data
            new = None if event.data is None else event.data.data
            self.events.append((event.type.name[5:], event.path, old, new))

    def initialized(self) -> None:
        assert self.initialized_after is None, "initialized() told twice"
        self.initialized_after = len(self.events)


def play(script: list[Entry], *, recursive: bool = True, **kwargs: Any) -> tuple[Told, Mirror]:
    """Run a cache of ROOT on ``script`` (which ends with the client's stop)."""
    told = Told()
    mirror = Mirror(
        CacheTree(ROOT, recursive),
        compressed=kwargs.pop("compressed", False),
        tell=told.tell,
        initialized=told.initialized,
        on_error=told.errors.append,
        **kwargs,
    )
    server = ScriptedServer(script, session=SESSION)
    server.run(mirror.steps())
    server.finish()
    return told, mirror


#: The tree most tests start from: the root, a leaf ``a``, and ``b`` with a child ``c``.
LOAD: list[Entry] = [
    watch(),
    read(ROOT, b"r", node(10, children=2, cversion=2)),
    listed(ROOT, "a", "b"),
    read(f"{ROOT}/a", b"1", node(11)),
    read(f"{ROOT}/b", b"", node(12, children=1, cversion=1)),
    listed(f"{ROOT}/b", "c"),
    read(f"{ROOT}/b/c", b"c", node(13)),
]
LOADED = [
    ("CREATED", ROOT, None, b"r"),
    ("CREATED", f"{ROOT}/a", None, b"1"),
    ("CREATED", f"{ROOT}/b", None, b""),
    ("CREATED", f"{ROOT}/b/c", None, b"c"),
]


def test_the_load_sets_one_recursive_watch_reads_level_by_level_and_lists_only_parents() -> None:
    told, mirror = play([*LOAD, Stop()])
    assert told.events == LOADED
    assert told.initialized_after == 4
    assert sorted(mirror.tree.nodes) == [ROOT, f"{ROOT}/a", f"{ROOT}/b", f"{ROOT}/b/c"]


def test_a_missing_root_loads_nothing_and_is_initialized_at_once() -> None:
    told, _ = play([watch(), gone(ROOT), Stop()])
    assert told.events == [] and told.initialized_after == 0


def test_each_event_reads_its_node_again_and_tells_what_the_answer_says() -> None:
    """A change of the same bytes is told (versions differ), a read of the version held
    tells nothing, a deleted subtree is told leaves first."""
    told, mirror = play(
        [
            *LOAD,
            Fire(f"{ROOT}/a", EventType.CHANGED),
            read(f"{ROOT}/a", b"1", node(11, version=1)),
            Fire(f"{ROOT}/a", EventType.CHANGED),
            read(f"{ROOT}/a", b"1", node(11, version=1)),
            Fire(f"{ROOT}/b/c", EventType.DELETED),
            gone(f"{ROOT}/b/c"),
            Fire(f"{ROOT}/b", EventType.DELETED),
            gone(f"{ROOT}/b"),
            Fire(f"{ROOT}/d", EventType.CREATED),
            read(f"{ROOT}/d", b"d", node(20)),
            Stop(),
        ]
    )
    assert told.events[4:] == [
        ("CHANGED", f"{ROOT}/a", b"1", b"1"),
        ("DELETED", f"{ROOT}/b/c", b"c", None),
        ("DELETED", f"{ROOT}/b", b"", None),
        ("CREATED", f"{ROOT}/d", None, b"d"),
    ]
    assert sorted(mirror.tree.nodes) == [ROOT, f"{ROOT}/a", f"{ROOT}/d"]


def test_an_event_whose_read_finds_the_node_made_again_tells_it_once() -> None:
    """A change is heard; by the time it is read, the node was deleted and made again. The
    read tells the deletion and the creation; the watch's own deletion and creation events,
    heard after, read the same node again and tell nothing twice."""
    told, _ = play(
        [
            *LOAD,
            Fire(f"{ROOT}/a", EventType.CHANGED),
            read(f"{ROOT}/a", b"new", node(30)),
            Fire(f"{ROOT}/a", EventType.DELETED),
            read(f"{ROOT}/a", b"new", node(30)),
            Fire(f"{ROOT}/a", EventType.CREATED),
            read(f"{ROOT}/a", b"new", node(30)),
            Stop(),
        ]
    )
    assert told.events[4:] == [
        ("DELETED", f"{ROOT}/a", b"1", None),
        ("CREATED", f"{ROOT}/a", None, b"new"),
    ]


def test_after_a_reconnect_every_node_is_read_again_and_only_differences_are_told() -> None:
    """Away: ``a`` changed, ``b/c`` deleted, ``e`` made, and the root's data set again to the
    same bytes. Back, the root and every node held are read again (the watch is the client's
    to set again), the root's changed children listed, and only the differences told: the
    deletion first."""
    told, _ = play(
        [
            *LOAD,
            State(KazooState.SUSPENDED),
            State(KazooState.CONNECTED),
            read(ROOT, b"r", node(10, version=1, children=3, cversion=3)),
            read(f"{ROOT}/a", b"2", node(11, version=1)),
            read(f"{ROOT}/b", b"", node(12, cversion=2)),
            gone(f"{ROOT}/b/c"),
            listed(ROOT, "a", "b", "e"),
            read(f"{ROOT}/e", b"e", node(40)),
            Stop(),
        ]
    )
    assert told.events[4:] == [
        ("DELETED", f"{ROOT}/b/c", b"c", None),
        ("CHANGED", ROOT, b"r", b"r"),
        ("CHANGED", f"{ROOT}/a", b"1", b"2"),
        ("CREATED", f"{ROOT}/e", None, b"e"),
    ]
    assert told.initialized_after == 4  # once


def test_a_node_made_again_at_the_same_version_while_away_is_told_deleted_and_created() -> None:
    """Curator compares versions alone, and tells nothing here (keeping the old node's last
    event); the creation zxid tells the new node from the old."""
    told, mirror = play(
        [
            *LOAD,
            State(KazooState.SUSPENDED),
            State(KazooState.CONNECTED),
            read(ROOT, b"r", node(10, children=2, cversion=4)),
            read(f"{ROOT}/a", b"again", node(50)),
            read(f"{ROOT}/b", b"", node(12, children=1, cversion=1)),
            read(f"{ROOT}/b/c", b"c", node(13)),
            listed(ROOT, "a", "b"),
            Stop(),
        ]
    )
    assert told.events[4:] == [
        ("DELETED", f"{ROOT}/a", b"1", None),
        ("CREATED", f"{ROOT}/a", None, b"again"),
    ]
    held = mirror.tree.nodes[f"{ROOT}/a"]
    assert held.data == b"again" and held.stat.czxid == 50


def test_after_an_expiry_the_watch_is_set_again_in_the_new_session() -> None:
    told, _ = play(
        [
            *LOAD,
            State(KazooState.LOST),
            State(KazooState.CONNECTED, NEW_SESSION),
            watch(),
            read(ROOT, b"r", node(10, children=2, cversion=2)),
            read(f"{ROOT}/a", b"1", node(11)),
            read(f"{ROOT}/b", b"", node(12, children=1, cversion=1)),
            gone(f"{ROOT}/b/c"),  # an ephemeral node of the old session
            Stop(),
        ]
    )
    assert told.events[4:] == [("DELETED", f"{ROOT}/b/c", b"c", None)]


def test_reads_lost_with_the_connection_are_read_and_listings_made_by_the_next_rebuild() -> None:
    """The load loses the connection as it reads ``a`` and ``b``: ``b`` is held, but its
    children were not listed yet, and their version will not have changed since; the rebuild
    reads ``a`` and lists ``b``'s children all the same."""
    told, _ = play(
        [
            watch(),
            read(ROOT, b"r", node(10, children=2, cversion=2)),
            listed(ROOT, "a", "b"),
            Reply(GetData(f"{ROOT}/a"), error=ConnectionLoss(), disconnects=True),
            read(f"{ROOT}/b", b"", node(12, children=1, cversion=1)),
            State(KazooState.SUSPENDED),
            State(KazooState.CONNECTED),
            read(ROOT, b"r", node(10, children=2, cversion=2)),
            read(f"{ROOT}/b", b"", node(12, children=1, cversion=1)),
            read(f"{ROOT}/a", b"1", node(11)),
            listed(f"{ROOT}/b", "c"),
            read(f"{ROOT}/b/c", b"c", node(13)),
            Stop(),
        ]
    )
    assert sorted(told.events) == sorted(LOADED)
    assert told.initialized_after == 4


def test_a_server_without_watches_that_stay_is_followed_with_one_shot_watches() -> None:
    """Curator's bridge falls back to its TreeCache: a data and a child watch on every node,
    a child change listed again, a new node read and listed (setting its watches)."""
    told, _ = play(
        [
            watch(error=UnimplementedError()),
            read(ROOT, b"r", node(10, children=1, cversion=1), watched=True),
            listed(ROOT, "a", watched=True),
            read(f"{ROOT}/a", b"1", node(11), watched=True),
            listed(f"{ROOT}/a", watched=True),
            Fire(ROOT, EventType.CHILD),
            listed(ROOT, "a", "b", watched=True),
            read(f"{ROOT}/b", b"2", node(12), watched=True),
            listed(f"{ROOT}/b", watched=True),
            Fire(f"{ROOT}/a", EventType.CHANGED),
            read(f"{ROOT}/a", b"3", node(11, version=1), watched=True),
            Fire(f"{ROOT}/b", EventType.DELETED),
            gone(f"{ROOT}/b", watched=True),
            Stop(),
        ]
    )
    assert told.events == [
        ("CREATED", ROOT, None, b"r"),
        ("CREATED", f"{ROOT}/a", None, b"1"),
        ("CREATED", f"{ROOT}/b", None, b"2"),
        ("CHANGED", f"{ROOT}/a", b"1", b"3"),
        ("DELETED", f"{ROOT}/b", b"2", None),
    ]


def test_with_one_shot_watches_a_missing_root_is_watched_until_made() -> None:
    told, _ = play(
        [
            gone(ROOT, watched=True),
            Reply(NodeExists(ROOT, WATCHED), None),
            Fire(ROOT, EventType.CREATED),
            read(ROOT, b"r", node(10), watched=True),
            listed(ROOT, watched=True),
            Stop(),
        ],
        watchers=True,
    )
    assert told.events == [("CREATED", ROOT, None, b"r")]


def test_a_single_node_cache_watches_the_node_alone_and_lists_nothing() -> None:
    told, _ = play(
        [
            watch(AddWatchMode.PERSISTENT),
            read(ROOT, b"r", node(10, children=3, cversion=3)),
            Fire(ROOT, EventType.CHANGED),
            read(ROOT, b"s", node(10, version=1, children=3, cversion=3)),
            Stop(),
        ],
        recursive=False,
    )
    assert told.events == [("CREATED", ROOT, None, b"r"), ("CHANGED", ROOT, b"r", b"s")]


def test_compressed_data_is_told_unzipped_and_data_that_does_not_unzip_names_its_node() -> None:
    told, mirror = play(
        [
            watch(),
            read(ROOT, None, node(10, children=2, cversion=2)),
            listed(ROOT, "z", "bad"),
            read(f"{ROOT}/z", compress(b"hello " * 20), node(11)),
            read(f"{ROOT}/bad", b"plain", node(12)),
            Stop(),
        ],
        compressed=True,
    )
    assert told.events == [
        ("CREATED", ROOT, None, None),
        ("CREATED", f"{ROOT}/z", None, b"hello " * 20),
    ]
    (error,) = told.errors
    assert isinstance(error, CompressedDataError) and error.path == f"{ROOT}/bad"
    assert f"{ROOT}/bad" in str(error) and f"{ROOT}/bad" not in mirror.tree.nodes


def test_a_node_the_cache_may_not_read_is_told_as_an_error_and_skipped() -> None:
    told, _ = play(
        [
            watch(),
            read(ROOT, b"r", node(10, children=2, cversion=2)),
            listed(ROOT, "secret", "a"),
            Reply(GetData(f"{ROOT}/secret"), error=NoAuthError()),
            read(f"{ROOT}/a", b"1", node(11)),
            Stop(),
        ]
    )
    assert [event[1] for event in told.events] == [ROOT, f"{ROOT}/a"]
    assert [type(error) for error in told.errors] == [NoAuthError]


@pytest.mark.parametrize(
    "data",
    [b"", b"plain text", compress(b"hello")[:-4], b"\x1f\x8b\x08\x00garbage"],
    ids=["empty", "not gzip", "cut short", "bad deflate"],
)
def test_data_that_does_not_unzip_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(CompressedDataError, match="/n: "):
        decompress("/n", data)
