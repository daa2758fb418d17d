"""OpenTelemetry spans of every recipe's waits and holds
(``pip install pycurator-zk[opentelemetry]``, and an SDK to export them).

::

    from pycurator import add_lock_listener
    from pycurator.contrib.opentelemetry import OpenTelemetrySpans

    add_lock_listener(OpenTelemetrySpans())  # the global tracer provider's tracer
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .. import __version__
from .._protocol.events import LockEvent, LockEventKind

#: The span of a wait, from its start to acquired, timed out, failed or cancelled.
WAIT_SPAN = "pycurator.wait"
#: The span of a hold, from acquired (a leadership term: gained) to released (ended).
HOLD_SPAN = "pycurator.hold"

_ENDS_A_WAIT = {
    LockEventKind.ACQUIRED,
    LockEventKind.TIMED_OUT,
    LockEventKind.FAILED,
    LockEventKind.CANCELLED,
}


class OpenTelemetrySpans:
    """A lock listener (:func:`pycurator.add_lock_listener`) that records a span for each
    wait (:data:`WAIT_SPAN`) and each hold (:data:`HOLD_SPAN`), with the attributes
    ``pycurator.recipe``, ``pycurator.path``, ``pycurator.node`` (once held),
    ``pycurator.outcome`` (a wait: ``acquired``, ``timed_out``, ``failed`` or ``cancelled``;
    a hold: ``released``, or ``lost`` when it was lost and not regained) and
    ``pycurator.reason`` (why it failed, was cancelled, lost or ended, when said).

    A span is recorded when what it covers ends, with the start and end times of the wait or
    the hold: a wait's span is a child of the span current where the acquire returned (the
    caller's), a hold's of the span current at its release. A hold's losses and returns are
    events of its span (``lost``, ``regained``, with their reason and time); a failed wait and
    a lost hold have an error status. The moves of a hold are kept from its loss until its
    release.
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        """Spans come from the tracer of ``tracer_provider`` (by default the global one)."""
        self._tracer = trace.get_tracer("pycurator", __version__, tracer_provider)
        self._moves: dict[str, list[tuple[str, int, str]]] = {}  # by node: (event, time, why)
        self._lock = threading.Lock()

    def __call__(self, event: LockEvent) -> None:
        """Record ``event`` (called by the recipes)."""
        kind = event.kind
        if kind in _ENDS_A_WAIT:
            self._span(WAIT_SPAN, event, event.waited, kind.value, kind is LockEventKind.FAILED)
        elif kind in (LockEventKind.LOST, LockEventKind.REGAINED) and event.node is not None:
            with self._lock:
                moves = self._moves.setdefault(event.node, [])
                moves.append((kind.value, time.time_ns(), event.reason))
        elif kind is LockEventKind.RELEASED and event.node is not None:
            with self._lock:
                moves = self._moves.pop(event.node, [])
            lost = bool(moves) and moves[-1][0] == LockEventKind.LOST.value
            outcome = "lost" if lost else "released"
            self._span(HOLD_SPAN, event, event.held, outcome, lost, moves)

    def _span(
        self,
        name: str,
        event: LockEvent,
        seconds: float | None,
        outcome: str,
        error: bool,
        moves: Sequence[tuple[str, int, str]] = (),
    ) -> None:
        end = time.time_ns()
        attributes = {
            "pycurator.recipe": event.recipe,
            "pycurator.path": event.path,
            "pycurator.outcome": outcome,
        }
        if event.node is not None:
            attributes["pycurator.node"] = event.node
        reason = moves[-1][2] if error and moves else event.reason
        if reason:
            attributes["pycurator.reason"] = reason
        span = self._tracer.start_span(
            name,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=end - round((seconds or 0.0) * 1e9),
        )
        for move, at, why in moves:
            span.add_event(move, {"pycurator.reason": why}, at)
        if error:
            span.set_status(Status(StatusCode.ERROR, reason or outcome))
        span.end(end)


__all__ = ["HOLD_SPAN", "WAIT_SPAN", "OpenTelemetrySpans"]
