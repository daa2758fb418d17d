"""The waits every recipe shares, as steps (:mod:`pycurator._protocol.steps`) that say what they
send (:mod:`pycurator._protocol.requests` requests, performed by the runner): for the connection,
for a request's answer with retries, for a watch to be set, for reads that ride through a reconnect;
and Curator's guaranteed delete.

Every wait honours a deadline, whatever the connection does. Deletes never wait for longer than
:data:`DELETE_WAIT`: one the server has not confirmed by then goes on in the background
(Curator's guaranteed delete).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import WatchedEvent

from .deadline import Deadline, DeadlineExpired
from .requests import DeleteNode, GetData, ListChildren, NodeExists, Request
from .steps import (
    Await,
    AwaitAll,
    CheckOpen,
    GetTransport,
    IsConnected,
    Listen,
    NewSignal,
    OnAnswer,
    Outcome,
    OweDelete,
    Send,
    Steps,
    Unlisten,
    WaitSignal,
    WatchRemovals,
)
from .transport import Transport

log = logging.getLogger("pycurator")

#: Errors after which the same request may be sent again once the client is connected.
RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError)
#: The longest a delete of our node (release, or the clean-up of a failed acquire) waits for
#: the server's answer while the client is connected, in seconds. A client that is not
#: connected does not wait at all. Either way an unconfirmed delete goes on in the background.
DELETE_WAIT = 2.0
#: Seconds between the late answer of a watch request nobody waits for and dropping its watch.
LATE_WATCH_DELAY = 0.05


def _within(deadline: Deadline) -> str:
    return f"{deadline.timeout:g}s" if deadline.timeout is not None else "the time allowed"


def connected_steps(deadline: Deadline) -> Steps[None]:
    """Wait until the client is connected; DeadlineExpired when the deadline passes,
    ConnectionClosedError once it is stopped."""
    if (yield IsConnected()):
        return
    event = yield NewSignal()

    def listener(state: str) -> None:
        event.set()

    yield Listen(listener)
    try:
        while True:
            yield CheckOpen()
            if (yield IsConnected()):
                return
            remaining = deadline.remaining()
            if remaining is not None and remaining <= 0:
                raise DeadlineExpired()
            event.clear()
            yield CheckOpen()
            if (yield IsConnected()):
                return  # connected before the listener could hear it
            yield WaitSignal(event, remaining)
    finally:
        yield Unlisten(listener)


def sent_steps(request: Request, deadline: Deadline | None = None) -> Steps[Any]:
    """Send ``request`` and await its answer (no longer than ``deadline``, if given: then
    :class:`DeadlineExpired`); the server's errors are raised as kazoo raises them."""
    return (yield Await((yield Send(request)), deadline or Deadline(None)))


def resent_steps(request: Request, deadline: Deadline, sent: Any = None) -> Steps[Any]:
    """The answer to ``request`` within ``deadline``, sent again after connection loss once
    the client is connected. ``sent``: the pending answer of the same request, already sent, to
    wait for first."""
    while True:
        if sent is None:
            sent = yield Send(request)
        answer, sent = sent, None
        try:
            return (yield Await(answer, deadline))
        except RETRYABLE:
            yield from connected_steps(deadline)


def watch_sent_steps(
    request: GetData | ListChildren | NodeExists, deadline: Deadline
) -> Steps[Any]:
    """Set the watch of ``request`` (a :class:`~pycurator._protocol.requests.GetData`,
    :class:`~pycurator._protocol.requests.ListChildren` or
    :class:`~pycurator._protocol.requests.NodeExists` with a watch): its answer within
    ``deadline``, sent again after connection loss; NoNodeError if the path is gone (an
    ``exists`` answers None instead, its watch set). A watch set by an answer that comes after
    we stopped waiting is dropped again."""
    watch = request.watch
    assert watch is not None, "a request that sets a watch"
    children = isinstance(request, ListChildren)
    while True:
        removals = yield WatchRemovals()
        answer = yield Send(request)
        try:
            value = yield Await(answer, deadline)
            if (yield WatchRemovals()) == removals:
                return value
            # another watcher of ours dropped the server's watch of some path meanwhile:
            # perhaps the one this request set, so it is set again
        except RETRYABLE:
            yield from connected_steps(deadline)
        except BaseException:
            # the deadline passed or the wait was interrupted (perhaps just as the answer
            # came): a watch the request sets, now or later, is dropped again
            transport = yield GetTransport()
            yield OnAnswer(
                answer,
                functools.partial(_drop_late_watch, transport, request.path, watch, children),
            )
            raise


