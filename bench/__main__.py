"""``python -m bench``: uncontended acquire+release cycles, pycurator against Java Curator, kazoo's
Lock and the raw floor, on loopback and through a proxy that adds latency; ratios in one run.

Each contender runs in a process of its own, in alternating rounds; medians and p99 are over
all rounds. Results go to a JSON file with the machine, the versions and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pycurator.testing import FaultProxy, ZooKeeperServer, four_letter_word, split_hosts

from .contender import KINDS

ROOT = Path(__file__).resolve().parents[1]


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


def summarize(samples: Sequence[int]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"median_ms": statistics.median(ordered) / 1e6, "p99_ms": p99 / 1e6}


def measure(
    hosts: str, kinds: Sequence[str], cycles: int, warmup: int, rounds: int
) -> dict[str, dict[str, float]]:
    samples: dict[str, list[int]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}
    for round_ in range(rounds):
        order = list(kinds) if round_ % 2 == 0 else list(reversed(kinds))
        for kind in order:
            result = run_contender(kind, hosts, cycles, warmup)
            samples[kind].extend(result["cycle_ns"])  # type: ignore[arg-type]
            cpu[kind].append(float(result["cpu_s_per_cycle"]))  # type: ignore[arg-type]
    table = {}
    for kind in kinds:
        row = summarize(samples[kind])
        row["cpu_ms_per_cycle"] = statistics.median(cpu[kind]) * 1e3
        table[kind] = row
    return table


def ratios(table: dict[str, dict[str, float]], base: str) -> dict[str, float]:
    return {kind: row["median_ms"] / table[base]["median_ms"] for kind, row in table.items()}


def print_table(title: str, table: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'contender':<12} {'median ms':>10} {'p99 ms':>9} {'cpu ms':>8} {'/ curator':>10}")
    base = table.get("curator")
    for kind, row in table.items():
        ratio = f"{row['median_ms'] / base['median_ms']:.2f}" if base else "-"
        print(
            f"{kind:<12} {row['median_ms']:>10.3f} {row['p99_ms']:>9.3f}"
            f" {row['cpu_ms_per_cycle']:>8.3f} {ratio:>10}"
        )


def machine(hosts: str) -> dict[str, object]:
    host, port = split_hosts(hosts)[0]
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "unknown",
        "zookeeper": four_letter_word(host, port, "srvr").splitlines()[0],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--hosts", help="an existing ensemble (default: an embedded server)")
    parser.add_argument("--cycles", type=int, default=200, help="measured cycles per round")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured cycles first")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per contender")
    parser.add_argument("--latency-ms", type=float, default=1.0, help="added each way; 0: skip")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "benchmarks.json")
    args = parser.parse_args(argv)

    server = None if args.hosts else ZooKeeperServer().start()
    hosts = args.hosts or server.hosts  # type: ignore[union-attr]
    try:
        results: dict[str, object] = {
            "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": machine(hosts),
        }
        loopback = measure(hosts, KINDS, args.cycles, args.warmup, args.rounds)
        print_table("uncontended acquire+release, loopback", loopback)
        results["loopback"] = {"table": loopback, "ratio_to_curator": ratios(loopback, "curator")}
        if args.latency_ms > 0:
            host, port = split_hosts(hosts)[0]
            with FaultProxy(f"{host}:{port}") as proxy:
                proxy.latency = args.latency_ms / 1000
                kinds = ("pycurator", "curator")
                delayed = measure(proxy.hosts, kinds, max(20, args.cycles // 4), 10, args.rounds)
            print_table(f"the same through a proxy adding {args.latency_ms:g} ms each way", delayed)
            results["latency"] = {
                "added_ms_each_way": args.latency_ms,
                "table": delayed,
                "ratio_to_curator": ratios(delayed, "curator"),
            }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
