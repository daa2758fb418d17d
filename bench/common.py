"""What the sections share: statistics, the server's own counters, and clients of both languages.

Counters come from one server's four-letter words, so every client of a section that reads them
connects to that one server (the first of ``hosts``).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator import InterProcessMutex, connect
from pycurator.testing import (
    JavaMutex,
    four_letter_word,
    new_curator,
    paths_by_session,
    session_of,
    split_hosts,
)

#: Sessions long enough that idle clients ping rarely (every ~10 s) while a section counts.
SESSION_TIMEOUT_S = 30.0
#: Generous bound for anything that should happen soon on a loaded 2-core machine.
SOON = 60.0
#: Where the sections make their lock paths.
BENCH_ROOT = "/pycurator-bench"

#: The ``mntr`` counters the sections read: requests in, bytes in, bytes out (replies and
#: watch notifications), and watches fired by deletes, data changes and child changes.
REQUESTS = "zk_packets_received"
BYTES_IN = "zk_bytes_received_count"
REPLY_BYTES = "zk_response_bytes"
NOTIFICATION_BYTES = "zk_watch_bytes"
WATCH_COUNT = "zk_watch_count"
FIRED = (
    "zk_sum_node_deleted_watch_count",
    "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count",
)
#: The counters whose deltas the sections report.
COUNTERS = (REQUESTS, BYTES_IN, REPLY_BYTES, NOTIFICATION_BYTES, *FIRED)


def summarize(samples: Sequence[int]) -> dict[str, float]:
    """Median and p99 of nanosecond samples, in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"median_ms": statistics.median(ordered) / 1e6, "p99_ms": p99 / 1e6}


def first_server(hosts: str) -> str:
    """``hosts`` narrowed to its first server, chroot kept."""
    host, port = split_hosts(hosts)[0]
    _, slash, chroot = hosts.partition("/")
    return f"{host}:{port}" + (slash + chroot if slash else "")


