"""``pycurator demo``: Python and Java Curator threads contend for one lock.

Python threads (pycurator's :class:`~pycurator.InterProcessMutex`) and Java threads (Curator's own
``InterProcessMutex``, through JPype) each take the lock several times, and while holding it do a
read-modify-write of a counter kept in a ZooKeeper node that both languages read and write. The
demo prints every hold as a timeline and closes with a verdict: holds per language, overlapping
holds (must be 0) and the final counter (must equal the number of holds). A lost update or an
overlap means mutual exclusion failed, and the demo exits with status 1.

Without ``hosts`` it starts an embedded ZooKeeper (:class:`pycurator.testing.ZooKeeperServer`).
JPype and the JVM are loaded through :mod:`pycurator.testing` only when Java threads are asked for.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

from ._connect import connect
from ._protocol.errors import ConnectTimeout
from ._threads.mutex import InterProcessMutex

DEMO_ROOT = "/pycurator-demo"


class DemoError(Exception):
    """The demo could not run (no ZooKeeper, no Java); the message is one line for the user."""


class JavaUnavailableError(DemoError):
    """The Java threads cannot run here: JPype is not installed, or the JVM did not start."""


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs: thread counts, rounds per thread, time spent inside the lock."""

    hosts: str | None = None
    python_threads: int = 3
    java_threads: int = 3
    rounds: int = 4
    hold_seconds: float = 0.01
    unlocked: bool = False
    connect_timeout: float = 15.0


@dataclass(frozen=True)
class Hold:
    """One hold of the lock: who, in which language, on which node, when, and the counter."""

    worker: str
    language: str
    node: str
    start_ns: int
    end_ns: int
    read: int
    written: int


@dataclass(frozen=True)
class Verdict:
    """The closing verdict; :attr:`excluded` is False if any two holds overlapped or an
    update was lost."""

    holds: int
    per_language: dict[str, int]
    overlaps: int
    counter: int
    errors: tuple[str, ...] = ()

    @property
    def excluded(self) -> bool:
        return self.overlaps == 0 and self.counter == self.holds

    @property
    def ok(self) -> bool:
        return self.excluded and not self.errors


def count_overlaps(holds: list[Hold]) -> int:
    """How many holds started before an earlier-started hold had ended."""
    overlaps = 0
    latest_end: int | None = None
    for hold in sorted(holds, key=lambda h: h.start_ns):
        if latest_end is not None and hold.start_ns < latest_end:
            overlaps += 1
        latest_end = hold.end_ns if latest_end is None else max(latest_end, hold.end_ns)
    return overlaps


def judge(holds: list[Hold], counter: int, errors: list[str]) -> Verdict:
    """The verdict on a finished run."""
    per_language: dict[str, int] = {}
    for hold in holds:
        per_language[hold.language] = per_language.get(hold.language, 0) + 1
    return Verdict(len(holds), per_language, count_overlaps(holds), counter, tuple(errors))


def short_node(path: str) -> str:
    """A lock node's name with its 36-character protection id cut to 8 characters."""
    name = path.rsplit("/", 1)[-1]
    if name.startswith("_c_") and len(name) > 40:
        return f"{name[:11]}…{name[39:]}"
    return name


@dataclass
class _Run:
    options: DemoOptions
    out: TextIO
    lock_path: str
    counter_path: str
    started_ns: int = field(default_factory=time.monotonic_ns)
    holds: list[Hold] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    printing: threading.Lock = field(default_factory=threading.Lock)

    def record(self, hold: Hold) -> None:
        with self.printing:
            self.holds.append(hold)
            at = (hold.start_ns - self.started_ns) / 1e9
            held_ms = (hold.end_ns - hold.start_ns) / 1e6
            self.out.write(
                f"{at:8.3f}s  {hold.worker:<10} {hold.language:<7} {short_node(hold.node):<30} "
                f"{hold.read:>4} -> {hold.written:<4} held {held_ms:5.1f} ms\n"
            )
            self.out.flush()

    def fail(self, worker: str, exc: BaseException) -> None:
        with self.printing:
            self.errors.append(f"{worker}: {type(exc).__name__}: {exc}")


def _python_worker(run: _Run, name: str, client: KazooClient, start: threading.Barrier) -> None:
    lock = InterProcessMutex(client, run.lock_path)
    start.wait()
    for _ in range(run.options.rounds):
        if not run.options.unlocked:
            lock.acquire()
        try:
            begin = time.monotonic_ns()
            node = lock.lock_path or "(no lock)"
            value = int(client.get(run.counter_path)[0])
            time.sleep(run.options.hold_seconds)
            client.set(run.counter_path, str(value + 1).encode())
            end = time.monotonic_ns()
        finally:
            if not run.options.unlocked:
                lock.release()
        run.record(Hold(name, "Python", node, begin, end, value, value + 1))


def _java_worker(run: _Run, name: str, curator: Any, start: threading.Barrier) -> None:
    from .testing import JavaMutex

    lock = JavaMutex(curator, run.lock_path)
    start.wait()
    for _ in range(run.options.rounds):
        if not run.options.unlocked:
            lock.acquire()
        try:
            begin = time.monotonic_ns()
            # the holder is first among the participants, and the holder is this thread
            node = "(no lock)" if run.options.unlocked else lock.participant_nodes()[0]
            value = int(bytes(curator.getData().forPath(run.counter_path)))
            time.sleep(run.options.hold_seconds)
            curator.setData().forPath(run.counter_path, str(value + 1).encode())
            end = time.monotonic_ns()
        finally:
            if not run.options.unlocked:
                lock.release()
        run.record(Hold(name, "Java", node, begin, end, value, value + 1))


