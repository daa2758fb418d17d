"""The atomic value's protocol on a scripted server: no ZooKeeper, no thread, no sleep.

Each test plays the server's side of one operation of a ``DistributedAtomicLong``
(:mod:`tests.scripted`) and checks every request it sends: the node read with its version,
written at that version (or created, its parents made), tried again, then under the promoted
lock. Above all, a write whose answer was lost: it is sent again *unchanged* and settled from
the node, never followed by a fresh write that could apply the update twice (Curator's
framework sends it again, and its loop applies the change again on the new value).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from pycurator import UnknownOutcomeError
from pycurator._client.transport import KazooTransport, default_node_data, transport_of
from pycurator._cores.atomic import NumberCore
from pycurator._protocol import wire
from pycurator._protocol.counters import LONG
from pycurator._protocol.requests import (
    CreateMode,
    CreateNode,
    CreateParent,
    DeleteNode,
    GetData,
    ListChildren,
    SetData,
)
from pycurator._recipes.atomic import AtomicStats, AtomicValue, PromotedToLock

from .scripted import REDUCED, Entry, Reply, ScriptedServer, State, Stop, Timeout, stat

PATH = "/app/counter"
LOCK = "/app/lock"
SESSION = 0x51
LOCK_ID = "11111111-1111-4111-8111-111111111111"
#: Tries as fast as the server answers: a failed try is followed at once by the next.
NO_SLEEP = {"delay": 0.0, "max_jitter": 0.0}


def node(version: int, zxid: int = 0) -> ZnodeStat:
    """The counter's stat at ``version`` (written at ``zxid``)."""
    return ZnodeStat(1, zxid, 0, 0, version, 0, 0, 0, 8, 0, 1)


def read(value: int, version: int) -> Reply:
    """The counter read: ``value`` at ``version``."""
    return Reply(GetData(PATH), (LONG.encode(value), node(version)))


def write(value: int, version: int, **answer: object) -> Reply:
    """The counter written to ``value`` at ``version``; by default, taken."""
    if not answer:
        answer = {"value": node(version + 1)}
    return Reply(SetData(PATH, LONG.encode(value), version), **answer)  # type: ignore[arg-type]


def create(value: int, **answer: object) -> Reply:
    """The counter created holding ``value``; by default, made."""
    if not answer:
        answer = {"value": (PATH, node(0))}
    return Reply(CreateNode(PATH, LONG.encode(value)), **answer)  # type: ignore[arg-type]


def lost(reply: Reply) -> list[Entry]:
    """``reply``'s request sent, its answer lost with the connection, which comes back."""
    request = reply.request
    return [Reply(request, error=ConnectionLoss(), disconnects=True), State(KazooState.CONNECTED)]


@pytest.fixture(autouse=True)
def protected_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(wire, "new_protected_id", lambda: LOCK_ID)
    yield


@pytest.fixture
def client() -> KazooTransport:
    """The transport of a client that is never started (a session timeout of 10 s, the
    patience of a lost answer): the script is its server."""
    return transport_of(KazooClient(hosts="127.0.0.1:1", timeout=10.0))


def counter(
    client: KazooTransport, tries: int = 1, promoted: PromotedToLock | None = None
) -> NumberCore:
    return NumberCore(client, PATH, KazooRetry(max_tries=tries, **NO_SLEEP), promoted, LONG)


def played(script: Sequence[Entry], steps: object) -> AtomicValue[int]:
    server = ScriptedServer(script, session=SESSION)
    result: AtomicValue[int] = server.run(steps)  # type: ignore[arg-type]
    server.finish()
    return result


def test_an_increment_reads_the_value_and_writes_at_its_version(client: KazooTransport) -> None:
    result = played([read(5, 4), write(6, 4)], counter(client).add_steps(1))
    assert result == AtomicValue(True, 5, 6, AtomicStats(1, 0, result.stats.optimistic_time))


def test_a_missing_counter_is_created_with_container_parents(client: KazooTransport) -> None:
    script: list[Entry] = [
        Reply(GetData(PATH), error=NoNodeError()),
        create(1, error=NoNodeError()),
        Reply(CreateParent("/app"), (PATH, stat(1))),
        create(1),
    ]
    result = played(script, counter(client).add_steps(1))
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 0, 1)


def test_a_write_refused_is_tried_again_on_the_new_value(client: KazooTransport) -> None:
    script: list[Entry] = [
        read(5, 4),
        write(6, 4, error=BadVersionError()),
        read(9, 5),
        write(10, 5),
    ]
    result = played(script, counter(client, tries=3).add_steps(1))
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 9, 10)
    assert result.stats.optimistic_tries == 2


