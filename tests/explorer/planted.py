"""Planted defects: each a small change to the library's text (a file, its exact old text, the
new text), made in a copy of the package, and the explorer run on that copy in a process of its
own, over the schedules the test suite runs, until one breaks an invariant. A defect whose old
text is no longer found fails loudly (the library moved: plant it again where the code now is);
one no schedule catches fails the run. Nothing of the library is patched in the process that
reports: the copy is what the explorer imports.

``python -m tests.explorer --planted`` (``./dev explore --planted``) plants each and says which
schedule caught it; with ``--count`` it runs every schedule for each and counts those that broke
an invariant (the table in ``docs/reliability.md``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclasses.dataclass(frozen=True)
class Defect:
    """A defect planted in ``path`` (under ``pycurator/``): ``old`` replaced by ``new``, which
    must break ``invariant`` (:data:`~tests.explorer.world.INVARIANTS`). ``protocols``: the
    protocols that exercise the code it changes (all when empty)."""

    name: str
    invariant: str
    path: str
    old: str
    new: str
    protocols: tuple[str, ...] = ()


#: The defects, at least one per invariant (the first four are those of issue 48's table).
DEFECTS = (
    Defect(
        "the driver always says holds (two holders)",
        "exclusion",
        "_protocol/drivers.py",
        "        index = _index_of(children, ours)\n        if index < self.max_leases:",
        "        index = _index_of(children, ours)\n        if True:",
        ("mutex", "semaphore-mutex", "selector"),
    ),
    Defect(
        "no delete on timeout (a node left in a live session)",
        "clean-end",
        "_recipes/lock_engine.py",
        "                if not held:\n                    yield from self.delete_steps(node.path)",
        "                if False:\n                    yield from self.delete_steps(node.path)",
        ("mutex", "read-write", "zk-write-lock", "menagerie-lock"),
    ),
    Defect(
        "the hold monitor never hears its node deleted",
        "told-in-time",
        "_recipes/hold_monitor.py",
        "        if event.type == EventType.DELETED:\n"
        "            self._move(HoldState.LOST, NODE_DELETED)",
        "        if False:\n            self._move(HoldState.LOST, NODE_DELETED)",
        ("mutex", "semaphore", "latch"),
    ),
    Defect(
        "the standard policy never tells a holder on SUSPENDED",
        "told-suspended",
        "_recipes/hold_monitor.py",
        '            if self.policy == "standard":\n'
        '                self._move(HoldState.SUSPENDED, "connection suspended")',
        "            if False:\n"
        '                self._move(HoldState.SUSPENDED, "connection suspended")',
        ("mutex", "read-write", "semaphore", "latch"),
    ),
    Defect(
        "a session timeout spent suspended is never counted",
        "told-in-time",
        "_client/runtime.py",
        '        """Start counting the session timeout (once per suspension)."""\n',
        '        """Start counting the session timeout (once per suspension)."""\n        return\n',
        ("mutex", "semaphore", "latch", "menagerie-lock"),
    ),
    Defect(
        "a reconnect in the same session is read as not ours",
        "no-false-alarm",
        "_recipes/hold_monitor.py",
        "current != self._session_id:",
        "current == self._session_id:",
        ("mutex", "latch", "semaphore"),
    ),
    Defect(
        "a latch leads from the second place",
        "leader-first",
        "_protocol/drivers.py",
        "LATCH_DRIVER = StandardDriver(wire.LATCH_NAME)",
        "LATCH_DRIVER = StandardDriver(wire.LATCH_NAME, 2)",
        ("latch",),
    ),
    Defect(
        "a selector's lead is not told its term ended",
        "interrupted",
        "_cores/selector.py",
        "        if self.leadership is not None:\n            self.leadership.end(reason)\n"
        "        if self.run is not None and self.leading:\n            self.run.interrupt_lead()",
        "        pass",
        ("selector",),
    ),
    Defect(
        "the asyncio selector leaves lead running when its term ends",
        "interrupted",
        "aio/_selector.py",
        "        if self.lead_task is not None:\n            self.lead_task.cancel()",
        "        pass",
        ("selector",),
    ),
    Defect(
        "on_lost callbacks never run",
        "callbacks",
        "_recipes/hold.py",
        "        if lost and self._spawn is not None:",
        "        if False:",
        ("mutex", "semaphore", "menagerie-lock"),
    ),
    Defect(
        "a latch's listeners never hear not_leader()",
        "callbacks",
        "_cores/latch.py",
        "        for listener in list(self.listeners):\n"
        "            outlets.post(listener.not_leader)",
        "        for listener in ():\n            outlets.post(listener.not_leader)",
        ("latch",),
    ),
    Defect(
        "a leader's listing rides a suspension through (deposed once the connection is back)",
        "callbacks",
        "_recipes/election.py",
        "        if children is None and self.leading is not None:",
        "        if children is None and self.leading is not None and False:",
        ("latch", "zk-election"),
    ),
    Defect(
        "a write whose answer was lost is tried again on the new value, as Curator's loop does",
        "counted",
        "_recipes/versioned.py",
        "            if not in_doubt:\n                return None, None",
        "            if True:\n                return None, None",
        ("atomic-long",),
    ),
    Defect(
        "a member passes a double barrier on any wake-up (Curator's GH-1290)",
        "barrier",
        "_recipes/barriers.py",
        "                if not (yield from waiting.wait_steps(deadline)):\n"
        "                    timed_out = True\n                    break\n",
        "                if not (yield from waiting.wait_steps(deadline)):\n"
        "                    timed_out = True\n                    break\n"
        "                passed = True\n                return True\n",
        ("double-barrier",),
    ),
    Defect(
        "an acquire waits for its predecessor past its deadline",
        "bounded",
        "_recipes/lock_wait.py",
        "        woken = yield WaitSignal(watcher.wake, deadline.remaining())",
        "        woken = yield WaitSignal(watcher.wake, None)",
        ("mutex", "read-write", "zk-write-lock", "menagerie-lock", "zklocker"),
    ),
    Defect(
        "a cache does not read the tree again after a reconnect",
        "cache-converges",
        "_recipes/cache.py",
        "            self._stale = True  # nothing was told while away",
        "            pass",
        ("cache",),
    ),
    Defect(
        "a cache compares versions alone (Curator's: a node made again at its version)",
        "cache-converges",
        "_protocol/cache.py",
        "        if not old.same_node(node):",
        "        if False:",
        ("cache",),
    ),
    Defect(
        "a cache tells a change at the version it told already",
        "told-once",
        "_protocol/cache.py",
        "        if old.version != node.version:",
        "        if True:",
        ("cache",),
    ),
    Defect(
        "a lost create's node is not looked for (two nodes of one kept node)",
        "one-node",
        "_recipes/persistent_node.py",
        "        if path is None and self._lost_create:",
        "        if False:",
        ("kept-sequential-node",),
    ),
    Defect(
        "a kept node is not woken by its deletion",
        "kept",
        "_recipes/persistent_node.py",
        "        self._wake_up()  # set again (once connected)",
        "        pass",
        ("kept-node", "kept-sequential-node"),
    ),
    Defect(
        "a discovery does not register again after a reconnect",
        "registered",
        "_recipes/registration.py",
        "        if state != KazooState.CONNECTED:\n            return",
        "        if True:\n            return",
        ("registration",),
    ),
    Defect(
        "an update writes the data it replaces (CURATOR-146/181)",
        "registered",
        "_recipes/registration_nodes.py",
        "            stat = yield from sent_steps(SetData(record.path, data), deadline)",
        "            stat = yield from sent_steps(SetData(record.path, record.data), deadline)",
        ("registration",),
    ),
)


class Stale(Exception):
    """A defect's old text is no longer in the library: plant it again where the code is."""


