"""The benchmark's result tables in Markdown, made from its JSON alone.

``python -m bench.report docs/benchmarks.json`` prints them; ``--write docs/benchmarks.md``
replaces what stands between the page's two ``bench-report`` markers, so the page cannot drift
from the JSON (a test checks that it has not).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BEGIN = "<!-- bench-report: begin (python -m bench.report --write) -->"
END = "<!-- bench-report: end -->"
NAMES = {
    "pycurator": "pycurator",
    "curator": "Java Curator",
    "kazoo-lock": "kazoo `Lock`",
    "raw-floor": "raw floor (3 requests, unpipelined)",
}
PAIRS = {"pycurator": "pycurator", "curator": "Java Curator"}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _ms(value: float) -> str:
    return f"{value:.2f}"


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _cycle(results: dict[str, Any]) -> list[str]:
    cycle = results["cycle"]
    loopback = cycle["loopback"]
    lines = ["### Uncontended cycles", "", "Loopback:", ""]
    lines += _table(
        [
            "contender",
            "median ms",
            "p99 ms",
            "acquire alone, median ms",
            "client CPU ms per cycle",
            "median / Curator's",
        ],
        [
            [
                NAMES.get(kind, kind),
                _ms(row["median_ms"]),
                _ms(row["p99_ms"]),
                _ms(row["acquire_median_ms"]),
                _ms(row["cpu_ms_per_cycle"]),
                _ms(loopback["ratio_to_curator"][kind]),
            ]
            for kind, row in loopback["table"].items()
        ],
    )
    rows = []
    for delayed in cycle.get("latency", []):
        for kind, row in delayed["table"].items():
            rows.append(
                [
                    f"{delayed['added_ms_each_way']:g} ms",
                    NAMES.get(kind, kind),
                    str(delayed["cycles"]),
                    _ms(row["median_ms"]),
                    _ms(row["p99_ms"]),
                    _ms(row["acquire_median_ms"]),
                    _ms(row["acquire_round_trips"]),
                    _ms(row["acquire_net_round_trips"]) if "acquire_net_round_trips" in row else "",
                    _ms(delayed["ratio_to_curator"][kind]),
                ]
            )
    if rows:
        lines += ["", "Through the proxy:", ""]
        lines += _table(
            [
                "added each way",
                "contender",
                "cycles",
                "cycle median ms",
                "p99 ms",
                "acquire alone, median ms",
                "acquire in round trips",
                "acquire in net round trips",
                "cycle median / Curator's",
            ],
            rows,
        )
    return lines


def _drain(results: dict[str, Any]) -> list[str]:
    drain = results["drain"]
    lines = ["### Drain of a queue"]
    for key, title in (
        ("rows", "A lock object per thread:"),
        ("shared_rows", f"One lock object per client, shared by its {drain['waiters_per_client']}"),
    ):
        if key not in drain:
            continue
        title = title if key == "rows" else title + " threads:"
        by_size: list[list[str]] = []
        sizes = sorted({row["waiters"] for rows in drain[key].values() for row in rows})
        for size in sizes:
            for kind, rows in drain[key].items():
                for row in rows:
                    if row["waiters"] == size:
                        by_size.append(
                            [
                                str(size),
                                NAMES.get(kind, kind),
                                _n(row["drain_ms"]),
                                _ms(row["drain_ms"] / size),
                                _ms(row["requests_per_hand_off"]),
                                _n(row["bytes_in_per_hand_off"]),
                                _n(row["bytes_out_per_hand_off"]),
                            ]
                        )
        lines += ["", title, ""]
        lines += _table(
            [
                "N",
                "contender",
                "drain ms",
                "ms per hand-off",
                "requests per hand-off",
                "bytes in per hand-off",
                "bytes out per hand-off",
            ],
            by_size,
        )
    return lines


def _handoff(results: dict[str, Any]) -> list[str]:
    handoff = results["handoff"]
    rows = []
    for pair, row in handoff["table"].items():
        holder, waiter = pair.split("->")
        rows.append(
            [
                f"{PAIRS[holder]} → {PAIRS[waiter]}",
                _ms(row["median_ms"]),
                _ms(row["p99_ms"]),
            ]
        )
    header = [f"holder → waiter ({handoff['hand_offs']} hand-offs each)", "median ms", "p99 ms"]
    return ["### Hand-off latency", "", *_table(header, rows)]


def _herd(results: dict[str, Any]) -> list[str]:
    herd = results["herd"]
    rows = [
        [
            PAIRS[kind],
            _ms(row["watches_per_waiter"]),
            _ms(row["watch_count_per_waiter"]),
            _ms(row["notifications_per_release"]),
            f"{row['waiters_woken_per_release']:.2f} ({row['max_waiters_woken_by_a_release']})",
        ]
        for kind, row in herd["table"].items()
    ]
    header = [
        f"{herd['waiters']} waiters",
        "watches per waiting contender (`wchc`)",
        "`zk_watch_count` per waiter",
        "notifications per release",
        "waiters woken per release (most by one release)",
    ]
    return ["### Herd", "", *_table(header, rows)]


def _throughput(results: dict[str, Any]) -> list[str]:
    throughput = results["throughput"]
    languages = {"python": "Python (pycurator)", "java": "Java (Curator)"}
    rows = []
    semaphore = throughput["semaphore"]
    for language, row in semaphore["by_language"].items():
        rows.append(
            [
                f"InterProcessSemaphoreV2, {semaphore['max_leases']} leases",
                languages[language],
                f"{row['ops_per_s']:.1f}",
                "",
                "",
                str(row["timeouts"]),
            ]
        )
    rwlock = throughput["rwlock"]
    for language, row in rwlock["by_language"].items():
        rows.append(
            [
                f"InterProcessReadWriteLock, {rwlock['read_share']:.0%} reads",
                languages[language],
                f"{row['ops_per_s']:.1f}",
                f"{row['reads_per_s']:.1f}",
                f"{row['writes_per_s']:.1f}",
                str(row["timeouts"]),
            ]
        )
    header = [
        f"recipe ({throughput['threads_per_language']} threads per language,"
        f" {throughput['seconds']:g} s)",
        "language",
        "operations per second",
        "reads/s",
        "writes/s",
        "timeouts",
    ]
    return ["### Mixed-language throughput", "", *_table(header, rows)]


def _leaks(results: dict[str, Any]) -> list[str]:
    rows = [
        [
            NAMES.get(kind, kind),
            "yes" if row["timed_out"] else "no",
            str(row["watches_left"]),
            str(row["nodes_left"]),
        ]
        for kind, row in results["leaks"]["table"].items()
    ]
    header = ["contender", "timed out", "data watches left by its session", "nodes left"]
    return ["### Watches left by a timed-out acquire", "", *_table(header, rows)]


SECTIONS = {
    "cycle": _cycle,
    "drain": _drain,
    "handoff": _handoff,
    "herd": _herd,
    "throughput": _throughput,
    "leaks": _leaks,
}


def report(results: dict[str, Any]) -> str:
    """The tables of every section the results have, in Markdown."""
    parts = ["\n".join(draw(results)) for name, draw in SECTIONS.items() if name in results]
    return "\n\n".join(parts) + "\n"


def replace_region(page: str, tables: str) -> str:
    """``page`` with what stands between the markers replaced by ``tables``."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n\n" + tables + "\n" + page[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("json", type=Path)
    parser.add_argument("--write", type=Path, help="a page with the two markers to update")
    args = parser.parse_args(argv)
    tables = report(json.loads(args.json.read_text()))
    if args.write is None:
        sys.stdout.write(tables)
    else:
        args.write.write_text(replace_region(args.write.read_text(), tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
