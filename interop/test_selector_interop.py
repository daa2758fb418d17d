"""LeaderSelector: pycurator and Java Curator 5.x selectors take turns on one leader path."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import LeaderSelector, Leadership, Participant
from pycurator.testing import ClientFactory, JavaSelector, jclass
from tests.support import SOON, children, eventually

from .conftest import CuratorFactory

pytestmark = pytest.mark.usefixtures("no_orphans")


def java_selector(
    client: Any, path: str, participant_id: str, take: Callable[[Any], None], *, requeue: bool
) -> Any:
    """Curator's ``LeaderSelector`` whose ``takeLeadership(client)`` calls ``take(client)``."""
    return JavaSelector(client, path, take, participant_id, auto_requeue=requeue).java


def java_participants(selector: Any) -> list[Participant]:
    return [Participant(str(p.getId()), bool(p.isLeader())) for p in selector.getParticipants()]


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    """Selectors of either language to close after the test (once; a second close raises)."""
    selectors: list[Any] = []
    yield selectors
    for selector in selectors:
        with contextlib.suppress(Exception):
            selector.close()


def test_java_and_python_selectors_see_one_leader_and_the_same_participants(
    curator: Any, zk: KazooClient, zk_path: str, closing: list[Any]
) -> None:
    path = f"{zk_path}/leader"
    java_leads, java_go = threading.Event(), threading.Event()
    python_leads = threading.Event()

    def take(client: Any) -> None:
        java_leads.set()
        java_go.wait(SOON)

    def lead(leadership: Leadership) -> None:
        python_leads.set()
        leadership.lost_event.wait(SOON)

    java = java_selector(curator, path, "java-1", take, requeue=False)
    python = LeaderSelector(zk, path, lead, "python-1")
    closing += [python, java]
    java.start()
    assert java_leads.wait(SOON)
    python.start()
    eventually(lambda: len(children(zk, path)) == 2, what="python queued behind java")
    expected = [Participant("java-1", True), Participant("python-1", False)]
    assert python.participants() == expected == java_participants(java)
    assert not python.has_leadership() and bool(java.hasLeadership())
    # the node seen on the server is not yet known to the selector that made it
    eventually(lambda: python.our_path is not None, what="python knows its node")
    (java_name,) = [n for n in children(zk, path) if python.our_path != f"{path}/{n}"]
    assert zk.get(f"{path}/{java_name}")[0] == b"java-1"
    java_go.set()  # takeLeadership returns: Java gives leadership up
    assert python_leads.wait(SOON)
    assert python.has_leadership()
    eventually(lambda: len(children(zk, path)) == 1, what="java's node released")
    assert java_participants(java) == [Participant("python-1", True)]
    python.close()
    eventually(lambda: children(zk, path) == [], what="python's node released")


def test_selectors_of_both_languages_take_turns_with_fenced_writes(
    curator_factory: CuratorFactory,
    zk_client_factory: ClientFactory,
    zk_path: str,
    closing: list[Any],
) -> None:
    path, counter = f"{zk_path}/leader", f"{zk_path}/counter"
    observer = zk_client_factory()
    observer.create(counter, b"0", makepath=True)
    guard = threading.Lock()
    current: list[str] = []
    overlaps: list[str] = []
    turns: dict[str, int] = {}
    enough = threading.Event()

    def turn(name: str, write: Callable[[], None]) -> None:
        with guard:
            if enough.is_set():
                return  # the test is winding down: no more writes, so closing cuts none short
            if current:
                overlaps.append(f"{name} while {current}")
            current.append(name)
        try:
            write()
        finally:
            with guard:
                current.remove(name)
                turns[name] = turns.get(name, 0) + 1
                if len(turns) == 4 and min(turns.values()) >= 3:
                    enough.set()

    def java_take(name: str) -> Callable[[Any], None]:
        def take(client: Any) -> None:
            def write() -> None:
                stat = jclass("org.apache.zookeeper.data.Stat")()
                value = int(bytes(client.getData().storingStatIn(stat).forPath(counter)))
                client.setData().withVersion(stat.getVersion()).forPath(
                    counter, str(value + 1).encode()
                )

            turn(name, write)

        return take

    def python_lead(name: str, client: KazooClient) -> Callable[[Leadership], None]:
        def lead(leadership: Leadership) -> None:
            def write() -> None:
                data, stat = client.get(counter)
                transaction = leadership.guarded_transaction()
                transaction.set_data(counter, str(int(data) + 1).encode(), stat.version)
                results = transaction.commit()
                assert not any(isinstance(r, Exception) for r in results), results

            turn(name, write)

        return lead

    for n in (1, 2):
        java = java_selector(
            curator_factory(), path, f"java-{n}", java_take(f"java-{n}"), requeue=True
        )
        closing.append(java)
        java.start()
        client = zk_client_factory()
        python = LeaderSelector(
            client, path, python_lead(f"python-{n}", client), f"python-{n}", auto_requeue=True
        )
        closing.append(python)
        python.start()
    assert enough.wait(SOON * 3), turns
    for selector in closing:
        selector.close()
    closing.clear()
    eventually(lambda: children(observer, path) == [], what="every selector's node released")
    with guard:
        total = sum(turns.values())
    assert overlaps == []
    assert int(observer.get(counter)[0]) == total  # no lost update: every turn's write landed
    observer.delete(counter)
