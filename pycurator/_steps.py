"""The protocol's waiting, written once: steps that a blocking or an asyncio runner performs.

The recipes' protocols (the lock loop, the semaphore loop, the hold check) are generators that
send kazoo's asynchronous requests themselves (sending never blocks) and *yield* what they need
to wait for:

- :class:`Await`: the answer to a request, no later than a deadline (else
  :class:`DeadlineExpired` is thrown in);
- :class:`NewSignal`: a flag that kazoo's callbacks may set from any thread;
- :class:`WaitSignal`: the flag being set, for at most a number of seconds (True when set).

A runner performs each step and sends its value (or throws its error) back in, as h11 and
httpcore keep HTTP's rules free of I/O. :func:`run` blocks the calling thread through the
client's handler (so it serves kazoo's threading, gevent and eventlet handlers alike);
:mod:`pycurator.aio` awaits the same steps on an event loop. An error thrown into a generator
(a timeout, an interruption, a cancelled task) runs its clean-up, which may yield more steps.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooClient

from ._deadline import Deadline, wait_result

T = TypeVar("T")


class Signal(Protocol):
    """A flag set from any thread (kazoo's callbacks), waited on by a runner."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class Await:
    """Wait for kazoo's async ``result``; its value, or its error, or DeadlineExpired."""

    result: Any
    deadline: Deadline


@dataclass(frozen=True)
class NewSignal:
    """A new, clear :class:`Signal` for this runner."""


@dataclass(frozen=True)
class WaitSignal:
    """Wait until ``signal`` is set, at most ``timeout`` seconds (None: no limit); whether set."""

    signal: Signal
    timeout: float | None


Step = Await | NewSignal | WaitSignal
#: A protocol's generator: yields steps, receives their values, returns a ``T``.
Steps = Generator[Step, Any, T]


def run(client: KazooClient, steps: Steps[T]) -> T:
    """Perform ``steps`` blocking the calling thread (or greenlet); the generator's value."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            if isinstance(step, Await):
                value = wait_result(client, step.result, step.deadline)
            elif isinstance(step, NewSignal):
                value = client.handler.event_object()
            else:
                value = bool(step.signal.wait(step.timeout))  # type: ignore[attr-defined]
        except BaseException as exc:  # thrown in, so the protocol's clean-up runs
            error = exc


__all__ = ["Await", "NewSignal", "Signal", "Step", "Steps", "WaitSignal", "run"]
