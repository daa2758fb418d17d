"""A tiny run of every benchmark section, so that none can rot: the structure of the results
is asserted, and two counts, but no timing or ratio."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from bench import counters, discovery, loop_report, report, standalone, tables
from bench.__main__ import DEFAULT_SECTIONS, SECTIONS, main
from bench.chart import main as chart_main
from bench.contender import KINDS
from pycurator.testing.pytest_plugin import ZooKeeperTarget

TINY = [
    "--cycles", "3", "--warmup", "1", "--rounds", "1", "--latency-ms", "1",
    "--drain", "3", "--handoffs", "3", "--herd", "3", "--throughput-s", "1",
    "--throughput-threads", "2", "--cycle-repeats", "2", "--handoff-rounds", "1",
    "--contended-s", "0.5", "--contended-warmup", "0.2", "--contended-threads", "2",
    "--contended-rounds", "1", "--seconds", "2", "--soak-interval", "0.5",
    "--sections", ",".join(name for name in SECTIONS if name != "scale"),
]  # fmt: skip
#: Seconds within which a scale case's client is back after the server's restart (its retry
#: waits 1.4 s at most between attempts; the rest is room for two busy cores).
RECONNECT_BOUND_S = 10.0
#: The scale section's tiny run: a case of each kind (the lock cases differ by their recipe
#: only), through a short bounce.
SCALE_CASES = [
    "mutex-fast", "semaphore", "semaphore-mutex", "aio-mutex", "latch", "aio-latch", "selector",
    "aio-selector", "waiters", "aio-waiters", "thread-floor", "curator-mutex",
    "curator-semaphore", "curator-latch", "curator-selector", "curator-waiters",
]  # fmt: skip


def counts(row: dict[str, Any]) -> list[float]:
    """The row's numbers, after checking that every value is one (bools aside)."""
    values = [v for v in row.values() if not isinstance(v, (bool, list))]
    assert all(isinstance(v, (int, float)) for v in values), row
    return [float(v) for v in values]


#: The tests that run the benchmark itself (minutes on two cores): ``./dev bench-test`` runs
#: them (and CI), ``./dev test`` leaves them out.
BENCH_RUN = pytest.mark.bench_run
#: The first of them pays for the tiny run of every section (``results``: some 4 to 5 minutes
#: on two cores, more on a loaded machine), past the 300 s the suite allows a test.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def results(zk_server: ZooKeeperTarget, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("bench")
    page = out / "page.md"
    page.write_text(f"# Results\n{report.BEGIN}\nold tables\n{report.END}\nafter\n")
    argv = ["--hosts", zk_server.hosts, *TINY, "--page", str(page)]
    assert main([*argv, "--json", str(out / "b.json"), "--chart", str(out / "b.png")]) == 0
    assert (out / "b.png").read_bytes().startswith(b"\x89PNG")
    written = json.loads((out / "b.json").read_text())
    tables = page.read_text()
    assert "old tables" not in tables and tables.endswith(f"{report.END}\nafter\n")
    assert report.report(written) in tables
    return written


def test_the_published_tables_are_those_of_the_published_json() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    published = json.loads((docs / "benchmarks.json").read_text())
    page = (docs / "benchmarks.md").read_text()
    assert report.replace_region(page, report.report(published)) == page
    assert report.SCALE_BEGIN in page and report.SCALE_END in page
    assert report.publish(page, published) == page  # the scale region too, once published


def test_the_published_soak_table_is_that_of_the_published_soak_json() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "benchmarks.md").read_text()
    assert report.SOAK_BEGIN in page and report.SOAK_END in page
    if (docs / "soak.json").exists():
        soak = json.loads((docs / "soak.json").read_text())
        assert report.markers(soak) == (report.SOAK_BEGIN, report.SOAK_END)
        tables = report.report(soak)
        assert report.replace_region(page, tables, *report.markers(soak)) == page


def test_the_published_loop_table_is_that_of_the_published_loop_json() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "benchmarks.md").read_text()
    assert loop_report.LOOP_BEGIN in page and loop_report.LOOP_END in page
    loop = json.loads((docs / "loop-bench.json").read_text())
    assert loop_report.loop_run(loop)
    assert report.publish(page, loop) == page


