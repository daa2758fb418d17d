"""The runtime: what pycurator keeps per kazoo client, in one object found from the client, and
the one place that handles the client's stop, its session's expiry and a fork.

- a client's runtime is found from it, the same object each time, and goes with it; clients
  of one handler share that handler's services (timer, pool, queues);
- pycurator adds one listener to a kazoo client, whatever the number of its recipes, and
  only while something listens (kazoo's registry is left as it was found, a stop included);
- a stopped client's waits end with the runtime's ``ConnectionClosedError``, in both front
  ends, also when kazoo tells nobody of the stop (a client that never connected);
- the deletes a client owes are the runtime's, and a stop forgets them;
- a forked child starts with fresh runtime state;
- no other module keeps a module-level registry or a fork hook.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import os
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError
from kazoo.handlers.threading import SequentialThreadingHandler

from pycurator import InterProcessMutex, LeaderLatch, aio
from pycurator._client import runtime as _runtime
from pycurator._client.runtime import process_lock, runtime_of, services_of
from pycurator._client.transport import transport_of
from pycurator._protocol import transport as _seam
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer

from .aio_support import run
from .support import SOON, STEADY_RECONNECT, Worker, eventually
from .test_shutdown import KINDS, _queued, _wait_for

PACKAGE = Path(__file__).resolve().parent.parent / "pycurator"
#: What every wait ends with in these tests: the runtime's message, made recognisable.
THROUGH_THE_RUNTIME = "stopped, as the runtime says"


def unstarted_client(**kwargs: Any) -> KazooClient:
    """A kazoo client that is never started (nothing is sent)."""
    return KazooClient(hosts="127.0.0.1:2181", **kwargs)


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on: a client started on it never connects."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def never_connected(closed_port: int) -> Iterator[KazooClient]:
    """A started client that never connects: its state stays LOST, so kazoo tells its
    listeners nothing when it is stopped."""
    client = KazooClient(hosts=f"127.0.0.1:{closed_port}", connection_retry=STEADY_RECONNECT)
    client.start_async()
    yield client
    client.stop()
    client.close()


@pytest.fixture
def marked_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's stop error (:func:`~pycurator._protocol.transport.closed_error`) carries
    :data:`THROUGH_THE_RUNTIME` (read at each raise)."""
    monkeypatch.setattr(_seam, "STOPPED_MESSAGE", THROUGH_THE_RUNTIME)


def test_a_client_s_runtime_is_found_from_it_the_same_each_time() -> None:
    client, other = unstarted_client(), unstarted_client()
    runtime = runtime_of(client)
    assert runtime_of(client) is runtime
    assert runtime_of(other) is not runtime
    assert runtime.services is services_of(client.handler)
    assert runtime.client is client


def test_clients_of_one_handler_share_its_services_and_each_has_its_own_runtime() -> None:
    handler = SequentialThreadingHandler()
    first, second = unstarted_client(handler=handler), unstarted_client(handler=handler)
    assert runtime_of(first) is not runtime_of(second)
    assert runtime_of(first).services is runtime_of(second).services is services_of(handler)
    assert runtime_of(unstarted_client()).services is not services_of(handler)


def test_a_runtime_and_its_services_go_with_their_client_and_handler() -> None:
    client = unstarted_client()
    runtime = weakref.ref(runtime_of(client))
    services = weakref.ref(runtime_of(client).services)
    del client
    gc.collect()
    assert runtime() is None
    assert services() is None


def holds_and_a_waiter(client: KazooClient, path: str) -> tuple[list[InterProcessMutex], Worker]:
    """Four locks ``client`` holds, and a thread of it that waits for the first, then releases
    it."""
    locks = [InterProcessMutex(client, path)] + [
        InterProcessMutex(client, f"{path}/{n}") for n in range(3)
    ]
    for lock in locks:
        assert lock.acquire(SOON)
    waiting = InterProcessMutex(client, path)

    def wait_then_release() -> None:
        assert waiting.acquire()
        waiting.release()

    waiter = Worker(wait_then_release)
    waiter.start()
    eventually(lambda: _queued(client, path) >= 2, what="the waiter queued")
    return locks, waiter