def planted_copy(defect: Defect, into: Path) -> Path:
    """A copy of the package with ``defect`` planted, under ``into`` (with the test suite
    beside it, so that ``python -m tests.explorer`` there runs on the copy)."""
    shutil.copytree(
        ROOT / "pycurator", into / "pycurator", ignore=shutil.ignore_patterns("__pycache__")
    )
    (into / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    target = into / "pycurator" / defect.path
    text = target.read_text(encoding="utf-8") if target.is_file() else ""
    found = text.count(defect.old)
    if found != 1:
        raise Stale(
            f"planted defect {defect.name!r}: {defect.path} holds its old text {found} times,"
            f" not once:\n{defect.old}"
        )
    target.write_text(text.replace(defect.old, defect.new), encoding="utf-8")
    return into


@dataclasses.dataclass
class Caught:
    """What the schedules made of one defect: ``caught`` of ``ran`` broke an invariant, how many
    broke each one, and the first that did (its replay line and what it broke)."""

    defect: Defect
    ran: int
    caught: int
    by_invariant: dict[str, int] = dataclasses.field(default_factory=dict)
    first: str = ""
    broke: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def named(self) -> bool:
        """Whether the invariant the defect names was among those the first catch broke."""
        return any(line.startswith(self.defect.invariant) for line in self.broke)


def explore_planted(defect: Defect, count: bool, budget: int | None = None) -> Caught:
    """Run the suite's schedules on a copy of the package with ``defect`` planted, in a process
    of its own (all of them with ``count``, else until the first that breaks an invariant)."""
    with tempfile.TemporaryDirectory(prefix="pycurator-planted-") as tmp:
        copy = planted_copy(defect, Path(tmp))
        command = [sys.executable, "-m", "tests.explorer", "--suite-schedules", "--json"]
        if count:
            command.append("--count")
        if defect.protocols:
            for protocol in defect.protocols:
                command += ["--protocol", protocol]
        if budget is not None:
            command += ["--budget", str(budget)]
        env = {**os.environ, "PYTHONPATH": "", "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run(
            command, cwd=copy, env=env, capture_output=True, text=True, check=False, timeout=1800
        )
        if done.returncode not in (0, 1) or not done.stdout.strip():
            raise RuntimeError(
                f"the explorer failed on planted defect {defect.name!r}:\n{done.stderr[-4000:]}"
            )
        report = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(report["package"]).startswith(str(copy)):
        raise RuntimeError(f"the explorer ran on {report['package']}, not the planted copy")
    return Caught(
        defect,
        report["ran"],
        report["caught"],
        report["by_invariant"],
        report["first"],
        report["broke"],
        report["seconds"],
    )


def explore_all(count: bool = False, jobs: int = 2) -> Iterator[Caught]:
    """Each defect, planted and explored (``jobs`` at once, each in a process of its own; see
    :func:`explore_planted`), in the order of :data:`DEFECTS`."""
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(explore_planted, defect, count) for defect in DEFECTS]
        for future in futures:
            yield future.result()