def test_the_published_counters_tables_are_those_of_the_published_counters_json() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "benchmarks.md").read_text()
    assert counters.BEGIN in page and counters.END in page
    published = json.loads((docs / "counters-bench.json").read_text())
    assert set(published) & set(tables.SECTIONS) == {"counters"}
    assert report.publish(page, published) == page


def test_a_counters_run_alone_goes_to_its_own_region_and_its_targets_say_met() -> None:
    row = {"ops_per_s": 10.0, "ops_per_s_rounds": [10.0], "cpu_ms_per_op": 1.0, "timeouts": 0}
    sides = {
        "curator-java": {**row, "ratio_to_curator": 1.0},
        "pycurator-connect": {**row, "ratio_to_curator": 1.5},
    }
    results = {
        "counters": {
            "threads": 5,
            "seconds": 1.0,
            "targets": counters.TARGETS,
            "table": {recipe: {"shared": sides} for recipe in counters.RECIPES},
        }
    }
    page = f"{report.BEGIN}\nmain\n{report.END}\n{counters.BEGIN}\n{counters.END}\n"
    written = report.publish(page, results)
    assert "main" in written
    region = written.split(counters.BEGIN)[1]
    assert "### Contended increments" in region and region.count("| met |") == 2


def test_the_published_recipes_tables_are_those_of_the_published_recipes_json() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "benchmarks.md").read_text()
    assert discovery.BEGIN in page and discovery.END in page
    published = json.loads((docs / "recipes-bench.json").read_text())
    assert set(published) & set(tables.SECTIONS) == set(discovery.RECIPES)
    assert report.publish(page, published) == page


def test_a_cache_or_discovery_run_alone_keeps_the_other_and_goes_to_its_own_region(
    tmp_path: Path,
) -> None:
    side = {"query_ms": 2.0, "query_p90_ms": 3.0, "register_per_s": 100.0,
            "unregister_per_s": 100.0, "cache_update_ms": 1.0}  # fmt: skip
    times = {"query": 1.0, "register": 1.0, "unregister": 1.0, "cache_update": 1.0}
    python = {**side, "times_curators": times}
    found = {"table": {"curator-java": side, "pycurator-connect": python},
             "curator": "5.4.0", "java": "17", "rounds": 1}  # fmt: skip
    earlier = tmp_path / "recipes.json"
    earlier.write_text(json.dumps({"cache": {"n": 1, "writes": 1, "figures": {}, "ratios": {}}}))
    results = {"command": "python -m bench", "machine": {}, "discovery": found}
    merged = discovery.merge(earlier, results)
    assert set(merged) == {"cache", "discovery"} and merged["discovery"]["command"]
    page = f"{report.BEGIN}\nmain\n{report.END}\n{discovery.BEGIN}\nold\n{discovery.END}\n"
    written = report.publish(page, merged)
    assert "\nmain\n" in written and "\nold\n" not in written
    region = written.split(discovery.BEGIN)[1]
    assert "### Service discovery" in region and "### Cache" in region


