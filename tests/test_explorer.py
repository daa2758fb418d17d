"""The fault explorer (:mod:`tests.explorer`): the public recipes of both front ends, on kazoo
clients whose connections and clock are simulated, under single faults at the boundaries of
several layouts and under random schedules of several faults; every invariant on what users are
told holds after every turn. Each planted defect is caught. Longer runs:
``python -m tests.explorer --seconds N``."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycurator import InterProcessMutex, LockEventKind
from pycurator._client.transport import transport_of

from .explorer.connection import sim_client
from .explorer.explore import (
    FAULTS,
    LAYOUTS,
    REGRESSIONS,
    SUITE_PER_LAYOUT,
    SUITE_RANDOM,
    Outcome,
    Schedule,
    parse,
    randomly,
    run,
    systematic,
)
from .explorer.planted import DEFECTS, Defect, Stale, explore_all, planted_copy
from .explorer.protocols import PROTOCOLS
from .explorer.server import Server
from .explorer.sim import Hub
from .explorer.world import INVARIANTS, World, exploring, running

EXPLORER = Path(__file__).resolve().parent / "explorer"


@pytest.fixture(autouse=True)
def explored() -> Iterator[None]:
    with exploring():
        yield


def broken(outcomes: Iterator[Outcome]) -> list[str]:
    """Each schedule that broke an invariant, with the line that replays it."""
    return [
        f"{outcome.schedule}: {'; '.join(outcome.violations)}"
        for outcome in outcomes
        if outcome.violations
    ]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_single_faults_at_the_boundaries_of_each_layout_break_no_invariant(protocol: str) -> None:
    outcomes = list(systematic([protocol], per_layout=SUITE_PER_LAYOUT))
    clean = [outcome for outcome in outcomes if not outcome.schedule.faults]
    assert len(clean) == len(LAYOUTS)
    assert all(outcome.boundaries > 40 for outcome in clean)  # each ran: holds, releases
    assert len(outcomes) == len(LAYOUTS) * (1 + SUITE_PER_LAYOUT)
    assert {fault.kind for o in outcomes for fault in o.schedule.faults} == set(FAULTS)
    assert broken(iter(outcomes)) == []


def test_random_schedules_of_several_faults_break_no_invariant() -> None:
    seeds = iter(range(1, SUITE_RANDOM + 1))
    outcomes = list(randomly(seeds, sorted(PROTOCOLS), math.inf))
    assert len(outcomes) == SUITE_RANDOM
    assert broken(iter(outcomes)) == []


def test_a_schedule_replays_the_same_turn_for_turn(capsys: pytest.CaptureFixture[str]) -> None:
    line = "semaphore seed=7 contenders=0t:std:1:0.2/1a:ses:-:1/0t:std:0.3:0.2 faults=40:drop"
    first = run(parse(line), trace=True)
    turns = capsys.readouterr().out
    again = run(parse(line), trace=True)
    assert (first.boundaries, first.violations, first.applied) == (
        again.boundaries,
        again.violations,
        again.applied,
    )
    assert capsys.readouterr().out == turns
    assert str(parse(line)) == line


def test_every_kind_of_turn_is_a_boundary(capsys: pytest.CaptureFixture[str]) -> None:
    """Answers reaching the server and read by the client, timers, callbacks run by kazoo's
    workers and the library's, the event loop's passes and the participants' own turns: a
    fault may land on each."""
    run(Schedule("latch", 1, LAYOUTS["pair"]), trace=True)
    turns = capsys.readouterr().out
    for what in ("arrives", "connection", "timeout", "completion", "watch", "loop", "latch0"):
        assert f" {what}" in turns or f":{what}" in turns, what


def test_the_explorer_drives_the_public_recipes_and_patches_nothing_of_the_library() -> None:
    """The explorer imports the library's public modules, and its clock alone of the rest
    (where it injects simulated time); it assigns no attribute of anything it imports from it."""
    allowed = {
        "pycurator",
        "pycurator.aio",
        "pycurator.discovery",
        "pycurator.menagerie",
        "pycurator.zklocker",
        "pycurator.zkrecipes",
        "pycurator._protocol",  # for its clock
    }
    for path in sorted(EXPLORER.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        library: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pycurator"):
                assert node.module in allowed, f"{path.name} imports {node.module}"
                if node.module == "pycurator._protocol":
                    assert [a.name for a in node.names] == ["clock"], path.name
                library.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("pycurator"):
                        assert alias.name in allowed, f"{path.name} imports {alias.name}"
                        library.add((alias.asname or alias.name).split(".")[0])
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute):
                    root = ast.unparse(target).split(".")[0]
                    assert root not in library, f"{path.name}: {ast.unparse(node)}"
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr":
                root = ast.unparse(node.args[0]).split(".")[0]
                assert root not in library, f"{path.name}: {ast.unparse(node)}"


def test_a_listener_that_comes_while_suspended_hears_the_session_end_at_its_timeout() -> None:
    """The runtime counts a session timeout spent suspended even when nothing listened to the
    client as the suspension began (a hold made as its connection dropped, a delete owed
    then): the explorer found it did not, and a ``session``-policy holder then believed it
    held past the session's end, until the client came back."""
    world = World(1, 1)
    heard: list[tuple[float, str]] = []
    with running(world):
        link = world.links[0]
        link.open()

        def listen() -> None:
            world.hub.block(world.now + 0.1)
            link.cut(10.0)
            world.hub.block(world.now + 0.5)  # suspended, and nobody listens to the client
            transport_of(link.client).listen(lambda state: heard.append((world.now, state)))

        world.hub.spawn(listen, "listener", 0)
        world.hub.run(20.0, stop=lambda: bool(heard))
        world.close()
    listened = 0.1 + 0.5
    assert [state for _, state in heard] == ["LOST"]
    assert heard[0][0] == pytest.approx(listened + link.session_timeout, abs=0.01)


