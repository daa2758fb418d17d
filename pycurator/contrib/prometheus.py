"""Prometheus metrics of every recipe's waits and holds (``pip install pycurator-zk[prometheus]``).

::

    from prometheus_client import start_http_server

    from pycurator import add_lock_listener
    from pycurator.contrib.prometheus import PrometheusMetrics

    add_lock_listener(PrometheusMetrics())
    start_http_server(9100)  # http://host:9100/metrics
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from .._protocol.events import LockEvent, LockEventKind

#: Bucket bounds (seconds) of the wait histogram: from a loopback acquire to a long queue.
WAIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
#: Bucket bounds (seconds) of the hold histogram: from a short critical section to a
#: leadership term of hours.
HOLD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400)

#: Every metric's namespace and subsystem: ``pycurator_lock_...``.
_NAMES = ("pycurator", "lock")
_ENDS_A_WAIT = {
    LockEventKind.ACQUIRED,
    LockEventKind.TIMED_OUT,
    LockEventKind.FAILED,
    LockEventKind.CANCELLED,
}


def _same(path: str) -> str:
    return path


class PrometheusMetrics:
    """A lock listener (:func:`pycurator.add_lock_listener`) that keeps these metrics in
    ``registry``, each labelled ``recipe`` (``mutex``, ``read``, ``write``, ``semaphore``,
    ``semaphore-mutex``, ``latch``, ``selector``) and ``path``:

    - ``pycurator_lock_wait_seconds`` (histogram): how long each acquire that got its lock,
      lease or leadership waited for it;
    - ``pycurator_lock_hold_seconds`` (histogram): from acquired to released (a leadership
      term: from gained to ended);
    - ``pycurator_lock_acquisitions_total``, ``pycurator_lock_timeouts_total`` and
      ``pycurator_lock_failures_total`` (counters): waits that ended holding, on their
      timeout, and with an error (a cancelled wait counts in none);
    - ``pycurator_lock_losses_total`` (counter, also labelled ``reason``: ``connection
      suspended``, ``session expired``, ``lock node deleted``...): holds lost;
    - ``pycurator_lock_waiting`` (gauge): waits under way in this process (its share of the
      queue; a latch or selector counts 1 while queued);
    - ``pycurator_lock_held`` (gauge): holds now (a latch or selector: 1 while it leads).

    Each (recipe, path) pair is a series of every metric (of every bucket, for a histogram):
    a process that locks one path per job or per customer should give ``path_label``, which
    maps a path to its label (``lambda path: path.rsplit("/", 1)[0]`` labels a lock by its
    parent), so that the series stay few (by default a path is its own label). Add the
    listener before the recipes start waiting: the gauges count what they are told from then
    on.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = REGISTRY,
        *,
        path_label: Callable[[str], str] | None = None,
        wait_buckets: Sequence[float] = WAIT_BUCKETS,
        hold_buckets: Sequence[float] = HOLD_BUCKETS,
    ) -> None:
        labels = ("recipe", "path")
        self._path_label = _same if path_label is None else path_label

        def histogram(name: str, text: str, buckets: Sequence[float]) -> Histogram:
            return Histogram(name, text, labels, *_NAMES, registry=registry, buckets=buckets)

        def counter(name: str, text: str, *more: str) -> Counter:
            return Counter(name, text, (*labels, *more), *_NAMES, registry=registry)

        def gauge(name: str, text: str) -> Gauge:
            return Gauge(name, text, labels, *_NAMES, registry=registry)

        self._wait_seconds = histogram(
            "wait_seconds", "Seconds an acquire waited for what it got", wait_buckets
        )
        self._hold_seconds = histogram(
            "hold_seconds",
            "Seconds from acquired to released (or leadership gained to ended)",
            hold_buckets,
        )
        self._acquisitions = counter("acquisitions", "Waits that ended holding")
        self._timeouts = counter("timeouts", "Waits that ended on their timeout")
        self._failures = counter("failures", "Waits that ended with an error")
        self._losses = counter("losses", "Holds lost, by reason", "reason")
        self._waiting = gauge("waiting", "Waits under way in this process")
        self._held = gauge("held", "Holds now (leadership: 1 while leading)")
        self._series: dict[tuple[str, str], _Series] = {}

    def __call__(self, event: LockEvent) -> None:
        """Count ``event`` (called by the recipes)."""
        key = (event.recipe, self._path_label(event.path))
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(self, *key)
        kind = event.kind
        if kind is LockEventKind.WAITING:
            series.waiting.inc()
            return
        if kind in _ENDS_A_WAIT:
            series.waiting.dec()
        if kind is LockEventKind.ACQUIRED:
            series.acquisitions.inc()
            series.wait_seconds.observe(event.waited or 0.0)
            series.held.inc()
        elif kind is LockEventKind.TIMED_OUT:
            series.timeouts.inc()
        elif kind is LockEventKind.FAILED:
            series.failures.inc()
        elif kind is LockEventKind.RELEASED:
            series.held.dec()
            series.hold_seconds.observe(event.held or 0.0)
        elif kind is LockEventKind.LOST:
            self._losses.labels(*key, event.reason).inc()


class _Series:
    """The children of one (recipe, path label) in every metric but the losses (which have a
    reason too): looked up once, as ``labels()`` costs a lock and a few lookups each time."""

    __slots__ = (
        "acquisitions",
        "failures",
        "held",
        "hold_seconds",
        "timeouts",
        "wait_seconds",
        "waiting",
    )

    def __init__(self, metrics: PrometheusMetrics, recipe: str, path: str) -> None:
        self.wait_seconds = metrics._wait_seconds.labels(recipe, path)
        self.hold_seconds = metrics._hold_seconds.labels(recipe, path)
        self.acquisitions = metrics._acquisitions.labels(recipe, path)
        self.timeouts = metrics._timeouts.labels(recipe, path)
        self.failures = metrics._failures.labels(recipe, path)
        self.waiting = metrics._waiting.labels(recipe, path)
        self.held = metrics._held.labels(recipe, path)


__all__ = ["HOLD_BUCKETS", "WAIT_BUCKETS", "PrometheusMetrics"]
