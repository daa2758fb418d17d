"""Scale (``--sections scale``, only when named): what one process pays to hold many locks, lead
many elections and queue many waiters, and what a server bounce costs with all of them held.

Each case runs in a fresh process, so that its threads and its memory are its own: pycurator's
in ``python -m bench.scale_case`` (kazoo's threading handler; ``mutex-fast`` on pycurator's fast
handler), Java Curator's in ``ScaleCurator`` (``bench/ScaleCurator.java``, compiled with
``javac`` at bench time against the Curator jars in use: ``PYCURATOR_CURATOR_CLASSPATH`` or
Debian's). A case takes N items on N paths (waiter cases: W waiters on one path, W = N up to
:data:`MAX_WAITERS`), then asks for a bounce: the section stops its server (SIGTERM), waits
``--scale-down-s`` (2 s), starts it again with its data, so sessions survive. The case samples
its thread count every 5 ms meanwhile, waits until every item is back (or reported lost),
checks what each item says against the server, and releases everything. The section runs a
server of its own (it bounces it), with more heap than the tests' server.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pycurator.testing import ZooKeeperServer, curator_classpath, four_letter_word

from .common import SESSION_TIMEOUT_S, chosen

ROOT = Path(__file__).resolve().parents[1]
JAVA_SOURCE = Path(__file__).with_name("ScaleCurator.java")
#: Heap for thousands of nodes, watches and listings in flight (the tests' server has 256 MB),
#: and room for listings above 1 MB.
SERVER_OPTIONS = ("-Xmx2g", "-Djute.maxbuffer=4194304")
#: Seconds the server stays down in a bounce.
DOWN_S = 2.0
#: Waiters queue on one path up to this many (N above it keeps this many).
MAX_WAITERS = 5000

PYCURATOR_CASES = (
    "mutex",
    "mutex-fast",
    "read",
    "write",
    "semaphore",
    "semaphore-mutex",
    "aio-mutex",
    "latch",
    "aio-latch",
    "selector",
    "aio-selector",
    "waiters",
    "aio-waiters",
    "thread-floor",
)
CURATOR = "curator-"
#: Curator's counterparts (no asyncio API; its waiters are threads, drained).
CURATOR_CASES = tuple(
    CURATOR + case
    for case in (
        "mutex",
        "read",
        "write",
        "semaphore",
        "semaphore-mutex",
        "latch",
        "selector",
        "waiters",
    )
)
CASES = PYCURATOR_CASES + CURATOR_CASES
#: Cases whose items are waiters on one path (their N is the waiter count).
WAITER_CASES = {"waiters", "aio-waiters", "thread-floor", CURATOR + "waiters"}
#: Held locks, for the targets.
LOCK_CASES = {"mutex", "mutex-fast", "read", "write", "semaphore", "semaphore-mutex", "aio-mutex"}
LATCH_CASES = {"latch", "aio-latch"}
LABELS = {
    "mutex": "InterProcessMutex",
    "mutex-fast": "InterProcessMutex, fast handler",
    "read": "read lock",
    "write": "write lock",
    "semaphore": "InterProcessSemaphoreV2 lease (2 per path)",
    "semaphore-mutex": "InterProcessSemaphoreMutex",
    "aio-mutex": "aio.InterProcessMutex",
    "latch": "LeaderLatch",
    "aio-latch": "aio.LeaderLatch",
    "selector": "LeaderSelector (lead on a thread)",
    "aio-selector": "aio.LeaderSelector",
    "waiters": "waiters on one path, a thread each (drained)",
    "aio-waiters": "waiters on one path, a task each (cancelled)",
    "thread-floor": "bare threads blocked on an event (reference)",
}


def cases(text: str) -> list[str]:
    """``--scale-cases``: a comma-separated list of :data:`CASES`."""
    return chosen(text, CASES, "scale cases")


class ScaleServer(ZooKeeperServer):
    """The section's server: :data:`SERVER_OPTIONS` on top of the usual command."""

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("-cp")
        return [*command[:at], *SERVER_OPTIONS, *command[at:]]


def bounce(server: ZooKeeperServer, down_s: float) -> float:
    """Stop the server, wait ``down_s``, start it again with its data; seconds it was away."""
    started = time.monotonic()
    server.stop()
    time.sleep(down_s)
    server.start()
    return time.monotonic() - started


def drive(command: list[str], server: ZooKeeperServer, down_s: float, timeout: float) -> Any:
    """Run one case's process, bouncing the server when it asks; its result (or an error).
    A case still running after ``timeout`` is asked for its threads' stacks, then killed."""
    process = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    timer = threading.Timer(timeout, _stop, [process, command[0] == sys.executable])
    timer.start()
    result: dict[str, Any] = {"error": "timed out"}
    away = None
    try:
        assert process.stdin is not None and process.stdout is not None
        for line in process.stdout:
            message = json.loads(line) if line.startswith("{") else {}
            if message.get("event") == "bounce":
                away = bounce(server, down_s)
                process.stdin.write("restarted\n")
                process.stdin.flush()
            elif message.get("event") == "result":
                result = message
        code = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
        if not server.running:
            server.start()  # the case died while the server was down
    result.pop("event", None)
    if "error" in result:
        result["exit_status"] = code
        result["server_clean_s"] = _clean(server)
    elif away is not None:
        result["bounce"]["server_away_s"] = away
    return result


