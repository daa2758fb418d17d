"""The protocol's waiting, written once: steps that a blocking or an asyncio runner performs.

The recipes' protocols (the lock loop, the semaphore loop, the hold check) are generators that
*yield* what they need:

- :class:`Send`: send a request (:mod:`pycurator._ops`, as data); the value is its pending
  answer, awaited later, so that requests can be pipelined;
- :class:`Await`: the answer to a request, no later than a deadline (else
  :class:`DeadlineExpired` is thrown in);
- :class:`NewSignal`: a flag that kazoo's callbacks may set from any thread;
- :class:`WaitSignal`: the flag being set, for at most a number of seconds (True when set);
- the client's side: :class:`Listen` / :class:`Unlisten` to its connection states,
  :class:`CheckOpen`, :class:`IsConnected`, :class:`SessionId`, :class:`Chroot`; what outlives
  a wait: :class:`OweDelete`, :class:`ForgetWatch`; and :class:`GetSender`, the
  :class:`Sender` a protocol's callbacks use (they run on kazoo's threads, outside the steps).

A runner performs the client's side through a transport (:func:`perform`): on a real client,
:class:`pycurator._transport.KazooTransport`; in tests, a scripted server. Protocols written
before requests were data still send kazoo's requests themselves and await their async results;
the runners serve both.

A runner performs each step and sends its value (or throws its error) back in, as h11 and
httpcore keep HTTP's rules free of I/O. Three runners drive the same generators:

- :func:`run` blocks the calling thread through the client's handler (so it serves kazoo's
  threading, gevent and eventlet handlers alike);
- :func:`start` drives them from kazoo's callbacks and a shared timer, with no unit of their
  own (an election that waits or leads costs a node and a watch, not a thread);
- :mod:`pycurator.aio` awaits them on an event loop.

An error thrown into a generator (a timeout, an interruption, a cancelled task) runs its
clean-up, which may yield more steps.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooClient
from kazoo.protocol.states import Callback, WatchedEvent

from ._background import Timer
from ._deadline import Deadline, DeadlineExpired, wait_result
from ._handlers import link_inline, runs_inline
from ._ops import Request
from ._runtime import services_of
from ._transport import KazooTransport

log = logging.getLogger("pycurator")

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


class Pending(Protocol):
    """A request's answer to come: kazoo's async result (or a scripted server's). Once
    :meth:`ready` and :meth:`successful`, :attr:`value` is the answer (read without a lock)."""

    value: Any

    def ready(self) -> bool: ...

    def successful(self) -> bool: ...

    def get_nowait(self) -> Any: ...

    def rawlink(self, callback: Callable[[Any], None]) -> None: ...

    def unlink(self, callback: Callable[[Any], None]) -> None: ...


class Sender(Protocol):
    """What a protocol's callbacks may do from any thread, without a step: send a request, owe
    a delete, drop a watch, call later, queue work in order, start steps in the background."""

    def send(self, request: Request) -> Any: ...

    def owe_delete(self, path: str, sent: Any = None) -> None: ...

    def forget_watch(
        self, path: str, watcher: Callable[[WatchedEvent], None], children: bool = False
    ) -> None: ...

    def call_later(self, delay: float, function: Callable[[], None]) -> Any: ...

    def serial_queue(self) -> Any: ...

    def start(self, steps: Steps[Any]) -> None: ...


class Transport(Sender, Protocol):
    """A runner's way to the client: a :class:`Sender`, and the client's state."""

    def listen(self, listener: Callable[[str], object]) -> None: ...

    def unlisten(self, listener: Callable[[str], object]) -> None: ...

    def check_open(self, message: str | None = None) -> None: ...

    def connected(self) -> bool: ...

    def session_id(self) -> int | None: ...

    def chroot(self) -> str: ...

    def claims(self) -> dict[str, object]: ...


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request``; its :class:`Pending` answer (await it with :class:`Await`)."""

    request: Request


@dataclass(frozen=True, slots=True)
class Listen:
    """Call ``listener(state)`` on each connection state change of the client (on kazoo's
    connection thread: short, never blocking, never sending); a stop is told as LOST."""

    listener: Callable[[str], object]


@dataclass(frozen=True, slots=True)
class Unlisten:
    """Stop calling ``listener``."""

    listener: Callable[[str], object]


@dataclass(frozen=True, slots=True)
class CheckOpen:
    """ConnectionClosedError (thrown in) once the client is stopped (with ``message``, if
    given); else None."""

    message: str | None = None


@dataclass(frozen=True, slots=True)
class IsConnected:
    """Whether the client is connected now."""


@dataclass(frozen=True, slots=True)
class SessionId:
    """The client's session id, or None before it has one."""


@dataclass(frozen=True, slots=True)
class Chroot:
    """The client's chroot (``""`` for none)."""


@dataclass(frozen=True, slots=True)
class Claims:
    """The client's claims on its lock nodes (path to claimant): which acquire owns each
    node whose name does not tell (:class:`~pycurator._drivers.Naming`)."""


@dataclass(frozen=True, slots=True)
class OweDelete:
    """Curator's guaranteed delete of ``path`` in the background, until it is gone or the
    client is stopped; ``sent``: the pending answer of a delete of it already sent."""

    path: str
    sent: Any = None


@dataclass(frozen=True, slots=True)
class ForgetWatch:
    """Drop ``watcher`` from the data (or ``children``) watches of ``path``, on the server too
    when no other watcher of the client shares it."""

    path: str
    watcher: Callable[[WatchedEvent], None]
    children: bool = False


@dataclass(frozen=True, slots=True)
class GetSender:
    """The runner's :class:`Sender`, for the protocol's callbacks."""


Effect = (
    Send
    | Listen
    | Unlisten
    | CheckOpen
    | IsConnected
    | SessionId
    | Chroot
    | Claims
    | OweDelete
    | ForgetWatch
    | GetSender
)
Step = Await | NewSignal | WaitSignal | Effect
#: A protocol's generator: yields steps, receives their values, returns a ``T``.
Steps = Generator[Step, Any, T]

_PERFORM: dict[type[Any], Callable[[Transport, Any], Any]] = {
    Send: lambda t, step: t.send(step.request),
    Listen: lambda t, step: t.listen(step.listener),
    Unlisten: lambda t, step: t.unlisten(step.listener),
    CheckOpen: lambda t, step: t.check_open(step.message),
    IsConnected: lambda t, step: t.connected(),
    SessionId: lambda t, step: t.session_id(),
    Chroot: lambda t, step: t.chroot(),
    Claims: lambda t, step: t.claims(),
    OweDelete: lambda t, step: t.owe_delete(step.path, step.sent),
    ForgetWatch: lambda t, step: t.forget_watch(step.path, step.watcher, step.children),
    GetSender: lambda t, step: t,
}


class RunnerTransport(KazooTransport):
    """The transport a runner hands the protocol it runs: :class:`KazooTransport`, and steps
    started in the background on kazoo's callbacks (:func:`start`), which the transport itself,
    under the runners, knows nothing of."""

    __slots__ = ()

    def start(self, steps: Steps[Any]) -> None:
        """Run ``steps`` in the background, driven by kazoo's callbacks."""
        start(self.client, steps)


def perform(transport: Transport, step: Effect) -> Any:
    """Perform an :data:`Effect` through ``transport``; its value (its error raised)."""
    return _PERFORM[type(step)](transport, step)


def run(client: KazooClient, steps: Steps[T]) -> T:
    """Perform ``steps`` blocking the calling thread (or greenlet); the generator's value."""
    transport = RunnerTransport(client)
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
            elif (effect := _PERFORM.get(type(step))) is not None:
                value = effect(transport, step)
            elif isinstance(step, NewSignal):
                value = client.handler.event_object()
            else:
                value = bool(step.signal.wait(step.timeout))  # type: ignore[union-attr]
        except BaseException as exc:  # thrown in, so the protocol's clean-up runs
            error = exc


class Cancelled(BaseException):
    """Thrown into steps whose :class:`Task` is cancelled: their clean-up runs, then it ends
    them (a BaseException, so that no ``except Exception`` swallows it)."""


def _outcome(result: Any) -> tuple[Any, BaseException | None]:
    """The value of a ready kazoo async result, or its error."""
    try:
        return result.get_nowait(), None
    except BaseException as exc:
        return None, exc


class _Suspension:
    """One wait of a :class:`Task`: what ends it early (a timer) or late (a linked callback)."""

    __slots__ = ("timer", "token", "unlink")

    def __init__(self, token: int) -> None:
        self.token = token
        self.timer: Timer | None = None
        self.unlink: Callable[[], None] | None = None


class TaskSignal:
    """A :class:`Signal` of a :class:`Task`: setting it resumes the task that waits on it
    (through the handler's callback worker, not on the setter's thread, unless ``here``)."""

    def __init__(self, task: Task) -> None:
        self._task = task
        self._flag = False
        self._waiter: int | None = None  # the token of the task's suspension waiting on us

    def set(self, here: bool = False) -> None:
        """Set the flag; with ``here``, the task waiting on it resumes on the calling thread,
        which must be one that may run steps (see :func:`set_here`)."""
        with self._task.lock:
            if self._flag:
                return
            self._flag = True
            token, self._waiter = self._waiter, None
        if token is None:
            return
        if here:
            self._task._resume(token, True, None)
        else:
            self._task.dispatch(token, True, None)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag


def set_here(signal: Signal) -> None:
    """Set ``signal``; when it is a :class:`TaskSignal`, the task waiting on it resumes on the
    calling thread rather than a hand-off later on the handler's callback worker. The caller
    must be a thread that may run steps: a watcher marked :func:`~pycurator._handlers.runs_inline`
    (the connection thread only under a handler that lets it send), or a unit of pycurator's
    own that holds no lock another thread may hold while it waits for these steps."""
    if isinstance(signal, TaskSignal):
        signal.set(here=True)
    else:
        signal.set()


class Task:
    """Steps driven by kazoo's callbacks: each answer, signal or timeout resumes the generator
    on the thread that brings it (a set signal or a timeout through the handler's callback
    worker, so never kazoo's connection thread, which must not send, unless :func:`set_here`
    says otherwise). An answer resumes it on the thread that reads it where the handler offers
    that (:func:`~pycurator._handlers.link_inline`: the fast handler, whose connection thread
    may send), else on kazoo's completion worker. Steps never block, so a task costs no unit
    of its own while it waits.

    :attr:`done` (a handler event) is set when the generator has ended; :attr:`value` or
    :attr:`error` says how. ``on_done(task)`` runs then, on the thread that ended it.
    """

    def __init__(
        self,
        client: KazooClient,
        steps: Steps[Any],
        on_done: Callable[[Task], None] | None = None,
    ) -> None:
        self._handler = client.handler
        self._transport = RunnerTransport(client)
        self._steps = steps
        self._on_done = on_done
        self.lock = threading.Lock()  # held for bookkeeping only, never across a step
        self._token = 0
        self._waiting: _Suspension | None = None
        self._cancel_pending = False  # cancelled while running: throw at the next wait
        self.done = client.handler.event_object()
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

    def _suspend(self, signal: TaskSignal | None = None) -> _Suspension | bool | None:
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
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as stop:
                self._finish(stop.value, None)
                return
            except BaseException as exc:
                self._finish(None, exc)
                return
            value, error = None, None
            if isinstance(step, NewSignal):
                value = TaskSignal(self)
                continue
            if not isinstance(step, (Await, WaitSignal)):
                try:
                    value = _PERFORM[type(step)](self._transport, step)
                except BaseException as exc:  # thrown in, so the protocol's clean-up runs
                    error = exc
                continue
            if isinstance(step, Await):
                if step.result.ready():
                    value, error = _outcome(step.result)
                    continue
                waiting = self._suspend()
            else:
                signal = step.signal
                assert isinstance(signal, TaskSignal)
                if step.timeout == 0 and not signal.is_set():
                    value = False
                    continue
                waiting = self._suspend(signal)
            if waiting is None:
                error = Cancelled()
                continue
            if waiting is True:
                value = True
                continue
            assert isinstance(waiting, _Suspension)
            if isinstance(step, Await):
                self._await(waiting, step)
            elif step.timeout is not None:
                waiting.timer = services_of(self._handler).call_later(
                    step.timeout,
                    functools.partial(self.dispatch, waiting.token, False, None),
                )
            return

    def _await(self, waiting: _Suspension, step: Await) -> None:
        token = waiting.token
        remaining = step.deadline.remaining()
        if remaining is not None:
            waiting.timer = services_of(self._handler).call_later(
                remaining,
                functools.partial(self.dispatch, token, None, DeadlineExpired()),
            )
        result = step.result

        @runs_inline
        def answered(_: Any) -> None:
            self._resume(token, *_outcome(result))

        # an inline link is not undone: answered later, it finds its wait over and does nothing
        if not link_inline(result, answered):
            result.rawlink(answered)
            waiting.unlink = lambda: result.unlink(answered)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        if error is not None and not isinstance(error, Cancelled):
            log.error("background steps failed", exc_info=error)
        self.value, self.error = value, error
        self.done.set()
        if self._on_done is not None:
            try:
                self._on_done(self)
            except Exception:
                log.exception("a background task's completion callback failed")


def start(
    client: KazooClient, steps: Steps[Any], on_done: Callable[[Task], None] | None = None
) -> Task:
    """Drive ``steps`` from kazoo's callbacks (see :class:`Task`), started at once."""
    task = Task(client, steps, on_done)
    task.start()
    return task


__all__ = [
    "Await",
    "Cancelled",
    "CheckOpen",
    "Chroot",
    "Claims",
    "Effect",
    "ForgetWatch",
    "GetSender",
    "IsConnected",
    "Listen",
    "NewSignal",
    "OweDelete",
    "Pending",
    "RunnerTransport",
    "Send",
    "Sender",
    "SessionId",
    "Signal",
    "Step",
    "Steps",
    "Task",
    "TaskSignal",
    "Transport",
    "Unlisten",
    "WaitSignal",
    "perform",
    "run",
    "set_here",
    "start",
]
