"""The waits every recipe shares, as steps (:mod:`pycurator._protocol.steps`) that say what they
send (:mod:`pycurator._protocol.ops` requests, performed by the runner): for the connection, for a
request's answer with retries, for a watch to be set, for reads that ride through a reconnect; and
Curator's guaranteed delete.

Every wait honours a deadline, whatever the connection does. Deletes never wait for longer than
:data:`DELETE_WAIT`: one the server has not confirmed by then goes on in the background
(Curator's guaranteed delete).
"""

from __future__ import annotations

import contextlib
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
from .ops import DeleteNode, GetData, ListChildren, Request
from .steps import (
    Await,
    CheckOpen,
    GetSender,
    IsConnected,
    Listen,
    NewSignal,
    OweDelete,
    Send,
    Sender,
    Steps,
    Unlisten,
    WaitSignal,
    WatchRemovals,
)

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


def watch_sent_steps(request: GetData | ListChildren, deadline: Deadline) -> Steps[Any]:
    """Set the watch of ``request`` (a :class:`~pycurator._protocol.ops.GetData` or
    :class:`~pycurator._protocol.ops.ListChildren` with a watch): its answer within ``deadline``,
    sent again after connection loss; NoNodeError if the path is gone. A watch set by an answer that
    comes after we stopped waiting is dropped again."""
    watch = request.watch
    assert watch is not None, "a request that sets a watch"
    children = not isinstance(request, GetData)
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
            sender = yield GetSender()
            answer.rawlink(
                functools.partial(_drop_late_watch, sender, request.path, watch, children)
            )
            raise


def _drop_late_watch(
    sender: Sender,
    path: str,
    watcher: Callable[[WatchedEvent], None],
    children: bool,
    answer: Any,
) -> None:
    """Once the late ``answer`` of a watch request nobody waits for has set its watch, drop
    that watch (through the runner's ``sender``)."""
    try:
        answer.get_nowait()
    except Exception:
        return
    sender.call_later(
        LATE_WATCH_DELAY, functools.partial(sender.forget_watch, path, watcher, children)
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

    def answered(_: Any) -> None:
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
            answer.rawlink(answered)
            try:
                woken = yield WaitSignal(wake, deadline.remaining())
            finally:
                answer.unlink(answered)
            if answer.ready():
                with contextlib.suppress(*RETRYABLE):  # sent again once connected
                    return answer.get_nowait()
            if not woken:
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
    outcomes: list[tuple[Any, BaseException | None] | None] = [None] * len(requests)
    wake = yield NewSignal()

    def on_state(state: str) -> None:
        wake.set()

    first_unready = [0]

    def answered(_: Any) -> None:
        # an answer is ready before its callbacks run, so the callback of the last one in finds
        # every one ready, whichever thread runs it; the scan starts where an earlier one
        # stopped (a stale start, from a race, only costs a longer scan; a signal set twice is
        # set once)
        index = first_unready[0]
        while index < len(answers) and answers[index][1].ready():
            index += 1
        first_unready[0] = index
        if index == len(answers):
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
            answers: list[tuple[int, Any]] = []
            first_unready[0] = 0
            for index in pending:
                answers.append((index, (yield Send(requests[index]))))
            for _, answer in answers:
                answer.rawlink(answered)
            try:
                woken = yield WaitSignal(wake, deadline.remaining())
            finally:
                for _, answer in answers:
                    answer.unlink(answered)
            for index, answer in answers:
                if answer.ready():
                    try:
                        outcomes[index] = (answer.get_nowait(), None)
                    except RETRYABLE:
                        pass  # sent again once connected
                    except Exception as exc:
                        outcomes[index] = (None, exc)
            if not woken:
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
    "watch_sent_steps",
]
