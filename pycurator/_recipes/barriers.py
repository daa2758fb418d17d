"""Curator's barriers as steps: ``DistributedBarrier`` (one node: waiters wait until it is gone)
and ``DistributedDoubleBarrier`` (members enter until ``member_qty`` are in, and leave
together), on Curator's nodes, data and order (:mod:`pycurator._protocol.barriers`).

Every wait ends on evidence read from the server, never on a wake-up alone: a member passes
only once it has read ``ready`` or ``member_qty`` children (Curator's GH-1290, fixed after 5.9.0,
let one through on a spurious wake-up or a reconnect). A wait that gives up leaves nothing
behind: its watches are dropped, and a member's node made by an ``enter`` that timed out is
deleted (Curator keeps it, so that it counts for members it will never meet).
"""

from __future__ import annotations

import contextlib

from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from .._protocol import wire
from .._protocol.barriers import check_member_qty, leave_step, may_pass, members, new_member_name
from .._protocol.checks import check_timeout
from .._protocol.deadline import Deadline, DeadlineExpired
from .._protocol.paths import validate_path
from .._protocol.requests import CreateMode, CreateNode, DeleteNode, ListChildren, NodeExists
from .._protocol.steps import (
    CheckOpen,
    ForgetWatch,
    Listen,
    NewSignal,
    Steps,
    Unlisten,
    WaitSignal,
)
from .._protocol.transport import Signal, Transport, runs_inline
from .._protocol.waits import DELETE_WAIT, delete_node_steps, read_sent_steps, resent_steps
from .versioned import resent_create_steps

#: Errors that end a barrier's wait as its timeout does: no answer, or no connection, in time.
OUT_OF_TIME = (ConnectionLoss, DeadlineExpired)


class _Waiting:
    """What a barrier's wait listens with: a signal set by its watches and by every change of
    the connection, and the paths it watched (their watches dropped at the end)."""

    def __init__(self, wake: Signal) -> None:
        self.wake = wake
        self.watched: set[str] = set()

    @runs_inline
    def on_event(self, event: WatchedEvent) -> None:
        self.wake.set()

    def on_state(self, state: str) -> None:
        self.wake.set()  # a new session lost our watches; a stopped client ends the wait

    def exists_steps(self, path: str, deadline: Deadline) -> Steps[bool]:
        """Whether ``path`` exists, watched (its creation, change or deletion wakes us)."""
        self.watched.add(path)
        stat = yield from read_sent_steps(NodeExists(path, self.on_event), deadline)
        return stat is not None

    def wait_steps(self, deadline: Deadline) -> Steps[bool]:
        """Wait for the next wake-up; False once ``deadline`` has passed."""
        if deadline.expired():
            return False
        return bool((yield WaitSignal(self.wake, deadline.remaining())))

    def end_steps(self) -> Steps[None]:
        yield Unlisten(self.on_state)
        for path in sorted(self.watched):
            yield ForgetWatch(path, self.on_event)


def _waiting_steps() -> Steps[_Waiting]:
    waiting = _Waiting((yield NewSignal()))
    yield Listen(waiting.on_state)
    return waiting


class BarrierSteps:
    """Curator's ``DistributedBarrier`` on ``path``: the node is the barrier (PERSISTENT,
    Curator's default data, container parents)."""

    def __init__(self, transport: Transport, path: str) -> None:
        validate_path(path)
        self.transport = transport
        self.path = path

    def set_steps(self) -> Steps[None]:
        """Make the barrier node (there already: nothing)."""
        deadline = Deadline(self.transport.session_timeout())
        with contextlib.suppress(NodeExistsError):
            yield from resent_create_steps(self.path, self.transport.node_data(), None, deadline)

    def remove_steps(self) -> Steps[None]:
        """Delete the barrier node (gone already: nothing)."""
        deadline = Deadline(self.transport.session_timeout())
        with contextlib.suppress(NoNodeError):
            yield from resent_steps(DeleteNode(self.path), deadline)

    def wait_steps(self, timeout: float | None) -> Steps[bool]:
        """True once the barrier node is found missing; False after ``timeout`` seconds,
        whatever the connection does."""
        deadline = Deadline(check_timeout(timeout))
        waiting = yield from _waiting_steps()
        try:
            while True:
                yield CheckOpen()
                waiting.wake.clear()
                if not (yield from waiting.exists_steps(self.path, deadline.for_requests())):
                    return True
                if not (yield from waiting.wait_steps(deadline)):
                    return False
        except OUT_OF_TIME:
            return False
        finally:
            yield from waiting.end_steps()


