"""Actors: each runs a recipe object's operations, in order, on one unit of a front end: a
thread of its own (``pycurator``), or a long-lived task on the test's event loop
(``pycurator.aio``). Ownership is per thread or per task, so each participant keeps to its
unit; a scenario asks its actor ``p.do("acquire", 1.0)`` and gets the result, or the
exception, back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..support import SOON

#: An operation: the name of the target's method (or attribute, whose value is read), or a
#: function called with the target and the arguments.
Op = str | Callable[..., Any]
Call = Callable[[], Any]
Job = tuple[Call, "concurrent.futures.Future[Any]"] | None


class Pending:
    """An operation under way on a participant."""

    def __init__(self, future: concurrent.futures.Future[Any], what: str) -> None:
        self._future = future
        self.what = what

    def done(self) -> bool:
        """Whether it has ended (returned or raised)."""
        return self._future.done()

    def result(self, timeout: float = SOON) -> Any:
        """Its result, or its exception raised here; AssertionError when not done in time."""
        concurrent.futures.wait([self._future], timeout)
        if not self._future.done():
            raise AssertionError(f"{self.what} not done within {timeout}s")
        return self._future.result()


class Unit(Protocol):
    """Where a participant's operations run, one after the other."""

    def submit(self, call: Call) -> concurrent.futures.Future[Any]: ...

    def close(self) -> bool: ...


def _settle(future: concurrent.futures.Future[Any], call: Call) -> None:
    try:
        future.set_result(call())
    except BaseException as exc:
        future.set_exception(exc)


class ThreadUnit:
    """A thread of its own, taking calls from a queue."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.Queue[Job] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            call, future = job
            if future.set_running_or_notify_cancel():
                _settle(future, call)

    def submit(self, call: Call) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put((call, future))
        return future

    def close(self) -> bool:
        """Stop once the queued calls are done; False when still busy after SOON seconds."""
        self._jobs.put(None)
        self._thread.join(SOON)
        return not self._thread.is_alive()


class TaskUnit:
    """A task on ``loop`` that takes calls from an :class:`asyncio.Queue` and awaits what
    they return when it can be awaited (a coroutine method), so the task is the owner."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        ready: concurrent.futures.Future[asyncio.Queue[Job]] = concurrent.futures.Future()
        self._task = asyncio.run_coroutine_threadsafe(self._serve(ready), loop)
        self._jobs = ready.result(SOON)

    async def _serve(self, ready: concurrent.futures.Future[asyncio.Queue[Job]]) -> None:
        jobs: asyncio.Queue[Job] = asyncio.Queue()
        ready.set_result(jobs)
        while (job := await jobs.get()) is not None:
            call, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                value = call()
                if inspect.isawaitable(value):
                    value = await value
            except asyncio.CancelledError as exc:
                future.set_exception(exc)
                raise
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(value)

    def submit(self, call: Call) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._jobs.put_nowait, (call, future))
        return future

    def close(self) -> bool:
        """Stop once the queued calls are done; False (and the task cancelled) when still busy
        after SOON seconds."""
        self._loop.call_soon_threadsafe(self._jobs.put_nowait, None)
        concurrent.futures.wait([self._task], SOON)
        if self._task.done():
            return True
        self._task.cancel()
        return False


class LoopThread:
    """One event loop for a test, run by a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="loop", daemon=True)
        self._thread.start()

    def run(self, call: Call) -> Any:
        """Run ``call`` on the loop (awaiting what it returns, if awaitable); its result."""

        async def run() -> Any:
            value = call()
            return await value if inspect.isawaitable(value) else value

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(SOON)

    def close(self) -> None:
        """Cancel the tasks left (a lost test's), stop the loop and close it."""

        async def cancel_the_rest() -> None:
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_the_rest(), self.loop).result(SOON)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(SOON)
        self.loop.close()


class Actor:
    """One participant of a scenario (an actor): ``target``'s operations, run in order on its
    unit."""

    def __init__(self, unit: Unit, target: Any, name: str) -> None:
        self._unit = unit
        self.target = target
        self.name = name

    def start(self, op: Op, *args: Any) -> Pending:
        """Begin ``op`` (see :data:`Op`) on the unit; the scenario goes on meanwhile."""
        target = self.target
        if isinstance(op, str):
            name = op

            def call() -> Any:
                member = getattr(target, name)
                if not callable(member):
                    assert not args, f"{name} is not callable"
                    return member
                return member(*args)

        else:
            name = getattr(op, "__name__", repr(op))
            call = functools.partial(op, target, *args)
        return Pending(self._unit.submit(call), f"{self.name}: {name}{args!r}")

    def do(self, op: Op, *args: Any, timeout: float = SOON) -> Any:
        """Run ``op`` on the unit and return its result (its exception is raised here)."""
        return self.start(op, *args).result(timeout)

    def view(self, target: Any) -> Actor:
        """The same participant (the same thread or task) acting on another object."""
        return Actor(self._unit, target, f"{self.name}/{type(target).__name__}")
