"""The benchmark's result tables in Markdown, made from its JSON alone.

``python -m bench.report docs/benchmarks.json`` prints them; ``--write docs/benchmarks.md``
replaces what stands between the page's two ``bench-report`` markers (and the scale section's
tables between the two ``bench-scale`` ones), so the page cannot drift from the JSON (a test
checks that it has not).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import counters, discovery
from .loop_report import LOOP_BEGIN, LOOP_END, loop_region, loop_run
from .scale import tables as scale_tables
from .tables import SECTIONS, targets

BEGIN = "<!-- bench-report: begin (python -m bench.report --write) -->"
END = "<!-- bench-report: end -->"
#: The soak's own region, filled from ``docs/soak.json`` (``--sections soak`` alone).
SOAK_BEGIN = "<!-- bench-soak: begin (python -m bench.report docs/soak.json --write) -->"
SOAK_END = "<!-- bench-soak: end -->"
#: The scale section's region (``--sections scale``), filled from its part of the JSON.
SCALE_BEGIN = "<!-- bench-scale: begin (python -m bench.report --write) -->"
SCALE_END = "<!-- bench-scale: end -->"


def report(results: dict[str, Any]) -> str:
    """The tables of every section the results have, in Markdown, and the targets table when
    the results have a figure for ``connect()``'s client."""
    parts = ["\n".join(draw(results)) for name, draw in SECTIONS.items() if name in results]
    table = targets(results)
    if table:
        parts.insert(0, "\n".join(table))
    return "\n\n".join(parts) + "\n"


def replace_region(page: str, tables: str, begin: str = BEGIN, end: str = END) -> str:
    """``page`` with what stands between the markers replaced by ``tables``."""
    start, stop = page.index(begin) + len(begin), page.index(end)
    return page[:start] + "\n\n" + tables + "\n" + page[stop:]


def markers(results: dict[str, Any]) -> tuple[str, str]:
    """The region a result file's tables go to: the soak's when it holds the soak alone."""
    sections = set(results) & set(SECTIONS)
    return (SOAK_BEGIN, SOAK_END) if sections == {"soak"} else (BEGIN, END)


def scale_report(results: dict[str, Any]) -> str:
    """The scale section's tables, in Markdown."""
    return "\n".join(scale_tables(results["scale"])) + "\n"


def publish(page: str, results: dict[str, Any]) -> str:
    """``page`` with each region ``results`` has tables for replaced, where it has the markers:
    the main one (or the soak's), and the scale section's; a standalone run alone with
    connect()'s client on both loops (with the cycle and the hand-off, if run) goes to the
    loop's region only, the counters section alone to its own, and the cache and discovery
    sections alone (either or both) to theirs."""
    if loop_run(results) and LOOP_BEGIN in page and LOOP_END in page:
        return replace_region(page, loop_region(results), LOOP_BEGIN, LOOP_END)
    sections = set(results) & set(SECTIONS)
    if sections == {"counters"}:
        if counters.BEGIN in page and counters.END in page:
            page = replace_region(page, report(results), counters.BEGIN, counters.END)
        return page
    if sections and sections <= set(discovery.RECIPES):
        if discovery.BEGIN in page and discovery.END in page:
            page = replace_region(page, report(results), discovery.BEGIN, discovery.END)
        return page
    begin, end = markers(results)
    if sections and begin in page and end in page:
        page = replace_region(page, report(results), begin, end)
    if "scale" in results and SCALE_BEGIN in page and SCALE_END in page:
        page = replace_region(page, scale_report(results), SCALE_BEGIN, SCALE_END)
    return page


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("json", type=Path)
    parser.add_argument("--write", type=Path, help="a page with the two markers to update")
    args = parser.parse_args(argv)
    results = json.loads(args.json.read_text())
    if args.write is None:
        sys.stdout.write(report(results))
        if "scale" in results:
            sys.stdout.write("\n" + scale_report(results))
    else:
        args.write.write_text(publish(args.write.read_text(), results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
