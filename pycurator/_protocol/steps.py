"""The protocol's waiting, written once: steps that a blocking or an asyncio runner performs.

The recipes' protocols (the lock loop, the semaphore loop, the hold check) are generators that
*yield* what they need:

- :class:`Send`: send a request (:mod:`pycurator._protocol.requests`, as data); the value is its
  pending answer, awaited later, so that requests can be pipelined;
- :class:`Await`: the answer to a request, no later than a deadline (else
  :class:`DeadlineExpired` is thrown in);
- :class:`NewSignal`: a flag that kazoo's callbacks may set from any thread;
- :class:`WaitSignal`: the flag being set, for at most a number of seconds (True when set);
- :class:`AwaitAll`: several answers, or a flag set meanwhile, for at most a number of seconds
  (each answer's outcome, or None for one still to come);
- :class:`OnAnswer`: a callback once an answer nobody waits for comes;
- the client's side: :class:`Listen` / :class:`Unlisten` to its connection states,
  :class:`CheckOpen`, :class:`IsConnected`, :class:`SessionId`, :class:`Chroot`,
  :class:`WatchRemovals`; what outlives a wait: :class:`OweDelete`, :class:`ForgetWatch`; and
  :class:`GetTransport`, the transport a protocol's callbacks use (they run on kazoo's threads,
  outside the steps).

A runner performs the client's side through a transport
(:class:`~pycurator._protocol.transport.Transport`, :func:`perform`): on a kazoo client,
:class:`pycurator._client.transport.KazooTransport`; in tests, a scripted server. This module
does no I/O: it is the protocol's vocabulary, as h11 and httpcore keep HTTP's rules free of I/O.
A runner performs each step and sends its value (or throws its error) back in; three runners
drive the same generators:

- :func:`pycurator._threads.runner.run` blocks the calling thread through the client's handler
  (so it serves kazoo's threading, gevent and eventlet handlers alike);
- :func:`pycurator._client.callback_runner.run_in_background` drives them from kazoo's callbacks and
  a shared timer, with no unit of their own (an election that waits or leads costs a node and a
  watch, not a thread);
- :mod:`pycurator.aio` awaits them on an event loop.

An error thrown into a generator (a timeout, an interruption, a cancelled task) runs its
clean-up, which may yield more steps.

A step is a record made for each step yielded and never changed once made: slotted, equal by
type and fields, and hashable, with a plain ``__init__``, as the requests of
:mod:`pycurator._protocol.requests` (a frozen dataclass's sets each field through
``object.__setattr__``: a third of a microsecond more a step, tens of them an election).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.protocol.states import WatchedEvent

from .deadline import Deadline
from .requests import Request
from .transport import Pending, Signal, Transport

T = TypeVar("T")


@dataclass(slots=True, unsafe_hash=True)
class Await:
    """Wait for kazoo's async ``result``; its value, or its error, or DeadlineExpired."""

    result: Any
    deadline: Deadline


@dataclass(slots=True, unsafe_hash=True)
class NewSignal:
    """A new, clear :class:`Signal` for this runner."""


@dataclass(slots=True, unsafe_hash=True)
class WaitSignal:
    """Wait until ``signal`` is set, at most ``timeout`` seconds (None: no limit); whether set."""

    signal: Signal
    timeout: float | None


@dataclass(slots=True, unsafe_hash=True)
class AwaitAll:
    """Wait until every one of ``answers`` (pending answers of :class:`Send`) has come, or
    ``wake`` is set, at most ``timeout`` seconds (None: no limit); then each answer's
    :data:`Outcome`, None for one still to come (``wake.is_set()`` tells a wake from a
    timeout). The runner links to the answers for the wait and unlinks after it, so a protocol
    never touches a pending answer."""

    answers: Sequence[Any]
    wake: Signal
    timeout: float | None


#: How a request was answered: ``(value, None)``, or ``(None, error)``.
Outcome = tuple[Any, "BaseException | None"]


@dataclass(slots=True, unsafe_hash=True)
class Send:
    """Send ``request``; its :class:`Pending` answer (await it with :class:`Await`)."""

    request: Request


