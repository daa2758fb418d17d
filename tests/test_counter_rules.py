"""The pure rules of Curator's shared values, atomic values and double barrier, on plain data:
the bytes Java's ``ByteBuffer`` writes and reads, Java's wrapping arithmetic, the tries a
``KazooRetry`` allows, the fate of a write whose answer was lost, and the barrier's names,
order and decisions, with names as Java writes them."""

from __future__ import annotations

import re

import pytest

from pycurator import CorruptedDataError
from pycurator._protocol import wire
from pycurator._protocol.barriers import (
    LeaveStep,
    check_member_qty,
    leave_step,
    may_pass,
    members,
    new_member_name,
)
from pycurator._protocol.counters import (
    INT,
    LONG,
    Fate,
    NumberType,
    Tries,
    fate_of,
    next_version,
)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.mark.parametrize(
    ("number", "value", "hex"),
    [
        (INT, -2, "fffffffe"),
        (INT, 2**31 - 1, "7fffffff"),
        (INT, -(2**31), "80000000"),
        (LONG, 1, "0000000000000001"),
        (LONG, -1, "ffffffffffffffff"),
        (LONG, -(2**63), "8000000000000000"),
    ],
)
def test_numbers_are_javas_big_endian_twos_complement(
    number: NumberType, value: int, hex: str
) -> None:
    assert number.encode(value).hex() == hex
    assert number.decode(bytes.fromhex(hex), "/c") == value


def test_java_reads_the_first_bytes_of_a_longer_node() -> None:
    assert INT.decode(INT.encode(-5) + b"tail", "/c") == -5
    assert LONG.decode(LONG.encode(7) + b"\x01", "/c") == 7


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x07"])
def test_a_short_count_is_an_error_naming_the_node_and_its_bytes(data: bytes) -> None:
    with pytest.raises(CorruptedDataError) as raised:
        INT.decode(data, "/app/count")
    assert raised.value.path == "/app/count" and raised.value.data == data
    assert '"/app/count"' in str(raised.value) and "not a Java int" in str(raised.value)


def test_an_atomic_number_reads_a_missing_or_empty_node_as_zero_and_a_short_one_as_corrupt() -> (
    None
):
    assert LONG.decode_atomic(None, "/c") == LONG.decode_atomic(b"", "/c") == 0
    with pytest.raises(CorruptedDataError, match=r"\[0x0, 0x0, 0x0, 0x7\]"):
        LONG.decode_atomic(INT.encode(7), "/c")


def test_arithmetic_wraps_as_javas() -> None:
    assert LONG.wrap(LONG.max + 1) == LONG.min
    assert LONG.wrap(LONG.min - 1) == LONG.max
    assert INT.wrap(INT.max + 1) == INT.min
    assert INT.wrap(-1) == -1
    assert next_version(2**31 - 1) == -(2**31)


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1])
def test_a_value_outside_the_type_is_refused_naming_it(value: int) -> None:
    with pytest.raises(ValueError, match=r"count must fit a Java int \(-2147483648 to"):
        INT.check(value, "count")


@pytest.mark.parametrize("value", [1.0, "1", True, None])
def test_a_value_not_an_int_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="delta must be an int"):
        LONG.check(value, "delta")


def test_a_write_refused_after_a_lost_answer_is_settled_by_the_node() -> None:
    ours = LONG.encode(6)
    # another's bytes at the version ours would have made: ours did not take
    assert fate_of(4, ours, 4, LONG.encode(7)) is Fate.NOT_APPLIED
    # our bytes there: ours, or an identical write (an increment of the same 5): unknown
    assert fate_of(4, ours, 4, ours) is Fate.UNKNOWN
    # further on, or gone: the write of that version is out of sight
    assert fate_of(4, ours, 5, LONG.encode(7)) is Fate.UNKNOWN
    assert fate_of(4, ours, None, None) is Fate.UNKNOWN


def test_tries_count_as_kazoo_counts_them() -> None:
    three = Tries(max_tries=3, delay=0.1, backoff=2, max_delay=0.3)
    assert [three.sleep_before(n, 0.0, 0.0) for n in (1, 2, 3)] == [0.1, 0.2, None]
    assert Tries(max_tries=1).sleep_before(1, 0.0, 0.0) is None
    assert Tries(max_tries=0).sleep_before(1, 0.0, 0.0) is None  # one try, not kazoo's for ever
    forever = Tries(max_tries=-1, delay=1.0, backoff=10, max_delay=5.0)
    assert forever.sleep_before(10_000, 0.0, 0.0) == 5.0
    jittered = Tries(max_tries=5, delay=1.0, max_jitter=0.4)
    assert jittered.sleep_before(1, 0.0, -1.0) == pytest.approx(0.6)
    assert jittered.sleep_before(1, 0.0, 1.0) == pytest.approx(1.4)
    bounded = Tries(max_tries=-1, delay=1.0, deadline=2.5)
    assert bounded.sleep_before(1, 1.0, 0.0) == 1.0
    assert bounded.sleep_before(2, 1.6, 0.0) is None


def test_a_member_is_named_by_a_java_uuid() -> None:
    names = {new_member_name() for _ in range(100)}
    assert len(names) == 100 and all(UUID.fullmatch(name) for name in names)


def test_members_are_all_but_ready_in_javas_string_order() -> None:
    # Java orders by UTF-16 code unit: U+FF5E before U+1F600 (a surrogate pair, 0xD83D...)
    children = ["b", wire.BARRIER_READY, "\U0001f600", "a", "\uff5e"]
    assert members(children) == ["a", "b", "\U0001f600", "\uff5e"]


def test_a_member_passes_on_ready_or_enough_children_and_on_nothing_else() -> None:
    assert may_pass(["a", "b"], 2)
    assert may_pass(["a", wire.BARRIER_READY], 3)  # ready: someone counted enough
    assert may_pass(["a", "b", "c"], 2)  # a threshold, not a limit
    assert not may_pass(["a"], 2)
    assert not may_pass([], 1)


def test_a_leaving_member_follows_curators_order() -> None:
    ours, low, high = "m", "a", "z"
    assert leave_step([], ours, True) == LeaveStep(done=True)
    assert leave_step([ours], ours, True) == LeaveStep(done=True, delete_ours=True)
    # the lowest waits for the highest to go
    assert leave_step([ours, high], ours, True) == LeaveStep(done=False, watch=high)
    # any other deletes its node and waits for the lowest, then is done when one is left
    assert leave_step([low, ours, high], ours, True) == LeaveStep(False, True, low)
    assert leave_step([low, high], ours, False) == LeaveStep(done=False, watch=low)
    # done only once every member has left (Curator's returns with the lowest still in)
    assert leave_step([low], ours, False) == LeaveStep(done=False, watch=low)
    assert leave_step([], ours, False) == LeaveStep(done=True)
    # a node of ours gone meanwhile (its session expired) counts as deleted
    assert leave_step([low, high], ours, True) == LeaveStep(done=False, watch=low)


@pytest.mark.parametrize(
    ("qty", "error", "message"),
    [
        (0, ValueError, "member_qty must be >= 1, not 0"),
        (-3, ValueError, "member_qty must be >= 1, not -3"),
        (2.0, TypeError, "member_qty must be an int"),
        (True, TypeError, "member_qty must be an int"),
    ],
)
def test_a_member_count_below_one_or_not_an_int_is_refused(
    qty: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        check_member_qty(qty)
