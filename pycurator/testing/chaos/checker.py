"""The pure checker: a merged history in, a :class:`Report` out; its inputs are left as given.

See :mod:`pycurator.testing.chaos` for what is proved and how.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .history import (
    ELECTION_LOCKS,
    EXCLUSIVE,
    SEMAPHORE_MAX,
    Faults,
    Hold,
    LogEntry,
    Orphans,
    Pause,
    QuietCheck,
)


@dataclass(frozen=True)
class CounterReport:
    """An exclusive lock's counter against its log of committed fences."""

    counter: int
    committed: int
    outcomes_learned_from_the_log: int
    committed_by_killed_holders: int


@dataclass(frozen=True)
class PauseReport:
    """A SIGSTOP scenario's result: mutex holds entered while the worker was stopped, and the
    outcome of its fence once resumed (``rejected`` is right)."""

    worker: str
    hold_id: str
    paused_ns: int
    resumed_ns: int
    successors: int
    outcome: str


@dataclass
class Report:
    """What the history shows; :attr:`ok` when nothing that must not happen did. ``resolved``
    is the history with each write's outcome and fence time as the log has them."""

    seconds: float
    seed: int
    holds: Counter[str]
    faults: Faults
    errors: Counter[str]
    stale: int
    stale_rejected: int
    overlaps: int
    overlaps_with_stale: int
    violations: list[str]
    semaphore_max: int
    counters: dict[str, CounterReport]
    counter_problems: list[str]
    orphans: Orphans
    pauses: list[PauseReport]
    resolved: list[Hold]
    quiet: list[QuietCheck] = dataclasses.field(default_factory=list)
    #: Terms a Java original's election gave two leaders (reported, not failed, as its live
    #: orphans): its false leader's node came after a rival's that stayed throughout.
    java_double_leaders: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.violations
            and self.semaphore_max <= SEMAPHORE_MAX
            and not self.counter_problems
            and self.stale == self.stale_rejected
            and not self.orphans.tree
            and not self.orphans.dump
            and not any(q.failed for q in self.quiet)
        )

    @property
    def live_orphans(self) -> list[str]:
        """Each live orphan of every quiet moment, and each moment not reached, as a line."""
        lines = []
        for quiet in self.quiet:
            lines += [f"quiet moment {quiet.when}: {problem}" for problem in quiet.problems]
            lines += [f"quiet moment {quiet.when}: {orphan}" for orphan in quiet.live_orphans]
        return lines

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON types (without the resolved history)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del fields["resolved"]
        fields["holds"] = dict(self.holds)
        fields["errors"] = dict(self.errors)
        fields["faults"] = {"counts": dict(self.faults.counts), "notes": self.faults.notes}
        fields["counters"] = {lock: dataclasses.asdict(c) for lock, c in self.counters.items()}
        fields["orphans"] = dataclasses.asdict(self.orphans)
        fields["pauses"] = [dataclasses.asdict(p) for p in self.pauses]
        fields["quiet"] = [dataclasses.asdict(q) for q in self.quiet]
        fields["ok"] = self.ok
        return fields

    def summary(self) -> str:
        faults = ", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.counts.items()))
        holds = ", ".join(f"{key} {n}" for key, n in sorted(self.holds.items()))
        errors = ", ".join(f"{key} {n}" for key, n in sorted(self.errors.items())) or "none"
        counters = "; ".join(
            f"{lock}: counter {c.counter}, {c.committed} committed writes"
            f" ({c.outcomes_learned_from_the_log} known only from the log,"
            f" {c.committed_by_killed_holders} by holders killed after)"
            for lock, c in self.counters.items()
        )
        lines = [
            f"chaos: {self.seconds:g} s, seed {self.seed}, a 3-node ensemble behind fault proxies",
            f"holds: {holds}",
            f"faults: {faults}",
            f"errors seen by contenders (and retried): {errors}",
            f"stale holds (node gone before the fence): {self.stale},"
            f" their fences rejected by ZooKeeper: {self.stale_rejected}",
            f"overlapping hold intervals: {self.overlaps}, each with a stale holder:"
            f" {self.overlaps_with_stale}",
            f"violations (fenced holds overlapping): {len(self.violations)}",
            f"semaphore: at most {self.semaphore_max} fenced leases at once (max {SEMAPHORE_MAX})",
            f"counters: {counters}; problems: {len(self.counter_problems)}",
            f"orphans: {len(self.orphans.tree)} in the tree,"
            f" {sum(len(p) for p in self.orphans.dump.values())} in the servers' dump",
        ]
        for quiet in self.quiet:
            reached = f"reached in {quiet.seconds:.1f} s" if quiet.reached else "NOT reached"
            lines.append(
                f"quiet moment {quiet.when}: {reached}; {quiet.nodes} lock nodes, {quiet.owned}"
                f" owned by election participants, live orphans: {len(quiet.live_orphans)}"
            )
        for pause in self.pauses:
            lines.append(
                f"SIGSTOP: {pause.worker} paused in hold {pause.hold_id} for"
                f" {(pause.resumed_ns - pause.paused_ns) / 1e9:.1f} s, until its session"
                f" expired; mutex holds entered meanwhile: {pause.successors};"
                f" its guarded write: {pause.outcome}"
            )
        lines.extend(self.violations[:10])
        lines.extend(self.java_double_leaders[:10])
        lines.extend(self.counter_problems[:10])
        lines.extend(self.live_orphans[:20])
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)


