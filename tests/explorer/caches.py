"""Caches under exploration: a writer that changes a subtree as another client would (nodes made,
written, deleted, made again at the same version with other data), and what each cache of it
tells its user, checked against the server.

Two invariants (:data:`~tests.explorer.world.INVARIANTS`):

- ``cache-converges``: once the schedule is quiet (faults healed, the writer done, the world
  settled), a cache whose client lives holds what the server holds below its path, node for
  node, and the last event it told of each node says what the node is (its data, version and
  creation): nothing missed;
- ``told-once``: each event a cache tells follows the last one it told of its node (a creation
  of a node not told, a change or deletion of the node as last told, a change of another
  version): nothing told twice, nothing told out of turn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .connection import Link
from .world import World

#: Where the caches look, and where the writer writes.
ROOT = "/cache"
#: Simulated seconds the writer writes for, from the schedule's start.
WRITES_FOR = 3.0


def _state(node: Any) -> tuple[bytes | None, int, int] | None:
    """What a node is, as a user reads it from a cache's ``ChildData``: data, version,
    creation."""
    if node is None:
        return None
    stat = node.stat
    return node.data, stat.version, stat.czxid


@dataclasses.dataclass(eq=False)
class CacheRecord:
    """One cache and what it told: the last state (data, version, creation) told of each
    node."""

    who: str
    link: Link
    cache: Any
    told: dict[str, tuple[bytes | None, int, int] | None] = dataclasses.field(default_factory=dict)
    closed: bool = False

    def listener(self, world: World) -> Any:
        """The cache's listener: checks each event against the last told of its node."""

        def event(kind: Any, old: Any, new: Any) -> None:
            node = new if new is not None else old
            path = node.path
            before, after = self.told.get(path), _state(new)
            name = kind.name
            wrong = ""
            if name == "NODE_CREATED" and (before is not None or old is not None):
                wrong = "a creation of a node told there already"
            elif name != "NODE_CREATED" and (before is None or _state(old) != before):
                wrong = f"a {name} of a node whose last told state was {before}"
            elif name == "NODE_CHANGED" and after is not None and before == after:
                wrong = "a change to the version told already"
            if wrong:
                world.fail(f"told-once: {self.who} told {name} {path}: {wrong}")
            self.told[path] = after

        return event


def follow(world: World, who: str, link: Link, cache: Any) -> CacheRecord:
    """Record what ``cache`` tells, and check it once the schedule is quiet."""
    record = CacheRecord(who, link, cache)
    cache.add_listener(record.listener(world))
    world.finals.append(lambda: _converged(world, record))
    return record


def _converged(world: World, record: CacheRecord) -> None:
    """``cache-converges`` for ``record``, once the schedule is quiet (see the module doc)."""
    if record.closed or record.link.stopped_at is not None:
        return
    server = {
        path: (node.data, node.version, node.czxid)
        for path, node in world.server.nodes.items()
        if path == ROOT or path.startswith(ROOT + "/")
    }
    held = {node.path: _state(node) for node in record.cache}
    if held != server:
        missing = sorted(set(server) - set(held))
        extra = sorted(set(held) - set(server))
        stale = sorted(p for p in set(held) & set(server) if held[p] != server[p])
        world.fail(
            f"cache-converges: {record.who} holds what the server does not: missing {missing},"
            f" not there {extra}, stale {stale}"
        )
    told = {path: state for path, state in record.told.items() if state is not None}
    if told != server:
        wrong = sorted(p for p in set(told) | set(server) if told.get(p) != server.get(p))
        world.fail(f"cache-converges: {record.who} last told of {wrong} is not what they are")


def write_now_and_then(world: World) -> None:
    """Another client changes the subtree now and then, for :data:`WRITES_FOR` seconds."""
    server, rng = world.server, world.rng
    server.create(0, ROOT, b"root", 0)
    count = [0]

    def leaves() -> list[str]:
        return [
            path
            for path, node in server.nodes.items()
            if path.startswith(ROOT + "/") and not node.children
        ]

    def write() -> None:
        count[0] += 1
        nodes = [p for p in server.nodes if p == ROOT or p.startswith(ROOT + "/")]
        choice = rng.random()
        if choice < 0.35 or len(nodes) < 3:
            parent = rng.choice(nodes) if rng.random() < 0.4 else ROOT
            if parent.count("/") < 4:
                path = f"{parent}/n{count[0]}"
                server.create(0, path, f"v{count[0]}".encode(), 0)
        elif choice < 0.65:
            server.write(rng.choice(nodes), rng.choice([b"same", f"w{count[0]}".encode()]))
        elif choice < 0.85 and leaves():
            server.delete_by_another(rng.choice(leaves()))
        elif leaves():  # deleted and made again at once: its version 0 again, other data
            path = rng.choice(leaves())
            server.delete_by_another(path)
            server.create(0, path, f"again{count[0]}".encode(), 0)
        if world.now < WRITES_FOR:
            world.hub.call_later(rng.choice([0.01, 0.1, 0.4]), write, "write")

    world.hub.call_later(0.05, write, "write")


__all__ = ["ROOT", "WRITES_FOR", "CacheRecord", "follow", "write_now_and_then"]