def _stop(process: subprocess.Popen[str], python: bool) -> None:
    """A stuck case: its threads' stacks to stderr (a Python case's), then the end."""
    if python:
        process.send_signal(signal.SIGUSR1)
        time.sleep(5)
    process.kill()


def _clean(server: ZooKeeperServer) -> float:
    """Wait until the server has no ephemeral node left (a failed case's session expires);
    the seconds it took."""
    started = time.monotonic()
    end = started + 3 * SESSION_TIMEOUT_S
    while time.monotonic() < end:
        mntr = four_letter_word(server.host, server.port, "mntr")
        if "zk_ephemerals_count\t0\n" in mntr + "\n":
            break
        time.sleep(0.5)
    return time.monotonic() - started


def command_of(case: str, hosts: str, n: int, classes: str | None) -> list[str]:
    if case.startswith(CURATOR):
        assert classes is not None
        classpath = f"{classes}:{curator_classpath()}"
        return ["java", "-cp", classpath, "ScaleCurator", case[len(CURATOR) :], hosts, str(n)]
    extra = ["--handler", "fast"] if case.endswith("-fast") else []
    name = case.removesuffix("-fast")
    return [sys.executable, "-m", "bench.scale_case", name, hosts, str(n), *extra]


def compile_java(into: str) -> None:
    subprocess.run(
        ["javac", "-cp", curator_classpath(), "-d", into, str(JAVA_SOURCE)],
        check=True,
    )


def run(
    sizes: Sequence[int],
    waiters: int | None = None,
    chosen: Sequence[str] = CASES,
    down_s: float = DOWN_S,
) -> dict[str, object]:
    """Every chosen case at each N of ``sizes`` (waiter cases: ``waiters``, by default N up to
    :data:`MAX_WAITERS`), on a server of the section's own."""
    runs = []
    server = ScaleServer(container_check_interval_ms=None).start()
    try:
        with tempfile.TemporaryDirectory(prefix="pycurator-scale-") as classes:
            if any(case.startswith(CURATOR) for case in chosen):
                compile_java(classes)
            for n in sizes:
                queued = waiters or min(n, MAX_WAITERS)
                print(f"\nscale: N = {n:,}, waiters {queued:,}", flush=True)
                rows = []
                for case in chosen:
                    count = queued if case in WAITER_CASES else n
                    command = command_of(case, server.hosts, count, classes)
                    started = time.monotonic()
                    row = drive(command, server, down_s, timeout=900 + 0.5 * count)
                    row.update(case=case, n=count)
                    rows.append(row)
                    print(f"  {_line(row)} ({time.monotonic() - started:.0f} s)", flush=True)
                entry: dict[str, Any] = {"n": n, "waiters": queued, "rows": rows}
                entry["targets"] = targets(entry)
                print("\n" + "\n".join(_run_tables(entry)), flush=True)
                runs.append(entry)
    finally:
        server.close()
    return {"down_s": down_s, "server_options": list(SERVER_OPTIONS), "runs": runs}


# -- targets -----------------------------------------------------------------------------------


def _rows(entry: dict[str, Any], names: set[str]) -> list[dict[str, Any]]:
    """The rows of these cases that have figures (a case stuck after the bounce has some)."""
    return [row for row in entry["rows"] if row["case"] in names and "steady" in row]


def _worst(rows: list[dict[str, Any]], value: Any) -> tuple[float, str] | None:
    measured = [(float(value(row)), row["case"]) for row in rows]
    return max(measured) if measured else None


def targets(entry: dict[str, Any]) -> list[dict[str, object]]:
    """Issue 25's targets, each with the worst pycurator case of this run."""
    n, w = entry["n"], entry["waiters"]
    ours = _rows(entry, set(PYCURATOR_CASES))
    bounced = [row for row in ours if "bounce" in row]
    locks = _rows(entry, LOCK_CASES)
    checks: list[tuple[str, float, tuple[float, str] | None]] = [
        (
            f"peak threads during a bounce, {n:,} held locks",
            20,
            _worst([row for row in locks if "bounce" in row], _peak),
        ),
        (
            f"threads of {n:,} latches (held, and bounce peak)",
            20,
            _worst(_rows(entry, LATCH_CASES), lambda r: max(r["steady"]["threads"], _peak(r))),
        ),
        ("RSS per held lock, kB", 5, _worst(locks, _per_item)),
        (
            f"RSS per queued asyncio waiter ({w:,}), kB",
            20,
            _worst(_rows(entry, {"aio-waiters"}), _per_item),
        ),
    ]
    floor = _rows(entry, {"thread-floor"})
    if floor:
        beyond = _worst(_rows(entry, {"waiters"}), lambda r: _per_item(r) - _per_item(floor[0]))
        checks.append(("RSS per queued thread waiter less a bare thread's, kB", 20, beyond))
    if bounced:
        wrong = sum(row["bounce"].get("wrong", 0) for row in bounced)
        checks.append(("holds said held but not ours after the bounce", 0, (wrong, "all")))
    released = [row for row in ours if "after_release" in row]
    if released:
        left = sum(
            r["after_release"]["ephemerals"] + r["after_release"]["watches"] for r in released
        )
        checks.append(("nodes and watches left after release", 0, (left, "all")))
    failed = [
        row["case"] for row in entry["rows"] if row["case"] in PYCURATOR_CASES and "error" in row
    ]
    checks.append(
        (
            "cases that failed or whose client got stuck",
            0,
            (len(failed), ", ".join(failed) or "none"),
        )
    )
    return [
        {
            "target": name,
            "limit": limit,
            "measured": worst[0],
            "worst": worst[1],
            "met": worst[0] <= limit,
        }
        for name, limit, worst in checks
        if worst is not None
    ]


