"""kazoo's handler on the :class:`~tests.explorer.sim.Hub`: what a ``KazooClient`` made with
:class:`SimHandler`, and every recipe on that client, waits on (events, locks, conditions, the
async results of requests) and runs its callbacks on (two queues, each served by a worker), in
simulated time. Its units are greenlets, as gevent's are, so it is named as gevent's handler
(which is how the library tells a handler whose units are greenlets).

A unit blocks only through these (:meth:`~tests.explorer.sim.Hub.block`): the library's own
locks that are ``threading`` ones are never held across a wait (the contract gevent's handler
relies on too).
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from kazoo.handlers.threading import KazooTimeoutError
from kazoo.handlers.utils import AsyncResult

from .sim import TIMED_OUT, Hub, Unit


class SimEvent:
    """``threading.Event`` on the hub."""

    __slots__ = ("_flag", "_hub", "_waiters")

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._flag = False
        self._waiters: list[Unit] = []

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set  # threading's old name

    def set(self) -> None:
        if self._flag:
            return
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for unit in waiters:
            self._hub.wake(unit, True)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        if timeout is not None and timeout <= 0:
            return False
        hub = self._hub
        unit = hub.unit()
        self._waiters.append(unit)
        try:
            hub.block(hub.after(timeout))
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
        return self._flag


class SimLock:
    """``threading.Lock`` on the hub (``reentrant``: ``threading.RLock``), handed to its
    waiters in turn."""

    __slots__ = ("_count", "_hub", "_owner", "_reentrant", "_waiters")

    def __init__(self, hub: Hub, reentrant: bool = False) -> None:
        self._hub = hub
        self._reentrant = reentrant
        self._owner: object = None
        self._count = 0
        self._waiters: deque[Unit] = deque()

    def _me(self) -> object:
        return self._hub.current or self._hub

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = self._me()
        if self._owner is None:
            self._owner, self._count = me, 1
            return True
        if self._reentrant and self._owner is me:
            self._count += 1
            return True
        if not blocking or timeout == 0:
            return False
        hub = self._hub
        unit = hub.unit()
        self._waiters.append(unit)
        until = None if timeout is None or timeout < 0 else hub.after(timeout)
        try:
            taken = hub.block(until) is not TIMED_OUT
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
        return taken  # handed over by release(): we own it now

    def release(self) -> None:
        assert self._owner is not None, "release of an unheld lock"
        self._count -= 1
        if self._count > 0:
            return
        self._owner = None
        while self._waiters:
            unit = self._waiters.popleft()
            if self._hub.wake(unit, True):
                self._owner, self._count = unit, 1
                return

    def locked(self) -> bool:
        return self._owner is not None

    def _release_all(self) -> int:
        count, self._count = self._count, 1
        self.release()
        return count

    def _take_back(self, count: int) -> None:
        self.acquire()
        self._count = count

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class SimCondition:
    """``threading.Condition`` (over an RLock) on the hub, for kazoo's async results."""

    __slots__ = ("_hub", "_lock", "_waiters")

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._lock = SimLock(hub, reentrant=True)
        self._waiters: list[Unit] = []

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        hub = self._hub
        unit = hub.unit()
        count = self._lock._release_all()
        self._waiters.append(unit)
        try:
            woken = hub.block(hub.after(timeout)) is not TIMED_OUT
        finally:
            if unit in self._waiters:
                self._waiters.remove(unit)
            self._lock._take_back(count)
        return woken

    def notify_all(self) -> None:
        waiters, self._waiters = self._waiters, []
        for unit in waiters:
            self._hub.wake(unit, True)

    notifyAll = notify_all


class SimQueue:
    """A handler's queue of callbacks: each :meth:`get` is a turn of its own, so that every
    callback run is a boundary."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._items: deque[Any] = deque()
        self._waiter: Unit | None = None

    def put(self, item: Any) -> None:
        self._items.append(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._hub.wake(waiter, True)

    def get(self) -> Any:
        hub = self._hub
        if self._items:
            hub.yield_now()
        while not self._items:
            self._waiter = hub.unit()
            hub.block()
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


_STOP = object()


class SimHandler:
    """kazoo's handler on the :class:`Hub` (see the module doc). ``client``: the index of the
    client it serves, for the boundaries' reports."""

    name = "sequential_gevent_handler"  # its units are greenlets
    timeout_exception = KazooTimeoutError

    def __init__(self, hub: Hub, client: int | None = None, label: str = "") -> None:
        self.hub = hub
        self.client = client
        self.label = label
        self.callback_queue = SimQueue(hub)
        self.completion_queue = SimQueue(hub)
        self._running = False
        self._workers: list[Unit] = []
        self._spawned = itertools.count()

    @property
    def running(self) -> bool:
        return self._running

    def sleep_func(self, seconds: float) -> None:
        self.hub.block(self.hub.after(max(0.0, seconds)))

    def _worker(self, queue: SimQueue) -> None:
        while True:
            function = queue.get()
            if function is _STOP:
                return
            try:
                function()
            except Exception:
                logging.getLogger("kazoo.handlers.threading").exception(
                    "Exception in worker queue thread"
                )
            del function

    def start(self) -> None:
        if self._running:
            return
        for kind, queue in (("completion", self.completion_queue), ("watch", self.callback_queue)):
            work = functools.partial(self._worker, queue)
            self._workers.append(self.hub.spawn(work, f"{self.label}:{kind}", self.client))
        self._running = True

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        for queue in (self.completion_queue, self.callback_queue):
            queue.put(_STOP)
        workers, self._workers = self._workers, []
        for worker in workers:
            while not worker.glet.dead:
                self.hub.block(self.hub.now + 0.001)
        self.callback_queue = SimQueue(self.hub)
        self.completion_queue = SimQueue(self.hub)

    def event_object(self) -> SimEvent:
        return SimEvent(self.hub)

    def lock_object(self) -> SimLock:
        return SimLock(self.hub)

    def rlock_object(self) -> SimLock:
        return SimLock(self.hub, reentrant=True)

    def async_result(self) -> AsyncResult:
        return AsyncResult(self, lambda: SimCondition(self.hub), KazooTimeoutError)

    def spawn(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Unit:
        name = f"{self.label}:{getattr(func, '__name__', 'unit')}#{next(self._spawned)}"
        return self.hub.spawn(lambda: func(*args, **kwargs), name, self.client)

    def dispatch_callback(self, callback: Any) -> None:
        self.callback_queue.put(lambda: callback.func(*callback.args))

    def select(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the simulated connection has no sockets")

    socket = create_connection = create_socket_pair = select
