"""One pycurator case of the ``scale`` section, in a process of its own so that its threads and
its memory are the case's alone.

``python -m bench.scale_case CASE HOSTS N [--handler fast] [--no-bounce]`` takes N items of one
kind on paths of their own (N waiters on one path for the waiter cases), then, with everything
held, asks its parent for a server bounce, and releases everything. It prints JSON lines: one
``{"event": "bounce"}`` when everything is held (the parent stops the server, starts it again
with its data and answers ``restarted`` on stdin; meanwhile the case reads its thread count
every few milliseconds), and one ``{"event": "result", ...}`` at the end.

Threads and RSS are the process's own (``/proc/self/status``), against a baseline read after
importing and connecting. An item counts as held after the bounce by what the recipe says
without asking the server (``lost_event``, ``has_leadership()``); once every item is back, or
nothing has changed for :data:`QUIET_S` since the reconnect, each item's own answer
(``is_held()``...) is compared with the server's: *wrong* counts items that say they are held
while their node is gone or another session's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Sequence
from types import FrameType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import KazooState

from pycurator import reconnecting_retry

from .common import SESSION_TIMEOUT_S, SOON, Server
from .scale_items import CASES, Case, until

#: How often the thread count is read while the server is bounced.
SAMPLE_S = 0.005
#: Items not back this long after the reconnect, with nothing changing, count as reported lost
#: (10,000 threads verifying holds on 2 busy cores made no visible progress for over 10 s).
QUIET_S = 30.0
#: The longest the items may take to come back (or to be reported lost) after the restart.
RECOVER_LIMIT_S = 300.0
#: What the threaded workers started by a change get to end before threads are counted.
SETTLE_S = 1.0


def status() -> dict[str, int]:
    """This process's OS threads and resident set size in kB (``/proc/self/status``)."""
    found = {}
    with open("/proc/self/status") as lines:
        for line in lines:
            key, _, value = line.partition(":")
            if key == "Threads":
                found["threads"] = int(value)
            elif key == "VmRSS":
                found["rss_kb"] = int(value.split()[0])
    return found


def threads() -> int:
    return status()["threads"]


def emit(message: dict[str, object]) -> None:
    print(json.dumps(message), flush=True)


def stacks() -> str:
    """Every thread's stack, identical ones counted once: where a stuck case stands."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    seen: collections.Counter[str] = collections.Counter()
    first: dict[str, str] = {}
    for ident, frame in sys._current_frames().items():
        stack = "".join(traceback.format_stack(frame))
        seen[stack] += 1
        first.setdefault(stack, names.get(ident, str(ident)))
    return "".join(
        f"--- {count} thread(s) like {first[stack]}:\n{stack}" for stack, count in seen.items()
    )


def dump_stacks(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write(stacks())
    sys.stderr.flush()


class HandshakeTimeouts(logging.Handler):
    """Counts kazoo's connection attempts that waited out their whole handshake timeout (the
    session timeout over the number of servers): a standalone server that is still loading its
    database neither answers nor closes a connection (it fails to close it, a
    ``NullPointerException``; docs/operations.md, "Reconnecting"), and ZooKeeper's Java client
    would wait as long. kazoo's records go nowhere else: a bounce is expected."""

    def __init__(self, losses: Losses) -> None:
        super().__init__()
        self.losses = losses
        kazoo = logging.getLogger("kazoo")
        kazoo.setLevel(logging.WARNING)
        kazoo.propagate = False
        kazoo.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Connection time-out"):
            self.losses.handshake_timeouts += 1


class Losses:
    """Connections lost (SUSPENDED or LOST) in each phase of the case: outside the bounce,
    each one says the client could not keep up. ``connected_at``: when the client last
    connected (``time.monotonic()``)."""

    def __init__(self, client: KazooClient) -> None:
        self.phase = "take"
        self.counts: dict[str, int] = {}
        self.connected_at: float | None = None
        self.handshake_timeouts = 0
        client.add_listener(self._heard)

    def _heard(self, state: str) -> bool:
        if state == KazooState.CONNECTED:
            self.connected_at = time.monotonic()
        else:
            self.counts[self.phase] = self.counts.get(self.phase, 0) + 1
        return False


