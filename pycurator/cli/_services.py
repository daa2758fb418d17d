"""``pycurator services``: the services under a discovery's base path, or the instances of
one, Java's and Python's alike, as a table or as JSON; with ``--watch``, the instances again
each time they change, told by a :class:`~pycurator.discovery.ServiceCache` (the command's own
thread prints; the cache's listener only wakes it), until a signal ends it."""

from __future__ import annotations

import argparse
import errno
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, TextIO

from kazoo.client import KazooClient

from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_json import JsonInstanceSerializer
from .._protocol.errors import InstanceFormatError
from .._protocol.registration import check_segment, service_path
from .._threads.discovery import ServiceDiscovery
from .._threads.service_cache import ServiceCache
from ._common import EXIT_USAGE, CliError, Interrupter, checked_path, connected, output_gone
from ._text import shown
from ._watch import CONNECTED, GONE, STATES, SUSPENDED

#: The bytes ``--json`` shows an instance as: Curator's, ``enabled`` included.
_FULL = JsonInstanceSerializer(compatible=False)


def checked_name(name: str | None) -> str | None:
    """``NAME`` if it is one node of the base path; a usage error naming it otherwise."""
    if name is not None:
        try:
            check_segment("service name", name)
        except ValueError as exc:
            raise CliError(f"bad NAME: {exc}", EXIT_USAGE) from None
    return name


def instance_json(instance: ServiceInstance) -> dict[str, Any]:
    """An instance as ``--json`` shows it: its node's JSON, as Jackson writes it (the payload
    with its Java class), ``enabled`` included, and the URI it builds (None without a
    template)."""
    document: dict[str, Any] = json.loads(_FULL.serialize(instance))
    document["uri"] = instance.build_uri_spec() if instance.uri_spec is not None else None
    return document


def _when(millis: int) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))
    except (OverflowError, OSError, ValueError):
        return str(millis)


def instances_table(instances: list[ServiceInstance], malformed: list[InstanceFormatError]) -> str:
    """The instances as aligned columns, then a line per node that is no instance."""
    rows = [("ID", "ADDRESS", "PORT", "SSL", "TYPE", "ENABLED", "REGISTERED", "URI")]
    for i in instances:
        rows.append(
            (
                shown(i.id),
                shown(i.address or "-"),
                "-" if i.port is None else str(i.port),
                "-" if i.ssl_port is None else str(i.ssl_port),
                i.service_type.value,
                "yes" if i.enabled else "no",
                _when(i.registration_time_utc),
                shown(i.build_uri_spec() or "-"),
            )
        )
    lines = columns(rows)
    lines += [f"unreadable: {shown(str(error.path))}: {shown(error.reason)}" for error in malformed]
    return "".join(f"{line}\n" for line in lines)


def columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows as aligned columns; the last column is not padded."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in rows
    ]


def _counts(client: KazooClient, base: str, names: list[str]) -> list[int | None]:
    """How many nodes each service has (None for one gone meanwhile), asked for at once."""
    asked = [client.exists_async(service_path(base, name)) for name in names]
    return [None if (stat := answer.get()) is None else stat.numChildren for answer in asked]


def instances_document(
    base: str, name: str, instances: list[ServiceInstance], malformed: list[InstanceFormatError]
) -> dict[str, Any]:
    """The instances of ``name`` as ``--json`` shows them."""
    return {
        "base": base,
        "name": name,
        "instances": [instance_json(i) for i in instances],
        "unreadable": [{"node": e.path, "reason": e.reason} for e in malformed],
    }


class _Waker:
    """The cache's listener: notes the connection's changes and wakes the printing thread,
    nothing more (it runs on the client's worker)."""

    def __init__(self, wake: threading.Event, states: deque[str]) -> None:
        self._wake = wake
        self._states = states

    def cache_changed(self) -> None:
        self._wake.set()

    def state_changed(self, client: object, state: str) -> None:
        self._states.append(STATES.get(state, SUSPENDED))
        self._wake.set()


def watch_instances(
    client: KazooClient, base: str, name: str, out: TextIO, as_json: bool, interval: float
) -> None:
    """Print the instances of ``name`` on ``out``, and again each time they change (with
    ``as_json``, one JSON document a line, its ``connection`` saying whether it may be stale);
    a suspended connection or an expired session is told at once.

    Returns on SIGTERM, SIGHUP or SIGINT; raises ``BrokenPipeError`` once the reader of ``out``
    has gone (noticed within ``interval``)."""
    stop, wake, states = threading.Event(), threading.Event(), deque[str]()
    discovery = ServiceDiscovery(client, base)
    discovery.on_malformed(lambda error: wake.set())
    cache = discovery.service_cache(name)
    cache.add_listener(_Waker(wake, states))

    def end() -> None:
        stop.set()
        wake.set()

    try:
        with Interrupter().ending(end):
            cache.start()
            connection, last = CONNECTED if client.connected else SUSPENDED, ""
            while not stop.is_set():
                wake.clear()
                if output_gone(out):
                    raise BrokenPipeError(errno.EPIPE, "the reader of the output has gone")
                while states:
                    connection = states.popleft()
                    if not as_json and connection != CONNECTED:
                        out.write(f"{time.strftime('%H:%M:%S')} {GONE[connection]}\n")
                text = _shown(base, name, cache, connection, as_json)
                if text != last:
                    stamp = "" if as_json else f"{time.strftime('%H:%M:%S')} {shown(name)}:\n"
                    out.write(stamp + text)
                    out.flush()
                    last = text
                wake.wait(interval)
    finally:
        cache.close()


def _shown(base: str, name: str, cache: ServiceCache, connection: str, as_json: bool) -> str:
    """What the watch prints of the cache now: a table, or a JSON document on one line."""
    instances, unreadable = cache.get_instances(), cache.malformed()
    if not as_json:
        return instances_table(instances, unreadable)
    document = instances_document(base, name, instances, unreadable)
    document["connection"] = connection
    return json.dumps(document) + "\n"


def cmd_services(args: argparse.Namespace, out: TextIO) -> int:
    """List the services under ``--base``, or the instances of NAME; see ``pycurator
    services --help``."""
    base = checked_path(args.base, "--base")
    name = checked_name(args.name)
    if args.watch and name is None:
        raise CliError("--watch needs NAME: the service whose instances to follow", EXIT_USAGE)
    with connected(args) as client:
        if name is not None and args.watch:
            watch_instances(client, base, name, out, args.json, args.interval)
            return 0
        discovery = ServiceDiscovery(client, base)
        if name is None:
            names = discovery.query_for_names()
            counts = _counts(client, base, names)
            pairs = list(zip(names, counts, strict=True))
            if args.json:
                services = [{"name": n, "instances": c} for n, c in pairs]
                out.write(json.dumps({"base": base, "services": services}, indent=2) + "\n")
            else:
                rows = [("NAME", "INSTANCES")]
                rows += [(shown(n), "-" if c is None else str(c)) for n, c in pairs]
                out.write("".join(f"{line}\n" for line in columns(rows)))
            return 0
        malformed: list[InstanceFormatError] = []
        discovery.on_malformed(malformed.append)
        instances = discovery.query_for_instances(name)
    if args.json:
        out.write(json.dumps(instances_document(base, name, instances, malformed), indent=2) + "\n")
    else:
        out.write(instances_table(instances, malformed))
    return 0