@pytest.mark.parametrize("line", REGRESSIONS)
def test_schedules_that_once_broke_an_invariant_break_none(line: str) -> None:
    """Among them, leaders whose steps rode a request through a suspension (see
    :data:`~tests.explorer.explore.REGRESSIONS`): each is told of the suspension at once, and
    its ``not_leader()`` and ``on_lost`` follow."""
    assert run(parse(line)).violations == []


def test_each_invariant_has_a_planted_defect_and_each_defect_names_one() -> None:
    assert {defect.invariant for defect in DEFECTS} == set(INVARIANTS)
    assert all(
        not defect.protocols or set(defect.protocols) <= set(PROTOCOLS) for defect in DEFECTS
    )


def test_a_defect_whose_text_moved_is_refused_loudly(tmp_path: Path) -> None:
    moved = Defect("gone", "exclusion", "_protocol/drivers.py", "no such text", "x")
    with pytest.raises(Stale, match="no such text"):
        planted_copy(moved, tmp_path)


def test_every_planted_defect_is_caught_by_the_suites_schedules() -> None:
    """Each defect, planted in a copy of the package, breaks an invariant in one of the
    schedules this suite runs, explored in a process of its own on the copy."""
    missed = []
    for found in explore_all(jobs=2):
        defect = found.defect
        if not found.caught:
            missed.append(f"{defect.name}: {found.caught} of {found.ran}: {found.broke[:1]}")
    assert missed == []


def test_the_lock_listener_hears_each_hold_of_the_explorer() -> None:
    world = World(3, 1)
    with running(world):
        link = world.links[0]
        link.open()
        world.hub.spawn(
            lambda: InterProcessMutex(link.client, "/locks/heard").acquire(timeout=1), "holder", 0
        )
        world.hub.run(5.0)
        world.close()
    kinds = [kind for story in world.told.values() for kind, _, _ in story]
    assert kinds == [LockEventKind.ACQUIRED]


def test_a_new_client_of_the_explorer_is_a_kazoo_client_on_the_hub() -> None:
    hub = Hub(__import__("random").Random(1))
    link = sim_client(hub, Server(hub), 0, 3.0)
    assert type(link.client).__name__ == "KazooClient"
    assert link.client.handler.hub is hub