@dataclass(slots=True, unsafe_hash=True)
class Listen:
    """Call ``listener(state)`` on each connection state change of the client (on kazoo's
    connection thread: short, never blocking, never sending); a stop is told as LOST."""

    listener: Callable[[str], object]


@dataclass(slots=True, unsafe_hash=True)
class Unlisten:
    """Stop calling ``listener``."""

    listener: Callable[[str], object]


@dataclass(slots=True, unsafe_hash=True)
class CheckOpen:
    """ConnectionClosedError (thrown in) once the client is stopped (with ``message``, if
    given); else None."""

    message: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class IsConnected:
    """Whether the client is connected now."""


@dataclass(slots=True, unsafe_hash=True)
class SessionId:
    """The session the client is in, connected or not: a dropped connection does not end it,
    so a node of this session is still ours while the client reconnects. None when the client
    has no session (before the first, after an expiry until the next, once stopped): a node of
    any session is then not ours."""


@dataclass(slots=True, unsafe_hash=True)
class Chroot:
    """The client's chroot (``""`` for none)."""


@dataclass(slots=True, unsafe_hash=True)
class Claims:
    """The client's claims on its lock nodes (path to claimant): which acquire owns each
    node whose name does not tell (:class:`~pycurator._protocol.drivers.Naming`)."""


@dataclass(slots=True, unsafe_hash=True)
class WatchRemovals:
    """How many times the client has asked the server to drop a watch (a count that only grows).
    The server keeps one watch per path for a session, whatever the number of watchers: a watch
    set by a request sent before such a drop and answered after it may be gone already."""


@dataclass(slots=True, unsafe_hash=True)
class OweDelete:
    """Curator's guaranteed delete of ``path`` in the background, until it is gone or the
    client is stopped; ``sent``: the pending answer of a delete of it already sent."""

    path: str
    sent: Any = None


@dataclass(slots=True, unsafe_hash=True)
class ForgetWatch:
    """Drop ``watcher`` from the data (or ``children``) watches of ``path``, on the server too
    when no other watcher of the client shares it."""

    path: str
    watcher: Callable[[WatchedEvent], None]
    children: bool = False


@dataclass(slots=True, unsafe_hash=True)
class OnAnswer:
    """Call ``callback(outcome)`` once ``answer`` (a pending answer of :class:`Send`) has come,
    on the thread that brings it (short, never blocking), with its :data:`Outcome`: for an
    answer nobody waits for any more, whose effects are undone when it lands. ``inline``: the
    callback keeps the :func:`~pycurator._protocol.transport.runs_inline` contract, and runs
    where the answer is read when the answer offers that (:func:`link_inline`; the answer must
    have no other such callback), sparing a worker's wake."""

    answer: Any
    callback: Callable[[Outcome], None]
    inline: bool = False


@dataclass(slots=True, unsafe_hash=True)
class GetTransport:
    """The runner's transport, for the protocol's callbacks (which run on kazoo's threads,
    outside the steps)."""


Effect = (
    Send
    | Listen
    | Unlisten
    | CheckOpen
    | IsConnected
    | SessionId
    | Chroot
    | Claims
    | WatchRemovals
    | OweDelete
    | ForgetWatch
    | OnAnswer
    | GetTransport
)
Step = Await | AwaitAll | NewSignal | WaitSignal | Effect
#: A protocol's generator: yields steps, receives their values, returns a ``T``.
Steps = Generator[Step, Any, T]

#: How a transport performs each :data:`Effect` (what :func:`perform` looks up).
EFFECTS: dict[type[Any], Callable[[Transport, Any], Any]] = {
    Send: lambda t, step: t.send(step.request),
    Listen: lambda t, step: t.listen(step.listener),
    Unlisten: lambda t, step: t.unlisten(step.listener),
    CheckOpen: lambda t, step: t.check_open(step.message),
    IsConnected: lambda t, step: t.connected(),
    SessionId: lambda t, step: t.session_id(),
    Chroot: lambda t, step: t.chroot(),
    Claims: lambda t, step: t.claims(),
    WatchRemovals: lambda t, step: t.watch_removals(),
    OweDelete: lambda t, step: t.owe_delete(step.path, step.sent),
    ForgetWatch: lambda t, step: t.forget_watch(step.path, step.watcher, step.children),
    OnAnswer: lambda t, step: _link_answer(step),
    GetTransport: lambda t, step: t,
}


