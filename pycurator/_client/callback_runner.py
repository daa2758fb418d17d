"""The callback runner of the protocol's steps (:mod:`pycurator._protocol.steps`):
:func:`run_in_background` drives them from kazoo's callbacks and a shared timer, with no unit of
their own (:class:`CallbackRun`), on a client's transport
(:func:`pycurator._client.transport.transport_of`), through which it performs the client's side.
The front ends' own runners block a thread (:mod:`pycurator._threads.runner`) or await on an
event loop (:mod:`pycurator.aio._runner`)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kazoo.protocol.states import Callback

from .._protocol.deadline import DeadlineExpired
from .._protocol.steps import (
    EFFECTS,
    Await,
    AwaitAll,
    HeldSends,
    NewSignal,
    Outcome,
    Steps,
    WaitSignal,
    link_all,
    link_inline,
    outcome,
    outcomes,
)
from .._protocol.transport import Timer, Transport
from .runtime import services_of

log = logging.getLogger("pycurator")

T = TypeVar("T")


class Cancelled(BaseException):
    """Thrown into steps whose :class:`CallbackRun` is cancelled: their clean-up runs, then it ends
    them (a BaseException, so that no ``except Exception`` swallows it)."""


class _Suspension:
    """One wait of a :class:`CallbackRun`: what ends it early (a timer) or late (a linked
    callback)."""

    __slots__ = ("timer", "token", "unlink")

    def __init__(self, token: int) -> None:
        self.token = token
        self.timer: Timer | None = None
        self.unlink: Callable[[], None] | None = None


class CallbackSignal:
    """A :class:`~pycurator._protocol.transport.Signal` of a :class:`CallbackRun`: setting it
    resumes the run that waits on it (through the handler's callback worker, not on the
    setter's thread, unless :meth:`set_here`)."""

    def __init__(self, task: CallbackRun) -> None:
        self._task = task
        self._flag = False
        self._waiter: int | None = None  # the token of the task's suspension waiting on us

    def set(self) -> None:
        """Set the flag; the run waiting on it resumes through the handler's callback worker."""
        with self._task.lock:
            if self._flag:
                return
            self._flag = True
            token, self._waiter = self._waiter, None
        if token is not None:
            self._task.dispatch(token, True, None)

    def set_here(self) -> None:
        """Set the flag; the run waiting on it resumes on the calling thread, which must be one
        that may run steps (see :func:`~pycurator._protocol.transport.set_here`)."""
        with self._task.lock:
            if self._flag:
                return
            self._flag = True
            token, self._waiter = self._waiter, None
        if token is not None:
            self._task._resume(token, True, None)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag


class CallbackRun:
    """Steps driven by kazoo's callbacks: each answer, signal or timeout resumes the generator
    on the thread that brings it (a set signal or a timeout through the handler's callback
    worker, so never kazoo's connection thread, which must not send, unless
    :func:`~pycurator._protocol.transport.set_here` says otherwise). An answer resumes it on the
    thread that reads it where the handler offers that
    (:func:`~pycurator._protocol.steps.link_inline`: the fast handler, whose connection thread
    may send), else on kazoo's completion worker. Steps never block, so a run costs no unit of
    its own while it waits.

    :attr:`done` (a handler event) is set when the generator has ended; :attr:`value` or
    :attr:`error` says how. ``on_done(run)`` runs then, on the thread that ended it.
    """

    def __init__(
        self,
        transport: Transport,
        steps: Steps[Any],
        on_done: Callable[[CallbackRun], None] | None = None,
        done: Any = None,
        call_later: Callable[[float, Callable[[], None]], Timer] | None = None,
    ) -> None:
        self._handler = handler = transport.client.handler
        self._transport = transport
        self._steps = steps
        self._on_done = on_done
        self.lock = threading.Lock()  # held for bookkeeping only, never across a step
        self._token = 0
        self._waiting: _Suspension | None = None
        #: the AwaitAll whose wait is under way, and the undo of its links to the answers
        self._gathering: tuple[AwaitAll, Callable[[], None]] | None = None
        self._cancel_pending = False  # cancelled while running: throw at the next wait
        #: set once, when the steps end: ``done``, or an event of the handler's made for it
        self.done = services_of(handler).new_flag() if done is None else done
        #: the timers of the waits' limits: ``call_later``, or the transport's
        self._call_later = transport.call_later if call_later is None else call_later
        self.value: Any = None
        self.error: BaseException | None = None

    def start(self) -> None:
        """Run the steps up to their first wait, on the calling thread."""
        self._drive(None, None)

    def cancel(self) -> None:
        """Throw :class:`Cancelled` into the steps at their current wait (on the calling
        thread), or at their next one if another thread is running them now. As asyncio's
        cancellation, it is thrown once: the waits of the clean-up it starts are waited for."""
        with self.lock:
            if self.done.is_set():
                return
            waiting, self._waiting = self._waiting, None
            if waiting is None:
                self._cancel_pending = True
                return
        self._drop(waiting)
        self._drive(None, Cancelled())

    def dispatch(self, token: int, value: Any, error: BaseException | None) -> None:
        """Resume the wait ``token`` on the handler's callback worker (at once when the handler
        is stopped, as kazoo then calls its own callbacks)."""
        if self._handler.running:
            self._handler.dispatch_callback(Callback("watch", self._resume, (token, value, error)))
        else:
            self._resume(token, value, error)

    def _expire(self, token: int) -> None:
        """The deadline of the wait ``token`` (an :class:`Await`) has passed."""
        self.dispatch(token, None, DeadlineExpired())

    def _resume(self, token: int, value: Any, error: BaseException | None) -> None:
        with self.lock:
            waiting = self._waiting
            if waiting is None or waiting.token != token:
                return  # a wait already resumed by whatever came first
            self._waiting = None
        self._drop(waiting)
        self._drive(value, error)

    @staticmethod
    def _drop(waiting: _Suspension) -> None:
        """Undo what would have ended a wait that is over: its timer, its linked callback."""
        if waiting.timer is not None:
            waiting.timer.cancel()
        if waiting.unlink is not None:
            waiting.unlink()

    def _suspend(self, signal: CallbackSignal | None = None) -> _Suspension | bool | None:
        """A new wait (on ``signal``, if given), or None when the task is being cancelled
        (then throw instead), or True when ``signal`` is set already."""
        with self.lock:
            if self._cancel_pending:
                self._cancel_pending = False
                return None
            if signal is not None and signal.is_set():
                return True
            self._token += 1
            waiting = self._waiting = _Suspension(self._token)
            if signal is not None:
                signal._waiter = waiting.token
            return waiting

    def _drive(self, value: Any, error: BaseException | None) -> None:
        steps = self._steps
        transport = self._transport
        gathered, self._gathering = self._gathering, None
        if gathered is not None:  # the wait of an AwaitAll is over
            gathered[1]()
            if error is None:
                value = outcomes(gathered[0].answers)
        held = HeldSends(transport)
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                held.end()
                self._finish(stop.value, None)
                return
            except BaseException as exc:
                held.end()
                self._finish(None, exc)
                return
            # by the step's type (one look-up, not a chain of isinstance): effects first, the
            # most frequent steps
            kind = type(step)
            held.before(step)
            effect = EFFECTS.get(kind)
            if effect is not None:
                try:
                    value, error = effect(transport, step), None
                except BaseException as exc:  # thrown in, so the protocol's clean-up runs
                    value, error = None, exc
                continue
            if kind is NewSignal:
                value, error = CallbackSignal(self), None
                continue
            done = _WAITS[kind](self, step)
            if done is None:
                return  # suspended: whatever ends the wait drives the steps on
            value, error = done

    def _begin_await(self, step: Await) -> Outcome | None:
        """Begin the wait of an :class:`Await`: None once suspended, else the outcome to go
        on with (the answer is in, or Cancelled)."""
        if step.result.ready():
            return outcome(step.result)
        waiting = self._suspend()
        if waiting is None:
            return None, Cancelled()
        assert isinstance(waiting, _Suspension)
        self._await(waiting, step)
        return None

    def _begin_wait(self, step: WaitSignal | AwaitAll) -> Outcome | None:
        """Begin the wait of a :class:`WaitSignal` or an :class:`AwaitAll`: None once
        suspended, else the outcome to go on with (no wait after all: a signal set already,
        or no time to wait; or Cancelled)."""
        unlink: Callable[[], None] | None = None
        answers: Sequence[Any] = ()
        if isinstance(step, AwaitAll):
            signal, answers = step.wake, step.answers
            assert isinstance(signal, CallbackSignal)
            unlink = link_all(answers, signal)
            self._gathering = (step, unlink)  # before the wait: it may end at once
        else:
            signal = step.signal
            assert isinstance(signal, CallbackSignal)
        if step.timeout == 0 and not signal.is_set():
            waiting: _Suspension | bool | None = False
        else:
            waiting = self._suspend(signal)
        if waiting is None:  # cancelled
            if unlink is not None:
                self._gathering = None
                unlink()
            return None, Cancelled()
        if not isinstance(waiting, _Suspension):
            if unlink is None:
                return waiting, None
            self._gathering = None
            unlink()  # no wait after all
            return outcomes(answers), None
        if step.timeout is not None:
            waiting.timer = self._call_later(
                step.timeout,
                functools.partial(self.dispatch, waiting.token, False, None),
            )
        return None

    def _await(self, waiting: _Suspension, step: Await) -> None:
        token = waiting.token
        remaining = step.deadline.remaining()
        if remaining is not None:
            waiting.timer = self._call_later(remaining, functools.partial(self._expire, token))
        result = step.result

        # keeps the runs_inline contract (it only resumes the steps, which never block); not
        # marked, as only a watcher's mark is read, and marking costs a dict on every wait
        # the answer it is given, not one it closes over: kazoo's result keeps its callbacks,
        # and a callback that kept the result would make a cycle only a collection frees
        def answered(answer: Any) -> None:
            self._resume(token, *outcome(answer))

        # an inline link is not undone: answered later, it finds its wait over and does nothing
        if not link_inline(result, answered):
            result.rawlink(answered)
            waiting.unlink = lambda: result.unlink(answered)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        if isinstance(error, Cancelled):
            # the usual end, and its traceback would keep the steps' frames (and this task)
            # in a cycle only the garbage collector frees
            error = error.with_traceback(None)
        elif error is not None:
            log.error("background steps failed", exc_info=error)
        self.value, self.error = value, error
        self.done.set()
        on_done, self._on_done = self._on_done, None  # called once; its owner let go
        if on_done is not None:
            try:
                on_done(self)
            except Exception:
                log.exception("a background task's completion callback failed")


#: How a :class:`CallbackRun` begins each wait, by the step's type.
_WAITS: dict[type[Any], Callable[[CallbackRun, Any], Outcome | None]] = {
    Await: CallbackRun._begin_await,
    WaitSignal: CallbackRun._begin_wait,
    AwaitAll: CallbackRun._begin_wait,
}


def run_in_background(
    transport: Transport,
    steps: Steps[Any],
    on_done: Callable[[CallbackRun], None] | None = None,
    done: Any = None,
    call_later: Callable[[float, Callable[[], None]], Timer] | None = None,
) -> CallbackRun:
    """Drive ``steps`` on ``transport``'s client from kazoo's callbacks (see
    :class:`CallbackRun`, and ``done`` and ``call_later``), started at once."""
    run = CallbackRun(transport, steps, on_done, done, call_later)
    run.start()
    return run


__all__ = ["CallbackRun", "CallbackSignal", "Cancelled", "run_in_background"]
