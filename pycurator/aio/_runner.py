"""The asyncio runner of the protocol's steps (:mod:`pycurator._protocol.steps`), and the bridges
from kazoo's threads to the event loop.

kazoo answers requests and fires watches on its own threads. Each bridge hands the news to the
loop with ``loop.call_soon_threadsafe``: a waiting task costs a future, not a thread, so any
number of tasks may wait on one lock, and the same KazooClient serves threaded code meanwhile.

The tasks of users' callbacks (an ``on_lost`` or a listener that returns an awaitable) are kept
in one set until they end, as asyncio asks (the loop keeps only a weak reference). They are the
event loop's, not the client's, so they stay here rather than in the client's runtime
(:mod:`pycurator._client.runtime`): a callback often runs *because* its client was stopped or its
session expired, and must run to its end whatever becomes of the client; a task belongs to the
loop that runs it whichever client it came from, and the set holds only running tasks (each
leaves it when done), so it needs no key, no clean-up on a stop, and nothing at a fork (a
child runs none of its parent's loops).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._client.sending import transaction_of
from .._client.transport import transport_of
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.steps import (
    Await,
    AwaitAll,
    HeldSends,
    NewSignal,
    Steps,
    WaitSignal,
    link_all,
    outcomes,
    perform,
)
from .._protocol.transport import Transport
from .._protocol.waits import sent_steps
from .._recipes.hold import LossNotice

T = TypeVar("T")

log = logging.getLogger("pycurator")


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _call_on(loop: asyncio.AbstractEventLoop, function: Callable[..., Any], *args: Any) -> None:
    """Call ``function(*args)`` on ``loop``: at once from the loop's own thread, else soon."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        function(*args)
        return
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        loop.call_soon_threadsafe(function, *args)


class LoopSignal:
    """A flag set from any thread, awaited by one task at a time on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._guard = threading.Lock()
        self._flag = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        with self._guard:
            if self._flag:
                return
            self._flag = True
            waiter = self._waiter
        if waiter is not None:
            _call_on(self._loop, _settle, waiter)

    def clear(self) -> None:
        with self._guard:
            self._flag = False

    def is_set(self) -> bool:
        return self._flag

    async def wait(self, timeout: float | None) -> bool:
        """Whether the flag was set within ``timeout`` seconds (None: no limit)."""
        with self._guard:
            if self._flag:
                return True
            waiter = self._waiter = self._loop.create_future()
        try:
            await asyncio.wait({waiter}, timeout=timeout)
        finally:
            with self._guard:
                self._waiter = None
        return self._flag


async def _answer(loop: asyncio.AbstractEventLoop, result: Any, deadline: Deadline) -> Any:
    """kazoo's async ``result`` awaited until ``deadline`` (then DeadlineExpired)."""
    if not result.ready():
        answered = loop.create_future()

        def on_answer(_: Any) -> None:
            _call_on(loop, _settle, answered)

        result.rawlink(on_answer)
        try:
            done, _ = await asyncio.wait({answered}, timeout=deadline.remaining())
        finally:
            result.unlink(on_answer)
        if not done:
            raise DeadlineExpired()
    return result.get()


async def run_async(transport: Transport, steps: Steps[T]) -> T:
    """Perform ``steps`` on ``transport``'s client, on the running loop; the generator's value.
    A cancellation is thrown into the generator, whose clean-up runs (its waits awaited too)
    before it propagates."""
    loop = asyncio.get_running_loop()
    value: Any = None
    error: BaseException | None = None
    held = HeldSends(transport)
    try:
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            held.before(step)
            try:
                if isinstance(step, Await):
                    value = await _answer(loop, step.result, step.deadline)
                elif not isinstance(step, (NewSignal, WaitSignal, AwaitAll)):
                    value = perform(transport, step)
                elif isinstance(step, NewSignal):
                    value = LoopSignal(loop)
                elif isinstance(step, AwaitAll):
                    assert isinstance(step.wake, LoopSignal)
                    unlink = link_all(step.answers, step.wake)
                    try:
                        await step.wake.wait(step.timeout)
                    finally:
                        unlink()
                    value = outcomes(step.answers)
                else:
                    assert isinstance(step.signal, LoopSignal)
                    value = await step.signal.wait(step.timeout)
            except BaseException as exc:  # CancelledError included: the clean-up must run
                error = exc
    finally:
        held.end()


class LoopEvent:
    """An :class:`asyncio.Event` that kazoo's threads may set and clear (on its loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        self._loop = loop
        self.event = event

    def set(self) -> None:
        _call_on(self._loop, self.event.set)

    def clear(self) -> None:
        _call_on(self._loop, self.event.clear)


_TASKS: set[asyncio.Task[Any]] = set()  # callbacks' tasks, kept until they end (see above)


def _call_back(callback: Callable[..., Any], *args: Any) -> None:
    """Run a user's callback on the loop: an awaitable it returns runs as a task; an error is
    logged (in either), never raised into pycurator's own work."""
    try:
        outcome = callback(*args)
    except Exception:
        log.exception("a pycurator callback failed: %r", callback)
        return
    if inspect.isawaitable(outcome):
        task = asyncio.ensure_future(outcome)
        _TASKS.add(task)
        task.add_done_callback(_callback_done)


def _callback_done(task: asyncio.Task[Any]) -> None:
    _TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("a pycurator callback failed", exc_info=task.exception())


def loop_spawner() -> Callable[..., None]:
    """A ``spawn(callback, *args)`` that runs ``callback(*args)`` on the running loop from any
    thread (later, in the order spawned); an awaitable it returns runs as a task."""
    loop = asyncio.get_running_loop()

    def spawn(callback: Callable[..., Any], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
            loop.call_soon_threadsafe(_call_back, callback, *args)

    return spawn


def loop_notice(transport: Transport, event: asyncio.Event) -> LossNotice:
    """A :class:`LossNotice` on the running loop: ``event`` set there, callbacks run there."""
    return LossNotice(transport, LoopEvent(asyncio.get_running_loop(), event), loop_spawner())


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Whether ``event`` was set within ``timeout`` seconds (None: no limit)."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return event.is_set()


async def wait_until(
    changed: asyncio.Event, decide: Callable[[], T | None], timeout: float | None
) -> T | bool:
    """Wait until ``decide()`` gives an outcome (not None), looked at each time ``changed`` is
    set: that outcome, or False once ``timeout`` seconds (None: no limit) have passed. How a
    shell waits for a recipe running in the background (a latch's leadership, a kept node's
    first create)."""
    deadline = Deadline(timeout)
    while True:
        changed.clear()
        outcome = decide()
        if outcome is not None:
            return outcome
        remaining = deadline.remaining()
        if remaining == 0:
            return False
        await wait_event(changed, remaining)


def log_failure(task: asyncio.Task[Any]) -> None:
    """A done callback: log the error a background task of pycurator's ended with."""
    if not task.cancelled() and task.exception() is not None:
        log.error("pycurator's background task failed", exc_info=task.exception())


async def commit(transaction: Any) -> list[Any]:
    """Commit a kazoo transaction (a ``guarded_transaction()``, say) without blocking the loop;
    its results, as ``transaction.commit()`` returns them: the transaction is sent as any
    request is (:class:`~pycurator._protocol.requests.Transaction`)."""
    request = transaction_of(transaction)
    results: list[Any] = await run_async(transport_of(transaction.client), sent_steps(request))
    return results


__all__ = [
    "LoopEvent",
    "LoopSignal",
    "commit",
    "log_failure",
    "loop_notice",
    "loop_spawner",
    "run_async",
    "transport_of",
    "wait_event",
    "wait_until",
]
