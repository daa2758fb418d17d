"""No crash, no silence: huge timeouts wait, a failing ``lead`` is logged, a coroutine ``lead``
is refused by the threaded selector, and a lost hold logs a WARNING naming it."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import (
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    aio,
)
from pycurator.cli import EXIT_USAGE, main
from pycurator.testing import ClientFactory, expire_kazoo_session
from pycurator.testing.pytest_plugin import ZooKeeperTarget

from .aio_support import run
from .cli_support import start_cli
from .support import SOON, Worker, children, eventually

HUGE = [1e10, math.inf, 2**63]


@pytest.mark.parametrize("timeout", HUGE)
def test_a_huge_timeout_waits_without_limit(
    zk_client_factory: ClientFactory, zk_path: str, timeout: float
) -> None:
    holder, waiter = zk_client_factory(), zk_client_factory()
    held = InterProcessMutex(holder, f"{zk_path}/mutex")
    assert held.acquire(timeout)  # free: held at once
    mutex = InterProcessMutex(waiter, f"{zk_path}/mutex")

    def wait_then_release() -> bool:
        acquired = mutex.acquire(timeout)
        mutex.release()
        return acquired

    worker = Worker(wait_then_release)
    worker.start()
    eventually(lambda: len(children(holder, f"{zk_path}/mutex")) == 2, what="the waiter queued")
    held.release()
    assert worker.outcome(SOON) is True
    lease = InterProcessSemaphoreV2(waiter, f"{zk_path}/semaphore", 1).acquire(timeout)
    assert lease is not None
    lease.close()
    latch = LeaderLatch(waiter, f"{zk_path}/latch", "a")
    latch.start()
    assert latch.wait(timeout)
    latch.close()


@pytest.mark.parametrize("timeout", HUGE)
def test_a_huge_timeout_waits_without_limit_in_asyncio(
    zk: KazooClient, zk_path: str, timeout: float
) -> None:
    async def main() -> None:
        mutex = aio.InterProcessMutex(zk, f"{zk_path}/mutex")
        assert await mutex.acquire(timeout)
        await mutex.release()
        latch = aio.LeaderLatch(zk, f"{zk_path}/latch", "a")
        await latch.start()
        assert await latch.wait(timeout)
        await latch.close()

    run(main())


@pytest.mark.parametrize("timeout", HUGE)
def test_a_huge_timeout_waits_for_a_semaphore_a_latch_and_a_closing_selector(
    zk_client_factory: ClientFactory, zk_path: str, timeout: float
) -> None:
    """Each wait below waits for a while (nothing is free at once), so a timeout that
    overflows the wait it is given would fail it."""
    holder, waiter = zk_client_factory(), zk_client_factory()
    taken = InterProcessSemaphoreV2(holder, f"{zk_path}/semaphore", 1).acquire(SOON)
    assert taken is not None
    semaphore = InterProcessSemaphoreV2(waiter, f"{zk_path}/semaphore", 1)
    leader = LeaderLatch(holder, f"{zk_path}/latch", "leader")
    leader.start()
    assert leader.wait(SOON)
    latch = LeaderLatch(waiter, f"{zk_path}/latch", "follower")
    latch.start()
    lease_worker, latch_worker = (
        Worker(lambda: semaphore.acquire(timeout)),
        Worker(lambda: latch.wait(timeout)),
    )
    lease_worker.start()
    latch_worker.start()
    eventually(lambda: len(children(holder, f"{zk_path}/semaphore/leases")) == 2, what="queued")
    taken.close()
    leader.close()
    lease = lease_worker.outcome(SOON)
    assert lease is not None
    lease.close()
    assert latch_worker.outcome(SOON) is True
    latch.close()

    leading, release = threading.Event(), threading.Event()

    def lead(leadership: Leadership) -> None:
        leading.set()
        release.wait(SOON)  # ends a moment after close() began to wait

    selector = LeaderSelector(waiter, f"{zk_path}/selector", lead, "a")
    selector.start()
    assert leading.wait(SOON)
    threading.Timer(0.2, release.set).start()
    assert selector.close(timeout) is True
    assert children(holder, f"{zk_path}/selector") == []


@pytest.mark.parametrize("timeout", HUGE)
def test_an_awaited_close_with_a_huge_timeout_waits_for_lead(
    zk: KazooClient, zk_path: str, timeout: float
) -> None:
    async def main() -> None:
        leading = asyncio.Event()

        async def lead(leadership: aio.Leadership) -> None:
            leading.set()
            await asyncio.sleep(0.2)  # ends a moment after close() began to wait

        selector = aio.LeaderSelector(zk, f"{zk_path}/selector", lead, "a")
        await selector.start()
        await asyncio.wait_for(leading.wait(), SOON)
        assert await selector.close(timeout) is True

    run(main())
    assert children(zk, f"{zk_path}/selector") == []


@pytest.mark.parametrize("command", ["lock", "elect"])
def test_a_huge_timeout_at_the_command_line_waits_without_limit(
    zk_server: ZooKeeperTarget, zk: KazooClient, zk_path: str, command: str
) -> None:
    if command == "lock":
        mutex = InterProcessMutex(zk, zk_path)
        assert mutex.acquire(SOON)
        let_go: Callable[[], object] = mutex.release
        args = ["lock", "--timeout", "1e10", zk_path]
    else:
        latch = LeaderLatch(zk, zk_path, "first")
        latch.start()
        assert latch.wait(SOON)
        let_go = latch.close
        args = ["elect", "--timeout", "1e10", "--id", "second", zk_path]
    process = start_cli("--hosts", zk_server.hosts, *args, "--", "echo", "ran")
    try:
        eventually(lambda: len(children(zk, zk_path)) == 2, what="the command line queued")
        let_go()
        out, err = process.communicate(timeout=SOON)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert out.strip() == "ran"
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "most"), [("--connect-timeout", "1000000000"), ("--session-timeout", "2147483")]
)
def test_a_connection_timeout_too_large_to_carry_is_a_usage_line(
    option: str, most: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--hosts", "127.0.0.1:1", option, "1e10", "inspect", "/locks/x"])
    assert exit_info.value.code == EXIT_USAGE
    assert f"argument {option}: must be a finite number > 0 and at most {most}, not '1e10'" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("timeout", [-1, math.nan])
def test_a_negative_or_nan_timeout_is_still_refused(
    zk: KazooClient, zk_path: str, timeout: float
) -> None:
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        InterProcessMutex(zk, zk_path).acquire(timeout)
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        aio.InterProcessMutex(zk, zk_path).acquire(timeout)  # type: ignore[unused-coroutine]
    assert zk.exists(zk_path) is None
    selector = LeaderSelector(zk, zk_path, lambda leadership: None, "a")
    selector.start()
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        selector.close(timeout)
    assert selector.close(SOON) is True  # the refused call changed nothing

    async def awaited() -> None:
        selector = aio.LeaderSelector(zk, zk_path, _lead_nothing, "a")
        await selector.start()
        with pytest.raises(ValueError, match="timeout must be >= 0"):
            await selector.close(timeout)
        assert await selector.close(SOON) is True

    run(awaited())
    assert children(zk, zk_path) == []


async def _lead_nothing(leadership: aio.Leadership) -> None:
    return None


def test_a_failing_lead_is_logged_by_both_selectors(
    zk: KazooClient, zk_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    ran = threading.Event()

    def threaded(leadership: Leadership) -> None:
        ran.set()
        raise ZeroDivisionError("threaded lead")

    with caplog.at_level(logging.ERROR, logger="pycurator"):
        selector = LeaderSelector(zk, f"{zk_path}/threaded", threaded, "x")
        selector.start()
        assert ran.wait(SOON)
        assert selector.close(SOON)

        async def main() -> None:
            failing = aio.LeaderSelector(zk, f"{zk_path}/sync", lambda _: 1 / 0, "x")  # type: ignore[arg-type,return-value]
            not_awaitable = aio.LeaderSelector(zk, f"{zk_path}/none", lambda _: None, "x")  # type: ignore[arg-type,return-value]

            async def raising(_: aio.Leadership) -> None:
                raise ZeroDivisionError("async lead")

            awaited = aio.LeaderSelector(zk, f"{zk_path}/async", raising, "x")
            for each in (failing, not_awaitable, awaited):
                await each.start()
            while len(failures(caplog)) < 4:
                await asyncio.sleep(0.02)
            for each in (failing, not_awaitable, awaited):
                assert await each.close(SOON)

        run(main())
    messages = failures(caplog)
    assert len(messages) == 4
    assert {type(error).__name__ for error in messages.values()} == {
        "ZeroDivisionError",
        "TypeError",
    }
    assert any("awaitable" in str(error) for error in messages.values())
    for path in ("threaded", "sync", "none", "async"):
        assert children(zk, f"{zk_path}/{path}") == []


def failures(caplog: pytest.LogCaptureFixture) -> dict[str, BaseException]:
    """The failures of ``lead`` logged so far, by message."""
    return {
        record.getMessage(): record.exc_info[1]
        for record in caplog.records
        if "lead() of the leader selector" in record.getMessage()
        and record.exc_info is not None
        and record.exc_info[1] is not None
    }


def test_the_threaded_selector_refuses_a_coroutine_function(zk: KazooClient, zk_path: str) -> None:
    async def lead(leadership: Any) -> None:
        return None

    class Leader:
        async def __call__(self, leadership: Any) -> None:
            return None

    for wrong in (lead, Leader()):
        with pytest.raises(TypeError, match=r"pycurator\.aio\.LeaderSelector"):
            LeaderSelector(zk, zk_path, wrong, "x")  # type: ignore[arg-type]
    assert zk.exists(zk_path) is None


@pytest.mark.parametrize(
    ("policy", "reason"), [("standard", "connection suspended"), ("session", "session expired")]
)
def test_a_lost_lock_and_a_lost_leadership_log_a_warning_naming_them(
    zk_client_factory: ClientFactory,
    zk_path: str,
    caplog: pytest.LogCaptureFixture,
    policy: Any,
    reason: str,
) -> None:
    client = zk_client_factory()
    mutex = InterProcessMutex(client, f"{zk_path}/mutex", connection_policy=policy)
    assert mutex.acquire(SOON)
    assert mutex.is_held()  # watched now
    latch = LeaderLatch(client, f"{zk_path}/latch", "a", connection_policy=policy)
    latch.start()
    assert latch.wait(SOON)
    with caplog.at_level(logging.WARNING, logger="pycurator"):
        expire_kazoo_session(client)  # the connection drops first, then the session ends
        eventually(lambda: len(warnings_about(caplog, zk_path, reason)) == 2, what="warnings")
    found = warnings_about(caplog, zk_path, reason)
    assert {record.path for record in found} == {f"{zk_path}/mutex", f"{zk_path}/latch"}  # type: ignore[attr-defined]
    assert {record.getMessage().split()[0] for record in found} == {"lock", "leadership"}
    assert all(f"lost: {reason}" in record.getMessage() for record in found)
    mutex.release()
    latch.close()


def warnings_about(
    caplog: pytest.LogCaptureFixture, under: str, reason: str
) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.levelno == logging.WARNING
        and str(getattr(record, "path", "")).startswith(under)
        and getattr(record, "reason", None) == reason
    ]
