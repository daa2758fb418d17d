"""The cache section of the benchmark, on data: its trees' shapes, its ratios (Curator's time
over pycurator's, pycurator's bytes over Curator's) and its table."""

from __future__ import annotations

from bench import cache
from bench.tables import SECTIONS


def test_the_trees_hold_ten_thousand_leaves_flat_and_three_levels_deep() -> None:
    flat = cache.tree_paths("/r", "flat", 10_000)
    deep = cache.tree_paths("/r", "deep", 10_000)
    assert len(flat) == 10_000 and {path.count("/") for path in flat} == {2}
    leaves = [path for path in deep if path.count("/") == 4]
    assert len(leaves) == 10_000 and len(deep) == 10_000 + 110
    assert deep.index("/r/a0/b0") < deep.index("/r/a0/b0/c0000")


def figures(load: float, latency: float, size: float) -> dict[str, float]:
    return {"load_s": load, "latency_median_ms": latency, "latency_p99_ms": 2 * latency,
            "bytes_per_node": size, "size": 10_001}  # fmt: skip


def test_the_ratios_and_the_table_say_who_is_faster_and_how_much_each_holds() -> None:
    found = {"flat": {cache.JAVA: figures(2.0, 0.5, 360.0), "pycurator": figures(1.0, 1.0, 720.0)}}
    ratios = cache.ratios(found)
    assert ratios == {"flat": {"pycurator": {"load": 2.0, "latency": 0.5, "memory": 2.0}}}
    table = SECTIONS["cache"]({"cache": {"n": 10_000, "writes": 200, "figures": found,
                                         "ratios": ratios}})  # fmt: skip
    rows = [line for line in table if line.startswith("| flat")]
    assert rows[0].split("|")[2:5] == [" Java Curator, a Java program ", " 2.00 ", " - "]
    assert rows[1].split("|")[2:5] == [
        " pycurator, a `KazooClient` (kazoo's handler) ",
        " 1.00 ",
        " 2.00 ",
    ]
    assert rows[1].rstrip("|").split("|")[-2:] == [" 720 ", " 2.00 "]
