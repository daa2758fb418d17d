"""kazoo's private attributes that pycurator relies on (all touched in pycurator._kazoo) still
behave as they did in the kazoo release that module names. A failure here means a kazoo
upgrade changed them: re-check every function of pycurator._kazoo before anything else."""

from __future__ import annotations

import inspect
from importlib.metadata import version

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoWatcherError
from kazoo.protocol.states import WatchedEvent

from pycurator import _kazoo
from pycurator._requests import RemoveWatches
from pycurator.testing.pytest_plugin import ZooKeeperTarget


def test_the_kazoo_release_is_the_one_checked_or_a_later_one_of_the_same_line() -> None:
    installed = tuple(int(part) for part in version("kazoo").split(".")[:2])
    checked = tuple(int(part) for part in _kazoo.CHECKED_VERSION.split(".")[:2])
    assert installed == checked, (
        f"kazoo {version('kazoo')} is installed; pycurator._kazoo was checked against "
        f"{_kazoo.CHECKED_VERSION}: check its functions and update CHECKED_VERSION"
    )


def test_stopped_is_told_before_start_while_started_and_after_stop(
    zk_server: ZooKeeperTarget,
) -> None:
    client = KazooClient(hosts=zk_server.hosts)
    assert _kazoo.is_stopped(client)
    client.start(timeout=30)
    try:
        assert not _kazoo.is_stopped(client)
    finally:
        client.stop()
        client.close()
    assert _kazoo.is_stopped(client)


@pytest.mark.parametrize("children", [False, True])
def test_watchers_are_registered_per_server_path_and_can_be_discarded(
    zk: KazooClient, zk_path: str, children: bool
) -> None:
    zk.ensure_path(zk_path)
    seen: list[WatchedEvent] = []
    if children:
        zk.get_children(zk_path, watch=seen.append)
    else:
        zk.get(zk_path, watch=seen.append)
    assert _kazoo.watchers(zk, zk_path, children=children) == {seen.append}
    assert _kazoo.watchers(zk, zk_path, children=not children) == set()
    assert zk_path in _kazoo.watched_paths(zk, children=children)
    assert _kazoo.discard_watcher(zk, zk_path, seen.append, children=children) is False
    assert _kazoo.watchers(zk, zk_path, children=children) == set()
    assert zk_path not in _kazoo.watched_paths(zk, children=children)


def test_call_sends_a_request_kazoo_does_not_know(zk: KazooClient, zk_path: str) -> None:
    assert list(inspect.signature(KazooClient._call).parameters) == [
        "self",
        "request",
        "async_object",
    ]
    zk.ensure_path(zk_path)
    result = zk.handler.async_result()
    _kazoo.call(zk, RemoveWatches(zk_path), result)
    with pytest.raises(NoWatcherError):
        result.get(timeout=20)


def test_observe_calls_sees_each_request_until_restored(zk: KazooClient, zk_path: str) -> None:
    seen: list[str] = []
    restore = _kazoo.observe_calls(zk, lambda request: seen.append(type(request).__name__))
    zk.exists(zk_path)
    zk.get_children("/")
    restore()
    zk.exists(zk_path)
    assert seen == ["Exists", "GetChildren"]
