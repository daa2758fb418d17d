"""The items of the ``scale`` section's pycurator cases: what each case takes, how it tells
whether an item is held, and how it releases them (see :mod:`bench.scale_case`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from pycurator import (
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    aio,
)

from .common import SOON, Server

#: Leases of each semaphore (one is taken: a semaphore per tenant with room for two).
MAX_LEASES = 2


async def until(predicate: Callable[[], bool], what: str, timeout: float = SOON) -> None:
    """Poll ``predicate`` every 50 ms until true; TimeoutError naming ``what`` after ``timeout``."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError(f"not within {timeout:g}s: {what}")
        await asyncio.sleep(0.05)


def owners(client: KazooClient, nodes: Sequence[str | None]) -> list[int]:
    """The session owning each node (0: no node), in requests sent together."""
    pending = [client.exists_async(node) if node else None for node in nodes]
    found = []
    for result in pending:
        stat = result.get(SOON) if result is not None else None
        found.append(stat.ephemeralOwner if stat is not None else 0)
    return found


class Case:
    """N items of one kind under ``root``, each on a path of its own; subclasses take, read and
    release them. Items are kept as the user would keep them (the recipe objects), nothing
    more, so that RSS per item is the recipe's."""

    #: Seconds between two looks at the items after the restart.
    poll_s = 0.02
    #: Whether the case takes part in the bounce.
    bounces = True

    def __init__(self, client: KazooClient, server: Server, root: str, n: int) -> None:
        self.client = client
        self.server = server
        self.root = root
        self.n = n
        self.items: list[Any] = []

    @property
    def size(self) -> int:
        """How many items can be held."""
        return self.n

    def path(self, i: int) -> str:
        return f"{self.root}/{i:05d}"

    async def take(self) -> None:
        raise NotImplementedError

    def held(self, item: Any) -> bool:
        """Whether ``item`` says it is held, as last heard (no request)."""
        raise NotImplementedError

    async def reported(self, item: Any) -> bool:
        """The recipe's own answer, which may ask the server."""
        return self.held(item)

    def node(self, item: Any) -> str | None:
        raise NotImplementedError

    async def release(self) -> None:
        raise NotImplementedError

    async def held_count(self) -> int | None:
        """Items held now; None when it cannot be told yet."""
        return sum(self.held(item) for item in self.items)

    async def truth(self) -> dict[str, int]:
        """Each item's answer against the server's: held (and ours), lost (those whose node was
        still ours counted apart), and wrong (said held but not ours)."""
        session = self.client.client_id[0]
        said = [await self.reported(item) for item in self.items]
        ours = [
            owner == session for owner in owners(self.client, [self.node(i) for i in self.items])
        ]
        pairs = list(zip(said, ours, strict=True))
        return {
            "held": sum(s and o for s, o in pairs),
            "lost": said.count(False),
            "lost_but_ours": sum(not s and o for s, o in pairs),
            "wrong": sum(s and not o for s, o in pairs),
        }


class Locks(Case):
    """A threaded lock of one kind per path, all held by this thread."""

    def __init__(self, client: KazooClient, server: Server, root: str, n: int, kind: str) -> None:
        super().__init__(client, server, root, n)
        self.kind = kind

    def make(self, path: str) -> Any:
        if self.kind == "read":
            return InterProcessReadWriteLock(self.client, path).read_lock()
        if self.kind == "write":
            return InterProcessReadWriteLock(self.client, path).write_lock()
        if self.kind == "semaphore-mutex":
            return InterProcessSemaphoreMutex(self.client, path)
        return InterProcessMutex(self.client, path)

    async def take(self) -> None:
        for i in range(self.n):
            lock = self.make(self.path(i))
            if not lock.acquire(timeout=SOON):
                raise TimeoutError(f"{self.kind} {i} not acquired")
            self.items.append(lock)

    def held(self, item: Any) -> bool:
        return not item.lost_event.is_set()

    async def reported(self, item: Any) -> bool:
        return bool(item.is_held())

    def node(self, item: Any) -> str | None:
        if isinstance(item, InterProcessSemaphoreMutex):
            return item.lease.path if item.lease is not None else None
        return item.lock_path  # type: ignore[no-any-return]

    async def release(self) -> None:
        for lock in self.items:
            lock.release()


