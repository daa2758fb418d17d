"""The asyncio API against the threaded API and Java Curator: the uncontended acquire+release
cycle, and the hand-off from a releasing holder to the next waiter.

All contenders run in this process, one after another, each with clients of its own on the
first server; asyncio cycles run on a fresh ``asyncio.run`` loop. Hand-offs are timed as in
the ``handoff`` section (one clock: the holder's release call to the waiter's acquire return),
the waiter's watch confirmed on the server before each release.
"""

from __future__ import annotations

import asyncio
import time

from pycurator import InterProcessMutex, aio
from pycurator.testing import JavaMutex

from .common import (
    Clients,
    Server,
    session,
    summarize,
    unique_path,
    wait_for,
)
from .handoff import hand_offs

KINDS = ("pycurator-aio", "pycurator", "curator")


def _threaded_cycles(lock: InterProcessMutex | JavaMutex, cycles: int, warmup: int) -> list[int]:
    samples = []
    for index in range(warmup + cycles):
        start = time.monotonic_ns()
        if not lock.acquire(60):
            raise TimeoutError("an uncontended acquire timed out")
        lock.release()
        if index >= warmup:
            samples.append(time.monotonic_ns() - start)
    return samples


async def _aio_cycles(lock: aio.InterProcessMutex, cycles: int, warmup: int) -> list[int]:
    samples = []
    for index in range(warmup + cycles):
        start = time.monotonic_ns()
        if not await lock.acquire(60):
            raise TimeoutError("an uncontended acquire timed out")
        await lock.release()
        if index >= warmup:
            samples.append(time.monotonic_ns() - start)
    return samples


def cycles_of(kind: str, hosts: str, cycles: int, warmup: int) -> list[int]:
    path = unique_path(f"aio-cycle-{kind}")
    with Clients(hosts) as clients:
        if kind == "pycurator-aio":
            return asyncio.run(
                _aio_cycles(aio.InterProcessMutex(clients.kazoo(), path), cycles, warmup)
            )
        if kind == "pycurator":
            return _threaded_cycles(InterProcessMutex(clients.kazoo(), path), cycles, warmup)
        return _threaded_cycles(JavaMutex(clients.curator(), path), cycles, warmup)


async def _aio_hand_offs(hosts: str, server: Server, count: int) -> list[int]:
    path = unique_path("aio-handoff")
    samples = []
    with Clients(hosts) as clients:
        holder = aio.InterProcessMutex(clients.kazoo(), path)
        waiter_client = clients.kazoo()
        waiter = aio.InterProcessMutex(waiter_client, path)
        waiter_session = session(waiter_client)
        loop = asyncio.get_running_loop()

        async def take() -> int:
            if not await waiter.acquire(60):
                raise TimeoutError("a hand-off waiter gave up")
            held = time.monotonic_ns()
            await waiter.release()
            return held

        for _ in range(count):
            if not await holder.acquire(60):
                raise TimeoutError(f"the holder of {path} did not get it")
            taking = asyncio.create_task(take())
            await loop.run_in_executor(
                None,
                lambda: wait_for(lambda: server.watches_of([waiter_session]) > 0, "the watch"),
            )
            released = time.monotonic_ns()
            await holder.release()
            samples.append(await taking - released)
    return samples


def run(hosts: str, cycles: int, warmup: int, handoffs: int) -> dict[str, object]:
    """Cycle and hand-off medians and p99 (ms) by contender."""
    server = Server(hosts)
    cycle = {kind: summarize(cycles_of(kind, hosts, cycles, warmup)) for kind in KINDS}
    handoff = {
        "pycurator-aio": summarize(asyncio.run(_aio_hand_offs(hosts, server, handoffs))),
        "pycurator": summarize(hand_offs(hosts, server, "pycurator", "pycurator", handoffs)),
        "curator": summarize(hand_offs(hosts, server, "curator", "curator", handoffs)),
    }
    print("\nasyncio: uncontended cycle and hand-off, same language both sides")
    print(f"{'contender':<16} {'cycle median ms':>16} {'hand-off median ms':>19}")
    for kind in KINDS:
        print(f"{kind:<16} {cycle[kind]['median_ms']:>16.3f} {handoff[kind]['median_ms']:>19.3f}")
    return {"cycles": cycles, "hand_offs": handoffs, "cycle": cycle, "handoff": handoff}
