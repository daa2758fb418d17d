"""A 3-node ensemble loses its leader during mixed Java and Python contention."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pycurator import InterProcessMutex
from pycurator.testing import (
    ZooKeeperEnsemble,
    assert_no_ephemerals,
    java_acquire,
    jclass,
    new_curator,
)
from tests.support import Worker, children, eventually

from .conftest import java_class


@pytest.fixture(scope="module")
def ensemble() -> Iterator[ZooKeeperEnsemble]:
    with ZooKeeperEnsemble(3) as started:
        yield started


def test_the_ensemble_has_one_leader_and_serves_on_every_member(
    ensemble: ZooKeeperEnsemble,
) -> None:
    modes = sorted(str(ensemble.mode(member)) for member in ensemble.members)
    assert modes == ["follower", "follower", "leader"]


def test_killing_the_leader_during_mixed_contention_keeps_exclusion(
    ensemble: ZooKeeperEnsemble,
) -> None:
    path = "/locks/leader-kill"
    rounds = 12
    state = {"inside": 0, "max_inside": 0, "counter": 0}
    guard = threading.Lock()
    halfway = threading.Event()
    kazoo_clients: list[KazooClient] = []
    curators: list[Any] = []

    def critical_section() -> None:
        with guard:
            state["inside"] += 1
            state["max_inside"] = max(state["max_inside"], state["inside"])
        value = state["counter"]
        threading.Event().wait(0.01)
        state["counter"] = value + 1
        if state["counter"] >= rounds:
            halfway.set()
        with guard:
            state["inside"] -= 1

    def python_contender() -> None:
        client = KazooClient(hosts=ensemble.hosts, timeout=15.0)
        kazoo_clients.append(client)
        client.start(timeout=30)
        lock = InterProcessMutex(client, path)
        for _ in range(rounds):
            assert lock.acquire(timeout=120)
            try:
                critical_section()
            finally:
                lock.release()

    def java_contender() -> None:
        client = new_curator(ensemble.hosts, session_timeout_ms=15_000)
        curators.append(client)
        lock = java_class("InterProcessMutex")(client, path)
        keeper_error = jclass("org.apache.zookeeper.KeeperException")
        done = 0
        while done < rounds:
            try:  # Curator gives up on connection loss once its retries run out: try again
                if not java_acquire(lock, 120):
                    raise AssertionError("Java contender timed out")
            except keeper_error:
                continue
            try:
                critical_section()
            finally:
                with contextlib.suppress(keeper_error):  # Curator's delete is guaranteed
                    lock.release()
            done += 1

    workers = [Worker(python_contender) for _ in range(2)] + [
        Worker(java_contender) for _ in range(2)
    ]
    try:
        for worker in workers:
            worker.start()
        assert halfway.wait(120)
        leader = ensemble.leader()
        assert leader is not None
        ensemble.kill(leader)
        eventually(lambda: ensemble.leader() not in (None, leader), timeout=60, what="new leader")
        for worker in workers:
            worker.outcome(timeout=240)
        assert state["max_inside"] == 1
        assert state["counter"] == 4 * rounds
        observer = KazooClient(hosts=ensemble.hosts)
        observer.start(timeout=30)
        try:
            eventually(
                lambda: children(observer, path) == [],
                what="no node left after the scenario",
            )
        finally:
            observer.stop()
            observer.close()
        ensemble.start(leader)
        ensemble.wait_serving([leader])
        # every member's dump of ephemerals by session agrees: no lock node, the clients alive
        assert_no_ephemerals(ensemble.hosts, path)
    finally:
        for client in kazoo_clients:
            client.stop()
            client.close()
        for curator in curators:
            curator.close()
