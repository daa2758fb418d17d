"""CuratorCache on a real ZooKeeper: the events it tells for writes, a dropped connection and an
expiry (the sequences Java's ``CuratorCache`` tells, pinned in interop/test_cache_interop.py),
what it holds, its options, listeners and streams, and its life cycle; each with the watch that
stays and with the one-shot watches of a server that has none."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState

from pycurator import (
    CacheEvent,
    CacheOption,
    CompressedDataError,
    CuratorCache,
    CuratorCacheListener,
)
from pycurator._client import kazoo_internals
from pycurator._protocol.cache import compress
from pycurator._recipes import cache as cache_protocol
from pycurator.testing import (
    STEADY_RECONNECT,
    ClientFactory,
    FaultProxy,
    eventually,
    expire_kazoo_session,
)
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .support import SOON, Worker

CREATED, CHANGED, DELETED = "NODE_CREATED", "NODE_CHANGED", "NODE_DELETED"
Told = tuple[str, str, bytes | None, bytes | None]


@pytest.fixture(params=["watch that stays", "one-shot watches"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How the caches follow the tree: ZooKeeper's ``addWatch``, or the one-shot watches of
    a server without it."""
    monkeypatch.setattr(cache_protocol, "ONE_SHOT_ONLY", request.param == "one-shot watches")
    return str(request.param)


@pytest.fixture
def caches() -> Iterator[list[CuratorCache]]:
    made: list[CuratorCache] = []
    yield made
    for cache in made:
        cache.close()


class Recorder:
    """A listener that notes each event as (kind, path, old data, new data), the thread it
    ran on, and where ``initialized()`` came."""

    def __init__(self) -> None:
        self.events: list[Told] = []
        self.threads: set[str] = set()
        self.initialized_after: int | None = None

    def event(self, kind: Any, old: Any, new: Any) -> None:
        self.threads.add(threading.current_thread().name)
        node = new if new is not None else old
        self.events.append((kind.name, node.path, old and old.data, new and new.data))

    def initialized(self) -> None:
        self.initialized_after = len(self.events)


def started(
    caches: list[CuratorCache], client: KazooClient, root: str, *options: Any
) -> tuple[CuratorCache, Recorder]:
    cache = CuratorCache(client, root, options)
    caches.append(cache)
    recorder = Recorder()
    cache.add_listener(recorder)
    cache.start()
    assert cache.wait_initialized(SOON)
    return cache, recorder


def server_tree(zk: KazooClient, root: str) -> dict[str, tuple[bytes | None, int]]:
    """Every node at or below ``root``, with its data and version."""
    found: dict[str, tuple[bytes | None, int]] = {}
    try:
        data, stat = zk.get(root)
        names = zk.get_children(root)
    except NoNodeError:
        return found
    found[root] = (data, stat.version)
    for name in names:
        found.update(server_tree(zk, f"{root}/{name}"))
    return found


def settle(cache: CuratorCache, recorder: Recorder, zk: KazooClient, root: str) -> None:
    """Wait until the cache holds what the server holds at or below ``root``, and its
    listener has heard the last change."""

    def same() -> bool:
        held = {node.path: (node.data, node.stat.version) for node in cache}
        if held != server_tree(zk, root):
            return False
        last: dict[str, bytes | None] = {}
        for kind, path, _, new in recorder.events:
            last[path] = new if kind != DELETED else None
        return {p: d for p, d in last.items() if d is not None or p in held} == {
            path: data for path, (data, _) in held.items()
        }

    eventually(same, what=f"{cache!r} holds what the server holds, and has told it")


