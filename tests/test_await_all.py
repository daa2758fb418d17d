"""Waiting on several answers at once (:class:`~pycurator._protocol.steps.AwaitAll`) is a step
every runner performs on a real ZooKeeper: the blocking one, the callback-driven task and the
asyncio one each give the protocol every answer's outcome, in order, errors included."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pycurator._client.transport import transport_of
from pycurator._protocol.requests import GetData
from pycurator._protocol.steps import AwaitAll, NewSignal, Outcome, Send, Steps
from pycurator._threads.runner import run
from pycurator.aio._runner import run_async

from .support import SOON


def gathered(paths: list[str]) -> Steps[list[Outcome | None]]:
    """Send a read of each path, then wait for all their answers."""
    wake = yield NewSignal()
    answers = []
    for path in paths:
        answers.append((yield Send(GetData(path))))
    result: list[Outcome | None] = yield AwaitAll(answers, wake, SOON)
    return result


def blocking(client: KazooClient, steps: Steps[Any]) -> Any:
    return run(transport_of(client), steps)


def task(client: KazooClient, steps: Steps[Any]) -> Any:
    started = transport_of(client).start(steps)
    assert started.done.wait(SOON)
    if started.error is not None:
        raise started.error
    return started.value


def on_a_loop(client: KazooClient, steps: Steps[Any]) -> Any:
    return asyncio.run(run_async(transport_of(client), steps))


RUNNERS: dict[str, Callable[[KazooClient, Steps[Any]], Any]] = {
    "blocking": blocking,
    "task": task,
    "asyncio": on_a_loop,
}


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_every_answer_comes_back_in_order_with_its_error(
    zk: KazooClient, zk_path: str, runner: str
) -> None:
    zk.create(f"{zk_path}/a", b"first", makepath=True)
    zk.create(f"{zk_path}/c", b"third")
    paths = [f"{zk_path}/a", f"{zk_path}/missing", f"{zk_path}/c"]
    outcomes = RUNNERS[runner](zk, gathered(paths))
    assert [o[0][0] if o is not None and o[1] is None else None for o in outcomes] == [
        b"first",
        None,
        b"third",
    ]
    assert outcomes[1] is not None and isinstance(outcomes[1][1], NoNodeError)