def test_a_soak_alone_goes_to_its_own_json_and_region(
    zk_server: ZooKeeperTarget, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    regions = f"{report.BEGIN}\nmain\n{report.END}\n{report.SOAK_BEGIN}\n{report.SOAK_END}\n"
    page.write_text(regions)
    argv = ["--hosts", zk_server.hosts, "--sections", "soak", "--seconds", "1"]
    assert main([*argv, "--json", str(tmp_path / "s.json"), "--page", str(page)]) == 0
    soak = json.loads((tmp_path / "s.json").read_text())
    assert set(soak) == {"command", "machine", "soak"}
    written = page.read_text()
    assert "main" in written and "### Soak" in written.split(report.SOAK_BEGIN)[1]


@BENCH_RUN
def test_a_tiny_run_reports_every_section_and_the_machine(results: Any) -> None:
    assert set(SECTIONS) - {"scale"} <= set(results)
    assert set(DEFAULT_SECTIONS) == set(SECTIONS) - {"soak", "scale"}
    assert results["machine"]["zookeeper"].startswith("Zookeeper version: 3.8")


@BENCH_RUN
def test_cycles_cover_every_contender_and_count_the_acquire_in_round_trips(results: Any) -> None:
    section = results["cycle"]
    assert set(section["loopback"]["table"]) == set(KINDS)
    assert {"pycurator-fast", "pycurator-silent", "pycurator-metrics"} <= set(KINDS)
    assert len(section["loopback_repeats"]) == 2
    for repeat in section["loopback_repeats"]:
        assert set(repeat["ratio_to_curator"]) == set(repeat["cpu_ms_per_cycle"]) == set(KINDS)
    reporting = section["reporting"]  # each against the same client with reporting no-ops
    assert reporting["silent"] == "pycurator-silent"
    assert set(reporting["cost"]) == {"pycurator-fast", "pycurator-metrics"}
    for row in reporting["cost"].values():
        counts(row)  # differences: a tiny run may make any of them negative
        assert row["silent_median_ms"] > 0
        assert len(row["repeat_us"]) == len(row["repeat_percent"]) == 2
        assert len(row["round_us"]) == 2  # a round in each repeat
    assert "What reporting costs on loopback" in report.report(results)
    (delayed,) = section["latency"]
    assert delayed["added_ms_each_way"] == 1
    assert set(delayed["table"]) == {"pycurator", "curator"}
    for row in delayed["table"].values():
        # the net figure is a difference of two medians: a tiny run on a loaded machine may
        # make it negative, so only its type is checked
        measured = {k: v for k, v in row.items() if k != "acquire_net_round_trips"}
        assert min(counts(measured)) >= 0
        assert row["acquire_round_trips"] > 0
        assert isinstance(row["acquire_net_round_trips"], float)


@BENCH_RUN
def test_drain_hand_offs_are_counted_by_the_server_for_both_languages(results: Any) -> None:
    for language, variant in itertools.product(("pycurator", "curator"), ("rows", "shared_rows")):
        (row,) = results["drain"][variant][language]
        assert row["waiters"] == 3
        assert row["waiters_watching_at_start"] == 3
        assert min(counts(row)) >= 0
        assert row["requests_per_hand_off"] > 0


@BENCH_RUN
def test_hand_offs_are_timed_for_every_pair_and_as_ratios_on_both_handlers(results: Any) -> None:
    table = results["handoff"]["table"]
    assert set(table) == {
        "pycurator->pycurator",
        "pycurator-fast->pycurator-fast",
        "pycurator-connect->pycurator-connect",
        "pycurator->curator",
        "pycurator-fast->curator",
        "curator->pycurator",
        "curator->pycurator-fast",
        "curator->curator",
    }
    assert all(min(counts(row)) >= 0 for row in table.values())
    assert all(len(row["round_medians_ms"]) == 1 for row in table.values())
    ratios = results["handoff"]["ratio_to_curator"]
    assert set(ratios) == {"pycurator", "pycurator-fast", "pycurator-connect"}
    assert all(min(counts(row)) > 0 for row in ratios.values())


@BENCH_RUN
def test_contended_throughput_covers_each_recipe_mode_and_side(results: Any) -> None:
    table = results["contended"]["table"]
    assert set(table) == {"rwlock", "semaphore", "mutex"}
    for modes in table.values():
        assert set(modes) == {"shared", "per-thread", "processes"}
        assert set(modes["shared"]) == {"pycurator", "pycurator-fast", "curator"}
        assert set(modes["processes"]) == {"pycurator", "pycurator-fast"}
        for sides in modes.values():
            for row in sides.values():
                assert row["ops_per_s"] > 0 and row["timeouts"] == 0
                assert row["ratio_to_curator"] > 0 and len(row["ops_per_s_rounds"]) == 1
    assert 0 < table["rwlock"]["shared"]["pycurator"]["read_share"] < 1


@BENCH_RUN
def test_standalone_programs_cover_each_recipe_mode_and_side_against_the_java_program(
    results: Any,
) -> None:
    section = results["standalone"]
    assert section["curator"].startswith("5.")  # the Java program's own Curator
    assert section["targets"] == {"shared": 1.0, "per-thread": 1.0}
    table = section["table"]
    contended = ["rwlock", "semaphore", "mutex"]  # then the rest, on the section's own worker
    assert list(table) == [*contended, "semaphore-mutex", "multilock", "latch", "leader"]
    for modes in table.values():
        assert set(modes) == {"shared", "per-thread"}
        for sides in modes.values():
            assert set(sides) == {
                "curator-java",
                "pycurator-connect",
                "pycurator",
                "pycurator-fast",
                "pycurator-kazoo-loop",
            }
            assert sides["curator-java"]["ratio_to_curator"] == 1.0
            for row in sides.values():
                assert row["ops_per_s"] > 0 and row["timeouts"] == 0
                assert row["cpu_ms_per_op"] > 0 and len(row["ops_per_s_rounds"]) == 1
    assert 0 < table["rwlock"]["shared"]["curator-java"]["read_share"] < 1
    page = report.report(results)
    assert "### Contended throughput, each side a program of its own" in page
    assert page.startswith("### Targets")
    standalone_part = page.split("### Contended throughput, each side a program of its own")[1]
    for title in tables.RECIPES.values():  # every recipe named, in the targets too
        assert f"| {title}" in standalone_part and f"| {title}, a client per thread |" in page


@BENCH_RUN
def test_the_counters_section_covers_each_way_mode_and_side_against_the_java_program(
    results: Any,
) -> None:
    section = results["counters"]
    assert section["curator"].startswith("5.") and section["targets"] == counters.TARGETS
    assert list(section["table"]) == list(counters.RECIPES)
    for modes in section["table"].values():
        assert set(modes) == {"shared", "per-thread"}
        for sides in modes.values():
            assert set(sides) == set(counters.SIDES)
            assert sides["curator-java"]["ratio_to_curator"] == 1.0
            for row in sides.values():
                assert row["ops_per_s"] > 0 and len(row["ops_per_s_rounds"]) == 1
    assert "### Contended increments, each side a program of its own" in report.report(results)


def test_the_targets_table_says_which_figures_meet_their_targets() -> None:
    def sides(connect: float, cpu_ms: float) -> dict[str, Any]:
        return {
            "pycurator-connect": {"ratio_to_curator": connect, "cpu_ms_per_op": cpu_ms},
            "curator-java": {"ratio_to_curator": 1.0, "cpu_ms_per_op": 0.5},
        }

    results = {
        "standalone": {
            "targets": standalone.TARGETS,
            "table": {"mutex": {"shared": sides(1.01, 0.5), "per-thread": sides(0.99, 0.51)}},
        },
        "cycle": {
            "loopback_repeats": [
                {"ratio_to_curator": {"pycurator-connect": ratio}} for ratio in (0.7, 0.8, 0.9)
            ]
        },
        "handoff": {"ratio_to_curator": {"pycurator-connect": {"median_ms": 1.0, "p99_ms": 1.2}}},
    }
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[-1].rstrip(" |")
        for line in tables.targets(results)[4:]
    }
    assert standalone.TARGETS == {"shared": 1.0, "per-thread": 1.0}
    assert rows == {
        "InterProcessMutex, one client shared by the threads": "met",
        "InterProcessMutex, one client shared by the threads: client CPU per operation": "met",
        "InterProcessMutex, a client per thread": "**not met**",
        "InterProcessMutex, a client per thread: client CPU per operation": "**not met**",
        "uncontended loopback cycle, every repeat": "**not met**",  # 2 of 3
        "hand-off median": "met",
        "hand-off p99": "**not met**",
    }
    assert tables.targets({"cycle": {"loopback_repeats": []}}) == []


