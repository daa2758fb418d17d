"""Service discovery against Curator's curator-x-discovery, each side a program of its own, as
services run: a Java program on Curator (``bench/java/Discovery.java``, compiled with ``javac``
against the Curator jars in use; no Python, no JPype) against a Python program on pycurator,
on :func:`pycurator.connect`'s client (no JVM). Each measures on one thread, in turn:

- ``query_for_instances`` of a service of 1,000 instances (STATIC nodes the harness made once,
  as Curator's serializer writes them), after unmeasured ones: each query's milliseconds;
- registering 1,000 instances one after another, then unregistering them: each pass's rate
  (the instances built beforehand: the address lookup Curator's builder makes is not timed);
- a service cache's update latency: one instance of a cached service, registered by a second
  client's discovery and updated again and again; the milliseconds from each update's start
  until the cache's listener is told and holds it;
- round trips: as many ephemeral nodes of 300 bytes as registrations made, then deleted, one
  after another, by the client (Curator's; ``connect()``'s) and by the floor beneath it
  (ZooKeeper's own Java client; a bare socket read and written by one CPython thread, no library
  and no thread hand-off): what a registration costs beyond its one request, and what the
  language's own round trip costs.

Rounds alternate the sides' order; the figures are medians over rounds, and each Python figure's
ratio to the Java program's is "how many times Curator's speed" (at least 1: as fast or faster).

``python -m bench.discovery worker SIDE HOSTS BASE QUERIES REGISTRATIONS UPDATES`` is the
Python side's program.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from .common import BENCH_ROOT, SESSION_TIMEOUT_S, SOON, first_server
from .standalone import ROOT, compiled, curator_classpath

SOURCE = ROOT / "bench" / "java" / "Discovery.java"
JAVA, PYTHON = "curator-java", "pycurator-connect"
SIDES = (JAVA, PYTHON)
#: Queries and registrations made before the measured ones (as the Java program's).
WARMUP_QUERIES, WARMUP_REGISTRATIONS = 20, 200
FIRST_PORT = 9000
#: The round trips each side measures (mean microseconds of one request and its answer).
ROUND_TRIPS = ("client_create_us", "client_delete_us", "floor_create_us", "floor_delete_us")
#: The sections of the recipes beyond the locks: run alone (either or both), their JSON goes to
#: ``docs/recipes-bench.json`` and their tables to the page's recipes region.
RECIPES = ("cache", "discovery")
#: The region of the benchmarks page their tables go to.
BEGIN = "<!-- bench-recipes: begin (python -m bench.report --write) -->"
END = "<!-- bench-recipes: end -->"


def populate(hosts: str, base: str, count: int) -> None:
    """``count`` STATIC instances of service ``big`` under ``base``, made at once."""
    from pycurator import connect
    from pycurator.discovery import JsonInstanceSerializer, ServiceInstance, ServiceType

    serializer = JsonInstanceSerializer()
    client = connect(hosts, connect_timeout=SOON)
    try:
        client.ensure_path(f"{base}/big")
        made = [
            client.create_async(
                f"{base}/big/b{i}",
                serializer.serialize(
                    ServiceInstance(
                        "big", id=f"b{i}", address="10.0.0.5", port=8000 + i,
                        service_type=ServiceType.STATIC, payload={"zone": "a", "index": i},
                    )
                ),
            )
            for i in range(count)
        ]  # fmt: skip
        for answer in made:
            answer.get(timeout=SOON)
    finally:
        client.stop()
        client.close()


def remove(hosts: str, base: str) -> None:
    from pycurator import connect

    client = connect(hosts, connect_timeout=SOON)
    try:
        client.delete(base, recursive=True)
    finally:
        client.stop()
        client.close()


def run(
    hosts: str,
    instances: int = 1000,
    queries: int = 50,
    registrations: int = 1000,
    updates: int = 50,
    rounds: int = 3,
) -> dict[str, object]:
    """Medians over ``rounds`` of each side's figures, and the Python side's ratios to the
    Java program's."""
    hosts = first_server(hosts)
    base = f"{BENCH_ROOT}/discovery-{uuid.uuid4().hex[:8]}"
    classpath = curator_classpath()
    populate(hosts, base, instances)
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    try:
        with compiled(classpath, SOURCE) as build:
            for round_ in range(rounds):
                for side in SIDES if round_ % 2 == 0 else reversed(SIDES):
                    numbers = [str(queries), str(registrations), str(updates)]
                    if side == JAVA:
                        session_ms = str(int(SESSION_TIMEOUT_S * 1000))
                        command = ["java", "-cp", f"{build}:{classpath}", "Discovery", hosts,
                                   base, *numbers, session_ms]  # fmt: skip
                    else:
                        command = [sys.executable, "-m", "bench.discovery", "worker", side,
                                   hosts, base, *numbers]  # fmt: skip
                    done = subprocess.run(
                        command, capture_output=True, text=True, cwd=ROOT, timeout=20 * SOON
                    )
                    if done.returncode != 0:
                        raise RuntimeError(f"the {side} discovery program failed:\n{done.stderr}")
                    samples[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        remove(hosts, base)
    table = {side: _medians(results) for side, results in samples.items()}
    java = table[JAVA]
    table[PYTHON]["times_curators"] = {
        "query": java["query_ms"] / table[PYTHON]["query_ms"],
        "register": table[PYTHON]["register_per_s"] / java["register_per_s"],
        "unregister": table[PYTHON]["unregister_per_s"] / java["unregister_per_s"],
        "cache_update": (
            java["cache_update_ms"] / table[PYTHON]["cache_update_ms"]
            if java["cache_update_ms"] and table[PYTHON]["cache_update_ms"]
            else None
        ),
        **{
            key: java[key] / table[PYTHON][key] if java[key] and table[PYTHON][key] else None
            for key in ROUND_TRIPS
        },
    }
    result = {
        "instances": instances,
        "queries": queries,
        "registrations": registrations,
        "updates": updates,
        "rounds": rounds,
        "curator_classpath": classpath,
        "curator": samples[JAVA][0].get("curator", "unknown"),
        "java": samples[JAVA][0].get("java", "unknown"),
        "table": table,
    }
    _print(result)
    return result


def merge(path: Path, results: dict[str, Any]) -> dict[str, Any]:
    """``path``'s results (if any) with each section of ``results`` among :data:`RECIPES`
    replaced by that of ``results``, which keeps its own command and machine: a run of one of
    them alone does not drop the other."""
    merged: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for name in RECIPES:
        if name in results:
            merged[name] = {
                **results[name],
                "command": results["command"],
                "machine": results["machine"],
            }
    return merged


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _medians(results: list[dict[str, Any]]) -> dict[str, Any]:
    """A side's figures over its rounds: the median of each round's median (latencies) or
    rate."""
    return {
        "query_ms": _median([statistics.median(r["query_ms"]) for r in results]),
        "query_p90_ms": _median([_p90(r["query_ms"]) for r in results]),
        "register_per_s": _median([r["register_per_s"] for r in results]),
        "unregister_per_s": _median([r["unregister_per_s"] for r in results]),
        "cache_update_ms": _median(
            [statistics.median(r["cache_update_ms"]) for r in results if r["cache_update_ms"]]
        ),
        **{key: _median([r[key] for r in results if key in r]) for key in ROUND_TRIPS},
    }


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def _print(result: dict[str, Any]) -> None:
    print(f"\ndiscovery, {result['instances']} instances, medians of {result['rounds']} rounds")
    for side, row in result["table"].items():
        cache = row["cache_update_ms"]
        print(
            f"  {side:>18}: query {row['query_ms']:.2f} ms, register {row['register_per_s']:.0f}/s,"
            f" unregister {row['unregister_per_s']:.0f}/s, cache update "
            + ("-" if cache is None else f"{cache:.2f} ms")
        )
        trips = [row.get(key) for key in ROUND_TRIPS]
        if None not in trips:
            print(
                f"  {'':>18}  round trips: create {trips[0]:.0f} / delete {trips[1]:.0f} us,"
                f" floor create {trips[2]:.0f} / delete {trips[3]:.0f} us"
            )
    print(f"  ratios (x Curator's speed): {result['table'][PYTHON]['times_curators']}")


# -- the Python side's program -------------------------------------------------------------------


def _instance(name: str, instance_id: str, port: int) -> Any:
    from pycurator.discovery import ServiceInstance

    return ServiceInstance(name, id=instance_id, address="10.0.0.5", port=port)


def _registrations(discovery: Any, name: str, count: int) -> tuple[float, float]:
    made = [_instance(name, f"i{i}", 8000 + i % 1000) for i in range(count)]
    start = time.perf_counter()
    for one in made:
        discovery.register_service(one)
    registered = time.perf_counter()
    for one in made:
        discovery.unregister_service(one)
    return registered - start, time.perf_counter() - registered


def _cache_updates(client: Any, hosts: str, base: str, count: int) -> list[float]:
    """As the Java program's: a second client's discovery updates the one instance of a
    cached service; each update's milliseconds until the cache holds it (empty when there is
    no service cache to measure)."""
    import queue

    from pycurator import connect
    from pycurator.discovery import ServiceDiscovery

    reader_discovery = ServiceDiscovery(client, base)
    if not hasattr(reader_discovery, "service_cache"):
        return []
    writer_client = connect(hosts, connect_timeout=SOON)
    told: queue.Queue[int | None] = queue.Queue()
    try:
        with ServiceDiscovery(writer_client, base) as writer, reader_discovery:
            writer.register_service(_instance("cached", "c", FIRST_PORT))
            cache = reader_discovery.service_cache("cached")

            def changed() -> None:
                for one in cache.get_instances():
                    told.put(one.port)

            cache.add_listener(changed)
            cache.start()
            millis = []
            for i in range(1, count + WARMUP_QUERIES + 1):
                port = FIRST_PORT + i
                start = time.perf_counter()
                writer.update_service(_instance("cached", "c", port))
                while told.get(timeout=SOON) != port:
                    pass
                if i > WARMUP_QUERIES:
                    millis.append((time.perf_counter() - start) * 1000)
            cache.close()
            return millis
    finally:
        writer_client.stop()
        writer_client.close()


def _round_trips(client: Any, hosts: str, base: str, count: int) -> dict[str, float]:
    """As the Java program's: ``count`` ephemeral nodes of 300 bytes made then deleted by
    ``client``, then over a bare socket (the second pass of each measured); each one's mean
    microseconds."""
    data = bytes(300)
    paths = [f"{base}/rt{i}" for i in range(count)]
    figures: dict[str, float] = {}
    for _ in range(2):
        start = time.perf_counter()
        for path in paths:
            client.create(path, data, ephemeral=True)
        created = time.perf_counter()
        for path in paths:
            client.delete(path)
        deleted = time.perf_counter()
        figures["client_create_us"] = (created - start) * 1e6 / count
        figures["client_delete_us"] = (deleted - created) * 1e6 / count
    with _BareSession(first_server(hosts)) as bare:
        for _ in range(2):
            start = time.perf_counter()
            for path in paths:
                bare.create(path, data)
            created = time.perf_counter()
            for path in paths:
                bare.delete(path)
            figures["floor_create_us"] = (created - start) * 1e6 / count
            figures["floor_delete_us"] = (time.perf_counter() - created) * 1e6 / count
    return figures


class _BareSession:
    """A session on a socket read and written by the calling thread alone, each request sent
    and its answer read before the next (ZooKeeper's framing, kazoo's records): CPython's own
    round trip, with no client beneath it."""

    def __init__(self, server: str) -> None:
        import socket

        from kazoo.protocol.serialization import Connect

        host, port = server.rsplit(":", 1)
        self._socket = socket.create_connection((host, int(port)), timeout=SOON)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._xid = 0
        self._send(Connect(0, 0, int(SESSION_TIMEOUT_S * 1000), 0, b"\0" * 16, False).serialize())
        self._frame()

    def _send(self, body: bytes) -> None:
        self._socket.sendall(len(body).to_bytes(4, "big") + body)

    def _frame(self) -> bytes:
        size = int.from_bytes(self._read(4), "big")
        return self._read(size)

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self._socket.recv(left)
            if not chunk:
                raise ConnectionError("the server closed the bare session")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _request(self, request: Any) -> None:
        self._xid += 1
        header = self._xid.to_bytes(4, "big") + request.type.to_bytes(4, "big", signed=True)
        self._send(header + request.serialize())
        answer = self._frame()
        error = int.from_bytes(answer[12:16], "big", signed=True)
        if error:
            raise RuntimeError(f"the bare session's {type(request).__name__} failed: {error}")

    def create(self, path: str, data: bytes) -> None:
        from kazoo.protocol.serialization import Create
        from kazoo.security import OPEN_ACL_UNSAFE

        self._request(Create(path, data, OPEN_ACL_UNSAFE, 1))  # ephemeral

    def delete(self, path: str) -> None:
        from kazoo.protocol.serialization import Delete

        self._request(Delete(path, -1))

    def __enter__(self) -> _BareSession:
        return self

    def __exit__(self, *exc: object) -> None:
        from kazoo.protocol.serialization import Close

        try:
            self._request(Close())
        finally:
            self._socket.close()


def worker(argv: list[str]) -> None:
    """The Python side's program (see the module's doc); prints its figures as a JSON line."""
    side, hosts, base, queries, registrations, updates = argv
    from pycurator import connect
    from pycurator.discovery import ServiceDiscovery

    client = connect(hosts, connect_timeout=SOON)
    try:
        with ServiceDiscovery(client, base) as discovery:
            size = len(discovery.query_for_instances("big"))
            for _ in range(WARMUP_QUERIES - 1):
                discovery.query_for_instances("big")
            millis = []
            for _ in range(int(queries)):
                start = time.perf_counter()
                found = discovery.query_for_instances("big")
                millis.append((time.perf_counter() - start) * 1000)
                assert len(found) == size
            _registrations(discovery, "warm-python", WARMUP_REGISTRATIONS)
            registered, unregistered = _registrations(discovery, "reg-python", int(registrations))
        updated = _cache_updates(client, hosts, base, int(updates)) if int(updates) else []
        trips = _round_trips(client, hosts, base, int(registrations))
    finally:
        client.stop()
        client.close()
    count = int(registrations)
    print(
        json.dumps(
            {
                "side": side,
                "query_ms": millis,
                "register_per_s": count / registered,
                "unregister_per_s": count / unregistered,
                "cache_update_ms": updated,
                **trips,
                "jvm": "jpype" in sys.modules,
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(sys.argv[2:])
    else:
        raise SystemExit("usage: python -m bench.discovery worker SIDE HOSTS BASE Q R U")