def test_the_runtime_is_pycurator_s_one_listener_of_a_client_while_in_use(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    before = set(client.state_listeners)
    locks, waiter = holds_and_a_waiter(client, zk_path)
    assert set(client.state_listeners) - before == {runtime_of(client)._on_state}
    assert runtime_of(client).listening() == 5  # four holds and a wait
    for lock in locks:
        lock.release()
    waiter.outcome(SOON)
    assert runtime_of(client).listening() == 0
    assert set(client.state_listeners) == before  # kazoo's registry as pycurator found it


def test_a_stopped_client_s_waits_end_and_pycurator_s_listener_goes(
    zk_client_factory: ClientFactory, zk_path: str
) -> None:
    client = zk_client_factory()
    before = set(client.state_listeners)
    _, waiter = holds_and_a_waiter(client, zk_path)
    client.stop()
    with pytest.raises(ConnectionClosedError):
        waiter.outcome(SOON)
    assert runtime_of(client).listening() == 0
    assert set(client.state_listeners) == before


@pytest.mark.usefixtures("marked_stop")
@pytest.mark.parametrize("kind", KINDS)
def test_a_threaded_wait_ends_through_the_runtime_when_its_client_stops(
    zk_client_factory: ClientFactory, zk_path: str, kind: str
) -> None:
    waiting, holding = zk_client_factory(), zk_client_factory()
    worker = Worker(_wait_for(kind, waiting, holding, zk_path))
    worker.start()
    # a multi-lock's waiter holds its first member before it queues on the second
    nodes = 3 if kind == "multi-lock" else 2
    eventually(lambda: _queued(holding, zk_path) >= nodes, what="the waiter queued")
    waiting.stop()
    with pytest.raises(ConnectionClosedError, match=THROUGH_THE_RUNTIME):
        worker.outcome(SOON)


ASYNCIO_KINDS: dict[str, Callable[[KazooClient, str], Any]] = {
    "mutex": lambda client, path: aio.InterProcessMutex(client, path).acquire(),
    "read lock": lambda client, path: (
        aio.InterProcessReadWriteLock(client, path).read_lock().acquire()
    ),
    "semaphore": lambda client, path: aio.InterProcessSemaphoreV2(client, path, 1).acquire(),
    "semaphore mutex": lambda client, path: aio.InterProcessSemaphoreMutex(client, path).acquire(),
}


@pytest.mark.usefixtures("marked_stop")
@pytest.mark.parametrize("kind", [*ASYNCIO_KINDS, "latch"])
def test_an_asyncio_wait_ends_through_the_runtime_when_its_client_stops(
    zk_client_factory: ClientFactory, zk_path: str, kind: str
) -> None:
    waiting, holding = zk_client_factory(), zk_client_factory()

    async def main() -> None:
        if kind == "latch":
            leader = LeaderLatch(holding, zk_path, "leader")
            leader.start()
            assert leader.wait(SOON)
            latch = aio.LeaderLatch(waiting, zk_path, "waiter")
            await latch.start()
            wait: Any = latch.wait()
        else:
            _wait_for(kind, waiting, holding, zk_path)  # holds on the path
            wait = ASYNCIO_KINDS[kind](waiting, zk_path)
        task = asyncio.ensure_future(wait)
        while _queued(holding, zk_path) < 2:
            await asyncio.sleep(0.02)
        await asyncio.get_running_loop().run_in_executor(None, waiting.stop)
        with pytest.raises(ConnectionClosedError, match=THROUGH_THE_RUNTIME):
            await asyncio.wait_for(task, SOON)

    run(main())


@pytest.mark.usefixtures("marked_stop")
def test_a_latch_on_a_client_that_never_connected_ends_its_wait_when_it_stops(
    never_connected: KazooClient, zk_path: str
) -> None:
    latch = LeaderLatch(never_connected, zk_path, "a")
    latch.start()
    worker = Worker(latch.wait)
    worker.start()
    eventually(lambda: runtime_of(never_connected).listening() >= 1, what="the latch waiting")
    never_connected.stop()  # kazoo tells no listener: the state was LOST already
    with pytest.raises(ConnectionClosedError, match=THROUGH_THE_RUNTIME):
        worker.outcome(SOON)


@pytest.mark.usefixtures("marked_stop")
def test_an_asyncio_latch_on_a_client_that_never_connected_ends_its_wait_when_it_stops(
    never_connected: KazooClient, zk_path: str
) -> None:
    async def main() -> None:
        latch = aio.LeaderLatch(never_connected, zk_path, "a")
        await latch.start()
        task = asyncio.ensure_future(latch.wait())
        while runtime_of(never_connected).listening() < 1:
            await asyncio.sleep(0.02)
        await asyncio.get_running_loop().run_in_executor(None, never_connected.stop)
        with pytest.raises(ConnectionClosedError, match=THROUGH_THE_RUNTIME):
            await asyncio.wait_for(task, SOON)

    run(main())


def test_deletes_owed_while_disconnected_are_the_runtime_s_and_a_stop_forgets_them(
    zk_server: ZooKeeperServer, zk_client_factory: ClientFactory, zk_path: str
) -> None:
    with FaultProxy(zk_server.hosts.split(",")[0]) as proxy:
        client = zk_client_factory(hosts=proxy.hosts, connection_retry=STEADY_RECONNECT)
        lock = InterProcessMutex(client, zk_path)
        assert lock.acquire(SOON)
        node = lock.lock_path
        assert node is not None
        proxy.blackhole()
        proxy.drop_connections()
        eventually(lambda: not client.connected, what="disconnected")
        lock.release()
        runtime = runtime_of(client)
        assert runtime.owes_delete(node)
        client.stop()
        assert not runtime.owes_delete(node)  # the node goes with its session


def test_a_forked_child_starts_with_fresh_runtime_state(zk: KazooClient) -> None:
    runtime, services, lock = runtime_of(zk), services_of(zk.handler), process_lock()
    transport = transport_of(zk)
    assert transport.runtime is runtime  # kept by the transport from now on

    def listener(state: str) -> None:
        pass

    runtime.listen(listener)  # the runtime's listener is the client's while one listens
    held, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:  # a thread of the parent's, in the lock at the fork
        with lock:
            held.set()
            release.wait(SOON)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    assert held.wait(SOON)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it finds, in one line
        try:
            with process_lock():  # a new lock: the parent's holder does not run here
                fresh = [
                    process_lock() is not lock,
                    not _runtime._RUNTIMES and not _runtime._SERVICES,
                    runtime._on_state not in zk.state_listeners,
                    runtime_of(zk) is not runtime,
                    services_of(zk.handler) is not services,
                    # a transport made before the fork looks the child's runtime up
                    transport.runtime is runtime_of(zk),
                    transport.services is services_of(zk.handler),
                ]
            os.write(write, ",".join(str(f) for f in fresh).encode())
        finally:
            os._exit(0)
    release.set()
    holder.join(SOON)
    os.waitpid(pid, 0)
    reported = os.read(read, 256).decode()
    os.close(read)
    os.close(write)
    assert reported == ",".join(["True"] * 7)
    assert runtime_of(zk) is runtime  # the parent's is untouched
    assert runtime._on_state in zk.state_listeners
    runtime.unlisten(listener)


def _module_level_registries(tree: ast.Module) -> list[str]:
    """The module-level names bound to a weak registry (``WeakKeyDictionary``,
    ``WeakValueDictionary``, ``WeakSet``) in a parsed module."""
    weak = {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"}
    names = []
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            value = statement.value
            if isinstance(value, ast.Call):
                called = value.func
                name = called.attr if isinstance(called, ast.Attribute) else ast.unparse(called)
                if name in weak:
                    targets = statement.targets if isinstance(statement, ast.Assign) else []
                    target = statement.target if isinstance(statement, ast.AnnAssign) else None
                    names += [ast.unparse(t) for t in [*targets, *([target] if target else [])]]
    return names


def _fork_hooks(tree: ast.Module) -> int:
    """How many calls of ``os.register_at_fork`` a parsed module makes."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_at_fork"
    )


def test_only_the_runtime_module_keeps_registries_and_the_fork_hook() -> None:
    registries: dict[str, list[str]] = {}
    hooks: dict[str, int] = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(source.read_text(), str(source))
        name = source.relative_to(PACKAGE.parent).as_posix()
        if found := _module_level_registries(tree):
            registries[name] = found
        if count := _fork_hooks(tree):
            hooks[name] = count
    assert registries == {"pycurator/_client/runtime.py": ["_RUNTIMES", "_SERVICES", "_SHARED"]}
    assert hooks == {"pycurator/_client/runtime.py": 1}