def test_writes_are_told_as_javas_cache_tells_them(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    """The sequence Java's CuratorCache tells for the same writes (interop pins it): a write
    of the same bytes too, nested creates parents first, a subtree deleted leaves first, the
    cached root deleted and made again; nothing before ``initialized()`` on a missing root."""
    root = f"{zk_path}/cache"
    cache, recorder = started(caches, zk, root)
    assert recorder.initialized_after == 0 and cache.size() == 0
    zk.ensure_path(zk_path)
    steps: list[Callable[[], object]] = [
        lambda: zk.create(root, b"r"),
        lambda: zk.create(f"{root}/a", b"1"),
        lambda: zk.set(f"{root}/a", b"2"),
        lambda: zk.set(f"{root}/a", b"2"),
        lambda: zk.create(f"{root}/a/b/c", b"c", makepath=True),
        lambda: zk.set(f"{root}/a/b/c", b"c2"),
        lambda: zk.delete(f"{root}/a/b/c"),
        lambda: zk.delete(f"{root}/a", recursive=True),
        lambda: zk.set(root, b"r2"),
        lambda: zk.delete(root),
        lambda: zk.create(root, b"again"),
    ]
    for step in steps:
        step()
        settle(cache, recorder, zk, root)
    assert recorder.events == [
        (CREATED, root, None, b"r"),
        (CREATED, f"{root}/a", None, b"1"),
        (CHANGED, f"{root}/a", b"1", b"2"),
        (CHANGED, f"{root}/a", b"2", b"2"),
        (CREATED, f"{root}/a/b", None, b""),
        (CREATED, f"{root}/a/b/c", None, b"c"),
        (CHANGED, f"{root}/a/b/c", b"c", b"c2"),
        (DELETED, f"{root}/a/b/c", b"c2", None),
        (DELETED, f"{root}/a/b", b"", None),
        (DELETED, f"{root}/a", b"2", None),
        (CHANGED, root, b"r", b"r2"),
        (DELETED, root, b"r2", None),
        (CREATED, root, None, b"again"),
    ]
    assert recorder.initialized_after == 0


def test_the_first_load_tells_each_node_parents_first_then_initialized(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    for path, data in [(root, b"r"), (f"{root}/x", b"x"), (f"{root}/x/z", b"z"),
                       (f"{root}/y", b"")]:  # fmt: skip
        zk.create(path, data, makepath=True)
    cache, recorder = started(caches, zk, root)
    assert recorder.initialized_after == 4 == len(recorder.events)
    paths = [event[1] for event in recorder.events]
    assert paths[0] == root and paths.index(f"{root}/x") < paths.index(f"{root}/x/z")
    assert cache.size() == 4 and sorted(node.path for node in cache) == sorted(paths)
    found = cache.get(f"{root}/x/z")
    assert found is not None and found.data == b"z" and found.stat == zk.exists(f"{root}/x/z")
    assert cache.get(f"{root}/none") is None
    assert "kazoo" not in " ".join(recorder.threads).lower()  # a worker, not kazoo's threads


@pytest.fixture
def front(zk_server: ZooKeeperTarget) -> Iterator[FaultProxy]:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        yield proxy


def test_after_a_dropped_connection_only_the_differences_are_told(
    mode: str,
    front: FaultProxy,
    zk_client_factory: ClientFactory,
    zk: KazooClient,
    zk_path: str,
    caches: list[CuratorCache],
) -> None:
    """While away: a change, a delete, a new subtree, and a node deleted and made again at
    the same version with other data. Back: the first three are told (as Java tells them),
    and the last as deleted and created (Java tells nothing, and keeps the old node's last
    event as its state)."""
    root = f"{zk_path}/cache"
    for path, data in [(root, b"r"), (f"{root}/a", b"1"), (f"{root}/gone", b"g"),
                       (f"{root}/same", b"s")]:  # fmt: skip
        zk.create(path, data, makepath=True)
    client = zk_client_factory(hosts=front.hosts, timeout=30.0, connection_retry=STEADY_RECONNECT)
    cache, recorder = started(caches, client, root)
    told = len(recorder.events)
    front.blackhole()
    front.drop_connections()
    eventually(lambda: not client.connected, what="the cache's client disconnected")
    zk.set(f"{root}/a", b"2")
    zk.delete(f"{root}/gone")
    zk.create(f"{root}/new/kid", b"k", makepath=True)
    zk.delete(f"{root}/same")
    zk.create(f"{root}/same", b"s2")
    front.heal()
    settle(cache, recorder, zk, root)
    after = recorder.events[told:]
    assert sorted(after) == sorted(
        [
            (CHANGED, f"{root}/a", b"1", b"2"),
            (DELETED, f"{root}/gone", b"g", None),
            (CREATED, f"{root}/new", None, b""),
            (CREATED, f"{root}/new/kid", None, b"k"),
            (DELETED, f"{root}/same", b"s", None),
            (CREATED, f"{root}/same", None, b"s2"),
        ]
    )
    paths = [event[1] for event in after]
    assert paths.index(f"{root}/new") < paths.index(f"{root}/new/kid")
    assert after.index((DELETED, f"{root}/same", b"s", None)) < after.index(
        (CREATED, f"{root}/same", None, b"s2")
    )


def test_after_an_expiry_the_sessions_own_ephemeral_is_told_deleted(
    mode: str, zk_client_factory: ClientFactory, zk: KazooClient, zk_path: str,
    caches: list[CuratorCache],
) -> None:  # fmt: skip
    root = f"{zk_path}/cache"
    zk.create(f"{root}/a", b"1", makepath=True)
    client = zk_client_factory(connection_retry=STEADY_RECONNECT)
    client.create(f"{root}/mine", b"m", ephemeral=True)
    cache, recorder = started(caches, client, root)
    told = len(recorder.events)
    expire_kazoo_session(client)
    zk.set(f"{root}/a", b"2")
    settle(cache, recorder, zk, root)
    assert sorted(recorder.events[told:]) == [
        (CHANGED, f"{root}/a", b"1", b"2"),
        (DELETED, f"{root}/mine", b"m", None),
    ]
    zk.set(f"{root}/a", b"3")  # followed in the new session
    settle(cache, recorder, zk, root)
    assert recorder.events[-1] == (CHANGED, f"{root}/a", b"2", b"3")


def test_a_single_node_cache_tells_only_its_node(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    zk.create(f"{root}/child", b"c", makepath=True)
    cache, recorder = started(caches, zk, root, "SINGLE_NODE_CACHE")
    zk.set(f"{root}/child", b"c2")
    zk.create(f"{root}/other", b"o")
    zk.set(root, b"r")
    eventually(lambda: len(recorder.events) == 2, what="the root's events")
    assert recorder.events == [(CREATED, root, None, b""), (CHANGED, root, b"", b"r")]
    assert [node.path for node in cache] == [root]


def test_compressed_data_is_told_unzipped_and_data_that_does_not_unzip_is_named(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    """As Java's: the root made empty does not unzip (told to the handler, not held), a node
    Curator compressed is told unzipped; a node of plain bytes is named in its error."""
    root = f"{zk_path}/cache"
    zk.ensure_path(root)
    errors: list[Exception] = []
    cache = CuratorCache(zk, root, [CacheOption.COMPRESSED_DATA], exception_handler=errors.append)
    caches.append(cache)
    recorder = Recorder()
    cache.add_listener(recorder)
    cache.start()
    assert cache.wait_initialized(SOON)
    zk.create(f"{root}/z", compress(b"hello " * 20))
    eventually(lambda: len(recorder.events) == 1, what="the compressed node's event")
    assert recorder.events == [(CREATED, f"{root}/z", None, b"hello " * 20)]
    zk.create(f"{root}/plain", b"plain")
    eventually(lambda: len(errors) == 2, what="two errors")
    assert [type(e) for e in errors] == [CompressedDataError] * 2
    assert [e.path for e in errors] == [root, f"{root}/plain"]  # type: ignore[attr-defined]
    assert cache.get(f"{root}/plain") is None and cache.get(root) is None


def test_close_stops_the_listeners_and_the_streams_and_clears_unless_asked_not_to(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    zk.create(root, b"r", makepath=True)
    cache, recorder = started(caches, zk, root)
    kept, _ = started(caches, zk, root, "DO_NOT_CLEAR_ON_CLOSE")
    stream = cache.events()
    zk.set(root, b"s")
    eventually(lambda: len(recorder.events) == 2)
    # the stream is told right after the listeners, on the cache's worker: a close between
    # the two would end it before its event, so the event is taken first
    taken = Worker(lambda: next(stream))
    taken.start()
    assert taken.outcome(SOON).type.name == CHANGED
    cache.close()
    kept.close()
    zk.set(root, b"t")
    assert list(stream) == []  # ends with the cache
    assert cache.size() == 0 and kept.size() == 1 and kept.get(root) is not None
    assert len(recorder.events) == 2
    cache.close()  # again: nothing
    assert not cache.wait_initialized(0)
    for children in (False, True):  # its one-shot watches too: kazoo keeps none of them
        assert not any(
            kazoo_internals.watchers(zk, path, children=children)
            for path in kazoo_internals.watched_paths(zk, children=children)
        )


def test_listeners_hear_in_order_each_from_its_addition_and_removal_stops_them(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    heard: list[tuple[str, str]] = []
    cache = CuratorCache(zk, root)
    caches.append(cache)

    def first(kind: Any, old: Any, new: Any) -> None:
        heard.append(("first", kind.name))

    cache.add_listener(first)
    cache.add_listener(
        CuratorCacheListener.builder()
        .for_creates(lambda node: heard.append(("second", node.path)))
        .build()
    )
    cache.start()
    assert cache.wait_initialized(SOON)
    zk.create(root, b"r", makepath=True)
    eventually(lambda: len(heard) == 2)
    assert heard == [("first", CREATED), ("second", root)]
    cache.remove_listener(first)
    zk.create(f"{root}/a")
    eventually(lambda: len(heard) == 3)
    assert heard[2] == ("second", f"{root}/a")


def test_a_stream_of_events_sees_what_listeners_see(
    mode: str, zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    root = f"{zk_path}/cache"
    zk.create(root, b"r", makepath=True)
    cache = CuratorCache(zk, root)
    caches.append(cache)
    events: list[CacheEvent] = []
    with cache.events() as stream:
        cache.start()
        assert cache.wait_initialized(SOON)
        zk.set(root, b"s")
        for event in stream:
            events.append(event)
            if event.type.name == CHANGED:
                break
    assert [(e.type.name, e.path) for e in events] == [(CREATED, root), (CHANGED, root)]
    assert list(stream) == []  # closed: ends at once


def test_bad_input_is_refused_by_name_before_anything_is_sent(zk: KazooClient) -> None:
    with pytest.raises(ValueError, match="Path must start with / character"):
        CuratorCache(zk, "no-slash")
    with pytest.raises(ValueError, match="not an option of CuratorCache: 'FAST'"):
        CuratorCache(zk, "/c", ["FAST"])
    with pytest.raises(TypeError, match="exception_handler must be callable"):
        CuratorCache(zk, "/c", exception_handler=3)  # type: ignore[arg-type]
    cache = CuratorCache(zk, "/c")
    with pytest.raises(TypeError, match="a cache listener must have event"):
        cache.add_listener(3)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not started"):
        cache.wait_initialized(0)


def test_start_twice_is_refused_as_curator_refuses_it(
    zk: KazooClient, zk_path: str, caches: list[CuratorCache]
) -> None:
    cache = CuratorCache(zk, zk_path)
    caches.append(cache)
    cache.start()
    with pytest.raises(RuntimeError, match="Cannot be started more than once"):
        cache.start()


def test_a_stopped_client_ends_the_cache_quietly(
    mode: str, zk_client_factory: ClientFactory, zk_path: str, caches: list[CuratorCache]
) -> None:
    client = zk_client_factory()
    cache, _ = started(caches, client, zk_path)
    stopped = threading.Event()
    client.add_listener(lambda state: state == KazooState.LOST and stopped.set())  # type: ignore[func-returns-value]
    client.stop()
    assert stopped.wait(SOON)
    cache.close()