def _drop_late_watch(
    transport: Transport,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    children: bool,
    answered: Outcome,
) -> None:
    """Once the late answer of a watch request nobody waits for has set its watch (it was
    ``answered`` without an error), drop that watch (through the runner's ``transport``)."""
    if answered[1] is not None:
        return
    transport.call_later(
        LATE_WATCH_DELAY, functools.partial(transport.forget_watch, path, watcher, children)
    )


def delete_node_steps(path: str) -> Steps[None]:
    """Curator's guaranteed delete of one of our ephemeral nodes; done within
    :data:`DELETE_WAIT` seconds whatever the connection does.

    A missing node is fine. A delete the server has not confirmed in time (the client is not
    connected, the answer is late, or the waiter is interrupted) goes on in the background, sent
    again each time the client connects, until the node is deleted or gone (with its session),
    or the client is stopped.
    """
    if not (yield IsConnected()):
        yield OweDelete(path)
        return
    answer = yield Send(DeleteNode(path))
    try:
        yield Await(answer, Deadline(DELETE_WAIT))
    except (NoNodeError, SessionExpiredError, ConnectionClosedError):
        pass
    except (ConnectionLoss, OperationTimeoutError, DeadlineExpired):
        log.info("delete of %s deferred until the connection is back", path)
        yield OweDelete(path, answer)
    except BaseException as exc:
        if not isinstance(exc, KazooException):  # interrupted: the answer is not read yet
            yield OweDelete(path, answer)
        raise


def read_sent_steps(request: Request, deadline: Deadline) -> Steps[Any]:
    """The answer to one read-only ``request``, riding through a reconnect
    (sent once connected, and again after a connection loss or an expiry met while waiting);
    the server's error raised, ConnectionLoss once ``deadline`` passes without an answer."""
    wake = yield NewSignal()

    def on_state(state: str) -> None:
        wake.set()

    yield Listen(on_state)
    try:
        while True:
            try:
                yield from connected_steps(deadline)
            except DeadlineExpired:
                raise ConnectionLoss(
                    f"not connected to ZooKeeper within {_within(deadline)}"
                ) from None
            wake.clear()
            answer = yield Send(request)
            (answered,) = yield AwaitAll((answer,), wake, deadline.remaining())
            if answered is not None:
                value, error = answered
                if error is None:
                    return value
                if not isinstance(error, RETRYABLE):  # else sent again once connected
                    raise error
            if not wake.is_set():
                raise ConnectionLoss(f"no answer from ZooKeeper within {_within(deadline)}")
    finally:
        yield Unlisten(on_state)


def read_all_sent_steps(
    requests: Sequence[Request], deadline: Deadline
) -> Steps[list[tuple[Any, BaseException | None]]]:
    """The answers to read-only ``requests``, sent together, each as
    ``(value, None)`` or ``(None, error)`` for a server's error (``NoNodeError``...), riding
    through a reconnect (those unanswered are sent again after a connection loss or an expiry
    met while waiting). ``ConnectionLoss`` once ``deadline`` passes without every answer,
    ``ConnectionClosedError`` once the client is stopped."""
    if not requests:
        return []
    outcomes: list[Outcome | None] = [None] * len(requests)
    wake = yield NewSignal()

    def on_state(state: str) -> None:
        wake.set()

    yield Listen(on_state)
    try:
        while True:
            pending = [index for index, outcome in enumerate(outcomes) if outcome is None]
            if not pending:
                return [outcome for outcome in outcomes if outcome is not None]
            try:
                yield from connected_steps(deadline)
            except DeadlineExpired:
                raise ConnectionLoss(
                    f"not connected to ZooKeeper within {_within(deadline)}"
                ) from None
            wake.clear()
            answers = []
            for index in pending:
                answers.append((yield Send(requests[index])))
            answered = yield AwaitAll(answers, wake, deadline.remaining())
            for index, outcome in zip(pending, answered, strict=True):
                if outcome is not None and not isinstance(outcome[1], RETRYABLE):
                    outcomes[index] = outcome  # a retryable error: sent again once connected
            if not wake.is_set() and None in answered:  # the deadline passed first
                raise ConnectionLoss(f"no answer from ZooKeeper within {_within(deadline)}")
    finally:
        yield Unlisten(on_state)


__all__ = [
    "DELETE_WAIT",
    "RETRYABLE",
    "connected_steps",
    "delete_node_steps",
    "read_all_sent_steps",
    "read_sent_steps",
    "resent_steps",
    "sent_steps",
    "watch_sent_steps",
]
