"""Both selectors follow one rule, Curator's, on whether a term queues again once it ended.

With ``auto_requeue`` (or :meth:`requeue` called meanwhile) a term queues again after any
ending of its election's steps, an error among them, except the selector's close, the client's
stop, a cancellation by the runner (an event loop shutting down), and an error no retry fixes
(``NoAuthError``... met by the steps, tested in ``test_unfixable_errors``). On a real server,
the steps end in an error when the node of a term that is over cannot be deleted: its path
refuses deletes (ZooKeeper checks a delete against the parent's ACL). Curator's selector logs
such a failed release and queues again; so does each of ours, and the new term leads once the
old node is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, Protocol, TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE, make_acl

from pycurator import (
    LeaderSelector,
    Leadership,
    LockEvent,
    LockEventKind,
    add_lock_listener,
    aio,
    remove_lock_listener,
)
from pycurator._client.callback_runner import Cancelled
from pycurator._cores.selector import Ending, ending_of, queues_again
from pycurator._protocol.transport import CLIENT_STOPPED
from pycurator.testing import ClientFactory

from .support import SOON, children, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")

T = TypeVar("T")

#: Anyone may do anything on the path but delete its children.
NO_DELETE = [make_acl("world", "anyone", read=True, write=True, create=True, admin=True)]
#: Seconds a test watches for a second term that must not come.
QUIET = 0.5
WAITING = LockEventKind.WAITING


class Leads:
    """What ``lead`` saw: the node of each term that led, and how many terms ended."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.ended = 0
        self._changed = threading.Condition()

    def began(self, node_path: str) -> None:
        with self._changed:
            self.nodes.append(node_path)
            self._changed.notify_all()

    def over(self) -> None:
        with self._changed:
            self.ended += 1
            self._changed.notify_all()

    def wait_for(self, led: int, ended: int = 0) -> bool:
        """Whether ``led`` terms led and ``ended`` of them ended, within SOON seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: len(self.nodes) >= led and self.ended >= ended, SOON
            )


class Selector(Protocol):
    """A selector as the scenarios use it, blocking."""

    @property
    def our_path(self) -> str | None: ...

    def start(self) -> None: ...

    def interrupt_leadership(self) -> None: ...

    def close(self, timeout: float | None = None) -> bool: ...


class Loop:
    """An event loop on a thread of its own, so that one blocking scenario drives both."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(2 * SOON)

    def close(self) -> None:
        self.call(self._cancel_the_rest())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(SOON)
        self._loop.close()

    @staticmethod
    async def _cancel_the_rest() -> None:
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class AioSelector:
    """An :class:`aio.LeaderSelector` driven from the test's thread."""

    def __init__(self, loop: Loop, selector: aio.LeaderSelector) -> None:
        self._loop = loop
        self._selector = selector

    @property
    def our_path(self) -> str | None:
        return self._selector.our_path

    def start(self) -> None:
        self._loop.call(self._selector.start())

    def interrupt_leadership(self) -> None:
        async def interrupt() -> None:  # on the loop, whose task it cancels
            self._selector.interrupt_leadership()

        self._loop.call(interrupt())

    def close(self, timeout: float | None = None) -> bool:
        return self._loop.call(self._selector.close(timeout))


class Front:
    """The threaded front end; :class:`AioFront` is the asyncio one. Each ``lead`` leads until
    its term ends."""

    name = "threaded"

    def selector(self, client: KazooClient, path: str, leads: Leads) -> Selector:
        def lead(leadership: Leadership) -> None:
            leads.began(leadership.node_path)
            try:
                leadership.lost_event.wait(4 * SOON)
            finally:
                leads.over()

        return LeaderSelector(client, path, lead, "a", auto_requeue=True)

    def close(self) -> None:
        pass


class AioFront(Front):
    name = "asyncio"

    def __init__(self) -> None:
        self.loop = Loop()

    def selector(self, client: KazooClient, path: str, leads: Leads) -> Selector:
        async def lead(leadership: aio.Leadership) -> None:
            leads.began(leadership.node_path)
            try:
                await leadership.lost_event.wait()  # cancelled when the term ends
            finally:
                leads.over()

        selector = aio.LeaderSelector(client, path, lead, "a", auto_requeue=True)
        return AioSelector(self.loop, selector)

    def close(self) -> None:
        self.loop.close()


@pytest.fixture(params=[Front, AioFront], ids=lambda kind: str(kind.name))
def front(request: pytest.FixtureRequest) -> Iterator[Front]:
    made: Front = request.param()
    yield made
    made.close()


class Story:
    """The lock events of one path, as they come."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.kinds: list[LockEventKind] = []
        self._changed = threading.Condition()

    def __call__(self, event: LockEvent) -> None:
        if event.path == self.path:
            with self._changed:
                self.kinds.append(event.kind)
                self._changed.notify_all()

    def turns_within(self, turns: int, timeout: float) -> bool:
        """Whether ``turns`` turns in the queue (waits) had begun within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.kinds.count(WAITING) >= turns, timeout)