class Leases(Case):
    """A semaphore of :data:`MAX_LEASES` per path, one lease of each held."""

    def __init__(self, client: KazooClient, server: Server, root: str, n: int) -> None:
        super().__init__(client, server, root, n)
        self.semaphores: list[InterProcessSemaphoreV2] = []

    async def take(self) -> None:
        for i in range(self.n):
            semaphore = InterProcessSemaphoreV2(self.client, self.path(i), MAX_LEASES)
            lease = semaphore.acquire(timeout=SOON)
            if lease is None:
                raise TimeoutError(f"lease {i} not acquired")
            self.semaphores.append(semaphore)
            self.items.append(lease)

    def held(self, item: Any) -> bool:
        return not item.lost_event.is_set()

    async def reported(self, item: Any) -> bool:
        return bool(item.is_held())

    def node(self, item: Any) -> str | None:
        return item.path  # type: ignore[no-any-return]

    async def release(self) -> None:
        for lease in self.items:
            lease.close()


class AioLocks(Case):
    """An ``aio.InterProcessMutex`` per path, all held by this task."""

    async def take(self) -> None:
        for i in range(self.n):
            lock = aio.InterProcessMutex(self.client, self.path(i))
            if not await lock.acquire(SOON):
                raise TimeoutError(f"aio mutex {i} not acquired")
            self.items.append(lock)

    def held(self, item: Any) -> bool:
        return not item.lost_event.is_set()

    async def reported(self, item: Any) -> bool:
        return bool(await item.is_held())

    def node(self, item: Any) -> str | None:
        return item.lock_path  # type: ignore[no-any-return]

    async def release(self) -> None:
        for lock in self.items:
            await lock.release()


class _Elections(Case):
    """A participant per path, each leading, of the threaded or the asyncio API; subclasses
    start them."""

    def __init__(
        self, client: KazooClient, server: Server, root: str, n: int, asyncio_api: bool
    ) -> None:
        super().__init__(client, server, root, n)
        self.asyncio_api = asyncio_api

    def held(self, item: Any) -> bool:
        return bool(item.has_leadership())

    def node(self, item: Any) -> str | None:
        return item.our_path  # type: ignore[no-any-return]

    async def release(self) -> None:
        for participant in self.items:
            if self.asyncio_api:
                await participant.close()
            else:
                participant.close()


class Latches(_Elections):
    """A ``LeaderLatch`` per path (threaded, or ``pycurator.aio``'s), each leading."""

    async def take(self) -> None:
        for i in range(self.n):
            if self.asyncio_api:
                latch: Any = aio.LeaderLatch(self.client, self.path(i))
                await latch.start()
            else:
                latch = LeaderLatch(self.client, self.path(i))
                latch.start()
            self.items.append(latch)
        for i, latch in enumerate(self.items):
            leading = await latch.wait(SOON) if self.asyncio_api else latch.wait(SOON)
            if not leading:
                raise TimeoutError(f"latch {i} not leading")


def _lead(leadership: Leadership) -> None:
    leadership.lost_event.wait()


async def _lead_async(leadership: aio.Leadership) -> None:
    await asyncio.Event().wait()  # until the term ends and this is cancelled


class Selectors(_Elections):
    """A ``LeaderSelector`` per path (``auto_requeue``), each leading: the threaded one runs
    ``lead`` on a worker while it leads (its contract), the asyncio one as a task."""

    async def take(self) -> None:
        for i in range(self.n):
            if self.asyncio_api:
                selector: Any = aio.LeaderSelector(
                    self.client, self.path(i), _lead_async, auto_requeue=True
                )
                await selector.start()
            else:
                selector = LeaderSelector(self.client, self.path(i), _lead, auto_requeue=True)
                selector.start()
            self.items.append(selector)
        try:
            await until(lambda: all(map(self.held, self.items)), "every selector leading", 5 * SOON)
        except TimeoutError as exc:
            leading = sum(map(self.held, self.items))
            raise TimeoutError(f"{exc} ({leading:,} of {self.n:,} leading)") from None