@contextlib.contextmanager
def _ensemble(options: DemoOptions, out: TextIO) -> Iterator[tuple[str, str]]:
    if options.hosts:
        yield options.hosts, "given"
        return
    from .testing import ZooKeeperServer, ZooKeeperServerError

    server = ZooKeeperServer()
    try:
        server.start()
    except (ZooKeeperServerError, OSError) as exc:
        server.close()
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DemoError(f"could not start the embedded ZooKeeper: {first}") from exc
    try:
        yield server.hosts, "embedded"
    finally:
        server.close()


def _kazoo(hosts: str, timeout: float) -> KazooClient:
    """A client as users get one (:func:`pycurator.connect`); DemoError if none in time."""
    try:
        return connect(hosts, connect_timeout=timeout)
    except ConnectTimeout as exc:
        raise DemoError(str(exc)) from exc


def _start_java(hosts: str, count: int, timeout: float) -> tuple[list[Any], str]:
    try:
        from .testing import curator_version, new_curator, start_jvm

        start_jvm()
        version = curator_version()
    except ImportError as exc:
        raise JavaUnavailableError(
            "Java threads need JPype, which is not installed: "
            "pip install 'pycurator-zk[interop]' (or pip install JPype1), or use --java-threads 0"
        ) from exc
    except (RuntimeError, OSError) as exc:
        raise JavaUnavailableError(
            f"cannot start Java Curator: {exc} (or use --java-threads 0)"
        ) from exc
    clients: list[Any] = []
    try:
        for _ in range(count):
            clients.append(new_curator(hosts, connect_timeout=timeout))
    except TimeoutError as exc:
        for client in clients:
            client.close()
        raise DemoError(str(exc)) from exc
    return clients, "Java Curator" if version == "unknown" else f"Java Curator {version}"


def run_demo(options: DemoOptions, out: TextIO) -> Verdict:
    """Run the demo, printing to ``out``; raise :class:`DemoError` if it cannot run."""
    with _ensemble(options, out) as (hosts, origin):
        admin = _kazoo(hosts, options.connect_timeout)
        base = f"{DEMO_ROOT}/{uuid.uuid4().hex[:8]}"
        run = _Run(options, out, f"{base}/lock", f"{base}/counter")
        kazoo_clients: list[KazooClient] = []
        curators: list[Any] = []
        try:
            admin.create(run.counter_path, b"0", makepath=True)
            for _ in range(options.python_threads):
                kazoo_clients.append(_kazoo(hosts, options.connect_timeout))
            java_version = "Java Curator"
            if options.java_threads:
                curators, java_version = _start_java(
                    hosts, options.java_threads, options.connect_timeout
                )
            out.write(
                f"pycurator demo: {options.python_threads} Python thread(s) (pycurator) and "
                f"{options.java_threads} Java thread(s) ({java_version}), "
                f"{options.rounds} round(s) each\n"
                f"ZooKeeper {hosts} ({origin}); lock {run.lock_path}; "
                f"shared counter {run.counter_path}\n"
            )
            if options.unlocked:
                out.write("UNLOCKED: the threads do not take the lock (to show what it prevents)\n")
            out.write(f"\n{'time':>9}  {'who':<10} {'lang':<7} {'lock node':<30} counter\n")
            barrier = threading.Barrier(len(kazoo_clients) + len(curators))
            workers: list[tuple[str, Callable[[], None]]] = []
            for i, client in enumerate(kazoo_clients, 1):
                workers.append(
                    (f"python-{i}", _bind(_python_worker, run, f"python-{i}", client, barrier))
                )
            for i, curator in enumerate(curators, 1):
                workers.append(
                    (f"java-{i}", _bind(_java_worker, run, f"java-{i}", curator, barrier))
                )
            run.started_ns = time.monotonic_ns()
            threads = [
                threading.Thread(target=_guarded(run, name, work), name=name, daemon=True)
                for name, work in workers
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            counter = int(admin.get(run.counter_path)[0])
        finally:
            for curator in curators:
                curator.close()
            for client in kazoo_clients:
                client.stop()
                client.close()
            _remove(admin, base)
            admin.stop()
            admin.close()
    verdict = judge(run.holds, counter, run.errors)
    _print_verdict(verdict, out)
    return verdict


def _bind(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
    return lambda: fn(*args)


def _guarded(run: _Run, name: str, work: Callable[[], None]) -> Callable[[], None]:
    def body() -> None:
        try:
            work()
        except Exception as exc:
            run.fail(name, exc)

    return body


def _remove(client: KazooClient, base: str) -> None:
    with contextlib.suppress(NoNodeError, NotEmptyError):
        client.delete(base, recursive=True)
    with contextlib.suppress(NoNodeError, NotEmptyError):
        client.delete(DEMO_ROOT)


def _print_verdict(verdict: Verdict, out: TextIO) -> None:
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(verdict.per_language.items()))
    out.write(
        f"\nholds: {verdict.holds} ({languages or 'none'})\n"
        f"overlapping holds: {verdict.overlaps}\n"
        f"final counter: {verdict.counter} (expected {verdict.holds}, one per hold)\n"
    )
    for error in verdict.errors:
        out.write(f"error: {error}\n")
    if verdict.excluded:
        scope = "across both languages" if len(verdict.per_language) > 1 else "among its threads"
        out.write(f"verdict: OK: one holder at a time {scope}, no update lost\n")
    else:
        lost = verdict.holds - verdict.counter
        out.write(
            f"verdict: EXCLUSION VIOLATED: {verdict.overlaps} overlapping hold(s), "
            f"{lost} lost update(s)\n"
        )
    out.flush()
