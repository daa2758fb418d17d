"""The benchmark's chart, drawn from its JSON: ``python -m bench.chart [JSON [PNG]]``.

Nine panels: cycle medians by contender (loopback and each added latency), the acquire alone in
round trips, the drain's requests and bytes per hand-off against the queue length, hand-off
latency by language pair, mixed-language throughput, contended throughput as ratios to
Curator's (through JPype, and against a Java program), and the repeated loopback cycle's
ratios. A section missing from the JSON leaves its panel saying so.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.ticker import NullFormatter, ScalarFormatter

ROOT = Path(__file__).resolve().parents[1]
COLORS = {
    "pycurator": "#1f77b4",
    "pycurator-fast": "#17becf",
    "pycurator-silent": "#aec7e8",
    "pycurator-metrics": "#9467bd",
    "pycurator-connect": "#2ca02c",
    "curator": "#d62728",
    "kazoo-lock": "#7f7f7f",
    "raw-floor": "#bcbd22",
    "python": "#1f77b4",
    "java": "#d62728",
}

Results = Mapping[str, Any]


def _bars(
    ax: Axes, groups: Sequence[str], series: Mapping[str, Sequence[float | None]], fmt: str
) -> None:
    """Grouped bars: one group per label, one bar per series (None: no bar)."""
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if not shown:
            continue
        bars = ax.bar(
            [x for x, _ in shown],
            [v for _, v in shown],
            width,
            label=name,
            color=COLORS.get(name),
        )
        ax.bar_label(bars, labels=[fmt.format(v) for _, v in shown], fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=7)


def _plain_log(ax: Axes, axis: str) -> None:
    """A log scale labelled with plain numbers."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_formatter(ScalarFormatter())
    target.set_minor_formatter(NullFormatter())


def _cycles(ax: Axes, results: Results) -> None:
    section = results["cycle"]
    loopback = section["loopback"]["table"]
    conditions = [("loopback", loopback)] + [
        (f"+{entry['added_ms_each_way']:g} ms each way", entry["table"])
        for entry in section["latency"]
    ]
    kinds = list(loopback)
    _bars(
        ax,
        [name for name, _ in conditions],
        {
            k: [table[k]["median_ms"] if k in table else None for _, table in conditions]
            for k in kinds
        },
        "{:.1f}",
    )
    _plain_log(ax, "y")
    ax.set_ylabel("median acquire+release, ms (log)")
    ax.set_title("Uncontended cycle")


def _round_trips(ax: Axes, results: Results) -> None:
    entries = results["cycle"]["latency"]
    if not entries:
        raise KeyError("latency")
    kinds = list(entries[0]["table"])
    _bars(
        ax,
        [f"+{entry['added_ms_each_way']:g} ms" for entry in entries],
        {k: [entry["table"][k]["acquire_round_trips"] for entry in entries] for k in kinds},
        "{:.2f}",
    )
    for level in (1, 2):
        ax.axhline(level, color="black", linewidth=0.5, linestyle=":")
    ax.set_ylabel("median acquire / (2 x added latency)")
    ax.set_title("Uncontended acquire, in round trips")


def _drain(key: str, label: str, log: bool) -> Callable[[Axes, Results], None]:
    def draw(ax: Axes, results: Results) -> None:
        for variant, style, suffix in (("rows", "-", ""), ("shared_rows", "--", ", shared")):
            for language, rows in results["drain"].get(variant, {}).items():
                ax.plot(
                    [row["waiters"] for row in rows],
                    [row[key] for row in rows],
                    marker="o",
                    linestyle=style,
                    label=language + suffix,
                    color=COLORS.get(language),
                )
        _plain_log(ax, "x")
        ax.set_xticks([row["waiters"] for row in rows])
        if log:
            _plain_log(ax, "y")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("waiters drained (N)")
        ax.set_ylabel(label)
        ax.set_title(f"Drain: {label}")
        ax.legend(fontsize=7)

    return draw