@BENCH_RUN
def test_the_soak_samples_and_leaves_kazoo_s_registries_empty_once_stopped(results: Any) -> None:
    soak = results["soak"]
    assert len(soak["samples"]) >= 3
    assert soak["operations"] > 0 and soak["timeouts"] > 0
    for row in soak["samples"]:
        assert row["rss_kb"] > 0 and row["threads"] > 0
    after = soak["after_stop"]
    assert after["state_listeners"] == after["data_watchers"] == after["child_watchers"] == 0


@BENCH_RUN
def test_each_waiting_pycurator_contender_holds_exactly_one_watch(results: Any) -> None:
    table = results["herd"]["table"]
    assert table["pycurator"]["watches_per_waiter"] == 1
    assert table["pycurator"]["max_waiters_woken_by_a_release"] == 1
    assert min(counts(table["curator"])) >= 0


@BENCH_RUN
def test_throughput_is_counted_by_language_for_both_recipes_and_handlers(results: Any) -> None:
    for section in (results["throughput"], results["throughput"]["fast"]):
        for recipe in ("semaphore", "rwlock"):
            by_language = section[recipe]["by_language"]
            assert set(by_language) == {"python", "java"}
            assert all(min(counts(row)) >= 0 for row in by_language.values())
    assert "fast handler" in report.report(results)