class Waiters(Case):
    """One holder and N waiters queued behind it on one path, each waiter with a lock object of
    its own: a thread each (threaded API, drained at the end), or a task each (asyncio API,
    cancelled at the end). Held after the bounce: the holder, and each waiter still queued."""

    poll_s = 0.2

    def __init__(
        self, client: KazooClient, server: Server, root: str, n: int, asyncio_api: bool
    ) -> None:
        super().__init__(client, server, root, n)
        self.asyncio_api = asyncio_api
        self.queue = f"{root}/queue"
        self.holder: Any = None
        self.done = 0  # waiters that got the lock
        self._tally = threading.Lock()
        self.failed: list[BaseException] = []
        self.tasks: list[asyncio.Task[None]] = []

    @property
    def size(self) -> int:
        return self.n + 1

    async def take(self) -> None:
        if self.asyncio_api:
            self.holder = aio.InterProcessMutex(self.client, self.queue)
            assert await self.holder.acquire(SOON)
            self.tasks = [asyncio.ensure_future(self._wait_task()) for _ in range(self.n)]
        else:
            self.holder = InterProcessMutex(self.client, self.queue)
            assert self.holder.acquire(SOON)
            for _ in range(self.n):
                self.items.append(threading.Thread(target=self._wait_thread, daemon=True))
                self.items[-1].start()
        await until(lambda: self._queued() == self.n, "every waiter queued", 10 * SOON)
        await until(
            lambda: self.server.mntr().get("zk_watch_count", 0) >= self.n,
            "every waiter watching",
            10 * SOON,
        )

    def _wait_thread(self) -> None:
        lock = InterProcessMutex(self.client, self.queue)
        try:
            lock.acquire()
            lock.release()
            with self._tally:
                self.done += 1
        except BaseException as exc:
            self.failed.append(exc)

    async def _wait_task(self) -> None:
        lock = aio.InterProcessMutex(self.client, self.queue)
        await lock.acquire()
        await lock.release()
        self.done += 1

    def _queued(self) -> int:
        """Waiters with a node behind the holder's (one request). None once the path itself is
        gone: a bounce that ended the session emptied it, and the server reaps an empty
        container (within a minute, on this section's server)."""
        try:
            return max(0, len(self.client.get_children(self.queue)) - 1)
        except NoNodeError:
            return 0

    def _holder_held(self) -> bool:
        return not self.holder.lost_event.is_set()

    async def held_count(self) -> int | None:
        if not self._holder_held():
            return 0
        if not self.client.connected:
            return None
        try:
            return 1 + self._queued() - self.done
        except KazooException:
            return None

    async def truth(self) -> dict[str, int]:
        said = (
            await self.holder.is_held() if self.asyncio_api else self.holder.is_held()
        ) and self._holder_held()
        (owner,) = owners(self.client, [self.holder.lock_path])
        ours = owner == self.client.client_id[0]
        queued = self._queued()
        return {
            "held": int(said and ours) + queued,
            "lost": int(not said) + self.n - queued,
            "lost_but_ours": int(not said and ours),
            # a waiter that got the lock while the holder says it holds it is a double holder
            "wrong": int(said and not ours) + (self.done if said else 0),
        }

    async def release(self) -> None:
        if self.asyncio_api:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await until(lambda: self._queued() == 0, "every cancelled waiter gone", SOON)
            await self.holder.release()
        else:
            self.holder.release()
            end = time.monotonic() + 10 * SOON
            for thread in self.items:
                thread.join(max(0.0, end - time.monotonic()))
            if self.failed:
                raise self.failed[0]


class ThreadFloor(Case):
    """N bare threads blocked on one event: what a thread itself costs, for reading the
    threaded waiters' figures. No server work, no bounce."""

    bounces = False

    def __init__(self, client: KazooClient, server: Server, root: str, n: int) -> None:
        super().__init__(client, server, root, n)
        self.event = threading.Event()

    async def take(self) -> None:
        for _ in range(self.n):
            self.items.append(threading.Thread(target=self.event.wait, daemon=True))
            self.items[-1].start()

    def held(self, item: Any) -> bool:
        return bool(item.is_alive())

    def node(self, item: Any) -> str | None:
        return None

    async def release(self) -> None:
        self.event.set()
        for thread in self.items:
            thread.join(SOON)


#: The cases by name; ``-fast`` after a name runs it on pycurator's fast handler.
CASES: dict[str, Callable[[KazooClient, Server, str, int], Case]] = {
    "mutex": lambda c, s, r, n: Locks(c, s, r, n, "mutex"),
    "read": lambda c, s, r, n: Locks(c, s, r, n, "read"),
    "write": lambda c, s, r, n: Locks(c, s, r, n, "write"),
    "semaphore": Leases,
    "semaphore-mutex": lambda c, s, r, n: Locks(c, s, r, n, "semaphore-mutex"),
    "aio-mutex": AioLocks,
    "latch": lambda c, s, r, n: Latches(c, s, r, n, asyncio_api=False),
    "aio-latch": lambda c, s, r, n: Latches(c, s, r, n, asyncio_api=True),
    "selector": lambda c, s, r, n: Selectors(c, s, r, n, asyncio_api=False),
    "aio-selector": lambda c, s, r, n: Selectors(c, s, r, n, asyncio_api=True),
    "waiters": lambda c, s, r, n: Waiters(c, s, r, n, asyncio_api=False),
    "aio-waiters": lambda c, s, r, n: Waiters(c, s, r, n, asyncio_api=True),
    "thread-floor": ThreadFloor,
}
