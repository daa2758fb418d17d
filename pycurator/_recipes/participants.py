"""The participants of an election, read from the tree as Curator's ``getParticipants`` reads
them, as steps: :class:`Participant`, :func:`participants_steps` and :func:`leader_of`; and a
participant's id as its node's data (:func:`id_bytes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from .._protocol import wire
from .._protocol.deadline import Deadline
from .._protocol.requests import GetData
from .._protocol.steps import Steps
from .._protocol.waits import read_all_sent_steps
from .lock_engine import LockEngine


@dataclass(frozen=True)
class Participant:
    """One participant of an election: its id (the node's data) and whether it leads."""

    id: str
    is_leader: bool


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
    deadline = Deadline(engine.transport.session_timeout())
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


__all__ = ["Participant", "id_bytes", "leader_of", "participants_steps"]