def test_tries_sleep_as_the_retry_policy_says(client: KazooTransport) -> None:
    retry = KazooRetry(max_tries=2, delay=0.05, max_jitter=0.0)
    core = NumberCore(client, PATH, retry, None, LONG)
    script: list[Entry] = [
        read(5, 4),
        write(6, 4, error=BadVersionError()),
        Timeout(),
        read(9, 5),
        write(10, 5),
    ]
    server = ScriptedServer(script, session=SESSION)
    assert server.run(core.add_steps(1)).succeeded
    server.finish()
    assert ("timed out", None) in server.log  # the sleep between the tries


def test_when_the_tries_run_out_the_operation_fails(client: KazooTransport) -> None:
    script: list[Entry] = [read(5, 4), write(6, 4, error=BadVersionError())]
    result = played(script, counter(client, tries=1).add_steps(1))
    assert (result.succeeded, result.unknown, result.pre_value, result.post_value) == (
        False,
        False,
        5,
        0,
    )


# -- a lost answer: sent again unchanged, settled, never applied twice ----------------------------


def test_a_lost_write_sent_again_and_taken_is_applied_once(client: KazooTransport) -> None:
    script: list[Entry] = [read(5, 4), *lost(write(6, 4)), write(6, 4)]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.post_value, result.stats.optimistic_tries) == (True, 6, 1)


def test_a_lost_write_that_took_is_never_applied_again(client: KazooTransport) -> None:
    """The write took before its answer was lost: sent again, it is refused, and the node holds
    what it wrote at the version it made. That may be ours or an identical increment of
    another: unknown, said so, and not tried again: the script ends there, where Curator's
    loop would read 6 and write 7."""
    script: list[Entry] = [
        read(5, 4),
        *lost(write(6, 4)),
        write(6, 4, error=BadVersionError()),
        read(6, 5),
    ]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.unknown, result.pre_value, result.post_value) == (
        False,
        True,
        5,
        6,
    )


def test_a_lost_write_that_did_not_take_is_tried_again_on_the_new_value(
    client: KazooTransport,
) -> None:
    """Refused when sent again, and the node holds another's bytes at the version ours would
    have made: ours did not take, and never will (its version is gone): a fresh try."""
    script: list[Entry] = [
        read(5, 4),
        *lost(write(6, 4)),
        write(6, 4, error=BadVersionError()),
        read(100, 5),
        read(100, 5),
        write(101, 5),
    ]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 100, 101)
    assert result.stats.optimistic_tries == 2


def test_a_lost_write_beyond_sight_is_unknown(client: KazooTransport) -> None:
    script: list[Entry] = [
        read(5, 4),
        *lost(write(6, 4)),
        write(6, 4, error=BadVersionError()),
        read(8, 7),
    ]
    assert played(script, counter(client, tries=5).add_steps(1)).unknown


def test_a_write_lost_with_the_session_is_settled_in_the_next_one(client: KazooTransport) -> None:
    script: list[Entry] = [
        read(5, 4),
        Reply(SetData(PATH, LONG.encode(6), 4), error=SessionExpiredError(), disconnects=True),
        State(KazooState.LOST),
        State(KazooState.CONNECTED, session=SESSION + 1),
        write(6, 4),
    ]
    assert played(script, counter(client, tries=5).add_steps(1)).succeeded


def test_a_lost_write_whose_client_is_stopped_is_unknown(client: KazooTransport) -> None:
    script: list[Entry] = [
        read(5, 4),
        Reply(SetData(PATH, LONG.encode(6), 4), error=ConnectionLoss(), disconnects=True),
        Stop(),
    ]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.unknown) == (False, True)


def test_a_lost_create_that_took_is_never_made_again(client: KazooTransport) -> None:
    script: list[Entry] = [
        Reply(GetData(PATH), error=NoNodeError()),
        *lost(create(1)),
        create(1, error=NodeExistsError()),
        read(1, 0),
    ]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.unknown, result.post_value) == (False, True, 1)


def test_a_lost_create_of_a_value_another_made_first_is_tried_again(
    client: KazooTransport,
) -> None:
    script: list[Entry] = [
        Reply(GetData(PATH), error=NoNodeError()),
        *lost(create(1)),
        create(1, error=NodeExistsError()),
        read(41, 0),
        read(41, 0),
        write(42, 0),
    ]
    result = played(script, counter(client, tries=5).add_steps(1))
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 41, 42)


