"""The benchmark's chart, drawn from its JSON: ``python -m bench.chart [JSON [PNG]]``.

Nine panels: cycle medians by contender (loopback and each added latency), the acquire alone in
round trips, the drain's requests and bytes per hand-off against the queue length, hand-off
latency by language pair, mixed-language throughput, contended throughput as ratios to
Curator's (through JPype, and against a Java program), and the repeated loopback cycle's
ratios. A section missing from the JSON leaves its panel saying so. Hand-off's language pairs
label bars laid along the x axis; the contended panels, with the most groups, have the most
width; a bar's value label turns upright where it is wider than the bar.
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
#: The drain's second run (one lock object per client, shared by its threads), by contender: a
#: colour of its own, as the two runs can measure the same and draw one line over the other.
SHARED = {"pycurator": "#ff7f0e", "curator": "#8c564b"}
#: The drain's marker by contender, so that lines drawn over each other still show each point.
MARKERS = {"pycurator": "o", "curator": "^"}
#: Points per character of a bar's value label, per point of font size (digits and a dot).
CHAR_WIDTH = 0.6

Results = Mapping[str, Any]


def _bars(
    ax: Axes,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    fmt: str,
    *,
    horizontal: bool = False,
) -> None:
    """Grouped bars: one group per label, one bar per series (None: no bar).

    ``horizontal`` lays the bars along the x axis, the groups down the y axis from the top:
    for labels too long to sit side by side under the bars.
    """
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if not shown:
            continue
        draw = ax.barh if horizontal else ax.bar
        bars = draw(
            [x for x, _ in shown],
            [v for _, v in shown],
            width,
            label=name,
            color=COLORS.get(name),
        )
        labels = [fmt.format(v) for _, v in shown]
        upright = not horizontal and _label_width(labels, 7) > _bar_width(ax, width, len(groups))
        ax.bar_label(bars, labels=labels, fontsize=7, rotation=90 if upright else 0, padding=2)
        if upright:
            ax.margins(y=0.12)
    if horizontal:
        ax.set_yticks(range(len(groups)), groups)
        ax.invert_yaxis()
        ax.margins(x=0.08)
    else:
        ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=7)


def _label_width(labels: Sequence[str], fontsize: float) -> float:
    """The widest of ``labels`` laid flat, in points (about)."""
    return max((len(label) for label in labels), default=0) * fontsize * CHAR_WIDTH


def _bar_width(ax: Axes, width: float, groups: int) -> float:
    """The width in points of a bar ``width`` wide on ``ax``, whose x axis holds ``groups``."""
    figure = ax.get_figure()
    assert figure is not None
    axes_points = ax.get_window_extent().width / figure.dpi * 72
    return axes_points * width / max(1, groups)


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
        section = results["drain"]
        shared = f", lock shared by {section.get('waiters_per_client', 'its')} threads"
        # (the lock-per-thread run filled, the shared run hollow and dashed over it)
        runs = (("rows", "-", ", lock per thread", COLORS), ("shared_rows", "--", shared, SHARED))
        waiters: set[int] = set()
        for variant, style, suffix, colors in runs:
            hollow = variant == "shared_rows"
            for language, rows in section.get(variant, {}).items():
                waiters.update(row["waiters"] for row in rows)
                color = colors.get(language)
                ax.plot(
                    [row["waiters"] for row in rows],
                    [row[key] for row in rows],
                    marker=MARKERS.get(language, "o"),
                    markersize=9 if hollow else 5,
                    markerfacecolor="none" if hollow else color,
                    linestyle=style,
                    label=language + suffix,
                    color=color,
                )
        if not waiters:
            raise KeyError("rows")
        _plain_log(ax, "x")
        ax.set_xticks(sorted(waiters))
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
        [pair.replace("->", " -> ") for pair in pairs],
        {
            "median": [table[p]["median_ms"] for p in pairs],
            "p99": [table[p]["p99_ms"] for p in pairs],
        },
        "{:.1f}",
        horizontal=True,
    )
    ax.set_xlabel("ms")
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
    ratios: dict[str, list[float]] = {
        side: [
            modes[mode].get(side, {}).get("ratio_to_curator", 0.0)
            for modes in table.values()
            for mode in modes
        ]
        for side in sides
    }
    _bars(ax, labels, ratios, "{:.2f}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    # room above the 1.0 line for the bars' labels and the legend
    ax.set_ylim(0, max([1.0, *(r for values in ratios.values() for r in values)]) * 1.12)
    ax.legend(fontsize=7, loc="upper right")
    ax.tick_params(axis="x", labelsize=7)
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
    # room above the bars for the legend, in rows across the panel
    top = max(r["ratio_to_curator"][kind] for r in repeats for kind in kinds)
    ax.set_ylim(0, top * 1.7)
    ax.legend(fontsize=7, ncols=4, loc="upper center")
    ax.set_ylabel("cycle median / Curator's")
    ax.set_title("Uncontended loopback cycle, repeated")


#: Each panel and where it goes on a grid of ROWS x COLUMNS: (row, first column, columns).
PANELS: Sequence[tuple[Callable[[Axes, Results], None], tuple[int, int, int]]] = (
    (_cycles, (0, 0, 2)),
    (_round_trips, (0, 2, 2)),
    (_throughput, (0, 4, 2)),
    (_drain("requests_per_hand_off", "requests per hand-off", log=False), (1, 0, 2)),
    (_drain("bytes_out_per_hand_off", "bytes out per hand-off", log=True), (1, 2, 2)),
    (_repeats, (1, 4, 2)),
    (_handoff, (2, 0, 3)),
    (_contended, (2, 3, 3)),
    (_standalone, (3, 0, 6)),
)
ROWS, COLUMNS = 4, 6


def draw(results: Results, png: Path) -> None:
    """Draw the chart of ``results`` (the benchmark's JSON) to ``png``."""
    figure = plt.figure(figsize=(18, 17), layout="constrained")
    # a subfigure a row, so that one row's wide tick labels do not narrow the panels of another
    grid = figure.add_gridspec(ROWS, 1)
    rows = [figure.add_subfigure(grid[row]) for row in range(ROWS)]
    for panel, (row, column, columns) in PANELS:
        ax = rows[row].add_subplot(1, COLUMNS, (column + 1, column + columns))
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