class HeldSends:
    """A runner's run of sends one behind the other, held and written together
    (:meth:`Transport.hold_sends`): :meth:`before` each step holds from a :class:`Send` on and
    writes what is held before any other step, so that nothing waits while sends are held;
    :meth:`end` writes what is left once the steps are over."""

    __slots__ = ("_holding", "_transport")

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._holding = False

    def before(self, step: Step) -> None:
        if type(step) is Send:
            if not self._holding:
                self._transport.hold_sends()
                self._holding = True
        elif self._holding:
            self._transport.send_held()
            self._holding = False

    def end(self) -> None:
        if self._holding:
            self._transport.send_held()
            self._holding = False


def _link_answer(step: OnAnswer) -> None:
    told = _told(step.callback)
    if not (step.inline and link_inline(step.answer, told)):
        step.answer.rawlink(told)


def _told(callback: Callable[[Outcome], None]) -> Callable[[Any], None]:
    """An :class:`OnAnswer`'s link: ``callback`` told the answer's outcome. It keeps the
    callback, never the step, which keeps the answer: kazoo's answer keeps its links once
    answered, and a link that kept the answer would make a cycle only a collection frees."""
    return lambda answer: callback(outcome(answer))


def perform(transport: Transport, step: Effect) -> Any:
    """Perform an :data:`Effect` through ``transport``; its value (its error raised)."""
    return EFFECTS[type(step)](transport, step)


def link_all(answers: Sequence[Pending], wake: Signal) -> Callable[[], None]:
    """How a runner begins an :class:`AwaitAll`: ``wake`` is set once every answer has come;
    the undo, to call when the wait ends. Each answer's callback is given its answer and
    crosses it off by its id: it keeps no answer, since kazoo's result keeps its callbacks
    once answered (its ``unlink`` does nothing then), and a callback that kept the answers
    would make a cycle only the garbage collector frees."""
    waiting = {id(answer) for answer in answers}

    def answered(answer: Any) -> None:
        waiting.discard(id(answer))
        if not waiting:
            wake.set()

    for answer in answers:
        answer.rawlink(answered)
    if not answers:
        wake.set()

    def unlink() -> None:
        for answer in answers:
            answer.unlink(answered)

    return unlink


def link_inline(answer: Pending, callback: Callable[[Any], None]) -> bool:
    """Have ``callback(answer)`` run on the thread that answers ``answer``, or at once if it is
    answered already, when the answer offers that (the fast handler's do: ``link_inline``);
    ``callback`` must keep the :func:`~pycurator._protocol.transport.runs_inline` contract,
    and an answer takes one such callback. False, and nothing arranged, for any other answer
    (whose linked callbacks a worker thread runs, a hand-off later)."""
    link = getattr(answer, "link_inline", None)
    if link is None:
        return False
    link(callback)
    return True


def outcome(answer: Pending) -> Outcome:
    """The :data:`Outcome` of an answer that has come."""
    try:
        return answer.get_nowait(), None
    except BaseException as exc:
        # its traceback (the answer's own get) would hold the answer, which holds the error: a
        # cycle only the garbage collector frees, made for every error answer
        return None, exc.with_traceback(None)


def outcomes(answers: Sequence[Pending]) -> list[Outcome | None]:
    """How a runner ends an :class:`AwaitAll`: each answer's :data:`Outcome`, None for one
    still to come."""
    return [outcome(answer) if answer.ready() else None for answer in answers]


__all__ = [
    "EFFECTS",
    "Await",
    "AwaitAll",
    "CheckOpen",
    "Chroot",
    "Claims",
    "Effect",
    "ForgetWatch",
    "GetTransport",
    "HeldSends",
    "IsConnected",
    "Listen",
    "NewSignal",
    "OnAnswer",
    "Outcome",
    "OweDelete",
    "Send",
    "SessionId",
    "Step",
    "Steps",
    "Unlisten",
    "WaitSignal",
    "WatchRemovals",
    "link_all",
    "link_inline",
    "outcome",
    "outcomes",
    "perform",
]
