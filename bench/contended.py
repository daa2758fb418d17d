"""Contended throughput, each side alone: 5 threads (by default) hammer one path with a mutex, a
read/write lock (90% reads) or a semaphore of 2 leases, for a fixed time, and the operations per
second are compared with Java Curator's on the same server.

Each block runs in a process of its own (``python -m bench.contended``), one side at a time, in
an order that alternates from round to round; the figures are medians over rounds. Modes:

- ``shared``: one client shared by the threads (the usual way in both languages);
- ``per-thread``: a client per thread;
- ``processes``: pycurator only, one thread and one client in each of 5 processes, compared with
  Curator's ``shared`` block (5 Java threads on one client).

Every thread has a lock object of its own. pycurator runs on kazoo's default handler and on
:class:`pycurator.handlers.FastThreadingHandler` (side ``pycurator-fast``). Curator's threads
are Python threads blocked in Curator's calls through JPype (the GIL is released meanwhile).

As a worker: ``python -m bench.contended SIDE RECIPE MODE HOSTS SECONDS THREADS PATH WARMUP``
sets up its
clients and locks, prints ``ready``, runs once a line arrives on stdin, then prints its counts as
one JSON line.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .common import BENCH_ROOT, SESSION_TIMEOUT_S, SOON

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ("rwlock", "semaphore", "mutex")
#: pycurator on kazoo's handler, pycurator on the fast handler, Java Curator.
SIDES = ("pycurator", "pycurator-fast", "curator")
MODES = ("shared", "per-thread", "processes")
READ_SHARE = 0.9
MAX_LEASES = 2

#: One operation: True when done, False when it timed out; ``kind`` counts reads and writes.
Operation = Callable[[dict[str, int]], bool]


#: The Python sides a worker takes: pycurator on a ``KazooClient`` built by hand (kazoo's
#: handler, or the fast one), on :func:`pycurator.connect`'s client, or on that client served by
#: kazoo's connection loop instead of pycurator's (``lean_loop=False``).
PYTHON_SIDES = ("pycurator", "pycurator-fast", "pycurator-connect", "pycurator-kazoo-loop")


def python_client(hosts: str, side: str) -> Any:
    """A started client for a Python ``side`` (see :data:`PYTHON_SIDES`)."""
    if side in ("pycurator-connect", "pycurator-kazoo-loop"):
        from pycurator import connect

        # its own 30 s session, as SESSION_TIMEOUT_S
        return connect(hosts, connect_timeout=SOON, lean_loop=side == "pycurator-connect")
    from kazoo.client import KazooClient

    kwargs: dict[str, Any] = {}
    if side == "pycurator-fast":
        from pycurator.handlers import FastThreadingHandler

        kwargs["handler"] = FastThreadingHandler()
    client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, **kwargs)
    client.start(timeout=SOON)
    return client


def _operation(side: str, recipe: str, client: Any, path: str, seed: int) -> Operation:
    """One thread's operation on ``path``, with a lock object of its own."""
    chance = random.Random(seed)
    if side == "curator":
        from pycurator.testing import JavaMutex, JavaReadWriteLock, JavaSemaphore

        make_mutex: Any = JavaMutex
        make_rw: Any = JavaReadWriteLock
        make_semaphore: Any = JavaSemaphore
    else:
        from pycurator import InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2

        make_mutex, make_rw, make_semaphore = (
            InterProcessMutex,
            InterProcessReadWriteLock,
            InterProcessSemaphoreV2,
        )
    if recipe == "semaphore":
        semaphore = make_semaphore(client, path, MAX_LEASES)

        def lease_op(counts: dict[str, int]) -> bool:
            lease = semaphore.acquire(SOON)
            if lease is None:
                return False
            lease.close()
            return True

        return lease_op
    if recipe == "mutex":
        mutex = make_mutex(client, path)

        def mutex_op(counts: dict[str, int]) -> bool:
            if not mutex.acquire(SOON):
                return False
            mutex.release()
            return True

        return mutex_op
    rw = make_rw(client, path)
    sides = {"reads": rw.read_lock(), "writes": rw.write_lock()}

    def rw_op(counts: dict[str, int]) -> bool:
        kind = "reads" if chance.random() < READ_SHARE else "writes"
        if not sides[kind].acquire(SOON):
            return False
        sides[kind].release()
        counts[kind] += 1
        return True

    return rw_op


