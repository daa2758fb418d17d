"""The runtime: what pycurator keeps for kazoo clients, and the one place that handles a fork.

- clients of one handler share that handler's services (timer, pool, queues), which go with it;
- a forked child starts with fresh runtime state.
"""

from __future__ import annotations

import gc
import os
import threading
import weakref
from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler

from pycurator import _runtime
from pycurator._runtime import process_lock, services_of

from .support import SOON


def unstarted_client(**kwargs: Any) -> KazooClient:
    """A kazoo client that is never started (nothing is sent)."""
    return KazooClient(hosts="127.0.0.1:2181", **kwargs)


def test_clients_of_one_handler_share_its_services() -> None:
    handler = SequentialThreadingHandler()
    first, second = unstarted_client(handler=handler), unstarted_client(handler=handler)
    assert services_of(first.handler) is services_of(second.handler) is services_of(handler)
    assert services_of(unstarted_client().handler) is not services_of(handler)


def test_a_handler_s_services_go_with_it() -> None:
    client = unstarted_client()
    services = weakref.ref(services_of(client.handler))
    del client
    gc.collect()
    assert services() is None


def test_a_forked_child_starts_with_fresh_runtime_state(zk: KazooClient) -> None:
    services, lock = services_of(zk.handler), process_lock()
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
                    not _runtime._SERVICES,
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
    assert reported == ",".join(["True"] * 3)
    assert services_of(zk.handler) is services  # the parent's are untouched
