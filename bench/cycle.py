"""Uncontended acquire+release cycles: pycurator, Java Curator, kazoo's Lock and the raw floor on
loopback (pycurator on the fast handler with nobody listening, with its reporting replaced by
no-ops, and with the Prometheus lock listener added: what reporting costs when nobody listens,
and what being watched costs, each against the no-op one in µs and in % of its cycle, with the
same difference round by round); pycurator and Curator through a proxy adding latency, with the
acquire alone counted in round trips: of the added latency, and net (the acquire's time less
its loopback time, over what a bare request's round trip through the proxy costs more than on
loopback).

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
from typing import Any

from pycurator.testing import FaultProxy

from .common import first_server, summarize
from .contender import KINDS, LISTENED, ROUND_TRIP, SILENT

ROOT = Path(__file__).resolve().parents[1]
LATENCY_KINDS = ("pycurator", "curator")
#: What reporting is measured on: each against ``SILENT`` (the same client, reporting no-ops).
REPORTING = ("pycurator-fast", LISTENED)

Table = dict[str, dict[str, Any]]


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
    """Cycle and acquire medians and p99 (ms), each round's cycle median (ms), and client CPU
    per cycle (ms, the rounds' median, and each round's), by contender."""
    cycle: dict[str, list[int]] = {kind: [] for kind in kinds}
    round_medians: dict[str, list[float]] = {kind: [] for kind in kinds}
    acquire: dict[str, list[int]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    for round_ in range(rounds):
        order = list(kinds) if round_ % 2 == 0 else list(reversed(kinds))
        for kind in order:
            result = run_contender(kind, hosts, cycles, warmup)
            cycle_ns: list[int] = result["cycle_ns"]  # type: ignore[assignment]
            cycle[kind].extend(cycle_ns)
            round_medians[kind].append(statistics.median(cycle_ns) / 1e6)
            acquire[kind].extend(result["acquire_ns"])  # type: ignore[arg-type]
            cpu[kind].append(float(result["cpu_s_per_cycle"]))  # type: ignore[arg-type]
    table: Table = {}
    for kind in kinds:
        row: dict[str, Any] = summarize(cycle[kind])
        held = summarize(acquire[kind])
        row["acquire_median_ms"] = held["median_ms"]
        row["acquire_p99_ms"] = held["p99_ms"]
        row["cpu_ms_per_cycle"] = statistics.median(cpu[kind]) * 1e3
        row["round_medians_ms"] = round_medians[kind]
        row["cpu_ms_rounds"] = [c * 1e3 for c in cpu[kind]]
        table[kind] = row
    return table


def ratios(table: Table, base: str = "curator") -> dict[str, float]:
    return {kind: row["median_ms"] / table[base]["median_ms"] for kind, row in table.items()}


def reporting_cost(tables: Sequence[Table]) -> dict[str, dict[str, Any]]:
    """What each of ``REPORTING`` costs a loopback cycle more than ``SILENT``, over the repeated
    measurements ``tables``: the difference of their cycle medians in µs and in % of
    ``SILENT``'s (the median over the repeats, and each repeat's), the same difference round by
    round (each round's two medians: the noise it has to stand out of), and the difference of
    client CPU per cycle in µs."""
    cost: dict[str, dict[str, Any]] = {}
    pairs = {
        kind: [(t[kind], t[SILENT]) for t in tables if {kind, SILENT} <= set(t)]
        for kind in REPORTING
    }
    for kind, rows in pairs.items():
        if not rows:
            continue
        us = [(mine["median_ms"] - base["median_ms"]) * 1e3 for mine, base in rows]
        percent = [
            100 * d / (base["median_ms"] * 1e3) for d, (_, base) in zip(us, rows, strict=True)
        ]
        rounds = [
            (a - b) * 1e3
            for mine, base in rows
            for a, b in zip(mine["round_medians_ms"], base["round_medians_ms"], strict=True)
        ]
        cpu = [(mine["cpu_ms_per_cycle"] - base["cpu_ms_per_cycle"]) * 1e3 for mine, base in rows]
        cost[kind] = {
            "us_per_cycle": statistics.median(us),
            "percent_of_cycle": statistics.median(percent),
            "silent_median_ms": statistics.median(base["median_ms"] for _, base in rows),
            "repeat_us": us,
            "repeat_percent": percent,
            "round_us": rounds,
            "cpu_us_per_cycle": statistics.median(cpu),
        }
    return cost


def print_reporting_cost(cost: dict[str, dict[str, Any]]) -> None:
    for kind, row in cost.items():
        rounds = row["round_us"]
        print(
            f"  reporting: {kind} - {SILENT} = {row['us_per_cycle']:+.1f} µs a cycle"
            f" ({row['percent_of_cycle']:+.1f}% of {row['silent_median_ms']:.3f} ms);"
            f" round by round {min(rounds):+.1f} to {max(rounds):+.1f} µs;"
            f" client CPU {row['cpu_us_per_cycle']:+.1f} µs"
        )


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
    ratio and client CPU per cycle of every one in ``loopback_repeats``), one entry of
    ``latency`` per added latency, and ``reporting``: what pycurator's reporting costs the
    loopback cycle, over every loopback measurement (see :func:`reporting_cost`)."""
    repeated = []
    for repeat in range(max(1, repeats)):
        table = measure(hosts, KINDS, cycles, warmup, rounds)
        print_table(f"uncontended acquire+release, loopback ({repeat + 1} of {repeats})", table)
        print_reporting_cost(reporting_cost([table]))
        repeated.append(table)
    loopback = repeated[0]
    reporting = reporting_cost(repeated)
    if len(repeated) > 1:
        print(f"\nover the {len(repeated)} loopback measurements (medians of theirs):")
        print_reporting_cost(reporting)
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
        "reporting": {"silent": SILENT, "cost": reporting},
    }


def print_table(title: str, table: Table) -> None:
    print(f"\n{title}")
    print(
        f"{'contender':<18} {'median ms':>10} {'p99 ms':>9} {'acquire ms':>11} {'cpu ms':>8}"
        f" {'/ curator':>10}"
    )
    base = table.get("curator")
    for kind, row in table.items():
        ratio = f"{row['median_ms'] / base['median_ms']:.2f}" if base else "-"
        print(
            f"{kind:<18} {row['median_ms']:>10.3f} {row['p99_ms']:>9.3f}"
            f" {row['acquire_median_ms']:>11.3f} {row['cpu_ms_per_cycle']:>8.3f} {ratio:>10}"
        )