async def bounce(case: Case, losses: Losses) -> dict[str, object]:
    """Ask for the bounce, sample threads until the items are back (or reported lost), and
    compare what they say with the server. ``reconnect_after_restart_s``: how long after the
    server was serving again the client connected (0 when it connected before this process
    heard of the restart; None when it never did)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def on_input() -> None:
        if not answer.done():
            answer.set_result(sys.stdin.readline())

    loop.add_reader(sys.stdin.fileno(), on_input)
    peak = threads()
    started = time.monotonic()
    losses.connected_at = None
    losses.handshake_timeouts = 0
    emit({"event": "bounce"})
    try:
        while not answer.done():
            peak = max(peak, threads())
            await asyncio.sleep(SAMPLE_S)
    finally:
        loop.remove_reader(sys.stdin.fileno())
    restarted = time.monotonic()
    held: int | None = None
    changed = next_look = restarted
    while True:
        peak = max(peak, threads())
        now = time.monotonic()
        if now >= next_look:
            count = await case.held_count()
            next_look = now + case.poll_s
            if count != held:
                held, changed = count, now
            quiet = case.client.connected and now - changed > QUIET_S
            if held == case.size or quiet or now - restarted > RECOVER_LIMIT_S:
                break
        await asyncio.sleep(SAMPLE_S)
    back = time.monotonic()
    while time.monotonic() < back + SETTLE_S:  # workers the reconnect started may still run
        peak = max(peak, threads())
        await asyncio.sleep(SAMPLE_S)
    found: dict[str, object] = {
        "peak_threads": peak,
        "threads_after": threads(),
        "all_back": held == case.size,
        "back_after_restart_s": back - restarted,
        "reconnect_after_restart_s": (
            None if losses.connected_at is None else max(0.0, losses.connected_at - restarted)
        ),
        "handshake_timeouts": losses.handshake_timeouts,
        "bounce_s": back - started,
    }
    if not responsive(case.client):
        return {**found, "client_stuck": True}
    return {**found, **await case.truth()}


def responsive(client: KazooClient) -> bool:
    """Whether the client still answers a request within :data:`SOON`, asked from a helper
    thread (the request of a stuck client blocks its sender)."""
    answered = threading.Event()

    def ask() -> None:
        with contextlib.suppress(KazooException):
            client.exists("/")
        answered.set()

    threading.Thread(target=ask, daemon=True).start()
    return answered.wait(SOON)


async def measure(case: Case, bounce_too: bool, losses: Losses) -> dict[str, object]:
    """Take, bounce and release; the figures as one dict."""
    server = case.server
    watches = server.mntr().get("zk_watch_count", 0)  # a client's own, if any
    gc.collect()
    base = status()
    started = time.monotonic()
    await case.take()
    took = time.monotonic() - started
    await asyncio.sleep(SETTLE_S)
    gc.collect()
    steady = status()
    result: dict[str, object] = {
        "items": case.size,
        "baseline": base,
        "acquire_s": took,
        "steady": steady,
        "rss_kb_per_item": (steady["rss_kb"] - base["rss_kb"]) / case.n,
        "threads_per_item": (steady["threads"] - base["threads"]) / case.n,
    }
    if bounce_too and case.bounces:
        losses.phase = "bounce"
        result["bounce"] = bounce_ = await bounce(case, losses)
        if bounce_.get("client_stuck"):
            result["error"] = "the client no longer sent requests after the bounce"
            result["connection_losses"] = dict(losses.counts)
            return result  # nothing can be checked or released
    losses.phase = "release"
    started = time.monotonic()
    await case.release()
    await until(
        lambda: server.mntr().get("zk_ephemerals_count", 0) == 0, "every node deleted", SOON
    )
    result["release_s"] = time.monotonic() - started
    await asyncio.sleep(SETTLE_S)
    counters = server.mntr()
    result["after_release"] = {
        "threads": threads(),
        "ephemerals": counters.get("zk_ephemerals_count", -1),
        "watches": counters.get("zk_watch_count", -1) - watches,
    }
    result["connection_losses"] = dict(losses.counts)  # not the client's own stop, to come
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_case", description=__doc__)
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("hosts")
    parser.add_argument("n", type=int)
    parser.add_argument("--root", default="/pycurator-bench/scale")
    parser.add_argument("--handler", choices=("threading", "fast"), default="threading")
    parser.add_argument("--no-bounce", action="store_true")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGUSR1, dump_stacks)  # the parent's question when a case is stuck
    handler: Any = SequentialThreadingHandler()
    if args.handler == "fast":
        from pycurator.handlers import FastThreadingHandler

        handler = FastThreadingHandler()
    # reconnecting within a second of the server's return, as Curator's client does: kazoo's
    # default waits, between attempts, up to about as long again as the outage has lasted
    client = KazooClient(
        hosts=args.hosts,
        timeout=SESSION_TIMEOUT_S,
        handler=handler,
        connection_retry=reconnecting_retry(handler),
    )
    client.start(timeout=SOON)
    losses = Losses(client)
    HandshakeTimeouts(losses)
    root = f"{args.root}/{args.case}-{uuid.uuid4().hex[:8]}"
    case = CASES[args.case](client, Server(args.hosts), root, args.n)
    head = {"event": "result", "case": args.case, "handler": args.handler, "n": args.n}
    try:
        result = asyncio.run(measure(case, not args.no_bounce, losses))
    except Exception as exc:
        # the client may be stuck: leave it to the server to end the session
        emit({**head, "error": f"{type(exc).__name__}: {exc}", "connection_losses": losses.counts})
        sys.stderr.write(f"{args.case} failed:\n{traceback.format_exc()}its threads:\n{stacks()}")
        sys.stderr.flush()
        os._exit(1)
    if "error" in result:
        emit({**head, **result})
        sys.stderr.write(f"{args.case}: {result['error']}; its threads:\n{stacks()}")
        os._exit(1)
    result["client_stop_s"] = stop(client)
    emit({**head, **result})
    sys.stdout.flush()
    os._exit(0)  # without waiting for threads a stuck client left behind


def stop(client: KazooClient) -> float | None:
    """Stop and close the client: the seconds it took, or None when ``stop()`` did not return
    within :data:`SOON` (a stuck client; its threads' stacks go to stderr)."""
    started = time.monotonic()
    stopping = threading.Thread(target=lambda: (client.stop(), client.close()), daemon=True)
    stopping.start()
    stopping.join(SOON)
    if stopping.is_alive():
        sys.stderr.write(f"client.stop() did not return; the threads:\n{stacks()}")
        return None
    return time.monotonic() - started


if __name__ == "__main__":
    raise SystemExit(main())