def _peak(row: dict[str, Any]) -> float:
    return float(row.get("bounce", {}).get("peak_threads", 0))


def _per_item(row: dict[str, Any]) -> float:
    return float(row["rss_kb_per_item"])


# -- tables ------------------------------------------------------------------------------------


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _s(value: float) -> str:
    return f"{value:.2f}"


def _label(case: str) -> str:
    if case.startswith(CURATOR):
        return "Curator " + LABELS[case[len(CURATOR) :]]
    return LABELS[case]


def _threads(row: dict[str, Any]) -> str:
    bounce = row.get("bounce", {})
    peak = _n(bounce["peak_threads"]) if bounce else "-"
    return " / ".join(
        [
            _n(row["baseline"]["threads"]),
            _n(row["steady"]["threads"]),
            peak,
            _n(row["after_release"]["threads"]) if "after_release" in row else "-",
        ]
    )


def _memory(row: dict[str, Any]) -> str:
    text = f"{row['rss_kb_per_item']:.1f}"
    if "heap_kb_per_item" in row:
        text += f" (heap {row['heap_kb_per_item']:.1f})"
    return text


def _after_bounce(row: dict[str, Any]) -> list[str]:
    bounce = row.get("bounce")
    if not bounce:
        return ["-", "-"]
    back = _s(bounce["back_after_restart_s"]) if bounce["all_back"] else "not all"
    if bounce.get("client_stuck"):
        return [back, "client stuck"]
    lost = _n(bounce["lost"])
    if bounce.get("lost_but_ours"):
        lost += f" ({_n(bounce['lost_but_ours'])} still ours)"
    return [back, f"{_n(bounce['held'])} / {lost} / {_n(bounce['wrong'])}"]


def _cells(row: dict[str, Any]) -> list[str]:
    if "steady" not in row:
        return [_label(row["case"]), _n(row["n"]), f"failed: {row['error']}", *[""] * 6]
    left = row.get("after_release", {"ephemerals": -1, "watches": -1})
    note = f" (failed: {row['error']})" if "error" in row else ""
    if row.get("client_stop_s", 0) is None:
        note += " (then `client.stop()` hung)"
    return [
        _label(row["case"]) + note,
        _n(row["items"]),
        _threads(row),
        _memory(row),
        _s(row["acquire_s"]),
        *_after_bounce(row),
        _s(row["release_s"]) if "release_s" in row else "-",
        f"{_n(left['ephemerals'])} / {_n(left['watches'])}",
    ]


HEADER = [
    "case",
    "items",
    "threads: connected / all held / bounce peak / after release",
    "RSS kB per item",
    "take all, s",
    "all back after the restart, s",
    "after the bounce: held / lost / wrong",
    "release all, s",
    "left: nodes / watches",
]


def _line(row: dict[str, Any]) -> str:
    return " | ".join(_cells(row))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _run_tables(entry: dict[str, Any]) -> list[str]:
    lines = [f"#### N = {entry['n']:,} (waiters: {entry['waiters']:,})", ""]
    lines += _table(HEADER, [_cells(row) for row in entry["rows"]])
    if entry["targets"]:
        lines += ["", f"Targets at N = {entry['n']:,}:", ""]
        lines += _table(
            ["target", "limit", "measured", "worst case", "met"],
            [
                [
                    t["target"],
                    f"<= {t['limit']:g}",
                    f"{t['measured']:,.1f}".removesuffix(".0"),
                    t["worst"],
                    "yes" if t["met"] else "**no**",
                ]
                for t in entry["targets"]
            ],
        )
    return lines


def tables(section: dict[str, Any]) -> list[str]:
    """The section's tables in Markdown, one set per N."""
    lines = ["### Scale"]
    for entry in section["runs"]:
        lines += ["", *_run_tables(entry)]
    return lines


def merge(path: Path, results: dict[str, Any]) -> dict[str, Any]:
    """``path``'s results (if any) with their scale section replaced by that of ``results``,
    which keeps its own command and machine: a scale run alone does not drop the others."""
    merged: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    merged["scale"] = {
        **results["scale"],
        "command": results["command"],
        "machine": results["machine"],
    }
    return merged
