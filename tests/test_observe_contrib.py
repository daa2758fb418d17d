"""The contrib lock listeners with the real libraries: Prometheus metrics read from
``prometheus_client``'s registry, OpenTelemetry spans from the SDK's in-memory exporter, for
threaded and asyncio recipes on a real server, a lost hold included."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry

from pycurator import (
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    add_lock_listener,
    aio,
    remove_lock_listener,
)
from pycurator.contrib.opentelemetry import HOLD_SPAN, WAIT_SPAN, OpenTelemetrySpans
from pycurator.contrib.prometheus import PrometheusMetrics
from pycurator.testing import ClientFactory, expire_kazoo_session

from .aio_support import run
from .support import SOON, eventually


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    """A registry of its own, with the Prometheus listener added for the test."""
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry)
    add_lock_listener(metrics)
    try:
        yield registry
    finally:
        remove_lock_listener(metrics)


def value(
    registry: CollectorRegistry, name: str, path: str, recipe: str = "mutex", **more: str
) -> float:
    sample = registry.get_sample_value(
        f"pycurator_lock_{name}", {"recipe": recipe, "path": path, **more}
    )
    return 0.0 if sample is None else sample


def test_prometheus_counts_waits_holds_timeouts_and_losses(
    zk_client_factory: ClientFactory, zk_path: str, registry: CollectorRegistry
) -> None:
    client = zk_client_factory()
    lock = InterProcessMutex(client, zk_path)
    for _ in range(2):
        with lock:
            assert value(registry, "held", zk_path) == 1
            assert not InterProcessMutex(zk_client_factory(), zk_path).acquire(0.1)
    assert value(registry, "acquisitions_total", zk_path) == 2
    assert value(registry, "timeouts_total", zk_path) == 2
    assert value(registry, "wait_seconds_count", zk_path) == 2
    assert value(registry, "hold_seconds_count", zk_path) == 2
    assert value(registry, "hold_seconds_sum", zk_path) >= 0.2  # each outlasted a timeout
    assert value(registry, "held", zk_path) == value(registry, "waiting", zk_path) == 0
    assert lock.acquire(SOON)
    expire_kazoo_session(client)
    eventually(
        lambda: value(registry, "losses_total", zk_path, reason="session expired") == 1,
        what="the loss counted",
    )
    assert value(registry, "losses_total", zk_path, reason="connection suspended") == 1
    lock.release()
    assert value(registry, "held", zk_path) == 0
    assert value(registry, "hold_seconds_count", zk_path) == 3


def test_prometheus_counts_a_semaphores_leases_and_a_latchs_leadership(
    zk: KazooClient, zk_path: str, registry: CollectorRegistry
) -> None:
    semaphore = InterProcessSemaphoreV2(zk, f"{zk_path}/pool", 3)
    leases = semaphore.acquire_many(3, SOON)
    assert leases is not None
    assert value(registry, "held", f"{zk_path}/pool", "semaphore") == 3
    semaphore.return_all(leases)
    assert value(registry, "acquisitions_total", f"{zk_path}/pool", "semaphore") == 3
    with LeaderLatch(zk, f"{zk_path}/election", "a") as latch:
        assert latch.wait(SOON)
        assert value(registry, "held", f"{zk_path}/election", "latch") == 1
    assert value(registry, "held", f"{zk_path}/election", "latch") == 0
    assert value(registry, "hold_seconds_count", f"{zk_path}/election", "latch") == 1


def test_prometheus_counts_asyncio_recipes_alike(
    zk: KazooClient, zk_path: str, registry: CollectorRegistry
) -> None:
    async def main() -> None:
        lock = aio.InterProcessMutex(zk, zk_path)

        async def second() -> None:
            async with lock:  # held per task: this one waits for the first
                pass

        async with lock:
            task = asyncio.create_task(second())
            while value(registry, "waiting", zk_path) != 1:
                await asyncio.sleep(0.02)
            assert value(registry, "held", zk_path) == 1
        await task

    run(main())
    assert value(registry, "acquisitions_total", zk_path) == 2
    assert value(registry, "hold_seconds_count", zk_path) == 2
    assert value(registry, "waiting", zk_path) == value(registry, "held", zk_path) == 0


def test_prometheus_counts_an_asyncio_leases_loss(
    zk_client_factory: ClientFactory, zk_path: str, registry: CollectorRegistry
) -> None:
    client = zk_client_factory()

    async def main() -> None:
        lease = await aio.InterProcessSemaphoreV2(client, zk_path, 1).acquire(SOON)
        assert lease is not None
        await asyncio.to_thread(expire_kazoo_session, client)
        await asyncio.wait_for(lease.lost_event.wait(), SOON)
        await lease.close()

    run(main())
    losses = value(registry, "losses_total", zk_path, "semaphore", reason="connection suspended")
    assert losses == 1
    assert value(registry, "held", zk_path, "semaphore") == 0
    assert value(registry, "hold_seconds_count", zk_path, "semaphore") == 1


def test_prometheus_path_label_merges_paths_into_one_series(zk: KazooClient, zk_path: str) -> None:
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry, path_label=lambda path: path.rsplit("/", 1)[0])
    add_lock_listener(metrics)
    try:
        for job in ("job-1", "job-2", "job-3"):
            with InterProcessMutex(zk, f"{zk_path}/{job}"):
                pass
    finally:
        remove_lock_listener(metrics)
    assert value(registry, "acquisitions_total", zk_path) == 3
    assert value(registry, "acquisitions_total", f"{zk_path}/job-1") == 0


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans the OpenTelemetry listener records during the test."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    listener = OpenTelemetrySpans(provider)
    add_lock_listener(listener)
    try:
        yield exporter
    finally:
        remove_lock_listener(listener)
        provider.shutdown()


def finished(exporter: InMemorySpanExporter, path: str) -> list[ReadableSpan]:
    return [
        span
        for span in exporter.get_finished_spans()
        if span.attributes is not None and span.attributes["pycurator.path"] == path
    ]


def test_opentelemetry_records_a_span_per_wait_and_hold_under_the_callers_span(
    zk_client_factory: ClientFactory, zk_path: str, spans: InMemorySpanExporter
) -> None:
    tracer = TracerProvider().get_tracer("test")
    lock = InterProcessMutex(zk_client_factory(), zk_path)
    with tracer.start_as_current_span("job") as job, lock:
        node = lock.lock_path
        assert not InterProcessMutex(zk_client_factory(), zk_path).acquire(0.1)
    waited, timed_out, held = finished(spans, zk_path)
    assert (waited.name, timed_out.name, held.name) == (WAIT_SPAN, WAIT_SPAN, HOLD_SPAN)
    assert waited.attributes is not None and held.attributes is not None
    assert dict(waited.attributes) == {
        "pycurator.recipe": "mutex",
        "pycurator.path": zk_path,
        "pycurator.node": node,
        "pycurator.outcome": "acquired",
    }
    assert timed_out.attributes is not None
    assert timed_out.attributes["pycurator.outcome"] == "timed_out"
    assert timed_out.end_time is not None and timed_out.start_time is not None
    assert timed_out.end_time - timed_out.start_time >= 100_000_000
    assert (held.attributes["pycurator.outcome"], held.attributes["pycurator.node"]) == (
        "released",
        node,
    )
    assert held.status.status_code is StatusCode.UNSET
    job_id = job.get_span_context().span_id
    assert all(s.parent is not None and s.parent.span_id == job_id for s in (waited, held))
    assert held.start_time is not None and waited.end_time is not None
    assert held.start_time >= waited.end_time - 1_000_000  # the hold begins as the wait ends


def test_opentelemetry_marks_a_lost_hold_with_its_losses(
    zk_client_factory: ClientFactory, zk_path: str, spans: InMemorySpanExporter
) -> None:
    client = zk_client_factory()
    lock = InterProcessMutex(client, zk_path)
    assert lock.acquire(SOON)
    expire_kazoo_session(client)
    eventually(lambda: not lock.is_held(), what="lost")
    lock.release()
    (hold,) = [s for s in finished(spans, zk_path) if s.name == HOLD_SPAN]
    assert hold.attributes is not None and hold.attributes["pycurator.outcome"] == "lost"
    assert hold.status.status_code is StatusCode.ERROR
    assert [event.name for event in hold.events][:1] == ["lost"]
    first = hold.events[0].attributes
    assert first is not None and first["pycurator.reason"] == "connection suspended"


def test_opentelemetry_records_asyncio_waits_a_cancelled_one_included(
    zk_client_factory: ClientFactory, zk_path: str, spans: InMemorySpanExporter
) -> None:
    holder = InterProcessMutex(zk_client_factory(), zk_path)
    lock = aio.InterProcessMutex(zk_client_factory(), zk_path)

    async def main() -> None:
        task = asyncio.create_task(lock.acquire())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with holder:
        run(main())
    outcomes = [
        (s.name, s.attributes["pycurator.outcome"])
        for s in finished(spans, zk_path)
        if s.attributes is not None
    ]
    assert outcomes == [
        (WAIT_SPAN, "acquired"),
        (WAIT_SPAN, "cancelled"),
        (HOLD_SPAN, "released"),
    ]
