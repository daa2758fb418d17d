"""Service discovery's registrations under exploration: what a service does with its
``ServiceDiscovery`` (start, register an instance, update it, perhaps unregister it), as a
program both front ends run, and the invariant ``registered`` on what the tree holds once the
schedule is quiet (its faults healed and its background work settled):

- exactly one node for each instance its user registered (or updated) last, of its type's mode
  (in the client's live session for a dynamic one), holding the bytes of its latest data;
- none for an instance its user unregistered; none for any, once the discovery is closed.

A user's wish counts from its call (a registration that could not reach the server in time
stays registered, as the docs say; one made by a task cancelled meanwhile too), and a client
stopped by its owner promises nothing more. The discoveries stay open past their programs'
end, so that the quiet tree is read with them registered; then each is closed and the tree
read again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from pycurator.aio import discovery as aio_discovery
from pycurator.discovery import JsonInstanceSerializer, ServiceDiscovery, ServiceInstance
from pycurator.discovery import ServiceType as Type

from .participants import DELETE_WAIT, ENDINGS, Call, Participant, Program, Sleep
from .world import SESSION_TIMEOUT, World, sequence

#: Where the registrations go, and their service.
BASE, SERVICE = "/services", "svc"
#: The longest ``register_service`` or ``update_service`` may take: the client's session
#: timeout (then ``ConnectionLoss``, the instance still registered).
WRITE_BOUND = SESSION_TIMEOUT + 1e-6
_BYTES = JsonInstanceSerializer()
#: Each contender's instance type, in turn.
TYPES = (Type.DYNAMIC, Type.DYNAMIC_SEQUENTIAL, Type.STATIC)


@dataclasses.dataclass
class Registrant:
    """One user's discovery and what it last asked of it (its instance, or None once it
    unregistered); ``closed`` once its discovery was closed."""

    participant: Participant
    discovery: Any
    instance_id: str
    kind: Type
    wanted: ServiceInstance | None = None
    closed: bool = False


def make(p: Participant) -> Any:
    """A contender's discovery on its client, for its front end."""
    if p.contender.front == "a":
        return aio_discovery.ServiceDiscovery(p.client, BASE)
    return ServiceDiscovery(p.client, BASE)


def registration_program(p: Participant, discovery: Any) -> Program:
    """A service's user: start, register its instance (of each type in turn), update it
    twice, and, one in three, unregister it; the discovery is left open."""
    registrants = _registrants(p.world)
    index = len(registrants)
    registrant = Registrant(p, discovery, f"i{index}", TYPES[index % len(TYPES)])
    registrants.append(registrant)
    kind = registrant.kind
    try:
        yield Call(discovery.start)
        for version in range(3):
            if p.cancelled:
                return
            instance = ServiceInstance(
                SERVICE, id=registrant.instance_id, port=8000 + version, service_type=kind,
                registration_time_utc=1,
            )  # fmt: skip
            registrant.wanted = instance
            call = discovery.register_service if version == 0 else discovery.update_service
            yield from p.timed("register" if version == 0 else "update", WRITE_BOUND,
                               Call(call, (instance,)))  # fmt: skip
            yield Sleep(p.contender.hold)
        if index % 3 == 1:
            registrant.wanted = None
            yield from p.timed("unregister", DELETE_WAIT, Call(discovery.unregister_service,
                                                                (instance,)))  # fmt: skip
    except ENDINGS:
        pass


def _registrants(world: World) -> list[Registrant]:
    found: list[Registrant] | None = getattr(world, "registrants", None)
    if found is None:
        found = []
        world.registrants = found  # type: ignore[attr-defined]
        world.when_quiet.append(lambda: _quiet(world, found))
    return found


def _nodes_of(world: World, instance_id: str) -> dict[str, Any]:
    """The nodes the server holds for ``instance_id`` (its own, or sequential ones)."""
    parent = world.server.nodes.get(f"{BASE}/{SERVICE}")
    if parent is None:
        return {}
    size = len(instance_id)
    found = {}
    for name in parent.children:
        tail = name[size:]
        if name == instance_id or (name.startswith(instance_id) and len(tail) == 10
                                   and sequence(name) >= 0):  # fmt: skip
            found[name] = world.server.nodes[f"{BASE}/{SERVICE}/{name}"]
    return found


def _check(world: World, registrant: Registrant) -> None:
    link = registrant.participant.link
    if link.stopped_at is not None:
        return  # its owner stopped the client: nothing more is promised
    found = _nodes_of(world, registrant.instance_id)
    who = f"{registrant.participant.name} ({registrant.kind.value})"
    wanted = None if registrant.closed else registrant.wanted
    if wanted is None:
        if found:
            state = "closed" if registrant.closed else "unregistered"
            world.fail(f"registered: {who}: {state}, yet {_few(found)} stand")
        return
    if len(found) != 1:
        world.fail(f"registered: {who}: {len(found)} nodes for one instance ({_few(found)})")
        return
    ((name, node),) = found.items()
    session = link.client._session_id
    live = node.owner == session and world.server.alive(session)
    if (node.owner != 0) != wanted.service_type.is_dynamic or (node.owner and not live):
        world.fail(f"registered: {who}: {name} is not a node of its type in the live session")
    elif node.data != _BYTES.serialize(wanted):
        world.fail(f"registered: {who}: {name} holds {node.data!r}, not its latest data")


def _few(names: dict[str, Any]) -> str:
    """At most three names, and how many more."""
    shown = sorted(names)
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return ", ".join(shown[:3]) + more


def _quiet(world: World, registrants: list[Registrant]) -> Callable[[], None]:
    """Once quiet: each instance's node checked; then each discovery closed (the check once
    that has settled is returned)."""
    for registrant in registrants:
        _check(world, registrant)
    for registrant in registrants:
        registrant.closed = True
        p = registrant.participant
        if p.link.stopped_at is None:
            p.on_loop(functools.partial(_close, p, registrant.discovery))

    def closed() -> None:
        for registrant in registrants:
            _check(world, registrant)

    return closed


def _close(p: Participant, discovery: Any) -> None:
    """Close ``discovery`` where its participant calls it (as a task on the loop)."""
    if p.contender.front == "a":
        p.world.loop.create_task(_closed(discovery))
        return
    with contextlib.suppress(*ENDINGS):
        discovery.close()


async def _closed(discovery: Any) -> None:
    with contextlib.suppress(*ENDINGS):
        await discovery.close()
