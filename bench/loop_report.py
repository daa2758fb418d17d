"""The loop region of the benchmarks page: a standalone run of ``connect()``'s client on
pycurator's connection loop and on kazoo's (``pycurator-kazoo-loop``), against the Java program,
with the uncontended cycle and the hand-off when they ran with it, and the targets table
(:func:`bench.report.publish` writes it)."""

from __future__ import annotations

from typing import Any

from .tables import MODES, RECIPES, SECTIONS, _cycle, _handoff, _table, targets

#: The region of a standalone run with connect()'s client on both loops (pycurator's and kazoo's).
LOOP_BEGIN = "<!-- bench-loop: begin (python -m bench.report --write) -->"
LOOP_END = "<!-- bench-loop: end -->"
#: The standalone side that is connect()'s client on kazoo's connection loop.
KAZOO_LOOP = "pycurator-kazoo-loop"
#: The sections a loop run may hold besides ``standalone``.
WITH_LOOP = ("cycle", "handoff")


def loop_region(results: dict[str, Any]) -> str:
    """The loop region's Markdown for a loop run (:func:`loop_run`): the targets table, the
    standalone table (:func:`loop_tables`), then the cycle's and the hand-off's, if run."""
    parts = [targets(results), loop_tables(results["standalone"])]
    drawers = {"cycle": _cycle, "handoff": _handoff}
    parts += [drawers[name](results) for name in WITH_LOOP if name in results]
    return "\n\n".join("\n".join(part) for part in parts if part) + "\n"


def loop_tables(section: dict[str, Any]) -> list[str]:
    """A standalone run's ``connect()`` client on pycurator's loop and on kazoo's, against the
    Java program: rates and their ratios (the medians', and the range of each round's, a
    round's blocks running one after the other), and client CPU per operation."""
    rows = []
    for recipe, modes in section["table"].items():
        for mode, sides in modes.items():
            java = sides["curator-java"]
            cells = [RECIPES.get(recipe, recipe), MODES.get(mode, mode), f"{java['ops_per_s']:.0f}"]
            for side in ("pycurator-connect", KAZOO_LOOP):
                row = sides[side]
                pairs = zip(row["ops_per_s_rounds"], java["ops_per_s_rounds"], strict=True)
                rounds = [mine / theirs for mine, theirs in pairs if theirs]
                spread = f"{min(rounds):.2f}-{max(rounds):.2f}" if rounds else "-"
                cells += [
                    f"{row['ops_per_s']:.0f}",
                    f"{row['ratio_to_curator']:.2f} ({spread})",
                    f"{row['cpu_ms_per_op']:.2f}",
                ]
            cells.append(f"{java['cpu_ms_per_op']:.2f}")
            rows.append(cells)
    header = [
        f"recipe ({section['threads']} threads, {section['seconds']:g} s blocks, "
        f"{section['rounds']} rounds)",
        "clients",
        "Java program, ops/s",
        "pycurator's loop, ops/s",
        "/ Java's (each round)",
        "CPU ms/op",
        "kazoo's loop, ops/s",
        "/ Java's (each round)",
        "CPU ms/op",
        "Java's CPU ms/op",
    ]
    return _table(header, rows)


def loop_run(results: dict[str, Any]) -> bool:
    """Whether ``results`` is a standalone run with connect()'s client on both loops, alone or
    with the sections of :data:`WITH_LOOP`."""
    sections = set(results) & set(SECTIONS)
    if "standalone" not in sections or not sections <= {"standalone", *WITH_LOOP}:
        return False
    table = results["standalone"]["table"]
    return all(KAZOO_LOOP in sides for modes in table.values() for sides in modes.values())
