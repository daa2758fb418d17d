"""The benchmark's tables, section by section, in Markdown, each made from its JSON alone
(:data:`SECTIONS`), and the targets table; :mod:`bench.report` puts them on the page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import counters
from .cache import table as cache_table

NAMES = {
    "pycurator": "pycurator",
    "pycurator-fast": "pycurator, fast handler",
    "pycurator-silent": "pycurator, fast handler, reporting replaced by no-ops",
    "pycurator-metrics": "pycurator, fast handler, Prometheus listener",
    "pycurator-connect": "pycurator, `connect()`'s client",
    "curator": "Java Curator",
    "curator-java": "Java Curator, a Java program",
    "kazoo-lock": "kazoo `Lock`",
    "raw-floor": "raw floor (3 requests, unpipelined)",
}
PAIRS = {
    "pycurator": "pycurator",
    "pycurator-fast": "pycurator (fast handler)",
    "pycurator-connect": "pycurator (`connect()`'s client)",
    "curator": "Java Curator",
}


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
    repeats = cycle.get("loopback_repeats", [])
    if len(repeats) > 1:
        kinds = [kind for kind in repeats[0]["ratio_to_curator"] if kind != "curator"]
        lines += ["", f"Loopback, the whole measurement repeated {len(repeats)} times:", ""]
        lines += _table(
            [
                "contender",
                *(f"run {i + 1}: / Curator's (CPU ms)" for i in range(len(repeats))),
            ],
            [
                [
                    NAMES.get(kind, kind),
                    *(
                        f"{r['ratio_to_curator'][kind]:.2f} ({r['cpu_ms_per_cycle'][kind]:.2f})"
                        for r in repeats
                    ),
                ]
                for kind in [*kinds, "curator"]
            ],
        )
    lines += _reporting(cycle)
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


def _us(value: float) -> str:
    return f"{value:+.1f}"


def _reporting(cycle: dict[str, Any]) -> list[str]:
    """What reporting costs the loopback cycle: each contender against the one whose reporting
    is no-ops, with the same difference round by round (its noise)."""
    reporting = cycle.get("reporting", {})
    cost = reporting.get("cost", {})
    if not cost:
        return []
    silent = NAMES.get(reporting["silent"], reporting["silent"])
    repeats = len(next(iter(cost.values()))["repeat_us"])
    over = f"the median over the {repeats} loopback measurements" if repeats > 1 else "one run"
    rows = [
        [
            NAMES.get(kind, kind),
            _us(row["us_per_cycle"]),
            f"{row['percent_of_cycle']:+.1f}% of {row['silent_median_ms'] * 1e3:.0f} µs",
            " / ".join(_us(us) for us in row["repeat_us"]),
            f"{_us(min(row['round_us']))} to {_us(max(row['round_us']))}",
            _us(row["cpu_us_per_cycle"]),
        ]
        for kind, row in cost.items()
    ]
    header = [
        "contender",
        "cycle median, µs more",
        "of the cycle",
        "each measurement, µs",
        "each round, µs",
        "client CPU µs more per cycle",
    ]
    return [
        "",
        f"What reporting costs on loopback: each cycle median less that of {silent} (the same"
        f" client), {over}; round by round the two medians differ by the range shown, the"
        " noise a cost has to stand out of:",
        "",
        *_table(header, rows),
    ]


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
    each = f"{handoff['hand_offs']} hand-offs each"
    if "rounds" in handoff:
        each = f"{handoff['rounds']} rounds of {handoff['hand_offs']}"
    header = [f"holder → waiter ({each})", "median ms", "p99 ms"]
    lines = ["### Hand-off latency", "", *_table(header, rows)]
    ratios = handoff.get("ratio_to_curator")
    if ratios:
        lines += ["", "Within one language, as a ratio to Curator → Curator:", ""]
        lines += _table(
            ["holder → waiter", "median / Curator's", "p99 / Curator's"],
            [
                [f"{PAIRS[side]} → {PAIRS[side]}", _ms(row["median_ms"]), _ms(row["p99_ms"])]
                for side, row in ratios.items()
            ],
        )
    return lines


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


def _throughput_rows(throughput: dict[str, Any], python: str) -> list[list[str]]:
    languages = {"python": python, "java": "Java (Curator)"}
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
    return rows


def _throughput(results: dict[str, Any]) -> list[str]:
    throughput = results["throughput"]
    rows = _throughput_rows(throughput, "Python (pycurator)")
    if "fast" in throughput:
        rows += _throughput_rows(throughput["fast"], "Python (pycurator, fast handler)")
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


MODES = {
    "shared": "one client shared by the threads",
    "per-thread": "a client per thread",
    "processes": "a process per thread (vs Curator's shared client)",
}
RECIPES = {
    "rwlock": "InterProcessReadWriteLock, 90% reads",
    "semaphore": "InterProcessSemaphoreV2",
    "mutex": "InterProcessMutex",
    "semaphore-mutex": "InterProcessSemaphoreMutex",
    "multilock": "InterProcessMultiLock of 2 mutexes",
    "latch": "LeaderLatch (start, await leadership, close)",
    "leader": "LeaderSelector, auto-requeue (an operation: a term)",
    **counters.TITLES,
}


def _contention_table(section: dict[str, Any], names: dict[str, str], base: str) -> list[str]:
    """The rows of a contention section (``contended``, ``standalone``): by recipe, mode and
    side, each side's rate as a ratio to ``base``'s."""
    rows = []
    for recipe, modes in section["table"].items():
        title = RECIPES.get(recipe, recipe)
        if recipe == "semaphore":
            title += f", {section['max_leases']} leases"
        for mode, sides in modes.items():
            for side, row in sides.items():
                rows.append(
                    [
                        title,
                        MODES.get(mode, mode),
                        names.get(side, side),
                        f"{row['ops_per_s']:.0f}",
                        " / ".join(f"{x:.0f}" for x in row["ops_per_s_rounds"]),
                        _ms(row["cpu_ms_per_op"]),
                        str(row["timeouts"]),
                        _ms(row["ratio_to_curator"]),
                    ]
                )
    header = [
        f"recipe ({section['threads']} threads, {section['seconds']:g} s blocks)",
        "clients",
        "contender",
        "operations per second (median)",
        "each round",
        "client CPU ms per operation",
        "timeouts",
        f"/ {base}",
    ]
    return _table(header, rows)


def _contended(results: dict[str, Any]) -> list[str]:
    table = _contention_table(results["contended"], NAMES, "Curator's")
    return ["### Contended throughput, each side alone", "", *table]


#: The standalone section's sides, as its table names them.
STANDALONE = {
    "pycurator-connect": "pycurator, `connect()`'s client",
    "pycurator": "pycurator, a `KazooClient` (kazoo's handler)",
    "pycurator-fast": "pycurator, a `KazooClient` on the fast handler",
    "pycurator-kazoo-loop": "pycurator, `connect()`'s client on kazoo's connection loop",
    "curator-java": "Java Curator, a Java program",
}


def _standalone(results: dict[str, Any]) -> list[str]:
    section = results["standalone"]
    return [
        "### Contended throughput, each side a program of its own",
        "",
        f"Java Curator {section.get('curator', '?')} on Java {section.get('java', '?')}, with no"
        " Python in its process; pycurator with no JVM in its.",
        "",
        *_contention_table(section, STANDALONE, "the Java program's"),
    ]


#: Targets for ``connect()``'s client: the uncontended loopback cycle at most this times
#: Curator's in every repeat; the hand-off median and p99 at most this times Curator's; in the
#: standalone section, client CPU per operation at most this times the Java program's.
CYCLE_TARGET = 0.8
HANDOFF_TARGET = 1.0
CPU_TARGET = 1.0
MET, NOT_MET = "met", "**not met**"


def targets(results: dict[str, Any]) -> list[str]:
    """The issue's targets for ``connect()``'s client, each figure against its own."""
    rows: list[list[str]] = []
    standalone = results.get("standalone", {})
    targets = standalone.get("targets", {})
    for recipe, modes in standalone.get("table", {}).items():
        for mode, sides in modes.items():
            if "pycurator-connect" in sides and mode in targets:
                ours = sides["pycurator-connect"]
                ratio = ours["ratio_to_curator"]
                name = f"{RECIPES.get(recipe, recipe)}, {MODES.get(mode, mode)}"
                rows.append(
                    [
                        name,
                        f">= {targets[mode]:g}",
                        _ms(ratio),
                        MET if ratio >= targets[mode] else NOT_MET,
                    ]
                )
                java = sides.get("curator-java", {}).get("cpu_ms_per_op")
                if java and "cpu_ms_per_op" in ours:
                    cpu = ours["cpu_ms_per_op"] / java
                    rows.append(
                        [
                            f"{name}: client CPU per operation",
                            f"<= {CPU_TARGET:g}",
                            f"{_ms(cpu)} ({ours['cpu_ms_per_op']:.2f} ms / {java:.2f})",
                            MET if cpu <= CPU_TARGET else NOT_MET,
                        ]
                    )
    repeats = results.get("cycle", {}).get("loopback_repeats", [])
    if repeats and all("pycurator-connect" in r["ratio_to_curator"] for r in repeats):
        loopback = [r["ratio_to_curator"]["pycurator-connect"] for r in repeats]
        within = sum(r <= CYCLE_TARGET for r in loopback)
        rows.append(
            [
                "uncontended loopback cycle, every repeat",
                f"<= {CYCLE_TARGET:g} in {len(loopback)} of {len(loopback)}",
                f"{' / '.join(_ms(r) for r in loopback)} ({within} of {len(loopback)})",
                MET if within == len(loopback) else NOT_MET,
            ]
        )
    handoff = results.get("handoff", {}).get("ratio_to_curator", {}).get("pycurator-connect")
    if handoff:
        for stat, label in (("median_ms", "median"), ("p99_ms", "p99")):
            rows.append(
                [
                    f"hand-off {label}",
                    f"<= {HANDOFF_TARGET:g}",
                    _ms(handoff[stat]),
                    MET if handoff[stat] <= HANDOFF_TARGET else NOT_MET,
                ]
            )
    if not rows:
        return []
    header = ["`connect()`'s client", "target (x Curator's)", "measured", "verdict"]
    return ["### Targets", "", *_table(header, rows)]


def _soak(results: dict[str, Any]) -> list[str]:
    section = results["soak"]
    fields = [
        ("rss_kb", "RSS kB"),
        ("threads", "threads"),
        ("state_listeners", "kazoo state listeners"),
        ("data_watchers", "kazoo data watchers"),
        ("child_watchers", "kazoo child watchers"),
        ("server_watches", "server watches"),
        ("server_znodes", "server znodes"),
    ]
    rows = [
        [
            f"{row['at_s']:.0f}",
            *(_n(row[key]) for key, _ in fields),
        ]
        for row in section["samples"]
    ]
    header = ["at s", *(label for _, label in fields)]
    return [
        "### Soak",
        "",
        f"{section['seconds']:g} s: {section['operations']:,} operations,"
        f" {section['timeouts']:,} timed-out acquires.",
        "",
        *_table(header, rows),
    ]


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


def _counters(results: dict[str, Any]) -> list[str]:
    """The counters section: increments per second, and ``connect()``'s client against its
    targets."""
    section = results["counters"]
    rows = []
    for recipe, modes in section["table"].items():
        for mode, sides in modes.items():
            ours, target = sides.get("pycurator-connect"), section["targets"].get(mode)
            if ours is not None and target is not None:
                met = MET if ours["ratio_to_curator"] >= target else NOT_MET
                name = f"{RECIPES.get(recipe, recipe)}, {MODES.get(mode, mode)}"
                rows.append([name, f">= {target:g}", _ms(ours["ratio_to_curator"]), met])
    return [
        "### Contended increments, each side a program of its own",
        "",
        f"Java Curator {section.get('curator', '?')} on Java {section.get('java', '?')}; an"
        " operation is an increment that succeeded (one that did not is counted as a timeout).",
        "",
        *_contention_table(section, STANDALONE, "the Java program's"),
        "",
        *_table(["`connect()`'s client", "target / the Java program's", "measured", ""], rows),
    ]


def _discovery(results: dict[str, Any]) -> list[str]:
    found = results["discovery"]
    table = found["table"]
    times = table["pycurator-connect"]["times_curators"]
    lines = [
        "### Service discovery",
        "",
        f"Each side a program of its own ({found['curator']} on Java {found['java']}; "
        f"pycurator on `connect()`'s client), medians of {found['rounds']} rounds:",
        "",
    ]

    def cell(value: float | None, unit: str) -> str:
        return "-" if value is None else f"{value:,.2f} {unit}"

    def times_curators(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    rows = [
        ("query_for_instances, 1,000 instances", "query_ms", "ms", "query"),
        ("register, one after another", "register_per_s", "/s", "register"),
        ("unregister, one after another", "unregister_per_s", "/s", "unregister"),
        ("a cache's update latency", "cache_update_ms", "ms", "cache_update"),
        ("a create of the client (Curator's; `connect()`'s)", "client_create_us", "µs",
         "client_create_us"),
        ("a delete of the client", "client_delete_us", "µs", "client_delete_us"),
        ("a create of the floor (ZooKeeper's Java client; a bare socket, one CPython thread)",
         "floor_create_us", "µs", "floor_create_us"),
        ("a delete of the floor", "floor_delete_us", "µs", "floor_delete_us"),
    ]  # fmt: skip
    rows = [row for row in rows if table["curator-java"].get(row[1]) is not None]
    lines += _table(
        ["", NAMES["curator-java"], NAMES["pycurator-connect"], "x Curator's speed"],
        [
            [
                what,
                cell(table["curator-java"][key], unit),
                cell(table["pycurator-connect"][key], unit),
                times_curators(times.get(ratio)),
            ]
            for what, key, unit, ratio in rows
        ],
    )
    return lines


SECTIONS = {
    "cycle": _cycle,
    "drain": _drain,
    "handoff": _handoff,
    "herd": _herd,
    "throughput": _throughput,
    "contended": _contended,
    "standalone": _standalone,
    "leaks": _leaks,
    "counters": _counters,
    "discovery": _discovery,
    "soak": _soak,
    "cache": cache_table,
}
