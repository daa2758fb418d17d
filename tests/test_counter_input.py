"""Bad input to the counters and barriers (docs/errors.md, "Bad input"): a clear error naming
it, before anything is sent, and nothing left on the server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import (
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    DistributedBarrier,
    DistributedDoubleBarrier,
    PromotedToLock,
    SharedCount,
    SharedValue,
    aio,
)

RETRY = KazooRetry(max_tries=1)


def bad(value: object) -> Any:
    """A value of the wrong type, passed on as a caller without type checks would."""
    return value


#: Every recipe of the page, built on a client and a path.
RECIPES: dict[str, Callable[[KazooClient, str], Any]] = {
    "shared count": lambda client, path: SharedCount(client, path, 0),
    "shared value": lambda client, path: SharedValue(client, path, b""),
    "atomic long": lambda client, path: DistributedAtomicLong(client, path, RETRY),
    "atomic integer": lambda client, path: DistributedAtomicInteger(client, path, RETRY),
    "atomic value": lambda client, path: DistributedAtomicValue(client, path, RETRY),
    "barrier": lambda client, path: DistributedBarrier(client, path),
    "double barrier": lambda client, path: DistributedDoubleBarrier(client, path, 2),
    "promoted lock": lambda client, path: PromotedToLock(path),
}


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("counters/hits", "Path must start with / character: 'counters/hits'"),
        ("/counters/../etc", "relative paths not allowed"),
        ("/counters/", "Path must not end with / character"),
    ],
)
def test_a_path_curator_rejects_is_a_value_error_naming_it(
    zk: KazooClient, recipe: str, path: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        RECIPES[recipe](zk, path)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda zk, path: SharedCount(zk, path, 2**31), "seed_count must fit a Java int"),
        (lambda zk, path: SharedValue(zk, path, bad("text")), "seed_value must be bytes"),
        (lambda zk, path: DistributedAtomicLong(zk, path, RETRY).add(2**63), "delta must fit"),
        (lambda zk, path: DistributedAtomicInteger(zk, path, RETRY).add(2**31), "delta must fit"),
        (lambda zk, path: DistributedAtomicInteger(zk, path, RETRY).try_set(-(2**31) - 1), "new"),
        (lambda zk, path: DistributedAtomicLong(zk, path, RETRY).initialize(2**63), "value"),
        (lambda zk, path: DistributedDoubleBarrier(zk, path, -1), "member_qty must be >= 1"),
        (lambda zk, path: DistributedDoubleBarrier(zk, path, 0), "member_qty must be >= 1"),
    ],
)
def test_a_value_that_does_not_fit_is_a_value_error_and_leaves_nothing(
    zk: KazooClient, zk_path: str, call: Callable[[KazooClient, str], Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        call(zk, f"{zk_path}/counter")
    assert zk.exists(zk_path) is None


def test_a_count_out_of_range_is_refused_before_it_is_written(
    zk: KazooClient, zk_path: str
) -> None:
    with SharedCount(zk, f"{zk_path}/count", 1) as count:
        with pytest.raises(ValueError, match=r"count must fit a Java int \(-2147483648"):
            count.set_count(2**31)
        with pytest.raises(TypeError, match="count must be an int"):
            count.try_set_count(count.get_versioned_value(), bad(1.5))
    assert zk.get(f"{zk_path}/count")[0] == (1).to_bytes(4, "big")


@pytest.mark.parametrize("policy", [None, 3, "KazooRetry"])
def test_a_retry_policy_that_is_no_kazoo_retry_is_a_type_error(
    zk: KazooClient, policy: object
) -> None:
    with pytest.raises(TypeError, match="retry_policy must be a kazoo KazooRetry"):
        DistributedAtomicLong(zk, "/counter", bad(policy))
    with pytest.raises(TypeError, match="retry_policy must be a kazoo KazooRetry"):
        PromotedToLock("/lock", 1.0, bad(policy or 3))


def test_a_shared_count_not_started_or_closed_refuses_writes(zk: KazooClient, zk_path: str) -> None:
    count = SharedCount(zk, f"{zk_path}/count", 0)
    with pytest.raises(RuntimeError, match="not started"):
        count.set_count(1)
    assert zk.exists(zk_path) is None
    count.start()
    with pytest.raises(RuntimeError, match="Cannot be started more than once"):
        count.start()
    count.close()
    with pytest.raises(RuntimeError, match="not started"):
        count.set_count(1)


def test_the_asyncio_forms_refuse_the_same_input(zk: KazooClient, zk_path: str) -> None:
    async def refused() -> None:
        with pytest.raises(ValueError, match="member_qty must be >= 1"):
            aio.DistributedDoubleBarrier(zk, f"{zk_path}/double", 0)
        counter = aio.DistributedAtomicLong(zk, f"{zk_path}/counter", RETRY)
        with pytest.raises(ValueError, match="delta must fit a Java long"):
            await counter.subtract(2**63)

    asyncio.run(refused())
    assert zk.exists(zk_path) is None
