"""What an election's participants are and how they are read: shared by ``LeaderLatch``,
``LeaderSelector`` and their asyncio forms."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kazoo.exceptions import NoNodeError

from .._client import kazoo_internals
from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.ops import GetData
from .._protocol.steps import Steps
from .._protocol.waits import read_all_sent_steps
from .locks import LockEngine


@dataclass(frozen=True)
class Participant:
    """One participant of an election: its id (the node's data) and whether it leads."""

    id: str
    is_leader: bool


class CloseMode(enum.Enum):
    """What :meth:`LeaderLatch.close` tells the listeners: nothing (``SILENT``, Curator's
    default) or ``not_leader()`` when the latch was leading (``NOTIFY_LEADER``)."""

    SILENT = "silent"
    NOTIFY_LEADER = "notify_leader"


class LeaderLatchListener(Protocol):
    """Told of each change of leadership, in order, on a worker thread."""

    def is_leader(self) -> None:
        """We lead now."""

    def not_leader(self) -> None:
        """We no longer lead."""


def id_bytes(participant_id: str) -> bytes:
    """A participant id as node data (UTF-8); TypeError or ValueError for an unusable id."""
    if not isinstance(participant_id, str):
        raise TypeError(f"id must be a str, not {type(participant_id).__name__}")
    try:
        return participant_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"id cannot be written as UTF-8: {exc.reason}") from None


def participants_steps(engine: LockEngine) -> Steps[list[Participant]]:
    """Curator's ``LeaderSelector.getParticipants`` on ``engine``'s path: each node's data as
    its id, in queue order; nodes gone while reading are skipped and the first one still there
    leads. Reads that ride through a reconnect, within the client's session timeout (see
    :func:`~pycurator._protocol.waits.read_all_sent_steps`): one listing, then every node's data
    asked for at once."""
    deadline = Deadline(kazoo_internals.session_timeout(engine.client))
    names = yield from engine.sorted_children_steps(deadline)
    paths = wire.full_paths(engine.base_path, names)
    outcomes = yield from read_all_sent_steps([GetData(path) for path in paths], deadline)
    participants: list[Participant] = []
    for answer, error in outcomes:
        if isinstance(error, NoNodeError):
            continue
        if error is not None:
            raise error
        data = answer[0] or b""
        participants.append(Participant(data.decode("utf-8", "replace"), not participants))
    return participants


def leader_of(participants: Sequence[Participant]) -> Participant:
    """The leader among ``participants``, or Curator's dummy ``Participant("", False)``."""
    return participants[0] if participants else Participant("", False)


__all__ = [
    "CloseMode",
    "LeaderLatchListener",
    "Participant",
    "id_bytes",
    "leader_of",
    "participants_steps",
]
