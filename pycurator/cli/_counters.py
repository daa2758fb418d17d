"""``pycurator count`` (read or change a ``SharedCount`` or an atomic number from a shell), and
how ``pycurator inspect`` shows a counter (its value as each Java recipe reads it) and a double
barrier (its members)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.retry import KazooRetry

from .._protocol.counters import INT, LONG, NumberType
from .._protocol.errors import CorruptedDataError
from .._recipes.inspection_counters import BarrierView, CounterView, Member
from .._threads.atomic import DistributedAtomicInteger, DistributedAtomicLong
from ._common import EXIT_ERROR, EXIT_TIMEOUT, CliError, checked_path, connected
from ._text import shown, shown_data
from ._views import aligned

#: The Java types ``count`` reads and adds to, by option, and the recipe that adds.
TYPES: dict[str, tuple[NumberType, Callable[..., Any]]] = {
    "int": (INT, DistributedAtomicInteger),
    "long": (LONG, DistributedAtomicLong),
}
#: A node's size to its type, where ``--int`` or ``--long`` does not say.
TYPE_OF_SIZE = {INT.size: "int", LONG.size: "long"}


def java_long(text: str) -> int:
    """An argparse type: a whole number that fits a Java ``long`` (``--add``)."""
    try:
        return LONG.check(int(text), "it")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number that fits a Java long, not {text!r}"
        ) from None


def _data_json(data: bytes) -> tuple[str, str]:
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.hex(), "hex"


def _age(created_ms: int, now_ms: int) -> float:
    return max(0, now_ms - created_ms) / 1000


def counter_as_json(view: CounterView) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints for a counter."""
    return {
        "path": view.path,
        "exists": True,
        "system": "curator",
        "layout": "counter",
        "data_hex": view.data.hex(),
        "version": view.version,
        "zxid": view.zxid,
        "readings": dict(view.readings),
    }


def counter_as_table(view: CounterView) -> str:
    """What ``inspect`` prints for a counter: its bytes, and what each recipe reads there."""
    lines = [
        f"{shown(view.path)}: counter, {len(view.data)} bytes ({view.data.hex()}), "
        f"version {view.version}"
    ]
    width = max(len(recipe) for recipe in view.readings)
    for recipe, value in view.readings.items():
        if value is None:
            said = "- (Java throws: too few bytes)"
        elif len(view.data) > (LONG.size if recipe.endswith("Long") else INT.size):
            said = f"{value} (its first bytes)"
        else:
            said = str(value)
        lines.append(f"{recipe.ljust(width)}  {said}")
    return "\n".join(lines) + "\n"


def _member_json(view: BarrierView, member: Member, now_ms: int) -> dict[str, Any]:
    data, encoding = _data_json(member.data)
    return {
        "node": f"{view.path}/{member.name}",
        "session": f"0x{member.session:x}",
        "data": data,
        "data_encoding": encoding,
        "age_seconds": round(_age(member.created_ms, now_ms), 3),
    }


def barrier_as_json(view: BarrierView, now_ms: int) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints for a double barrier."""
    return {
        "path": view.path,
        "exists": True,
        "system": "curator",
        "layout": "double-barrier",
        "ready": view.ready,
        "member_count": len(view.members),
        "members": [_member_json(view, member, now_ms) for member in view.members],
    }


def barrier_as_table(view: BarrierView, now_ms: int) -> str:
    """What ``inspect`` prints for a double barrier: whether ready, and each member."""
    state = "ready (the members entered)" if view.ready else "not ready (waiting for members)"
    lines = [f"{shown(view.path)}: double barrier, {len(view.members)} member(s), {state}"]
    rows = [("SESSION", "AGE", "DATA", "MEMBER")]
    for member in view.members:
        age = f"{_age(member.created_ms, now_ms):.1f}s"
        rows.append((f"0x{member.session:x}", age, shown_data(member.data, 24), member.name))
    if view.members:
        lines += aligned(rows)
    return "\n".join(lines) + "\n"


def shown_counter_or_barrier(view: CounterView | BarrierView, as_json: bool, now_ms: int) -> str:
    """What ``inspect`` prints for a counter or a double barrier (``as_json``: its document)."""
    if isinstance(view, CounterView):
        document = counter_as_json(view)
        table = counter_as_table(view)
    else:
        document = barrier_as_json(view, now_ms)
        table = barrier_as_table(view, now_ms)
    return json.dumps(document, indent=2) + "\n" if as_json else table


# -- count -----------------------------------------------------------------------------------


def _read(client: KazooClient, path: str) -> bytes | None:
    """The counter's bytes (None: no node); CliError for a node with children."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    if stat.numChildren:
        raise CliError(f"{shown(path)} has children: not a counter ('pycurator inspect' it)")
    return bytes(data or b"")


def _type(args: argparse.Namespace, path: str, data: bytes | None) -> str:
    if args.int or args.long:
        return "int" if args.int else "long"
    if data is not None and len(data) in TYPE_OF_SIZE:
        return TYPE_OF_SIZE[len(data)]
    if data is None:
        what = "no such node"
    else:
        what = f"{len(data)} bytes ({data.hex() or 'empty'}), neither an int's 4 nor a long's 8"
    raise CliError(f"{shown(path)}: {what}: say --int or --long")


def cmd_count(args: argparse.Namespace, out: TextIO) -> int:
    """Print the counter at ``PATH`` (a ``SharedCount`` or an atomic number, as Java reads it),
    or add ``--add N`` to it atomically and print the new value."""
    path = checked_path(args.path)
    with connected(args) as client:
        data = _read(client, path)
        if data is None and args.add is None:
            raise CliError(f"no such node: {shown(path)}")
        kind = _type(args, path, data)
        number, recipe = TYPES[kind]
        if args.add is None:
            assert data is not None
            try:
                value = number.decode_atomic(data, path)
            except CorruptedDataError as exc:
                raise CliError(str(exc)) from exc
            return _print(out, args, path, kind, value)
        try:
            delta = number.check(args.add, "--add")
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        retry = KazooRetry(
            max_tries=-1, delay=0.01, backoff=2, max_delay=0.5, deadline=args.timeout
        )
        try:
            result = recipe(client, path, retry).add(delta)
        except CorruptedDataError as exc:
            raise CliError(str(exc)) from exc
    if result.unknown:
        raise CliError(
            f"the answer to the write was lost: {shown(path)} got {args.add} added once or not "
            f"at all (it held {result.pre_value}; read it again to see)",
            EXIT_ERROR,
        )
    if not result.succeeded:
        raise CliError(
            f"not added within {args.timeout:g}s: others changed {shown(path)} at every try",
            EXIT_TIMEOUT,
        )
    return _print(out, args, path, kind, result.post_value)


def _print(out: TextIO, args: argparse.Namespace, path: str, kind: str, value: int) -> int:
    if args.json:
        out.write(json.dumps({"path": path, "type": kind, "value": value}) + "\n")
    else:
        out.write(f"{value}\n")
    return 0


__all__ = [
    "barrier_as_json",
    "barrier_as_table",
    "cmd_count",
    "counter_as_json",
    "counter_as_table",
    "java_long",
    "shown_counter_or_barrier",
]