@pytest.fixture
def path(zk_path: str, zk: KazooClient) -> str:
    made = f"{zk_path}/leader"
    zk.ensure_path(made)
    return made


@pytest.fixture
def story(path: str) -> Iterator[Story]:
    told = Story(path)
    add_lock_listener(told)
    yield told
    remove_lock_listener(told)


def test_a_term_whose_steps_end_in_an_error_queues_again_under_auto_requeue(
    front: Front,
    path: str,
    zk: KazooClient,
    story: Story,
    zk_client_factory: ClientFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    leads = Leads()
    selector = front.selector(zk_client_factory(), path, leads)
    selector.start()
    first = ""
    try:
        assert leads.wait_for(led=1)
        (first,) = leads.nodes
        zk.set_acls(path, NO_DELETE)
        selector.interrupt_leadership()
        assert leads.wait_for(led=1, ended=1)

        # the term's steps cannot delete its node: they end in NoAuthError, and queue again
        assert story.turns_within(2, SOON), "the selector queued again"
        eventually(lambda: selector.our_path not in (None, first), what="a new term's node")
        second = selector.our_path
        assert second is not None
        failures = [r.exc_info[1] for r in caplog.records if r.exc_info is not None]
        assert any(isinstance(error, NoAuthError) for error in failures), failures
        assert sorted(f"{path}/{name}" for name in children(zk, path)) == sorted([first, second])

        # the new term waits behind the old node, and leads once it is gone
        zk.set_acls(path, OPEN_ACL_UNSAFE)
        zk.delete(first)
        assert leads.wait_for(led=2)
        assert leads.nodes[1] == second
    finally:
        zk.set_acls(path, OPEN_ACL_UNSAFE)
        closed = selector.close(SOON)
        if first:
            with contextlib.suppress(NoNodeError):  # left behind when the test failed early
                zk.delete(first)
    assert closed
    assert children(zk, path) == []


def test_a_term_ended_by_the_clients_stop_does_not_queue_again(
    front: Front, path: str, zk: KazooClient, story: Story, zk_client_factory: ClientFactory
) -> None:
    leads = Leads()
    client = zk_client_factory()
    selector = front.selector(client, path, leads)
    selector.start()
    try:
        assert leads.wait_for(led=1)
        client.stop()
        assert leads.wait_for(led=1, ended=1)
        assert not story.turns_within(2, QUIET), "queued again after the client's stop"
        eventually(lambda: children(zk, path) == [], what="the session's node gone")
    finally:
        selector.close(SOON)
    assert len(leads.nodes) == 1


def test_a_term_ended_by_close_does_not_queue_again(
    front: Front, path: str, zk: KazooClient, story: Story, zk_client_factory: ClientFactory
) -> None:
    leads = Leads()
    selector = front.selector(zk_client_factory(), path, leads)
    selector.start()
    assert leads.wait_for(led=1)
    assert selector.close(SOON)
    assert leads.wait_for(led=1, ended=1)
    assert children(zk, path) == []
    assert not story.turns_within(2, QUIET), "queued again after close"
    assert len(leads.nodes) == 1


RULE = [
    # ending, auto_requeue, asked, expected
    (Ending.RETURNED, True, False, True),
    (Ending.RETURNED, False, True, True),
    (Ending.RETURNED, False, False, False),
    (Ending.ERROR, True, False, True),
    (Ending.ERROR, False, True, True),
    (Ending.ERROR, False, False, False),
    (Ending.CANCELLED, True, True, False),
    (Ending.CLIENT_STOPPED, True, True, False),
]


@pytest.mark.parametrize(("ending", "auto_requeue", "asked", "expected"), RULE)
def test_the_one_rule_queues_again_after_any_ending_but_a_stop_or_a_cancellation(
    ending: Ending, auto_requeue: bool, asked: bool, expected: bool
) -> None:
    owed = {"auto_requeue": auto_requeue, "asked": asked}
    told = queues_again(ending, started=True, failed=False, client_stopped=False, **owed)
    assert told is expected
    # never once closed, once the client is stopped, or after an error no retry fixes
    assert not queues_again(ending, started=False, failed=False, client_stopped=False, **owed)
    assert not queues_again(ending, started=True, failed=False, client_stopped=True, **owed)
    assert not queues_again(ending, started=True, failed=True, client_stopped=False, **owed)


def test_how_the_steps_ended_is_told_from_the_runners_outcome() -> None:
    assert ending_of("selector closed", None) is Ending.RETURNED
    assert ending_of(CLIENT_STOPPED, None) is Ending.CLIENT_STOPPED
    assert ending_of(None, NoAuthError()) is Ending.ERROR
    assert ending_of(None, Cancelled()) is Ending.CANCELLED
    assert ending_of(None, asyncio.CancelledError()) is Ending.CANCELLED