def test_initialize_after_a_lost_create_that_took_cannot_say(client: KazooTransport) -> None:
    script: list[Entry] = [*lost(create(7)), create(7, error=NodeExistsError()), read(7, 0)]
    server = ScriptedServer(script, session=SESSION)
    with pytest.raises(UnknownOutcomeError, match="initialize at /app/counter"):
        server.run(counter(client).initialize_steps(7))
    server.finish()


def test_compare_and_set_writes_once_at_the_version_read(client: KazooTransport) -> None:
    assert played([read(5, 4), write(9, 4)], counter(client).compare_and_set_steps(5, 9)).succeeded
    missed = played([read(6, 4)], counter(client).compare_and_set_steps(5, 9))
    assert (missed.succeeded, missed.pre_value) == (False, 6)
    refused = played(
        [read(5, 4), write(9, 4, error=BadVersionError())],
        counter(client, tries=5).compare_and_set_steps(5, 9),
    )
    assert not refused.succeeded and not refused.unknown


# -- promoted to a lock --------------------------------------------------------------------------

LOCK_NODE = f"{LOCK}/{wire.protected_prefix(LOCK_ID)}{wire.LOCK_NAME}0000000003"


def test_when_the_optimistic_tries_fail_the_promoted_lock_is_taken_and_released(
    client: KazooTransport,
) -> None:
    """The lock is Curator's ``InterProcessMutex`` at the lock path (a protected node
    ``_c_<uuid>-lock-<seq>``); the write under it is tried as its own policy allows."""
    promoted = PromotedToLock(LOCK, 5.0, KazooRetry(max_tries=2, **NO_SLEEP))
    script: list[Entry] = [
        read(5, 4),
        write(6, 4, error=BadVersionError()),
        Reply(
            CreateNode(
                f"{LOCK}/{wire.protected_prefix(LOCK_ID)}{wire.LOCK_NAME}",
                default_node_data(),
                None,
                CreateMode.EPHEMERAL_SEQUENTIAL,
            ),
            (LOCK_NODE, stat(30, SESSION)),
        ),
        Reply(ListChildren(LOCK, reduce=REDUCED), [wire.node_name(LOCK_NODE)]),
        read(7, 5),
        write(8, 5, error=BadVersionError()),
        read(8, 6),
        write(9, 6),
        Reply(DeleteNode(LOCK_NODE)),
    ]
    result = played(script, counter(client, tries=1, promoted=promoted).add_steps(1))
    assert (result.succeeded, result.pre_value, result.post_value) == (True, 8, 9)
    assert (result.stats.optimistic_tries, result.stats.promoted_lock_tries) == (1, 2)


def test_a_lost_write_that_took_is_not_tried_again_under_the_lock(client: KazooTransport) -> None:
    promoted = PromotedToLock(LOCK, 5.0)
    script: list[Entry] = [
        read(5, 4),
        *lost(write(6, 4)),
        write(6, 4, error=BadVersionError()),
        read(6, 5),
    ]
    result = played(script, counter(client, promoted=promoted).add_steps(1))
    assert result.unknown and result.stats.promoted_lock_tries == 0


# -- from a value known: the next write of a run of increments -----------------------------------


def test_a_write_from_a_known_value_needs_no_read(client: KazooTransport) -> None:
    """Combined increments given on from one write to the next write from what the last one
    left (see pycurator._recipes.combining): one request, and a try."""
    steps = counter(client).steps
    server = ScriptedServer([write(6, 4)], session=SESSION)
    value, written = server.run(
        steps.update_from_steps(lambda _: LONG.encode(6), (LONG.encode(5), 4))
    )
    server.finish()
    assert (value.succeeded, value.pre_value, value.stats.optimistic_tries) == (
        True,
        LONG.encode(5),
        1,
    )
    assert written == (LONG.encode(6), 5)


def test_a_known_value_the_node_moved_on_from_costs_no_try(client: KazooTransport) -> None:
    steps = counter(client, tries=1).steps
    script: list[Entry] = [write(6, 4, error=BadVersionError()), read(9, 7), write(10, 7)]
    server = ScriptedServer(script, session=SESSION)
    value, written = server.run(
        steps.update_from_steps(
            lambda data: LONG.encode(LONG.decode_atomic(data, PATH) + 1), (LONG.encode(5), 4)
        )
    )
    server.finish()
    assert (value.succeeded, value.pre_value, value.stats.optimistic_tries) == (
        True,
        LONG.encode(9),
        1,
    )
    assert written == (LONG.encode(10), 8)