class DoubleBarrierSteps:
    """Curator's ``DistributedDoubleBarrier`` of ``member_qty`` members on ``path``: this
    member is the EPHEMERAL node ``path/<UUID>`` (:attr:`our_path`, drawn once, as Curator
    draws it), holding Curator's default data."""

    def __init__(self, transport: Transport, path: str, member_qty: int) -> None:
        validate_path(path)
        self.member_qty = check_member_qty(member_qty)
        self.transport = transport
        self.path = path
        self.our_name = new_member_name()
        self.our_path = wire.join_path(path, self.our_name)
        self.ready_path = wire.join_path(path, wire.BARRIER_READY)

    def _create_steps(self, path: str, mode: CreateMode, deadline: Deadline) -> Steps[None]:
        try:
            yield from resent_create_steps(path, self.transport.node_data(), None, deadline, mode)
        except NodeExistsError:
            pass  # ours, made by a create whose answer was lost; or ready, made by another
        except NoNodeError:
            if not deadline.expired():
                raise
            raise DeadlineExpired() from None  # its parent reaped again and again until then

    def _children_steps(self, deadline: Deadline) -> Steps[list[str]]:
        try:
            children: list[str] = yield from read_sent_steps(ListChildren(self.path), deadline)
        except NoNodeError:
            return []
        return children

    def enter_steps(self, timeout: float | None) -> Steps[bool]:
        """Enter: our node made, then True once ``ready`` or ``member_qty`` children are read
        (we made ``ready`` then); False after ``timeout`` seconds, whatever the connection
        does, our node deleted again (unless ``ready`` is there by then: we entered)."""
        deadline = Deadline(check_timeout(timeout))
        requests = deadline.for_requests()
        waiting = yield from _waiting_steps()
        made = passed = timed_out = False
        try:
            while True:
                yield CheckOpen()
                waiting.wake.clear()
                ready = yield from waiting.exists_steps(self.ready_path, requests)
                if not made:
                    made = True  # from its sending on: deleted unless we pass
                    yield from self._create_steps(self.our_path, CreateMode.EPHEMERAL, requests)
                if ready:
                    passed = True
                    return True
                children = yield from self._children_steps(requests)
                if self.our_name not in children:
                    made = False  # our session ended, and our node with it: made again
                    continue
                if may_pass(children, self.member_qty):
                    if not (yield from self._ready_made_steps(requests)):
                        continue  # the barrier's node went, and ours with it: made again
                    passed = True
                    return True
                if not (yield from waiting.wait_steps(deadline)):
                    timed_out = True
                    break
        except OUT_OF_TIME:
            if not deadline.expired():
                raise
            timed_out = True
        finally:
            yield from waiting.end_steps()
            if made and not passed:
                try:
                    if timed_out:
                        passed = yield from self._ready_steps()
                finally:  # interrupted as it looked at ready: ours is deleted all the same
                    if not passed:
                        yield from delete_node_steps(self.our_path)
        return passed

    def _ready_made_steps(self, deadline: Deadline) -> Steps[bool]:
        """Make ``ready`` (PERSISTENT, Curator's default data; made already by another: fine),
        as Curator's member that counted enough does; False when the barrier's node is gone."""
        request = CreateNode(self.ready_path, self.transport.node_data(), None)
        try:
            yield from resent_steps(request, deadline)
        except NodeExistsError:
            pass
        except NoNodeError:
            return False
        return True

    def _ready_steps(self) -> Steps[bool]:
        """Whether ``ready`` is there (False when the server does not say so in time): an
        enter out of time that finds it entered after all (a member counted it)."""
        try:
            stat = yield from read_sent_steps(NodeExists(self.ready_path), Deadline(DELETE_WAIT))
        except OUT_OF_TIME:
            return False
        return stat is not None

    def leave_steps(self, timeout: float | None) -> Steps[bool]:
        """Leave: True once every member has left (the lowest waits for the others to go, each
        other deletes its node and waits for the lowest to go too; ``ready`` deleted at the
        end), False
        after ``timeout`` seconds, whatever the connection does, our node deleted all the same
        (and ``ready`` too, when no member is left)."""
        deadline = Deadline(check_timeout(timeout))
        requests = deadline.for_requests()
        waiting = yield from _waiting_steps()
        ours_there = True
        done = False
        try:
            while not done:
                yield CheckOpen()
                waiting.wake.clear()
                names = members((yield from self._children_steps(requests)))
                step = leave_step(names, self.our_name, ours_there)
                watched = True
                if step.watch is not None:
                    watch_path = wire.join_path(self.path, step.watch)
                    watched = yield from waiting.exists_steps(watch_path, requests)
                if step.delete_ours:
                    yield from delete_node_steps(self.our_path)
                    ours_there = False
                done = step.done
                if not done and watched and not (yield from waiting.wait_steps(deadline)):
                    break
        except OUT_OF_TIME:
            if not deadline.expired():
                raise
        finally:
            yield from waiting.end_steps()
            if ours_there:
                yield from delete_node_steps(self.our_path)
        yield from self._delete_ready_steps(done)
        return done

    def _delete_ready_steps(self, done: bool) -> Steps[None]:
        """Delete ``ready`` once we have left (``done``), as Curator's members do; after a
        leave out of time, only when no member is left. Not confirmed in time: left as it is."""
        deadline = Deadline(DELETE_WAIT)
        try:
            if not done and members((yield from self._children_steps(deadline))):
                return
            yield from resent_steps(DeleteNode(self.ready_path), deadline)
        except (NoNodeError, *OUT_OF_TIME):
            pass


__all__ = ["OUT_OF_TIME", "BarrierSteps", "DoubleBarrierSteps"]
