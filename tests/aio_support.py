"""Helpers of the asyncio tests: a bounded loop run, polling on the loop, and the server's
view of a session's watches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoWatcherError

from pycurator._client.transport import transport_of
from pycurator._protocol.requests import RemoveWatches, WatcherType
from pycurator._protocol.waits import sent_steps
from pycurator._threads.runner import run as run_steps
from pycurator.testing import four_letter_word, paths_by_session, split_hosts

from .support import SOON

T = TypeVar("T")


def run(coroutine: Awaitable[T]) -> T:
    """Run a test's coroutine on a fresh loop, failing it after a generous bound."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, 4 * SOON)

    return asyncio.run(bounded())


def has_child_watch(client: KazooClient, path: str) -> bool:
    """Whether the server holds a child watch of ``client``'s session on ``path`` (``wchc``
    shows data watches only): asks it to remove one, which fails when there is none."""
    try:
        request = RemoveWatches(path, WatcherType.CHILDREN)
        run_steps(transport_of(client), sent_steps(request))
    except NoWatcherError:
        return False
    return True


def watched_paths(client: KazooClient) -> list[str]:
    """The paths the server holds watches on for ``client``'s session (``wchc``)."""
    session = f"0x{client.client_id[0]:x}"
    host, port = split_hosts(",".join(f"{h}:{p}" for h, p in client.hosts))[0]
    return paths_by_session(four_letter_word(host, port, "wchc")).get(session, [])


async def until(predicate: Callable[[], bool], what: str) -> None:
    """Poll ``predicate`` on the loop until true; fail after SOON seconds."""
    end = asyncio.get_running_loop().time() + SOON
    while not predicate():
        if asyncio.get_running_loop().time() > end:
            raise AssertionError(f"not true within {SOON}s: {what}")
        await asyncio.sleep(0.02)