def _overlap(a: Hold, b: Hold, end: Callable[[Hold], int]) -> bool:
    return a.enter_ns < end(b) and b.enter_ns < end(a)


def _sequence(node: str) -> int | None:
    tail = node[-10:]
    return int(tail) if len(tail) == 10 and tail.isdigit() else None


def _name(node: str) -> str:
    return node.rsplit("/", 1)[-1]


def _false_leader(a: Hold, b: Hold) -> Hold | None:
    """Of two election terms fenced while both led, the one that led while not first: its
    node came later (a higher sequence) while the other's, made before it, was there from
    its entry (the overlap) to the other's fence. None when a name carries no sequence."""
    first, second = _sequence(a.node), _sequence(b.node)
    if first is None or second is None or first == second:
        return None
    return a if first > second else b


def resolve(
    holds: Sequence[Hold], logs: Mapping[str, Mapping[str, LogEntry | tuple[int, int]]]
) -> tuple[list[Hold], list[str], Counter[str]]:
    """Copies of the holds (killed ones left out) with each write's outcome as the log has it (a
    lost reply can hide a landed write), the problems found, and the outcomes learned by lock."""
    problems: list[str] = []
    learned: Counter[str] = Counter()
    resolved: list[Hold] = []
    for original in holds:
        if original.outcome == "killed":
            continue
        hold = dataclasses.replace(original, fences=list(original.fences))
        resolved.append(hold)
        if not hold.exclusive:
            continue
        entry = logs[hold.lock].get(hold.hold_id)
        if entry is None and hold.outcome == "fenced":
            problems.append(f"{hold.hold_id}: its holder saw its write land; the log did not")
        elif entry is not None:
            value, attempt = entry
            learned[hold.lock] += hold.outcome != "fenced"
            hold.outcome, hold.value = "fenced", value
            hold.fence_ns = hold.fences[attempt]  # the attempt that landed
        elif hold.outcome == "unknown":
            hold.outcome = "rejected"
    return resolved, problems, learned


