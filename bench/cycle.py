"""Uncontended acquire+release cycles: pycurator, Java Curator, kazoo's Lock and the raw floor on
loopback (pycurator on the fast handler with nobody listening, and with the Prometheus lock
listener added: what being watched costs); pycurator and Curator through a proxy adding
latency, with the acquire alone counted in round trips: of the added latency, and net (the
acquire's time less its loopback time, over what a bare request's round trip through the proxy
costs more than on loopback).

Each contender runs in a process of its own, in alternating rounds; medians and p99 are over
all rounds.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pycurator.testing import FaultProxy

from .common import first_server, summarize
from .contender import KINDS, ROUND_TRIP

ROOT = Path(__file__).resolve().parents[1]
LATENCY_KINDS = ("pycurator", "curator")

Table = dict[str, dict[str, float]]


def run_contender(kind: str, hosts: str, cycles: int, warmup: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.contender", kind, hosts, str(cycles), str(warmup)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def measure(hosts: str, kinds: Sequence[str], cycles: int, warmup: int, rounds: int) -> Table:
    """Cycle and acquire medians and p99 (ms) and client CPU per cycle, by contender."""
    cycle: dict[str, list[int]] = {kind: [] for kind in kinds}
    acquire: dict[str, list[int]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    for round_ in range(rounds):
        order = list(kinds) if round_ % 2 == 0 else list(reversed(kinds))
        for kind in order:
            result = run_contender(kind, hosts, cycles, warmup)
            cycle[kind].extend(result["cycle_ns"])  # type: ignore[arg-type]
            acquire[kind].extend(result["acquire_ns"])  # type: ignore[arg-type]
            cpu[kind].append(float(result["cpu_s_per_cycle"]))  # type: ignore[arg-type]
    table = {}
    for kind in kinds:
        row = summarize(cycle[kind])
        held = summarize(acquire[kind])
        row["acquire_median_ms"] = held["median_ms"]
        row["acquire_p99_ms"] = held["p99_ms"]
        row["cpu_ms_per_cycle"] = statistics.median(cpu[kind]) * 1e3
        table[kind] = row
    return table


def ratios(table: Table, base: str = "curator") -> dict[str, float]:
    return {kind: row["median_ms"] / table[base]["median_ms"] for kind, row in table.items()}


def latency_cycles(cycles: int, latency_ms: float) -> tuple[int, int]:
    """Measured and warm-up cycles at ``latency_ms``: fewer as each cycle gets longer."""
    if latency_ms <= 5:
        return max(3, cycles // 4), 10
    return max(3, cycles // 10), 5


def run(
    hosts: str,
    *,
    cycles: int,
    warmup: int,
    rounds: int,
    latencies_ms: Sequence[float],
    repeats: int = 1,
) -> dict[str, object]:
    """The section's results: ``loopback`` (the first of ``repeats`` loopback measurements, each
    ratio and client CPU per cycle of every one in ``loopback_repeats``) and one entry of
    ``latency`` per added latency."""
    repeated = []
    for repeat in range(max(1, repeats)):
        table = measure(hosts, KINDS, cycles, warmup, rounds)
        print_table(f"uncontended acquire+release, loopback ({repeat + 1} of {repeats})", table)
        repeated.append(table)
    loopback = repeated[0]
    bare = measure(hosts, (ROUND_TRIP,), cycles, warmup, 1)[ROUND_TRIP]["acquire_median_ms"]
    delayed = []
    for latency_ms in [ms for ms in latencies_ms if ms > 0]:
        measured, warm = latency_cycles(cycles, latency_ms)
        with FaultProxy(first_server(hosts).split("/", 1)[0]) as proxy:
            proxy.latency = latency_ms / 1000
            chroot = hosts.partition("/")[2]
            through = proxy.hosts + (f"/{chroot}" if chroot else "")
            table = measure(through, LATENCY_KINDS, measured, min(warmup, warm), rounds)
            proxied = measure(through, (ROUND_TRIP,), measured, min(warmup, warm), 1)
        round_trip_ms = 2 * latency_ms
        network_ms = max(proxied[ROUND_TRIP]["acquire_median_ms"] - bare, 1e-3)
        for kind, row in table.items():
            row["acquire_round_trips"] = row["acquire_median_ms"] / round_trip_ms
            row["cycle_round_trips"] = row["median_ms"] / round_trip_ms
            client_ms = loopback[kind]["acquire_median_ms"]
            row["acquire_net_round_trips"] = (row["acquire_median_ms"] - client_ms) / network_ms
        print_table(f"the same through a proxy adding {latency_ms:g} ms each way", table)
        for kind, row in table.items():
            print(
                f"  {kind}: acquire alone {row['acquire_median_ms']:.2f} ms"
                f" = {row['acquire_round_trips']:.2f} round trips of {round_trip_ms:g} ms;"
                f" net {row['acquire_net_round_trips']:.2f} round trips of {network_ms:.2f} ms"
            )
        delayed.append(
            {
                "added_ms_each_way": latency_ms,
                "bare_round_trip_ms": network_ms,
                "cycles": measured,
                "table": table,
                "ratio_to_curator": ratios(table),
            }
        )
    return {
        "cycles": cycles,
        "rounds": rounds,
        "loopback": {"table": loopback, "ratio_to_curator": ratios(loopback)},
        "loopback_repeats": [
            {
                "ratio_to_curator": ratios(table),
                "cpu_ms_per_cycle": {kind: row["cpu_ms_per_cycle"] for kind, row in table.items()},
            }
            for table in repeated
        ],
        "latency": delayed,
    }


def print_table(title: str, table: Table) -> None:
    print(f"\n{title}")
    print(
        f"{'contender':<12} {'median ms':>10} {'p99 ms':>9} {'acquire ms':>11} {'cpu ms':>8}"
        f" {'/ curator':>10}"
    )
    base = table.get("curator")
    for kind, row in table.items():
        ratio = f"{row['median_ms'] / base['median_ms']:.2f}" if base else "-"
        print(
            f"{kind:<12} {row['median_ms']:>10.3f} {row['p99_ms']:>9.3f}"
            f" {row['acquire_median_ms']:>11.3f} {row['cpu_ms_per_cycle']:>8.3f} {ratio:>10}"
        )