@BENCH_RUN
def test_a_timed_out_pycurator_acquire_leaves_no_watch_and_the_others_are_counted(
    results: Any,
) -> None:
    table = results["leaks"]["table"]
    assert set(table) == {"pycurator", "curator", "kazoo-lock"}
    assert all(row["timed_out"] for row in table.values())
    assert table["pycurator"]["watches_left"] == 0
    assert all(row["watches_left"] >= 0 for row in table.values())


@BENCH_RUN
def test_the_chart_is_drawn_from_the_json_alone(results: Any, tmp_path: Path) -> None:
    source = tmp_path / "partial.json"
    source.write_text(json.dumps({"machine": results["machine"], "herd": results["herd"]}))
    assert chart_main([str(source)]) == 0
    assert (tmp_path / "partial.png").read_bytes().startswith(b"\x89PNG")


@BENCH_RUN
def test_a_scale_run_alone_bounces_every_case_and_replaces_only_its_part_and_region(
    zk_server: ZooKeeperTarget, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f"{report.BEGIN}\nmain\n{report.END}\n{report.SCALE_BEGIN}\nstale\n{report.SCALE_END}\n"
    )
    target = tmp_path / "b.json"
    target.write_text(json.dumps({"command": "earlier", "leaks": {"table": {}}}))
    argv = ["--hosts", zk_server.hosts, "--sections", "scale", "--scale-n", "20"]
    argv += ["--scale-cases", ",".join(SCALE_CASES), "--scale-down-s", "0.5"]
    assert main([*argv, "--json", str(target), "--page", str(page)]) == 0
    results = json.loads(target.read_text())
    assert results["command"] == "earlier" and results["leaks"] == {"table": {}}
    section = results["scale"]
    assert section["command"].startswith("python -m bench") and section["machine"]["cpus"]
    (run,) = section["runs"]
    assert run["n"] == run["waiters"] == 20
    rows = {row["case"]: row for row in run["rows"]}
    assert list(rows) == SCALE_CASES
    for case, row in rows.items():
        assert "error" not in row, row
        assert row["baseline"]["threads"] > 0 and row["steady"]["rss_kb"] > 0, case
        assert row["after_release"]["ephemerals"] == row["after_release"]["watches"] == 0, case
        assert row["items"] == 21 if case.endswith("waiters") else 20
        if case == "thread-floor":
            assert "bounce" not in row
            continue
        bounce = row["bounce"]
        assert bounce["peak_threads"] >= row["baseline"]["threads"], case
        if case.startswith("curator") or bounce["handshake_timeouts"] == 0:
            if not case.startswith("curator"):
                # the case's client reconnects within a second or so of the server's return
                # (its connection retry is connect()'s), long before its 30 s session could
                # end; then every item is back in that session
                reconnect = bounce["reconnect_after_restart_s"]
                assert reconnect is not None and reconnect < RECONNECT_BOUND_S, (case, bounce)
            assert bounce["all_back"] and bounce["held"] == row["items"], (case, bounce)
            assert bounce["lost"] == 0, (case, bounce)
        else:
            # the client met the server still loading its database, which neither answers nor
            # closes a connection then (docs/operations.md, "Reconnecting"): it waited out its
            # 30 s handshake, as ZooKeeper's Java client would, and its session may have ended
            # meanwhile. Then each item is back or reported lost
            assert bounce["reconnect_after_restart_s"] is not None, (case, bounce)
            assert bounce["held"] + bounce["lost"] == row["items"], (case, bounce)
        assert bounce["wrong"] == 0, (case, bounce)  # never said held while it is not ours
    assert all("heap_kb_per_item" in rows[case] for case in SCALE_CASES if "curator" in case)
    checked = " ".join(target["target"] for target in run["targets"])
    for words in ("bounce, 20 held locks", "20 latches", "per held lock", "asyncio waiter"):
        assert words in checked
    written = page.read_text()
    assert "stale" not in written and "### Scale" in written.split(report.SCALE_BEGIN)[1]
    assert "### Watches left" in written.split(report.SCALE_BEGIN)[0]


