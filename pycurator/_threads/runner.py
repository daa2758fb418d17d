"""The blocking runner of the protocol's steps (:mod:`pycurator._protocol.steps`): :func:`run`
performs them on a transport, blocking the calling thread (or greenlet) through the client's
handler, so it serves kazoo's threading, gevent and eventlet handlers alike. It is how the
threaded front end waits, as :mod:`pycurator.aio._runner` is how the asyncio one does; and
:class:`Changes`, how its shells wait for a recipe running in the background to change."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.steps import (
    EFFECTS,
    Await,
    AwaitAll,
    HeldSends,
    NewSignal,
    Steps,
    link_all,
    outcomes,
)
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


class Changes:
    """Wakes threads waiting for a recipe to change (a latch, a kept node): a waiter takes the
    event of the next change (:meth:`next_event`), made when first asked for, and each change
    sets it and drops it, so a waiter wakes once per change and never spins, and a change
    nobody waits for makes and sets no event (a latch changes four times in a short life)."""

    def __init__(self, new_flag: Callable[[], Any]) -> None:
        self._new_flag = new_flag  # each event is set once
        self._swap = threading.Lock()  # held for the swap only, never across a switch
        self._event: Any = None  # the event of the next change, once a waiter asked for it

    def next_event(self) -> Any:
        """The event the next change sets (set once: see
        :func:`~pycurator._client.concurrency.flag_maker`)."""
        with self._swap:
            event = self._event
            if event is None:
                event = self._event = self._new_flag()
        return event

    def changed(self) -> None:
        """Wake whoever waits for the next change."""
        with self._swap:
            event, self._event = self._event, None
        if event is not None:
            event.set()


def wait_until(changes: Changes, decide: Callable[[], T | None], timeout: float | None) -> T | bool:
    """Wait until ``decide()`` gives an outcome (not None), looked at after each change
    ``changes`` tells: that outcome, or False once ``timeout`` seconds (None: no limit) have
    passed. How a shell waits for a recipe running in the background (a latch's leadership, a
    kept node's first create)."""
    deadline = Deadline(timeout)
    while True:
        outcome = decide()
        if outcome is not None:
            return outcome
        # the next change's event, then a look again: a change in between is not missed, and
        # a wait that ends with the outcome it waited for makes no event it never uses
        change = changes.next_event()
        outcome = decide()
        if outcome is not None:
            return outcome
        remaining = deadline.remaining()
        if remaining == 0:
            return False
        change.wait(remaining)


def run(transport: Transport, steps: Steps[T]) -> T:
    """Perform ``steps`` on ``transport``'s client, blocking the calling thread (or greenlet);
    the generator's value."""
    handler = transport.client.handler
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
                    if not step.result.ready():  # read by the waiter, if nobody reads
                        transport.read_answer(step.result, step.deadline.remaining())
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
    finally:
        held.end()


__all__ = ["Changes", "run", "wait_result", "wait_until"]
