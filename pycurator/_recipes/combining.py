"""Increments of one counter, combined: the additions made to one atomic number through one
client, in one process, while a write of it is under way, go in the next write as their sum.

Curator makes every increment a write of its own: threads of one process that increment one
counter make each other's versioned writes fail, and try again, and again. Here the first
addition of a counter starts its writes in the background (on the client's callbacks, no unit
of their own); each write takes every addition waiting then, and writes their sum at the
version it read, tried as the counter's policies allow. Each addition gets its own
:class:`~pycurator._recipes.atomic.AtomicValue`, as if made one after the other at that write,
in the order they came: ``pre_value`` the value before it, ``post_value`` after it; the write's
fate is theirs (taken, failed, or unknown: never applied twice), and so are its ``stats``.

Only what could have been one write is combined: additions through the same client (its
session, its rights) to the same path, of the same Java type, under the same tries and promoted
lock. The combiners of one path under the same policies through other clients of the process
take turns to write (:class:`Turns`) rather than make each other's writes fail. An addition
whose caller gives up waiting (a cancelled task) may still be written, as a write already sent
may.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from .._protocol.counters import NumberType
from .._protocol.steps import GetTransport, NewSignal, Steps, WaitSignal
from .._protocol.transport import Signal, set_here
from .atomic import AtomicSteps, AtomicValue
from .versioned import Read


class _Addition:
    """One caller's addition: its delta, the signal it waits on, and its outcome once told."""

    __slots__ = ("delta", "error", "signal", "value")

    def __init__(self, delta: int, signal: Signal) -> None:
        self.delta = delta
        self.signal = signal
        self.value: AtomicValue[int] | None = None
        self.error: BaseException | None = None

    def told(self, value: AtomicValue[int] | None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error
        self.signal.set()

    def outcome(self) -> AtomicValue[int]:
        if self.error is not None:
            raise copy.copy(self.error)  # one error told to many callers: a copy each
        assert self.value is not None
        return self.value


class Turns:
    """Whose turn it is to write one path, among the combiners of the process that write it
    through different clients: one at a time, in the order they asked."""

    def __init__(self, guard: Any) -> None:
        self._guard = guard
        self._taken = False
        self._next: deque[Signal] = deque()
        #: What the node holds as the last write of the turns just left it: the next turn,
        #: given on at once, writes from it with no read first (see
        #: :meth:`~pycurator._recipes.atomic.AtomicSteps.update_from_steps`); None once the
        #: turn is left free, or a write was not known to take.
        self.last: Read | None = None

    def take_steps(self, patience: float) -> Steps[bool]:
        """Wait for the turn (given on, never left free between two who want it): True once
        had; False after ``patience`` seconds without it (its holder stuck: write all the
        same, as a client of another process would)."""
        signal = yield NewSignal()
        with self._guard:
            if not self._taken:
                self._taken = True
                return True
            self._next.append(signal)
        if (yield WaitSignal(signal, patience)):
            return True
        with self._guard:
            if signal in self._next:
                self._next.remove(signal)
                return False
        return True  # given as the wait ended

    def keep(self, more: bool) -> bool:
        """After a write: keep the turn for ``more`` to write when nobody else waits for it
        (True), else give it (False)."""
        with self._guard:
            if more and not self._next:
                return True
        self.give()
        return False

    def give(self) -> None:
        """Give the turn to the next who asked (resumed on this thread), or leave it free."""
        with self._guard:
            if not self._next:
                self._taken, self.last = False, None
                return
            signal = self._next.popleft()
        set_here(signal)


class Combiner:
    """The additions to one counter through one client (see the module doc): those waiting,
    and whether a run of writes is under way to take them."""

    def __init__(self, steps: AtomicSteps, number: NumberType, turns: Turns) -> None:
        self.steps = steps
        self.number = number
        self.turns = turns
        self._waiting: list[_Addition] = []
        self._writing = False
        self._guard = steps.transport.lock_object()

    def add_steps(self, delta: int) -> Steps[AtomicValue[int]]:
        """Add ``delta`` (checked to fit): its value once the write that took it is settled;
        the error that write ended with raised."""
        runner = yield GetTransport()
        addition = _Addition(delta, (yield NewSignal()))
        with self._guard:
            self._waiting.append(addition)
            start, self._writing = not self._writing, True
        if start:
            runner.start(self._writes_steps())
        try:
            yield WaitSignal(addition.signal, None)
        except BaseException:
            with self._guard:
                if addition in self._waiting:  # not taken yet: it is not written
                    self._waiting.remove(addition)
            raise
        return addition.outcome()

    def _writes_steps(self) -> Steps[None]:
        """Write what is waiting, again and again, until nothing is; the turn kept from one
        write to the next while no other combiner waits for it."""
        held = False
        while True:
            with self._guard:
                done = not self._waiting
                if done:
                    self._writing = False
            if done:
                if held:
                    self.turns.give()
                return
            if not held:
                held = yield from self.turns.take_steps(self.steps.transport.session_timeout())
            with self._guard:
                taken, self._waiting = self._waiting, []  # those come meanwhile too
            if not taken:  # all gave up meanwhile
                continue
            try:
                yield from self._write_steps(taken, held)
            except Exception as exc:
                if held:
                    self.turns.last = None
                for addition in taken:
                    addition.told(None, exc.with_traceback(None))
            except BaseException as exc:  # the run itself ends: nobody may wait on it
                if held:
                    self.turns.give()
                with self._guard:
                    taken += self._waiting
                    self._waiting, self._writing = [], False
                for addition in taken:
                    addition.told(None, exc)
                raise
            held = held and self.turns.keep(bool(self._waiting))

    def _write_steps(self, taken: list[_Addition], held: bool) -> Steps[None]:
        number, path = self.number, self.steps.path
        total = number.wrap(sum(addition.delta for addition in taken))

        def make(previous: bytes | None) -> bytes:
            return number.encode(number.wrap(number.decode_atomic(previous, path) + total))

        turns = self.turns
        known = None
        if held:  # what the turns' last write left is the turn's holder's alone
            known, turns.last = turns.last, None
        raw, written = yield from self.steps.update_from_steps(make, known)
        if held:
            turns.last = written
        value = number.decode_atomic(raw.pre_value, path)
        for addition in taken:
            if raw.succeeded or raw.unknown:
                post = number.wrap(value + addition.delta)
                addition.told(AtomicValue(raw.succeeded, value, post, raw.stats, raw.unknown))
                value = post
            else:  # the tries ran out: nothing written, as Curator tells it
                addition.told(AtomicValue(False, value, 0, raw.stats))


def combiner_of(steps: AtomicSteps, number: NumberType) -> Combiner:
    """The combiner of additions through ``steps``' client to its path, as ``number``, under
    its policies (made when none is alive)."""
    promoted = steps.promoted_to_lock
    policies = (
        number,
        steps.tries,
        None if promoted is None else (promoted.lock_path, promoted.timeout),
        steps.promoted_tries,
    )
    transport = steps.transport
    # each lives while an addition waits on it or its writes run: the combiner of this client,
    # and the turns of the path under these policies, which every client of the process takes
    # (looked up only to make a combiner, as the live combiner holds its own)

    def turns() -> Turns:
        found: Turns = transport.shared(
            (Turns, transport.chroot() + steps.path, *policies),
            lambda: Turns(transport.lock_object()),
        )
        return found

    combiner: Combiner = transport.shared(
        (Combiner, id(transport), steps.path, *policies),
        lambda: Combiner(steps, number, turns()),
    )
    return combiner


__all__ = ["Combiner", "Turns", "combiner_of"]
