"""Every threaded recipe and its asyncio form have the same public surface (the same names,
the same parameters), so the two cannot drift apart; and every Python file stays short."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from pycurator import (
    CuratorCache,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    DistributedBarrier,
    DistributedDoubleBarrier,
    GroupMember,
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    LeaderSelector,
    Leadership,
    Lease,
    PromotedToLock,
    SharedCount,
    SharedValue,
    aio,
    discovery,
    menagerie,
    zkrecipes,
)
from pycurator._recipes.hold_monitor import HoldMonitor
from pycurator._recipes.lock_nodes import LockNode
from pycurator.aio import discovery as aio_discovery
from pycurator.aio import menagerie as aio_menagerie
from pycurator.aio import zklocker as aio_zklocker
from pycurator.aio import zkrecipes as aio_zkrecipes
from pycurator.zklocker import ZkLocker

ROOT = Path(__file__).resolve().parent.parent
#: The longest a Python file of the project may be, in lines.
MAX_LINES = 600

#: Names only one side has, and why.
ONLY_ASYNCIO = {"is_owned_by_current_task"}  # a task owns an asyncio hold; the alias of
# the threaded name, is_owned_by_current_thread, stays for code written for both


def pairs(client: KazooClient) -> dict[str, tuple[Any, Any]]:
    """One object of each threaded recipe and of its asyncio form (nothing is sent)."""
    node = LockNode("/p/_c_00000000-0000-4000-8000-000000000000-lock-0000000000", 1, 0)
    threaded_discovery = discovery.ServiceDiscovery(client, "/services")
    asyncio_discovery = aio_discovery.ServiceDiscovery(client, "/services")
    monitor = HoldMonitor.__new__(HoldMonitor)  # not following anything: only its surface
    threaded_rw = InterProcessReadWriteLock(client, "/rw")
    asyncio_rw = aio.InterProcessReadWriteLock(client, "/rw")
    threaded_mrw = menagerie.ReentrantZkReadWriteLock(client, "/mrw")
    retry, promoted = KazooRetry(max_tries=3), PromotedToLock("/lock")
    asyncio_mrw = aio_menagerie.ReentrantZkReadWriteLock(client, "/mrw")
    return {
        "mutex": (InterProcessMutex(client, "/m"), aio.InterProcessMutex(client, "/m")),
        "read/write lock": (threaded_rw, asyncio_rw),
        "read lock": (threaded_rw.read_lock(), asyncio_rw.read_lock()),
        "write lock": (threaded_rw.write_lock(), asyncio_rw.write_lock()),
        "semaphore": (
            InterProcessSemaphoreV2(client, "/s", 2),
            aio.InterProcessSemaphoreV2(client, "/s", 2),
        ),
        "semaphore mutex": (
            InterProcessSemaphoreMutex(client, "/sm"),
            aio.InterProcessSemaphoreMutex(client, "/sm"),
        ),
        "lease": (Lease.__new__(Lease), aio.Lease.__new__(aio.Lease)),
        "multi-lock": (
            InterProcessMultiLock(client, ["/a", "/b"]),
            aio.InterProcessMultiLock(client, ["/a", "/b"]),
        ),
        "latch": (LeaderLatch(client, "/l"), aio.LeaderLatch(client, "/l")),
        "cache": (CuratorCache(client, "/c"), aio.CuratorCache(client, "/c")),
        "group member": (GroupMember(client, "/g", "m"), aio.GroupMember(client, "/g", "m")),
        "selector": (
            LeaderSelector(client, "/sel", print),
            aio.LeaderSelector(client, "/sel", print),  # type: ignore[arg-type]
        ),
        "leadership": (
            Leadership("/sel", node, monitor, client.handler.event_object()),
            aio.Leadership("/sel", node, monitor),
        ),
        "zookeeper write lock": (
            zkrecipes.WriteLock(client, "/w"),
            aio_zkrecipes.WriteLock(client, "/w"),
        ),
        "zookeeper election": (
            zkrecipes.LeaderElection(client, "/e", "host"),
            aio_zkrecipes.LeaderElection(client, "/e", "host"),
        ),
        "zklocker": (ZkLocker(client, "/z", "k"), aio_zklocker.ZkLocker(client, "/z", "k")),
        "menagerie lock": (
            menagerie.ReentrantZkLock(client, "/ml"),
            aio_menagerie.ReentrantZkLock(client, "/ml"),
        ),
        "menagerie read/write lock": (threaded_mrw, asyncio_mrw),
        "menagerie read lock": (threaded_mrw.read_lock(), asyncio_mrw.read_lock()),
        "menagerie write lock": (threaded_mrw.write_lock(), asyncio_mrw.write_lock()),
        "menagerie semaphore": (
            menagerie.ZkSemaphore(client, "/ms", 2),
            aio_menagerie.ZkSemaphore(client, "/ms", 2),
        ),
        "shared value": (SharedValue(client, "/sv", b""), aio.SharedValue(client, "/sv", b"")),
        "shared count": (SharedCount(client, "/sc", 0), aio.SharedCount(client, "/sc", 0)),
        "atomic long": (
            DistributedAtomicLong(client, "/al", retry, promoted),
            aio.DistributedAtomicLong(client, "/al", retry, promoted),
        ),
        "atomic integer": (
            DistributedAtomicInteger(client, "/ai", retry),
            aio.DistributedAtomicInteger(client, "/ai", retry),
        ),
        "atomic value": (
            DistributedAtomicValue(client, "/av", retry),
            aio.DistributedAtomicValue(client, "/av", retry),
        ),
        "barrier": (DistributedBarrier(client, "/b"), aio.DistributedBarrier(client, "/b")),
        "double barrier": (
            DistributedDoubleBarrier(client, "/db", 2),
            aio.DistributedDoubleBarrier(client, "/db", 2),
        ),
        "service discovery": (threaded_discovery, asyncio_discovery),
        "service cache": (
            threaded_discovery.service_cache("svc"),
            asyncio_discovery.service_cache("svc"),
        ),
        "service provider": (
            threaded_discovery.service_provider("svc"),
            asyncio_discovery.service_provider("svc"),
        ),
    }


def public(thing: Any) -> set[str]:
    names = {name for name in dir(type(thing)) if not name.startswith("_")}
    names |= (
        {name for name in vars(thing) if not name.startswith("_")}
        if hasattr(thing, "__dict__")
        else set()
    )
    return names


KINDS = [
    "mutex",
    "read/write lock",
    "read lock",
    "write lock",
    "semaphore",
    "semaphore mutex",
    "lease",
    "multi-lock",
    "latch",
    "cache",
    "group member",
    "selector",
    "leadership",
    "zookeeper write lock",
    "zookeeper election",
    "zklocker",
    "menagerie lock",
    "menagerie read/write lock",
    "menagerie read lock",
    "menagerie write lock",
    "menagerie semaphore",
    "shared value",
    "shared count",
    "atomic long",
    "atomic integer",
    "atomic value",
    "barrier",
    "double barrier",
    "service discovery",
    "service cache",
    "service provider",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_threaded_recipe_and_its_asyncio_form_have_the_same_names(kind: str) -> None:
    client = KazooClient(hosts="127.0.0.1:1")  # never started
    threaded, asynchronous = pairs(client)[kind]
    assert public(threaded) - public(asynchronous) == set()
    assert public(asynchronous) - public(threaded) <= ONLY_ASYNCIO


@pytest.mark.parametrize("kind", KINDS)
def test_each_method_takes_the_same_parameters_in_both_forms(kind: str) -> None:
    client = KazooClient(hosts="127.0.0.1:1")
    threaded, asynchronous = pairs(client)[kind]
    for name in sorted(public(threaded) & public(asynchronous)):
        mine, theirs = getattr(type(threaded), name, None), getattr(type(asynchronous), name, None)
        if not callable(mine) or not callable(theirs) or isinstance(mine, type):
            continue
        assert list(inspect.signature(mine).parameters) == list(
            inspect.signature(theirs).parameters
        ), f"{kind}.{name}"


def test_every_public_method_of_a_recipe_has_a_docstring() -> None:
    client = KazooClient(hosts="127.0.0.1:1")
    missing = []
    for kind, objects in pairs(client).items():
        for thing in objects:
            for name in public(thing):
                member = getattr(type(thing), name, None)
                documentable = callable(member) or isinstance(member, property)
                if documentable and not inspect.getdoc(member):
                    missing.append(f"{type(thing).__module__}.{kind}.{name}")
    assert missing == []


#: The longest a module of the package may be, in lines.
PACKAGE_MAX_LINES = 450


def test_every_module_of_the_package_stays_within_450_lines() -> None:
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in (ROOT / "pycurator").rglob("*.py")
    }
    long = {name: n for name, n in lengths.items() if n > PACKAGE_MAX_LINES}
    assert long == {}


def test_every_python_file_stays_under_600_lines() -> None:
    files = [
        path
        for folder in ("pycurator", "tests", "interop", "bench", "docs")
        for path in (ROOT / folder).rglob("*.py")
    ]
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines()))}
    assert {name: n for name, n in long.items() if n >= MAX_LINES} == {}
