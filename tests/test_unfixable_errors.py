"""Errors no retry fixes end an attempt at once, the same on the threaded and asyncio front ends.

A client without the rights its path needs meets ``NoAuthError``, whether the path itself
refuses our node, a parent refuses the path's container, or the path lets us create our node
but not list it. A latch's ``wait()`` raises the error; a selector leaves the queue and does not
queue again by itself (not even with ``auto_requeue``); each logs it once at ERROR, without a
traceback; no node is left behind. A mutex's untimed ``acquire`` raises it at once. Any other
error is tried again, its traceback logged once while it repeats.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Protocol, TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SystemZookeeperError
from kazoo.security import make_acl, make_digest_acl

from pycurator import (
    InterProcessMutex,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    LockEvent,
    LockEventKind,
    add_lock_listener,
    aio,
    remove_lock_listener,
)
from pycurator._recipes import election
from pycurator._recipes.lock_engine import LockEngine
from pycurator.testing import ClientFactory

from .support import SOON, Worker, children, eventually

pytestmark = pytest.mark.usefixtures("zk_no_orphans")

T = TypeVar("T")

AUTH = [("digest", "admin:secret")]
ADMIN = make_digest_acl("admin", "secret", all=True)
#: Anyone may read; only the admin may create children.
NO_CREATE = [make_acl("world", "anyone", read=True), ADMIN]
#: Anyone may create and delete children; only the admin may list them.
NO_LIST = [make_acl("world", "anyone", create=True, delete=True), ADMIN]
#: Each case: the recipe's path below the guarded node, and the guarded node's ACL.
GUARDS = {
    "path-refuses-our-node": ("", NO_CREATE),
    "parent-refuses-the-container": ("/election", NO_CREATE),
    "path-refuses-the-listing": ("", NO_LIST),
}
#: Seconds a test watches for a second attempt that must not come.
QUIET = 0.5


class Guarded:
    """A recipe path whose client lacks rights (a GUARDS case), and an admin who has them."""

    def __init__(self, admin: KazooClient, path: str) -> None:
        self.admin = admin
        self.path = path


@pytest.fixture(params=sorted(GUARDS))
def guarded(
    request: pytest.FixtureRequest, zk_client_factory: ClientFactory, zk_path: str
) -> Guarded:
    below, acl = GUARDS[request.param]
    admin = zk_client_factory(auth_data=AUTH)
    admin.ensure_path(zk_path)
    admin.create(f"{zk_path}/guarded", acl=acl)
    return Guarded(admin, f"{zk_path}/guarded{below}")


class Loop:
    """An event loop on a thread of its own, so that a scenario written once, blocking, drives
    the asyncio recipes too."""

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


class Latch(Protocol):
    """A latch as the scenarios use it, blocking."""

    @property
    def our_path(self) -> str | None: ...

    def start(self) -> None: ...

    def wait(self, timeout: float) -> bool: ...

    def has_leadership(self) -> bool: ...

    def close(self) -> None: ...


class Selector(Protocol):
    """A selector as the scenarios use it, blocking."""

    @property
    def our_path(self) -> str | None: ...

    def start(self) -> None: ...

    def requeue(self) -> bool: ...

    def has_leadership(self) -> bool: ...

    def close(self, timeout: float | None = None) -> bool: ...


class AioLatch:
    """An :class:`aio.LeaderLatch` driven from the test's thread."""

    def __init__(self, loop: Loop, latch: aio.LeaderLatch) -> None:
        self._loop = loop
        self._latch = latch

    @property
    def our_path(self) -> str | None:
        return self._latch.our_path

    def start(self) -> None:
        self._loop.call(self._latch.start())

    def wait(self, timeout: float) -> bool:
        return self._loop.call(self._latch.wait(timeout))

    def has_leadership(self) -> bool:
        return self._latch.has_leadership()

    def close(self) -> None:
        self._loop.call(self._latch.close())


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

    def requeue(self) -> bool:
        async def requeue() -> bool:  # on the loop, whose tasks it makes
            return self._selector.requeue()

        return self._loop.call(requeue())

    def has_leadership(self) -> bool:
        return self._selector.has_leadership()

    def close(self, timeout: float | None = None) -> bool:
        return self._loop.call(self._selector.close(timeout))


class Front:
    """The threaded front end; :class:`AioFront` is the asyncio one."""

    name = "threaded"

    def latch(self, client: KazooClient, path: str) -> Latch:
        return LeaderLatch(client, path, "a")

    def selector(self, client: KazooClient, path: str, led: threading.Event) -> Selector:
        def lead(leadership: Leadership) -> None:
            led.set()

        return LeaderSelector(client, path, lead, "a", auto_requeue=True)

    def acquire(self, client: KazooClient, path: str) -> bool:
        """A mutex's untimed acquire, failing the test if it does not end within SOON."""
        worker = Worker(InterProcessMutex(client, path).acquire)
        worker.start()
        result: bool = worker.outcome(SOON)
        return result

    def close(self) -> None:
        pass


class AioFront(Front):
    name = "asyncio"

    def __init__(self) -> None:
        self.loop = Loop()

    def latch(self, client: KazooClient, path: str) -> Latch:
        return AioLatch(self.loop, aio.LeaderLatch(client, path, "a"))

    def selector(self, client: KazooClient, path: str, led: threading.Event) -> Selector:
        async def lead(leadership: aio.Leadership) -> None:
            led.set()

        return AioSelector(
            self.loop, aio.LeaderSelector(client, path, lead, "a", auto_requeue=True)
        )

    def acquire(self, client: KazooClient, path: str) -> bool:
        return self.loop.call(aio.InterProcessMutex(client, path).acquire())

    def close(self) -> None:
        self.loop.close()


