"""The cache section's Python side: pycurator's ``CuratorCache`` in a process of its own, timed
as the Java program (``bench/java/CacheBench.java``) times Curator's.

``python -m bench.cache_worker SIDE HOSTS ROOT WRITES`` loads a cache of ROOT (made beforehand)
and prints one JSON line: how long ``start()`` took to ``initialized()``; the memory a second
cache of ROOT holds per node once loaded (``tracemalloc``, after a collection, before and after:
the first load is timed without it); and, ``WRITES`` times, the time from a write of a node's
data by a second client to the cache's listener hearing it.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import threading
import time
import tracemalloc
from typing import Any

from pycurator import CuratorCache

from .common import SOON
from .contended import python_client


def loaded(client: Any, root: str) -> tuple[CuratorCache, float]:
    """A cache of ``root`` on ``client``, started and loaded; how long the load took."""
    cache = CuratorCache(client, root)
    started = time.perf_counter()
    cache.start()
    if not cache.wait_initialized(SOON * 5):
        raise RuntimeError("the cache never initialized")
    return cache, time.perf_counter() - started


def main(argv: list[str]) -> int:
    side, hosts, root, writes = argv[0], argv[1], argv[2], int(argv[3])
    reader, writer = python_client(hosts, side), python_client(hosts, side)
    target = f"{root}/{sorted(writer.get_children(root))[0]}"
    cache, load_s = loaded(reader, root)
    size = cache.size()
    heard: list[float] = []
    told = threading.Event()

    def listener(kind: Any, old: Any, new: Any) -> None:
        if kind.name == "NODE_CHANGED" and new.path == target:
            heard.append(time.perf_counter())
            told.set()

    cache.add_listener(listener)
    latencies = []
    for i in range(writes):
        told.clear()
        sent = time.perf_counter()
        writer.set(target, b"write %d" % i)
        if not told.wait(SOON):
            raise RuntimeError("a write was never heard")
        latencies.append(heard[-1] - sent)
    cache.close()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    again, _ = loaded(reader, root)
    gc.collect()
    per_node = (tracemalloc.get_traced_memory()[0] - before) / max(1, again.size())
    tracemalloc.stop()
    again.close()
    latencies.sort()
    result = {
        "load_s": load_s,
        "size": size,
        "bytes_per_node": per_node,
        "latency_median_ms": statistics.median(latencies) * 1000 if latencies else 0.0,
        "latency_p99_ms": latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)] * 1000
        if latencies
        else 0.0,
    }
    print(json.dumps(result), flush=True)
    for client in (reader, writer):
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
