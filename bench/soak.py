"""Soak: mixed recipes under contention, with acquires that time out, for a fixed time, sampling
what would grow if something leaked.

Threads on two clients (one on kazoo's handler, one on the fast handler) loop over a mutex, a
read/write lock (90% reads) and a semaphore of 2 leases, each with a lock object of their own
and short holds; one more thread keeps a fourth lock held for 0.2 s at a time while another
tries it with a 0.05 s timeout, so acquires time out all along. At intervals the section
records this process's RSS and threads, the clients' state listeners (kazoo's, and those
pycurator's runtime tells for it) and data and child watchers (kazoo's registries), and the
server's watch and node counts (``mntr``). Flat is the target: the report gives the first and
the last samples after the first interval, and the largest of each.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pycurator import InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2
from pycurator._client.runtime import runtime_of
from pycurator.handlers import FastThreadingHandler

from .common import SOON, Clients, Server, Threads, unique_path

#: What each sample records.
FIELDS = (
    "rss_kb",
    "threads",
    "state_listeners",
    "data_watchers",
    "child_watchers",
    "server_watches",
    "server_znodes",
)


def rss_kb() -> int:
    """This process's resident set size in kB (Linux's ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _registry_sizes(clients: list[Any]) -> dict[str, int]:
    """kazoo's own registries (private attributes: read only, for this count); the state
    listeners the client's pycurator runtime tells count with kazoo's."""
    return {
        "state_listeners": sum(len(c.state_listeners) + runtime_of(c).listening() for c in clients),
        "data_watchers": sum(
            len(ws) for c in clients for ws in getattr(c, "_data_watchers", {}).values()
        ),
        "child_watchers": sum(
            len(ws) for c in clients for ws in getattr(c, "_child_watchers", {}).values()
        ),
    }


def sample(clients: list[Any], server: Server, at: float) -> dict[str, float]:
    counters = server.mntr()
    return {
        "at_s": at,
        "rss_kb": rss_kb(),
        "threads": threading.active_count(),
        **_registry_sizes(clients),
        "server_watches": counters.get("zk_watch_count", 0.0),
        "server_znodes": counters.get("zk_znode_count", 0.0),
    }


def run(hosts: str, seconds: float, interval: float | None = None) -> dict[str, object]:
    """Soak for ``seconds``, sampling every ``interval`` (a tenth of the run by default)."""
    interval = interval or max(0.5, seconds / 10)
    server = Server(hosts)
    stop = threading.Event()
    done = {"operations": 0, "timeouts": 0}
    tally = threading.Lock()

    def count(key: str) -> None:
        with tally:
            done[key] += 1

    with Clients(hosts) as pool:
        clients = [pool.kazoo(), pool.kazoo(FastThreadingHandler())]
        paths = {name: unique_path(f"soak-{name}") for name in ("mutex", "rw", "sem", "timed")}
        threads = Threads()

        def looping(step: Callable[[], None]) -> Callable[[], None]:
            def loop() -> None:
                while not stop.is_set():
                    step()

            return loop

        for i in range(6):
            client = clients[i % 2]
            chance = random.Random(i)
            mutex = InterProcessMutex(client, paths["mutex"])
            rw = InterProcessReadWriteLock(client, paths["rw"])
            semaphore = InterProcessSemaphoreV2(client, paths["sem"], 2)

            def step(
                mutex: InterProcessMutex = mutex,
                rw: InterProcessReadWriteLock = rw,
                semaphore: InterProcessSemaphoreV2 = semaphore,
                chance: random.Random = chance,
            ) -> None:
                side = rw.read_lock() if chance.random() < 0.9 else rw.write_lock()
                for lock in (mutex, side):
                    if lock.acquire(timeout=SOON):
                        time.sleep(chance.random() * 0.005)  # a short hold
                        lock.release()
                        count("operations")
                lease = semaphore.acquire(timeout=SOON)
                if lease is not None:
                    lease.close()
                    count("operations")

            threads.start(looping(step))

        holder = InterProcessMutex(clients[0], paths["timed"])
        hopeful = InterProcessMutex(clients[1], paths["timed"])

        def hold() -> None:
            if holder.acquire(timeout=SOON):
                stop.wait(0.2)
                holder.release()
            stop.wait(0.01)

        def try_briefly() -> None:
            if hopeful.acquire(timeout=0.05):
                hopeful.release()
                count("operations")
            else:
                count("timeouts")

        threads.start(looping(hold))
        threads.start(looping(try_briefly))
        started = time.monotonic()
        samples = [sample(clients, server, 0.0)]
        print(f"\nsoak for {seconds:g} s, a sample every {interval:g} s")
        print(f"{'at s':>7} " + " ".join(f"{field:>15}" for field in FIELDS))
        try:
            while (elapsed := time.monotonic() - started) < seconds:
                stop.wait(min(interval, seconds - elapsed))
                samples.append(sample(clients, server, time.monotonic() - started))
                row = samples[-1]
                print(f"{row['at_s']:>7.1f} " + " ".join(f"{row[f]:>15.0f}" for f in FIELDS))
        finally:
            stop.set()
            threads.join(2 * SOON)
        after = sample(clients, server, time.monotonic() - started)
    settled = samples[1:] or samples
    return {
        "seconds": seconds,
        "interval_s": interval,
        "operations": done["operations"],
        "timeouts": done["timeouts"],
        "samples": samples,
        "after_stop": after,
        "first": settled[0],
        "last": settled[-1],
        "max": {field: max(row[field] for row in settled) for field in FIELDS},
    }