def check(
    holds: Sequence[Hold],
    logs: Mapping[str, Mapping[str, LogEntry | tuple[int, int]]],
    counters: Mapping[str, int],
    orphans: Orphans,
    *,
    faults: Faults,
    errors: Counter[str],
    pauses: Sequence[Pause],
    quiet: Sequence[QuietCheck] = (),
    seconds: float,
    seed: int,
) -> Report:
    """Check a merged history; see :mod:`pycurator.testing.chaos` for what is proved and how."""
    killed = {hold.hold_id for hold in holds if hold.outcome == "killed"}
    resolved, problems, learned = resolve(holds, logs)
    fenced = [hold for hold in resolved if hold.outcome == "fenced"]
    stale = [hold for hold in resolved if hold.outcome != "fenced"]
    violations: list[str] = []
    originals: list[str] = []  # the Java originals' own double leaders
    excused: dict[str, set[str]] = {lock: set() for lock in ELECTION_LOCKS}
    overlaps = overlaps_with_stale = 0
    for lock in (*EXCLUSIVE, "semaphore"):
        mine = sorted((h for h in resolved if h.lock == lock), key=lambda h: h.enter_ns)
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                if b.enter_ns >= a.exit_ns and b.enter_ns >= a.fence_ns:
                    break
                if not (a.exclusive or b.exclusive):
                    continue
                if _overlap(a, b, lambda h: h.exit_ns):
                    overlaps += 1
                    overlaps_with_stale += a.outcome != "fenced" or b.outcome != "fenced"
                both_fenced = a.outcome == b.outcome == "fenced"
                if not (both_fenced and _overlap(a, b, lambda h: h.fence_ns)):
                    continue
                if lock not in ELECTION_LOCKS:
                    violations.append(f"{lock}: {a.hold_id} and {b.hold_id} overlap")
                    continue
                false_leader = _false_leader(a, b)
                line = (
                    f"{lock}: {a.hold_id} and {b.hold_id} overlap (two non-stale leaders at once)"
                )
                if false_leader is not None:
                    first = b if false_leader is a else a
                    line += (
                        f": {false_leader.hold_id} led from {_name(false_leader.node)} while"
                        f" {_name(first.node)}, made before it, stayed until"
                        f" {first.hold_id}'s fence"
                    )
                if false_leader is not None and false_leader.language == "java":
                    originals.append(line + " (the Java original's own: reported, not failed)")
                    excused[lock].add(false_leader.hold_id)
                else:
                    violations.append(line)
    semaphore_max = most_at_once([h for h in fenced if h.lock == "semaphore"])
    counter_report: dict[str, CounterReport] = {}
    for lock, log in logs.items():
        written = Counter(value for value, _ in log.values())
        # a Java original's false leader may have written the value its rival wrote too
        once_each = sorted(
            value
            for hold_id, (value, _) in log.items()
            if hold_id not in excused.get(lock, ()) or written[value] == 1
        )
        counter_report[lock] = CounterReport(
            counter=counters[lock],
            committed=len(log),
            outcomes_learned_from_the_log=learned[lock],
            committed_by_killed_holders=len(killed & set(log)),
        )
        if once_each != list(range(1, counters[lock] + 1)):
            problems.append(f"{lock}: committed values are not 1..{counters[lock]} once each")
        recorded = {h.hold_id for h in resolved if h.lock == lock} | killed
        if set(log) - recorded:
            problems.append(f"{lock}: {len(set(log) - recorded)} log entries of no hold")
    pause_reports = []
    for pause in pauses:
        paused = next((h for h in resolved if h.hold_id == pause.hold_id), None)
        successors = sum(
            1
            for h in resolved
            if h.lock == "mutex" and pause.paused_ns < h.enter_ns < pause.resumed_ns
        )
        outcome = paused.outcome if paused else "not recorded"
        pause_reports.append(
            PauseReport(**dataclasses.asdict(pause), successors=successors, outcome=outcome)
        )
    counts: Counter[str] = Counter()
    for hold in resolved:
        mode = "" if hold.lock != "rw" else ("-write" if hold.exclusive else "-read")
        counts[f"{hold.lock}{mode} {hold.language}"] += 1
    return Report(
        seconds=seconds,
        seed=seed,
        holds=counts,
        faults=faults,
        errors=errors,
        stale=len(stale),
        stale_rejected=sum(1 for h in stale if h.outcome == "rejected"),
        overlaps=overlaps,
        overlaps_with_stale=overlaps_with_stale,
        violations=violations,
        java_double_leaders=originals,
        semaphore_max=semaphore_max,
        counters=counter_report,
        counter_problems=problems,
        orphans=orphans,
        pauses=pause_reports,
        resolved=resolved,
        quiet=list(quiet),
    )


def most_at_once(holds: Sequence[Hold]) -> int:
    """The most holds whose fenced intervals include one instant."""
    events = sorted(
        [(h.enter_ns, 1) for h in holds] + [(h.fence_ns, -1) for h in holds],
        key=lambda e: (e[0], e[1]),
    )
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most
