"""The blocking runner of the protocol's steps (:mod:`pycurator._protocol.steps`): :func:`run`
performs them on a transport, blocking the calling thread (or greenlet) through the client's
handler, so it serves kazoo's threading, gevent and eventlet handlers alike. It is how the
threaded front end waits, as :mod:`pycurator.aio._runner` is how the asyncio one does."""

from __future__ import annotations

from typing import Any, TypeVar

from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.steps import EFFECTS, Await, AwaitAll, NewSignal, Steps, link_all, outcomes
from .._protocol.transport import Transport

T = TypeVar("T")


def wait_result(handler: Any, result: Any, deadline: Deadline) -> Any:
    """The value of a kazoo async ``result`` (its error raised as kazoo raises it), or
    :class:`DeadlineExpired` once ``deadline`` passes with no reply yet.

    The request itself is not withdrawn: it may still be sent and answered later, so a caller
    that gives up on a request with side effects (a create, a watch) undoes them when it lands.
    """
    try:
        return result.get(timeout=deadline.remaining())
    except handler.timeout_exception:
        raise DeadlineExpired() from None


def run(transport: Transport, steps: Steps[T]) -> T:
    """Perform ``steps`` on ``transport``'s client, blocking the calling thread (or greenlet);
    the generator's value."""
    handler = transport.client.handler
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
                value = wait_result(handler, step.result, step.deadline)
            elif (effect := EFFECTS.get(type(step))) is not None:
                value = effect(transport, step)
            elif isinstance(step, NewSignal):
                value = handler.event_object()
            elif isinstance(step, AwaitAll):
                unlink = link_all(step.answers, step.wake)
                try:
                    step.wake.wait(step.timeout)  # type: ignore[attr-defined]
                finally:
                    unlink()
                value = outcomes(step.answers)
            else:
                value = bool(step.signal.wait(step.timeout))  # type: ignore[union-attr]
        except BaseException as exc:  # thrown in, so the protocol's clean-up runs
            error = exc


__all__ = ["run", "wait_result"]