class Server:
    """One ZooKeeper server's counters (``mntr``) and watches by session (``wchc``)."""

    def __init__(self, hosts: str) -> None:
        self.hosts = first_server(hosts)
        self._address = split_hosts(self.hosts)[0]
        # what one mntr costs the counters it reads (the four-letter word is counted too)
        self.overhead = {
            key: max(0.0, min(values))
            for key, values in _transpose(self._delta_of_nothing() for _ in range(3)).items()
            if key in COUNTERS
        }

    def word(self, cmd: str) -> str:
        return four_letter_word(*self._address, cmd)

    def mntr(self) -> dict[str, float]:
        counters = {}
        for line in self.word("mntr").splitlines():
            key, _, value = line.partition("\t")
            with contextlib.suppress(ValueError):  # the version and the state are words
                counters[key] = float(value)
        return counters

    def delta(self, before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        """``after - before`` for every counter, less what reading them cost."""
        return {key: after[key] - before[key] - self.overhead.get(key, 0.0) for key in before}

    def _delta_of_nothing(self) -> dict[str, float]:
        before = self.mntr()
        return {key: value - before[key] for key, value in self.mntr().items() if key in before}

    def watches_by_session(self) -> dict[int, list[str]]:
        """Data watches the server holds, as paths by session id."""
        watches = paths_by_session(self.word("wchc"))
        return {int(session, 16): paths for session, paths in watches.items()}

    def watches_of(self, sessions: Iterable[int]) -> int:
        """How many data watches these sessions hold."""
        by_session = self.watches_by_session()
        return sum(len(by_session.get(session, [])) for session in sessions)

    def total_watches(self) -> int:
        """Data watches on the whole server (``wchs``' total)."""
        for line in self.word("wchs").splitlines():
            if line.startswith("Total watches:"):
                return int(line.split(":", 1)[1])
        return 0


def _transpose(deltas: Iterable[dict[str, float]]) -> dict[str, list[float]]:
    columns: dict[str, list[float]] = {}
    for delta in deltas:
        for key, value in delta.items():
            columns.setdefault(key, []).append(value)
    return columns


def fired(delta: dict[str, float]) -> float:
    """Watches the server fired within a delta."""
    return sum(delta.get(key, 0.0) for key in FIRED)


def bytes_out(delta: dict[str, float]) -> float:
    """Bytes the server sent within a delta: replies and watch notifications."""
    return delta.get(REPLY_BYTES, 0.0) + delta.get(NOTIFICATION_BYTES, 0.0)


class Clients:
    """Kazoo and Curator clients of one section, all on one server; :meth:`close` ends them all."""

    def __init__(self, hosts: str) -> None:
        self.hosts = first_server(hosts)
        self._kazoo: list[KazooClient] = []
        self._curator: list[Any] = []

    def kazoo(self, handler: Any = None) -> KazooClient:
        """A started kazoo client, on ``handler`` if given (else kazoo's default)."""
        extra = {} if handler is None else {"handler": handler}
        client = KazooClient(hosts=self.hosts, timeout=SESSION_TIMEOUT_S, **extra)
        client.start(timeout=SOON)
        self._kazoo.append(client)
        return client

    def connect(self) -> KazooClient:
        """A client as :func:`pycurator.connect` makes it, with its defaults."""
        client = connect(self.hosts, connect_timeout=SOON)
        self._kazoo.append(client)
        return client

    def curator(self) -> Any:
        client = new_curator(self.hosts, session_timeout_ms=int(SESSION_TIMEOUT_S * 1000))
        self._curator.append(client)
        return client

    def close(self) -> None:
        for client in self._kazoo:
            client.stop()
            client.close()
        for client in self._curator:
            client.close()
        self._kazoo.clear()
        self._curator.clear()

    def __enter__(self) -> Clients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def session(client: Any) -> int:
    """The session id of a kazoo or a Curator client."""
    if isinstance(client, KazooClient):
        return int(client.client_id[0])
    return session_of(client)[0]


def count_children(client: KazooClient, path: str) -> int:
    try:
        return len(client.get_children(path))
    except NoNodeError:
        return 0


def wait_for_children(
    observer: KazooClient, path: str, count: int, what: str, timeout: float = SOON
) -> None:
    """Wait until ``path`` has ``count`` children."""
    wait_for(lambda: count_children(observer, path) == count, what, timeout)


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = SOON) -> None:
    """Poll ``predicate`` until true; raise ``TimeoutError`` naming ``what`` after ``timeout``."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError(f"not within {timeout:g}s: {what}")
        time.sleep(0.02)


def settle(read: Callable[[], int], target: int, quiet: float = 1.0, timeout: float = SOON) -> int:
    """Poll ``read`` until it reaches ``target`` or stays the same for ``quiet`` seconds; the
    last value read."""
    end = time.monotonic() + timeout
    value = read()
    since = time.monotonic()
    while value < target and time.monotonic() < end:
        time.sleep(0.05)
        new = read()
        if new != value:
            value, since = new, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return value


class Threads:
    """Threads that keep their exceptions; :meth:`join` re-raises the first one."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def start(self, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                self.errors.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self, timeout: float = SOON) -> None:
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        alive = sum(thread.is_alive() for thread in self._threads)
        if self.errors:
            raise self.errors[0]
        if alive:
            raise TimeoutError(f"{alive} threads still running after {timeout:g}s")


def chosen(text: str, known: Sequence[str], what: str) -> list[str]:
    """A comma-separated command-line list, each name one of ``known``; an
    ``argparse.ArgumentTypeError`` naming the unknown ones (and ``what`` they are) otherwise."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(known))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; from {','.join(known)}"
        )
    return names


def unique_path(name: str) -> str:
    """A fresh lock path under :data:`BENCH_ROOT`."""
    return f"{BENCH_ROOT}/{name}-{uuid.uuid4().hex[:8]}"


#: The two implementations the contention sections compare.
LANGUAGES = ("pycurator", "curator")
#: pycurator on :class:`pycurator.handlers.FastThreadingHandler`, where a section reports it.
FAST = "pycurator-fast"
#: pycurator on the client :func:`pycurator.connect` makes (its defaults), where a section
#: reports it.
CONNECT = "pycurator-connect"

#: A pycurator or a Java Curator ``InterProcessMutex``: both are held by the thread that
#: acquired them, and both take ``acquire(timeout) -> bool`` and ``release()``.
Mutex = InterProcessMutex | JavaMutex


def new_mutex(language: str, client: Any, path: str) -> Mutex:
    """A mutex of ``language`` (one of :data:`LANGUAGES`, or :data:`FAST`) on ``client``, a
    kazoo client for pycurator and a Curator client for Curator."""
    if language == "curator":
        return JavaMutex(client, path)
    return InterProcessMutex(client, path)


def new_client(clients: Clients, language: str) -> Any:
    """A kazoo client for pycurator (on the fast handler for :data:`FAST`, :func:`connect`'s
    for :data:`CONNECT`), a Curator client for Curator."""
    if language == "curator":
        return clients.curator()
    if language == CONNECT:
        return clients.connect()
    if language == FAST:
        from pycurator.handlers import FastThreadingHandler

        return clients.kazoo(FastThreadingHandler())
    return clients.kazoo()