def _handoff(ax: Axes, results: Results) -> None:
    table = results["handoff"]["table"]
    pairs = list(table)
    _bars(
        ax,
        [pair.replace("->", "\n-> ") for pair in pairs],
        {
            "median": [table[p]["median_ms"] for p in pairs],
            "p99": [table[p]["p99_ms"] for p in pairs],
        },
        "{:.1f}",
    )
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("ms")
    ax.set_title("Hand-off: release -> next holder")


def _throughput(ax: Axes, results: Results) -> None:
    section = results["throughput"]
    recipes = [("semaphore", "semaphore"), ("rwlock", "read/write lock")]
    languages = list(section["semaphore"]["by_language"])
    _bars(
        ax,
        [label for _, label in recipes],
        {
            language: [section[key]["by_language"][language]["ops_per_s"] for key, _ in recipes]
            for language in languages
        },
        "{:.0f}",
    )
    ax.set_ylabel("operations per second")
    ax.set_title(f"Mixed Java and Python, {section['threads_per_language']} threads each")


def _ratios(ax: Axes, section: Results, sides: Sequence[str], base: str, title: str) -> None:
    """A contention section's ratios to ``base``, by recipe and mode, one bar per side."""
    table = section["table"]
    labels = [f"{recipe}\n{mode}" for recipe, modes in table.items() for mode in modes]
    _bars(
        ax,
        labels,
        {
            side: [
                modes[mode].get(side, {}).get("ratio_to_curator", 0.0)
                for modes in table.values()
                for mode in modes
            ]
            for side in sides
        },
        "{:.2f}",
    )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.tick_params(axis="x", labelsize=6)
    ax.set_ylabel(f"operations per second / {base}")
    ax.set_title(f"Contended, {section['threads']} threads, {title}")


def _contended(ax: Axes, results: Results) -> None:
    sides = ("pycurator", "pycurator-fast")
    _ratios(ax, results["contended"], sides, "Curator's", "each side alone")


def _standalone(ax: Axes, results: Results) -> None:
    sides = ("pycurator-connect", "pycurator", "pycurator-fast")
    _ratios(ax, results["standalone"], sides, "the Java program's", "each side a program")


def _repeats(ax: Axes, results: Results) -> None:
    repeats = results["cycle"]["loopback_repeats"]
    kinds = [kind for kind in repeats[0]["ratio_to_curator"] if kind != "curator"]
    _bars(
        ax,
        [f"run {i + 1}" for i in range(len(repeats))],
        {kind: [r["ratio_to_curator"][kind] for r in repeats] for kind in kinds},
        "{:.2f}",
    )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_ylabel("cycle median / Curator's")
    ax.set_title("Uncontended loopback cycle, repeated")


PANELS: Sequence[Callable[[Axes, Results], None]] = (
    _cycles,
    _round_trips,
    _drain("requests_per_hand_off", "requests per hand-off", log=False),
    _drain("bytes_out_per_hand_off", "bytes out per hand-off", log=True),
    _handoff,
    _throughput,
    _contended,
    _standalone,
    _repeats,
)


def draw(results: Results, png: Path) -> None:
    """Draw the chart of ``results`` (the benchmark's JSON) to ``png``."""
    figure, axes = plt.subplots(3, 3, figsize=(18, 13))
    for ax, panel in zip(axes.flat, PANELS, strict=True):
        try:
            panel(ax, results)
        except KeyError as missing:
            ax.clear()
            ax.text(0.5, 0.5, f"not measured: {missing}", ha="center", va="center")
            ax.set_axis_off()
    host = results.get("machine", {})
    figure.suptitle(
        f"pycurator and Java Curator on one ZooKeeper server; {host.get('cpus', '?')} CPUs,"
        f" Python {host.get('python', '?')}, {host.get('java', '?')}",
        fontsize=10,
    )
    figure.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=80)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    source = Path(args[0]) if args else ROOT / "docs" / "benchmarks.json"
    png = Path(args[1]) if len(args) > 1 else source.with_suffix(".png")
    draw(json.loads(source.read_text()), png)
    print(f"chart drawn to {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
