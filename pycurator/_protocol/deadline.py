"""Deadlines: how long a protocol's waits may last, whatever the connection does.

kazoo queues a request made while the connection is down and sends it once the connection is
back, so a plain ``result.get()`` can wait for as long as an outage lasts: every wait for an
answer (:class:`~pycurator._protocol.steps.Await`) carries a deadline, which its runner honours.
"""

from __future__ import annotations

from . import clock


class DeadlineExpired(Exception):
    """The deadline passed while we waited (for the connection, or for a reply)."""


#: However short the timeout, an acquire waits this long (seconds, from its start) for the
#: server's answers to the requests of its first try: ``acquire(0)`` makes one whole try, as
#: Curator's does, and still returns within this bound when the server does not answer.
FIRST_TRY_WAIT = 2.0


class Deadline:
    """A point on the monotonic clock, or none (wait forever)."""

    __slots__ = ("_end", "_start")

    def __init__(self, timeout: float | None) -> None:
        self._start = clock.monotonic()
        self._end = None if timeout is None else self._start + timeout

    @property
    def timeout(self) -> float | None:
        """The seconds it was given (None: none)."""
        return None if self._end is None else self._end - self._start

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None for no deadline."""
        return None if self._end is None else max(0.0, self._end - clock.monotonic())

    def expired(self) -> bool:
        return self._end is not None and clock.monotonic() >= self._end

    def for_requests(self) -> Deadline:
        """The deadline for answers to requests: this one, but no earlier than
        :data:`FIRST_TRY_WAIT` after its start."""
        if self._end is None or self._end >= self._start + FIRST_TRY_WAIT:
            return self
        floor = Deadline(None)
        floor._start, floor._end = self._start, self._start + FIRST_TRY_WAIT
        return floor