def work(
    side: str,
    recipe: str,
    mode: str,
    hosts: str,
    seconds: float,
    threads: int,
    go: Callable[[], None],
    path: str | None = None,
    warmup: float = 0.0,
) -> dict[str, float]:
    """Set up ``threads`` threads, call ``go`` (which returns when it is time), run them for
    ``warmup`` seconds unmeasured (Java's JIT compiles Curator meanwhile) and then ``seconds``;
    their counts and the process's CPU time in the measured part."""
    path = path or f"{BENCH_ROOT}/contended-{recipe}-{uuid.uuid4().hex[:8]}"
    if side == "curator":
        from pycurator.testing import new_curator

        def new_client() -> Any:
            return new_curator(hosts, session_timeout_ms=int(SESSION_TIMEOUT_S * 1000))

        def close(client: Any) -> None:
            client.close()
    else:

        def new_client() -> Any:
            return python_client(hosts, side)

        def close(client: Any) -> None:
            client.stop()
            client.close()

    shared = new_client() if mode == "shared" else None
    clients = [shared] if shared is not None else [new_client() for _ in range(threads)]
    ops = [_operation(side, recipe, shared or clients[i], path, seed=i) for i in range(threads)]
    window = [0.0, 0.0]
    counts, cpu = run_parts([loop(op, window) for op in ops], go, window, warmup, seconds)
    for client in clients:
        close(client)
    return summary(counts, seconds, cpu)


#: A thread's part of a measurement: it counts into the dict it is given.
Part = Callable[[dict[str, int]], None]


def loop(op: Operation, window: list[float]) -> Part:
    """A thread's part: ``op`` again and again until ``window`` (measured from, until, on
    ``time.monotonic()``) ends, counted once it has begun (``op`` may count reads and writes
    too)."""

    def run(mine: dict[str, int]) -> None:
        spare = _counts()
        while (now := time.monotonic()) < window[1]:
            into = mine if now >= window[0] else spare
            if op(into):
                into["done"] += 1
            else:
                into["timeouts"] += 1

    return run


def run_parts(
    parts: list[Part], go: Callable[[], None], window: list[float], warmup: float, seconds: float
) -> tuple[list[dict[str, int]], float]:
    """Start a thread per part, call ``go`` (which returns when it is time), set ``window`` to
    ``warmup`` seconds from now and ``seconds`` after that, let the parts run, and wait for
    them: each part's counts, and the process's CPU seconds in the measured part."""
    counts = [_counts() for _ in parts]
    start = threading.Barrier(len(parts) + 1)

    def thread(part: Part, mine: dict[str, int]) -> None:
        start.wait(SOON)
        part(mine)

    workers = [
        threading.Thread(target=thread, args=(part, mine), daemon=True)
        for part, mine in zip(parts, counts, strict=True)
    ]
    for worker in workers:
        worker.start()
    go()
    window[0] = time.monotonic() + warmup
    window[1] = window[0] + seconds
    start.wait(SOON)
    time.sleep(max(0.0, window[0] - time.monotonic()))  # the timed part starts then
    cpu = time.process_time()
    for worker in workers:
        worker.join(seconds + 2 * SOON)
    return counts, time.process_time() - cpu


def summary(counts: list[dict[str, int]], seconds: float, cpu: float) -> dict[str, float]:
    """What a worker reports of its parts' counts over ``seconds`` and ``cpu`` seconds."""
    done = sum(c["done"] for c in counts)
    return {
        "operations": done,
        "ops_per_s": done / seconds,
        "timeouts": sum(c["timeouts"] for c in counts),
        "reads": sum(c["reads"] for c in counts),
        "writes": sum(c["writes"] for c in counts),
        "cpu_ms_per_op": cpu * 1e3 / done if done else 0.0,
    }


def _counts() -> dict[str, int]:
    return {"done": 0, "timeouts": 0, "reads": 0, "writes": 0}


def worker_command(side: str, arguments: list[str]) -> list[str]:
    """The command line of a worker of this module for one block (``arguments``: see
    :func:`block_arguments`)."""
    return [sys.executable, "-m", "bench.contended", side, *arguments]


def block_arguments(
    recipe: str, mode: str, hosts: str, seconds: float, threads: int, path: str, warmup: float
) -> list[str]:
    """A block's worker arguments after the side, as this module's and the Java program's
    workers take them."""
    return [recipe, mode, hosts, f"{seconds}", f"{threads}", path, f"{warmup}"]


def _await_ready(out: IO[str] | None) -> None:
    assert out is not None
    line = out.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"a contended worker did not start: {line!r}")


def block(
    side: str, recipe: str, mode: str, hosts: str, seconds: float, threads: int, warmup: float
) -> dict[str, float]:
    """One block in processes of its own: one process, or ``threads`` processes of one thread
    each for ``processes``; their counts summed."""
    path = f"{BENCH_ROOT}/contended-{recipe}-{uuid.uuid4().hex[:8]}"
    if mode == "processes":
        single = block_arguments(recipe, "single", hosts, seconds, 1, path, warmup)
        commands = [worker_command(side, single) for _ in range(threads)]
    else:
        arguments = block_arguments(recipe, mode, hosts, seconds, threads, path, warmup)
        commands = [worker_command(side, arguments)]
    return total(run_workers(commands, seconds), seconds)