@pytest.fixture(params=[Front, AioFront], ids=lambda kind: str(kind.name))
def front(request: pytest.FixtureRequest) -> Iterator[Front]:
    made: Front = request.param()
    yield made
    made.close()


class Story:
    """The lock events of one path (a turn in the queue is a wait), as they come."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._kinds: list[LockEventKind] = []
        self._changed = threading.Condition()

    def __call__(self, event: LockEvent) -> None:
        if event.path == self.path:
            with self._changed:
                self._kinds.append(event.kind)
                self._changed.notify_all()

    def count(self, kind: LockEventKind) -> int:
        with self._changed:
            return self._kinds.count(kind)

    def wait_for(self, predicate: Callable[[Story], bool], timeout: float) -> bool:
        """Whether ``predicate(self)`` came true within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)


@pytest.fixture
def story(guarded: Guarded) -> Iterator[Story]:
    told = Story(guarded.path)
    add_lock_listener(told)
    yield told
    remove_lock_listener(told)


@pytest.fixture
def errors(caplog: pytest.LogCaptureFixture) -> Callable[[], list[logging.LogRecord]]:
    """The ERROR records logged so far (any logger)."""
    caplog.set_level(logging.INFO, logger="pycurator")
    return lambda: [record for record in caplog.records if record.levelno >= logging.ERROR]


def reported_once(errors: list[logging.LogRecord], path: str) -> None:
    (record,) = errors
    message = record.getMessage()
    assert path in message and "NoAuthError" in message, message
    assert record.exc_info is None  # one line, no traceback


def failed(story: Story) -> bool:
    return story.count(LockEventKind.FAILED) > 0


def test_a_latch_without_rights_gives_up_and_wait_raises_the_error(
    front: Front,
    guarded: Guarded,
    story: Story,
    errors: Callable[[], list[logging.LogRecord]],
    zk_client_factory: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(election, "ERROR_RETRY_DELAY", 0.01)  # a retry would show at once
    latch = front.latch(zk_client_factory(), guarded.path)
    latch.start()
    try:
        with pytest.raises(NoAuthError):
            latch.wait(SOON)
        assert story.wait_for(failed, SOON), "the latch's turn in the queue ended"
        with pytest.raises(NoAuthError):  # and again, until closed
            latch.wait(0)
        assert not story.wait_for(lambda told: told.count(LockEventKind.WAITING) > 1, QUIET)
        reported_once(errors(), guarded.path)
        assert not latch.has_leadership()
        assert latch.our_path is None
        assert children(guarded.admin, guarded.path) == []
    finally:
        latch.close()
    with pytest.raises(RuntimeError):
        latch.wait(0)
    assert len(errors()) == 1


def test_a_selector_without_rights_leaves_the_queue_and_queues_again_only_when_asked(
    front: Front,
    guarded: Guarded,
    story: Story,
    errors: Callable[[], list[logging.LogRecord]],
    zk_client_factory: ClientFactory,
) -> None:
    led = threading.Event()
    selector = front.selector(zk_client_factory(), guarded.path, led)
    selector.start()
    try:
        assert story.wait_for(failed, SOON), "the selector's term ended"
        # auto_requeue does not queue again after an error no retry fixes
        assert not story.wait_for(lambda told: told.count(LockEventKind.WAITING) > 1, QUIET)
        reported_once(errors(), guarded.path)
        assert not selector.has_leadership()
        assert selector.our_path is None
        assert children(guarded.admin, guarded.path) == []

        assert selector.requeue()  # tries again, and fails the same way
        assert story.wait_for(lambda told: told.count(LockEventKind.FAILED) == 2, SOON)
        assert len(errors()) == 2
    finally:
        closed = selector.close(SOON)
    assert closed
    assert not led.is_set()
    assert children(guarded.admin, guarded.path) == []


def test_a_mutex_without_rights_raises_the_error_from_an_untimed_acquire(
    front: Front,
    guarded: Guarded,
    errors: Callable[[], list[logging.LogRecord]],
    zk_client_factory: ClientFactory,
) -> None:
    with pytest.raises(NoAuthError):
        front.acquire(zk_client_factory(), guarded.path)
    assert children(guarded.admin, guarded.path) == []
    assert errors() == []


def test_another_error_is_logged_once_while_it_repeats_and_tried_again_until_it_passes(
    front: Front,
    errors: Callable[[], list[logging.LogRecord]],
    zk_client_factory: ClientFactory,
    zk_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(election, "ERROR_RETRY_DELAY", 0.01)
    healed = threading.Event()
    tried = threading.Condition()
    tries = 0
    create = LockEngine.create_node_steps

    def flaky(engine: LockEngine, *args: Any, **kwargs: Any) -> Any:
        nonlocal tries
        if engine.base_path == zk_path and not healed.is_set():
            with tried:
                tries += 1
                tried.notify_all()
            raise SystemZookeeperError()
        return create(engine, *args, **kwargs)

    monkeypatch.setattr(LockEngine, "create_node_steps", flaky)
    latch = front.latch(zk_client_factory(), zk_path)
    latch.start()
    try:
        with tried:
            assert tried.wait_for(lambda: tries >= 5, SOON)
        with pytest.raises(SystemZookeeperError):  # while it keeps the latch out
            latch.wait(0)
        (record,) = errors()
        assert "trying again" in record.getMessage() and record.exc_info is not None
        healed.set()
        eventually(latch.has_leadership, SOON, what="leading once the error has passed")
        assert latch.wait(0)
    finally:
        latch.close()
    assert len(errors()) == 1
