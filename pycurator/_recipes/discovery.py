"""A discovery's queries, as steps: Curator's ``queryForNames``, ``queryForInstances`` and
``queryForInstance``, read as Curator reads them, but every instance of a service asked for at
once, and a node that is no instance skipped and told (Java's query fails for the whole
service on one).

Each read rides through a reconnect within its deadline
(:func:`~pycurator._protocol.waits.read_all_sent_steps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.discovery import ServiceInstance
from .._protocol.discovery_json import InstanceSerializer
from .._protocol.errors import InstanceFormatError
from .._protocol.registration import instance_path, service_path
from .._protocol.requests import GetData, ListChildren
from .._protocol.steps import Steps
from .._protocol.waits import read_all_sent_steps, read_sent_steps


@dataclass(frozen=True)
class Found:
    """What a query read: the instances, and an error naming each node that is none."""

    instances: list[ServiceInstance]
    malformed: list[InstanceFormatError]


def read_instance(
    serializer: InstanceSerializer, data: bytes, path: str
) -> ServiceInstance | InstanceFormatError:
    """The instance node ``path`` holds (``data``), or the error naming it: a serializer's
    failure of any kind is an :class:`InstanceFormatError` with the node's path."""
    try:
        return serializer.deserialize(data)
    except InstanceFormatError as exc:
        return InstanceFormatError(exc.reason, path)
    except Exception as exc:  # a serializer of the user's own: its failure names the node too
        return InstanceFormatError(f"{type(exc).__name__}: {exc}", path)


def names_steps(base_path: str, deadline: Deadline) -> Steps[list[str]]:
    """The services under ``base_path``, in name order; none when it does not exist (Curator's
    ``queryForNames`` throws then)."""
    try:
        names = yield from read_sent_steps(ListChildren(base_path), deadline)
    except NoNodeError:
        return []
    return sorted(names)


def instances_steps(
    base_path: str, name: str, serializer: InstanceSerializer, deadline: Deadline
) -> Steps[Found]:
    """Every instance of service ``name``, in the order of their nodes' names: one listing,
    then every node's data asked for at once. A node deleted meanwhile is left out; one that is
    no instance is left out and named in :attr:`Found.malformed`."""
    parent = service_path(base_path, name)
    try:
        children = yield from read_sent_steps(ListChildren(parent), deadline)
    except NoNodeError:
        return Found([], [])
    paths = wire.full_paths(parent, sorted(children))
    answers = yield from read_all_sent_steps([GetData(path) for path in paths], deadline)
    return _found(serializer, paths, answers)


def _found(
    serializer: InstanceSerializer,
    paths: Sequence[str],
    answers: Sequence[tuple[object, BaseException | None]],
) -> Found:
    found = Found([], [])
    for path, (answer, error) in zip(paths, answers, strict=True):
        if isinstance(error, NoNodeError):
            continue
        if error is not None:
            raise error
        assert isinstance(answer, tuple)
        read = read_instance(serializer, answer[0] or b"", path)
        if isinstance(read, InstanceFormatError):
            found.malformed.append(read)
        else:
            found.instances.append(read)
    return found


def instance_steps(
    base_path: str,
    name: str,
    instance_id: str,
    serializer: InstanceSerializer,
    deadline: Deadline,
) -> Steps[ServiceInstance | None]:
    """The instance ``instance_id`` of service ``name``, or None when its node does not exist;
    :class:`InstanceFormatError` naming the node when it is no instance."""
    path = instance_path(base_path, name, instance_id)
    try:
        data, _ = yield from read_sent_steps(GetData(path), deadline)
    except NoNodeError:
        return None
    read = read_instance(serializer, data or b"", path)
    if isinstance(read, InstanceFormatError):
        raise read
    return read


__all__ = ["Found", "instance_steps", "instances_steps", "names_steps", "read_instance"]