def test_an_unknown_scale_case_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--sections", "scale", "--scale-cases", "mutex,bogus"])
    assert exit_.value.code == 2


def test_an_unknown_section_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--sections", "cycle,bogus"])
    assert exit_.value.code == 2


def test_the_standalone_section_refuses_a_side_or_recipe_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="unknown standalone sides or recipes: nobody, queue"):
        standalone.run("127.0.0.1:1", 1.0, 1, 1, 0.0, ("nobody",), ("queue",))


def test_a_standalone_run_on_both_loops_goes_to_the_loop_region_alone() -> None:
    def row(rate: float, rounds: list[float]) -> dict[str, Any]:
        return {"ops_per_s": rate, "ops_per_s_rounds": rounds, "cpu_ms_per_op": 0.5,
                "ratio_to_curator": rate / 100.0}  # fmt: skip

    sides = {
        "curator-java": row(100.0, [100.0, 50.0]),
        "pycurator-connect": row(120.0, [120.0, 100.0]),
        loop_report.KAZOO_LOOP: row(80.0, [80.0, 20.0]),
    }
    results = {
        "standalone": {
            "threads": 5,
            "seconds": 3.0,
            "rounds": 2,
            "table": {"mutex": {"shared": sides}},
        }
    }
    loop_region = f"{loop_report.LOOP_BEGIN}\nold\n{loop_report.LOOP_END}\n"
    page = f"{report.BEGIN}\nmain\n{report.END}\n{loop_region}"
    published = report.publish(page, results)
    assert "\nmain\n" in published and "\nold\n" not in published
    (line,) = [line for line in published.splitlines() if line.startswith("| InterProcessMutex")]
    # each round's ratio: 1.20 and 2.00 on pycurator's loop, 0.80 and 0.40 on kazoo's
    assert "| 1.20 (1.20-2.00) |" in line and "| 0.80 (0.40-0.80) |" in line


def test_a_loop_run_with_the_hand_off_puts_its_table_and_the_targets_in_the_loop_region() -> None:
    def row(rate: float) -> dict[str, Any]:
        return {"ops_per_s": rate, "ops_per_s_rounds": [rate], "cpu_ms_per_op": 0.5,
                "ratio_to_curator": rate / 100.0}  # fmt: skip

    sides = {"curator-java": row(100.0), "pycurator-connect": row(120.0)}
    sides[loop_report.KAZOO_LOOP] = row(80.0)
    results = {
        "standalone": {
            "threads": 5,
            "seconds": 3.0,
            "rounds": 1,
            "targets": standalone.TARGETS,
            "table": {"mutex": {"shared": sides}},
        },
        "handoff": {
            "hand_offs": 10,
            "table": {"curator->curator": {"median_ms": 2.0, "p99_ms": 4.0}},
            "ratio_to_curator": {"pycurator-connect": {"median_ms": 0.5, "p99_ms": 1.5}},
        },
    }
    assert loop_report.loop_run(results)
    assert not loop_report.loop_run({"handoff": results["handoff"]})  # no standalone run
    page = f"{report.BEGIN}\nmain\n{report.END}\n{loop_report.LOOP_BEGIN}\n{loop_report.LOOP_END}"
    region = report.publish(page, results).split(loop_report.LOOP_BEGIN)[1]
    assert region.index("### Targets") < region.index("| InterProcessMutex")
    assert "| hand-off p99 | <= 1 | 1.50 | **not met** |" in region
    assert "### Hand-off latency" in region