def run_workers(commands: list[list[str]], seconds: float) -> list[dict[str, Any]]:
    """Start a worker process per command (each prints ``ready``, waits for a line, runs for
    ``seconds`` measured and prints its counts as a JSON line), let them go together, and
    return what each printed."""
    procs = [
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        for command in commands
    ]
    try:
        for proc in procs:
            _await_ready(proc.stdout)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            out, _ = proc.communicate(timeout=seconds + 4 * SOON)
            if proc.returncode != 0:
                raise RuntimeError(f"a contended worker failed ({proc.returncode})")
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def total(results: list[dict[str, Any]], seconds: float) -> dict[str, float]:
    """The workers' counts of one block summed (CPU per operation: the median of theirs)."""
    summed: dict[str, float] = {
        key: sum(r[key] for r in results) for key in ("operations", "timeouts", "reads", "writes")
    }
    summed["ops_per_s"] = summed["operations"] / seconds
    summed["cpu_ms_per_op"] = statistics.median(r["cpu_ms_per_op"] for r in results)
    return summed


def summarize_rounds(results: list[dict[str, float]]) -> dict[str, Any]:
    """A side's row over its rounds: medians, each round's rate, timeouts and the read share."""
    operations = sum(r["operations"] for r in results)
    return {
        "ops_per_s": statistics.median(r["ops_per_s"] for r in results),
        "ops_per_s_rounds": [r["ops_per_s"] for r in results],
        "cpu_ms_per_op": statistics.median(r["cpu_ms_per_op"] for r in results),
        "timeouts": sum(r["timeouts"] for r in results),
        "read_share": sum(r["reads"] for r in results) / max(1.0, operations),
    }


Table = dict[str, dict[str, dict[str, dict[str, Any]]]]


def ratio_table(
    samples: dict[tuple[str, str, str], list[dict[str, float]]],
    base_side: str,
    base_mode: Callable[[str], str] = lambda mode: mode,
) -> Table:
    """Each ``(recipe, mode, side)``'s rounds summarized (:func:`summarize_rounds`), with its
    median rate as a ratio to ``base_side``'s in ``base_mode(mode)``; printed as a table."""
    table: Table = {}
    for (recipe, mode, side), results in samples.items():
        table.setdefault(recipe, {}).setdefault(mode, {})[side] = summarize_rounds(results)
    print(f"{'recipe':<10} {'mode':<11} {'side':<18} {'ops/s':>8} {'cpu ms/op':>10} {'ratio':>6}")
    for recipe, modes in table.items():
        for mode, by_side in modes.items():
            base = modes[base_mode(mode)][base_side]["ops_per_s"]
            for side, row in by_side.items():
                row["ratio_to_curator"] = row["ops_per_s"] / base if base else 0.0
                print(
                    f"{recipe:<10} {mode:<11} {side:<18} {row['ops_per_s']:>8.1f}"
                    f" {row['cpu_ms_per_op']:>10.3f} {row['ratio_to_curator']:>6.2f}"
                )
    return table


def run(hosts: str, seconds: float, threads: int, rounds: int, warmup: float) -> dict[str, object]:
    """Medians over ``rounds`` of every side in every mode, and their ratios to Curator's rate in
    the same mode (``processes``: to Curator's ``shared``)."""
    from .common import first_server

    hosts = first_server(hosts)
    samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    for round_ in range(rounds):
        for recipe in RECIPES:
            for mode in MODES:
                sides = [s for s in SIDES if not (mode == "processes" and s == "curator")]
                if round_ % 2:
                    sides.reverse()
                for side in sides:
                    result = block(side, recipe, mode, hosts, seconds, threads, warmup)
                    samples.setdefault((recipe, mode, side), []).append(result)
    print(f"\ncontended, {threads} threads, {seconds:g} s blocks, medians of {rounds} rounds")
    table = ratio_table(samples, "curator", lambda mode: "shared" if mode == "processes" else mode)
    return {**settings(seconds, threads, rounds, warmup), "table": table}


def settings(seconds: float, threads: int, rounds: int, warmup: float) -> dict[str, object]:
    """What a contention section's results say of how it ran."""
    return {
        "seconds": seconds,
        "threads": threads,
        "rounds": rounds,
        "warmup_s": warmup,
        "max_leases": MAX_LEASES,
        "read_share": READ_SHARE,
    }


def serve(argv: list[str], work: Any, known: Callable[[str, str, str], bool]) -> None:
    """A worker process: ``work`` one block as ``argv`` says (SIDE RECIPE MODE HOSTS SECONDS
    THREADS PATH WARMUP, which ``known(side, recipe, mode)`` must accept), starting when a line
    comes on stdin after it printed ``ready``; prints its counts as a JSON line."""
    side, recipe, mode, hosts, seconds, threads, path, warmup = argv
    if not known(side, recipe, mode):
        raise SystemExit(f"unknown side, recipe or mode: {side} {recipe} {mode}")

    def go() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    result: dict[str, Any] = dict(
        work(side, recipe, mode, hosts, float(seconds), int(threads), go, path, float(warmup))
    )
    result["jvm"] = "jpype" in sys.modules  # whether Java ran in this process
    print(json.dumps(result), flush=True)


def _main(argv: list[str]) -> None:
    serve(
        argv,
        work,
        lambda side, recipe, mode: (
            side in (*SIDES, *PYTHON_SIDES)
            and recipe in RECIPES
            and mode in ("shared", "per-thread", "single")
        ),
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
