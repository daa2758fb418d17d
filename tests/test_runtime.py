"""The runtime: what pycurator keeps per kazoo client, in one object found from the client, and
the one place that handles a fork.

- a client's runtime is found from it, the same object each time, and goes with it; clients
  of one handler share that handler's services (timer, pool, queues);
- the deletes a client owes are the runtime's;
- a forked child starts with fresh runtime state;
- no other module keeps a module-level registry or a fork hook.
"""

from __future__ import annotations

import ast
import gc
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler

from pycurator import InterProcessMutex, _runtime
from pycurator._runtime import process_lock, runtime_of, services_of
from pycurator.testing import ClientFactory, FaultProxy, ZooKeeperServer

from .support import SOON, STEADY_RECONNECT, eventually

PACKAGE = Path(__file__).resolve().parent.parent / "pycurator"


def unstarted_client(**kwargs: Any) -> KazooClient:
    """A kazoo client that is never started (nothing is sent)."""
    return KazooClient(hosts="127.0.0.1:2181", **kwargs)


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


def test_deletes_owed_while_disconnected_are_the_runtime_s_until_they_land(
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
        proxy.heal()
        eventually(lambda: not runtime.owes_delete(node), what="the delete landed")
        assert client.exists(node) is None


def test_a_forked_child_starts_with_fresh_runtime_state(zk: KazooClient) -> None:
    runtime, services, lock = runtime_of(zk), services_of(zk.handler), process_lock()
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
    assert reported == ",".join(["True"] * 5)
    assert runtime_of(zk) is runtime  # the parent's is untouched
    assert runtime._on_state in zk.state_listeners


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
    assert registries == {"pycurator/_runtime.py": ["_RUNTIMES", "_SERVICES"]}
    assert hooks == {"pycurator/_runtime.py": 1}
